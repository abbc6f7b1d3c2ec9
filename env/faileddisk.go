package env

// FailedDisk is a Disk on which every operation fails with Err. A halted or
// dead process gets one, so nothing it does after its death lands.
type FailedDisk struct{ Err error }

var _ Disk = FailedDisk{}

func (d FailedDisk) ReadAt(string, []byte, int64) (int, error) { return 0, d.Err }
func (d FailedDisk) ReadFile(string) ([]byte, error)           { return nil, d.Err }
func (d FailedDisk) WriteAt(string, []byte, int64) error       { return d.Err }
func (d FailedDisk) Append(string, []byte) error               { return d.Err }
func (d FailedDisk) Size(string) (int64, error)                { return 0, d.Err }
func (d FailedDisk) Sync(string) error                         { return d.Err }
func (d FailedDisk) Truncate(string, int64) error              { return d.Err }
func (d FailedDisk) Rename(string, string) error               { return d.Err }
func (d FailedDisk) Remove(string) error                       { return d.Err }
func (d FailedDisk) List(string) []string                      { return nil }
