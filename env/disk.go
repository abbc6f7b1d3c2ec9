package env

import (
	"errors"
	"io/fs"
)

// Disk is a node's local storage: a flat namespace of files whose names may
// contain '/'. Writes land in a page cache; Sync makes a file's bytes durable.
// A process crash keeps the page cache; a power loss keeps only synced bytes.
//
// Metadata operations (creating a file by writing it, Rename, Remove,
// Truncate) are durable once the call returns, the way a journaled
// filesystem with a synced directory behaves (real mode syncs the directory
// or file to make it so); a file's content is durable only up to its last
// successful Sync. A Truncate that shrinks a file shrinks its durable image
// too; one that extends it extends only the page cache.
type Disk interface {
	// ReadAt reads len(p) bytes at off. It returns io.EOF (with n < len(p))
	// when the file is shorter, fs.ErrNotExist when there is no such file, and
	// ErrIO when the disk fails the read.
	ReadAt(name string, p []byte, off int64) (n int, err error)
	// ReadFile returns the whole file.
	ReadFile(name string) ([]byte, error)
	// WriteAt writes p at off, creating the file and zero-filling any gap.
	WriteAt(name string, p []byte, off int64) error
	// Append writes p at the end of the file, creating it if needed.
	Append(name string, p []byte) error
	// Size returns the file's current length (page cache included).
	Size(name string) (int64, error)
	// Sync makes the file's current content durable. It may fail with ErrIO,
	// in which case nothing new became durable.
	Sync(name string) error
	// Truncate cuts (or zero-extends) the file to size.
	Truncate(name string, size int64) error
	// Rename atomically replaces to with from.
	Rename(from, to string) error
	// Remove deletes the file; removing a missing file is not an error.
	Remove(name string) error
	// List returns the names of all files that start with prefix, sorted.
	List(prefix string) []string
}

// ErrIO is the error of a failed disk operation (an injected fault in the
// simulator, EIO in real mode).
var ErrIO = errors.New("disk: input/output error")

// ErrNotExist is fs.ErrNotExist, named here for processes' convenience.
var ErrNotExist = fs.ErrNotExist

// WriteFileAtomic replaces name with data durably: write a temporary file,
// sync it, rename it over name. Checkpoint files use it.
func WriteFileAtomic(d Disk, name string, data []byte) error {
	tmp := name + ".tmp"
	if err := d.Remove(tmp); err != nil {
		return err
	}
	if err := d.WriteAt(tmp, data, 0); err != nil {
		return err
	}
	if err := d.Sync(tmp); err != nil {
		return err
	}
	return d.Rename(tmp, name)
}

// Viewer is a Disk that can lend a file's bytes without copying them.
// ViewFile counts and fails like ReadFile; fn must only read data, must
// not keep it, and must not write to the disk before it returns.
type Viewer interface {
	ViewFile(name string, fn func(data []byte) error) error
}

// Memos is a Disk that keeps one value beside each file for a reader that
// derived it from the file's bytes, so that after a crash the reader need
// not derive again what the same bytes gave it before: the simulated disk
// spares a recovery scan re-verifying a log it verified at the last start.
// A value lasts exactly as long as the bytes it came from: Memo reports
// none once bytes already in the file may have changed (an overwrite, a
// truncation, a power loss, bit rot, another file under the name), and
// removing the file drops it. Appending keeps it, so a value must say how
// much of the file it covers. Memos change nothing a process can observe
// but CPU time; a disk without them (real mode) makes the reader derive
// everything every time.
type Memos interface {
	// Memo returns the value last set on the file, if its bytes are still
	// those it was set on (the file may have grown).
	Memo(name string) (v any, ok bool)
	// SetMemo sets the file's value; it does nothing if there is no such
	// file.
	SetMemo(name string, v any)
}

// ViewFile calls fn with the whole file: lent by a Viewer, else read with
// ReadFile. A read that fails returns its error without calling fn.
func ViewFile(d Disk, name string, fn func(data []byte) error) error {
	if v, ok := d.(Viewer); ok {
		return v.ViewFile(name, fn)
	}
	data, err := d.ReadFile(name)
	if err != nil {
		return err
	}
	return fn(data)
}
