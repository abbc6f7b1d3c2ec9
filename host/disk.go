package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/kafkasim/kafkasim/env"
)

// Disk is env.Disk over a directory. A file name's '/'-separated elements
// are subdirectories, created as needed and removed again when a Remove or
// Rename leaves them empty; a name must be a valid io/fs path ("a/b.log",
// never "/a", "a//b", "./a" or "../a"), and one name cannot be both a file
// and a directory of other files ("a" and "a/b").
//
// Durability is the env.Disk contract, with the OS page cache as the page
// cache: Sync is fsync; creating a file, Rename and Remove also fsync the
// directories they change, and Truncate fsyncs the file, because the
// contract calls those durable once they return.
//
// A Disk is not safe for concurrent use: it belongs to one node's loop.
type Disk struct {
	root  string
	files map[string]*os.File // open handles by file name, at most filesOpenMax
}

// filesOpenMax bounds the handles a Disk keeps open between calls, so that a
// broker with many segments does not run out of file descriptors.
const filesOpenMax = 64

var _ env.Disk = (*Disk)(nil)

// OpenDisk opens (creating it if needed) the directory dir as a disk.
func OpenDisk(dir string) (*Disk, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		// A data directory that a power loss could take away again would
		// make every later fsync inside it moot.
		if err := syncDir(filepath.Dir(root)); err != nil {
			return nil, fmt.Errorf("data directory %s: %w", root, err)
		}
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("data directory %s is not a directory", root)
	}
	return &Disk{root: root, files: map[string]*os.File{}}, nil
}

// Dir is the directory holding the disk's files.
func (d *Disk) Dir() string { return d.root }

// Close closes the open handles. Unsynced bytes stay in the OS page cache,
// as they would if the process crashed.
func (d *Disk) Close() error {
	var errs []error
	for name, f := range d.files {
		errs = append(errs, f.Close())
		delete(d.files, name)
	}
	return errors.Join(errs...)
}

// ReadAt implements env.Disk.
func (d *Disk) ReadAt(name string, p []byte, off int64) (int, error) {
	f, err := d.open("read", name, false)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", name, off)
	}
	if len(p) == 0 {
		// os.File reads nothing without looking at the size; env.Disk says
		// EOF at or past the end whatever len(p) is.
		size, err := d.size(f, name)
		if err != nil {
			return 0, err
		}
		if off >= size {
			return 0, io.EOF
		}
		return 0, nil
	}
	n, err := f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, d.fail("read", name, err)
	}
	return n, err
}

// ReadFile implements env.Disk.
func (d *Disk) ReadFile(name string) ([]byte, error) {
	f, err := d.open("read", name, false)
	if err != nil {
		return nil, err
	}
	size, err := d.size(f, name)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, d.fail("read", name, err)
	}
	return buf[:n], nil
}

// WriteAt implements env.Disk.
func (d *Disk) WriteAt(name string, p []byte, off int64) error {
	if off < 0 {
		return fmt.Errorf("write %s: negative offset %d", name, off)
	}
	f, err := d.open("write", name, true)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(p, off); err != nil {
		return d.fail("write", name, err)
	}
	return nil
}

// Append implements env.Disk.
func (d *Disk) Append(name string, p []byte) error {
	f, err := d.open("append", name, true)
	if err != nil {
		return err
	}
	size, err := d.size(f, name)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(p, size); err != nil {
		return d.fail("append", name, err)
	}
	return nil
}

// Size implements env.Disk.
func (d *Disk) Size(name string) (int64, error) {
	f, err := d.open("size", name, false)
	if err != nil {
		return 0, err
	}
	return d.size(f, name)
}

func (d *Disk) size(f *os.File, name string) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, d.fail("stat", name, err)
	}
	return fi.Size(), nil
}

// Sync implements env.Disk.
func (d *Disk) Sync(name string) error {
	f, err := d.open("sync", name, false)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return d.fail("sync", name, err)
	}
	return nil
}

// Truncate implements env.Disk.
func (d *Disk) Truncate(name string, size int64) error {
	if size < 0 {
		return fmt.Errorf("truncate %s: negative size %d", name, size)
	}
	f, err := d.open("truncate", name, false)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return d.fail("truncate", name, err)
	}
	if err := f.Sync(); err != nil {
		return d.fail("truncate", name, err)
	}
	return nil
}

// Rename implements env.Disk.
func (d *Disk) Rename(from, to string) error {
	pf, err := d.path("rename", from)
	if err != nil {
		return err
	}
	pt, err := d.path("rename", to)
	if err != nil {
		return err
	}
	d.forget(from)
	d.forget(to)
	if fi, err := os.Lstat(pf); err != nil || !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "rename", Path: from, Err: fs.ErrNotExist}
	}
	if err := d.mkdirs("rename", to, filepath.Dir(pt)); err != nil {
		return err
	}
	if err := os.Rename(pf, pt); err != nil {
		if fi, serr := os.Lstat(pt); serr == nil && fi.IsDir() {
			return d.isDirError("rename", to)
		}
		return d.fail("rename", from, err)
	}
	if err := syncDir(filepath.Dir(pt)); err != nil {
		return d.fail("rename", to, err)
	}
	if filepath.Dir(pf) != filepath.Dir(pt) {
		if err := syncDir(filepath.Dir(pf)); err != nil {
			return d.fail("rename", from, err)
		}
		d.prune(filepath.Dir(pf))
	}
	return nil
}

// Remove implements env.Disk.
func (d *Disk) Remove(name string) error {
	p, err := d.path("remove", name)
	if err != nil {
		return err
	}
	d.forget(name)
	if fi, err := os.Lstat(p); err != nil || fi.IsDir() {
		// No such file (a directory of other files is not one).
		return nil
	}
	if err := os.Remove(p); err != nil {
		if isNotExist(err) {
			return nil
		}
		return d.fail("remove", name, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return d.fail("remove", name, err)
	}
	d.prune(filepath.Dir(p))
	return nil
}

// List implements env.Disk. A directory it cannot read is skipped: the
// contract has no error to report it with.
func (d *Disk) List(prefix string) []string {
	start := d.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir := prefix[:i]
		if !validName(dir) {
			return nil // no valid name starts with it
		}
		start = filepath.Join(d.root, filepath.FromSlash(dir))
	}
	var names []string
	filepath.WalkDir(start, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return filepath.SkipAll
			}
			return nil
		}
		rel, rerr := filepath.Rel(d.root, p)
		if rerr != nil {
			return nil
		}
		name := filepath.ToSlash(rel)
		if de.IsDir() {
			if p == start {
				return nil
			}
			// Descend only where a matching name can be.
			dir := name + "/"
			if !strings.HasPrefix(dir, prefix) && !strings.HasPrefix(prefix, dir) {
				return filepath.SkipDir
			}
			return nil
		}
		if de.Type().IsRegular() && strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
		return nil
	})
	// Byte order of whole names, as the simulated disk sorts: a directory
	// walk would put "a/x" after "a-b" but before "a0".
	sort.Strings(names)
	return names
}

// open returns a handle on the file, creating it (and its directories,
// durably) when create is set.
func (d *Disk) open(op, name string, create bool) (*os.File, error) {
	if f := d.files[name]; f != nil {
		return f, nil
	}
	p, err := d.path(op, name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, syscall.EISDIR) {
			if create {
				return nil, d.isDirError(op, name)
			}
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if !isNotExist(err) {
			return nil, d.fail(op, name, err)
		}
		if !create {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if err := d.mkdirs(op, name, filepath.Dir(p)); err != nil {
			return nil, err
		}
		if f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			return nil, d.fail(op, name, err)
		}
		// The file must outlive a power loss once this call returns.
		if err := syncDir(filepath.Dir(p)); err != nil {
			f.Close()
			return nil, d.fail(op, name, err)
		}
	}
	if len(d.files) >= filesOpenMax {
		for old, h := range d.files {
			h.Close()
			delete(d.files, old)
			break
		}
	}
	d.files[name] = f
	return f, nil
}

// forget closes the cached handle of a file about to be renamed or removed.
func (d *Disk) forget(name string) {
	if f := d.files[name]; f != nil {
		f.Close()
		delete(d.files, name)
	}
}

// path maps a file name to its path under the root.
func (d *Disk) path(op, name string) (string, error) {
	if !validName(name) {
		return "", fmt.Errorf("%s %q: invalid file name: want '/'-separated elements, none empty, '.' or '..', "+
			"and no leading or trailing '/': %w", op, name, fs.ErrInvalid)
	}
	return filepath.Join(d.root, filepath.FromSlash(name)), nil
}

func validName(name string) bool {
	return name != "." && fs.ValidPath(name) && !strings.ContainsRune(name, 0)
}

// mkdirs creates dir and its missing parents, syncing each parent so that
// the new directory survives a power loss.
func (d *Disk) mkdirs(op, name, dir string) error {
	if dir == d.root {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(d.root, dir)
		return fmt.Errorf("%s %s: %s is a file, so it cannot also be a directory: %w",
			op, name, filepath.ToSlash(rel), fs.ErrExist)
	}
	if !isNotExist(err) {
		return d.fail(op, name, err)
	}
	if err := d.mkdirs(op, name, filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return d.fail(op, name, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return d.fail(op, name, err)
	}
	return nil
}

// prune removes dir and its parents while they are empty, so that a name
// once used as a directory can become a file again.
func (d *Disk) prune(dir string) {
	for dir != d.root && strings.HasPrefix(dir, d.root) {
		if os.Remove(dir) != nil {
			return // not empty (or gone): stop
		}
		syncDir(filepath.Dir(dir))
		dir = filepath.Dir(dir)
	}
}

func (d *Disk) isDirError(op, name string) error {
	return fmt.Errorf("%s %s: %s is a directory of other files, so it cannot also be a file: %w",
		op, name, name, fs.ErrExist)
}

// fail names the file in an OS error and maps EIO to env.ErrIO.
func (d *Disk) fail(op, name string, err error) error {
	if errors.Is(err, syscall.EIO) {
		return fmt.Errorf("%s %s: %w (%v)", op, name, env.ErrIO, err)
	}
	if isNotExist(err) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}

// isNotExist includes ENOTDIR: "a/b" does not exist when "a" is a file.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
