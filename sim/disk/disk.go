package disk

import (
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/kafkasim/kafkasim/env"
)

// Disk is one node's simulated disk. It implements env.Disk.
type Disk struct {
	files map[string]*file
	// names is every file's name, sorted: List answers from it by binary
	// search instead of walking the map (the harness lists each
	// partition's directory on every replica sample).
	names []string

	// Armed faults. Each counts down the matching operations still to fail.
	syncFailures int
	readFailures map[string]int // by file name prefix; "" matches all

	// Stats, for tests and the trace.
	Syncs, Writes, Reads int64

	// observe, if set, hears every operation that changes the disk (see
	// Observe).
	observe func(Op)
	// versions is the last file version handed out (changed).
	versions uint64
}

// OpKind is what an Op did.
type OpKind uint8

const (
	OpWrite    OpKind = iota + 1 // N bytes at Off, checksum Sum
	OpSync                       // made the file durable (Off: its durable size after)
	OpTruncate                   // cut or grew the file to Off
	OpRename                     // Name renamed to To
	OpRemove
	OpPowerLoss // unsynced writes dropped: Off the size after, N bytes lost, Sum the checksum of what survived
)

var opNames = [...]string{OpWrite: "write", OpSync: "sync", OpTruncate: "truncate", OpRename: "rename", OpRemove: "remove", OpPowerLoss: "power-loss"}

func (k OpKind) String() string { return opNames[k] }

// Op is one operation that changed what the disk holds or will hold after
// a power loss.
type Op struct {
	Kind   OpKind
	Name   string
	To     string // OpRename's new name
	Off, N int64
	Sum    uint32 // OpWrite: CRC-32C of the bytes written
}

// Observe makes f hear every successful write, sync, truncation, rename
// and removal, and what each power loss dropped, in order: the world folds them into its trace hash, so two
// runs that wrote or synced differently do not hash alike.
func (d *Disk) Observe(f func(Op)) { d.observe = f }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type file struct {
	data    []byte // current content, page cache included
	durable []byte // content as of the last successful Sync
	// pending is every write since the last Sync, in order, so that a torn
	// power loss can let a prefix of them through.
	pending []write
	// appendOnly is true while every write since the last Sync appended at
	// the end of durable: Sync can then extend durable instead of copying.
	appendOnly bool
	// version changes, to a number no other file of the disk has had,
	// whenever bytes already in the file may change (Onlooker.Version).
	version uint64
	// memo is the value SetMemo set at version memoAt (env.Memos).
	memo   any
	memoAt uint64
}

type write struct {
	off int64
	n   int64
	// data is a copy of the written bytes, or nil while the file is append
	// only (the bytes are then still in the page cache at off).
	data []byte
}

var _ env.Disk = (*Disk)(nil)

// New returns an empty disk.
func New() *Disk {
	return &Disk{files: map[string]*file{}, readFailures: map[string]int{}}
}

func (d *Disk) get(name string) (*file, error) {
	f, ok := d.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f, nil
}

func (d *Disk) create(name string) *file {
	f, ok := d.files[name]
	if !ok {
		f = &file{appendOnly: true}
		d.files[name] = f
		d.addName(name)
		d.changed(f)
	}
	return f
}

// changed gives f a new version: bytes it held may be different now.
func (d *Disk) changed(f *file) {
	d.versions++
	f.version = d.versions
}

func (d *Disk) readFault(name string) bool {
	prefixes := make([]string, 0, len(d.readFailures))
	for prefix := range d.readFailures {
		prefixes = append(prefixes, prefix)
	}
	sort.Strings(prefixes) // which armed fault is charged must not depend on map order
	for _, prefix := range prefixes {
		if n := d.readFailures[prefix]; n > 0 && strings.HasPrefix(name, prefix) {
			d.readFailures[prefix] = n - 1
			return true
		}
	}
	return false
}

// ReadAt implements env.Disk.
func (d *Disk) ReadAt(name string, p []byte, off int64) (int, error) {
	f, err := d.get(name)
	if err != nil {
		return 0, err
	}
	d.Reads++
	if len(d.readFailures) > 0 && d.readFault(name) {
		return 0, fmt.Errorf("read %s at %d: %w", name, off, env.ErrIO)
	}
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", name, off)
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Peek returns what a file holds now, as ReadFile would, but as an
// onlooker: it counts no read and meets no injected read failure, so a
// harness can look at a running node's disk without changing the run. The
// bytes are the disk's own, not a copy: read them, never change them, and
// do not keep them past the next write.
func (d *Disk) Peek(name string) ([]byte, error) {
	f, err := d.get(name)
	if err != nil {
		return nil, err
	}
	return f.data, nil
}

// Onlooker is d as a read-only view that changes nothing: List, and Peek
// as ReadFile.
func (d *Disk) Onlooker() Onlooker { return Onlooker{d} }

// Onlooker reads a disk without being one of its readers (see Peek).
type Onlooker struct{ d *Disk }

// List lists the file names with the prefix, sorted.
func (o Onlooker) List(prefix string) []string { return o.d.List(prefix) }

// ReadFile is Peek.
func (o Onlooker) ReadFile(name string) ([]byte, error) { return o.d.Peek(name) }

// Version is a number that changes whenever bytes already in the file may
// have (an overwrite, a truncation, a power loss, a flipped bit, another
// file under the name) and stays while the file only grows: a reader that
// keeps what it parsed may resume at its end while Version is unchanged.
func (o Onlooker) Version(name string) (uint64, bool) {
	f, ok := o.d.files[name]
	if !ok {
		return 0, false
	}
	return f.version, true
}

// ReadFile implements env.Disk.
func (d *Disk) ReadFile(name string) ([]byte, error) {
	var data []byte
	err := d.ViewFile(name, func(b []byte) error {
		data = append([]byte(nil), b...)
		return nil
	})
	return data, err
}

// ViewFile implements env.Viewer: ReadFile without the copy, for a
// recovery scan that reads a whole segment once.
func (d *Disk) ViewFile(name string, fn func(data []byte) error) error {
	f, err := d.get(name)
	if err != nil {
		return err
	}
	d.Reads++
	if len(d.readFailures) > 0 && d.readFault(name) {
		return fmt.Errorf("read %s: %w", name, env.ErrIO)
	}
	return fn(f.data[:len(f.data):len(f.data)])
}

// Memo implements env.Memos: the value is good while the file's version
// is the one it was set at.
func (d *Disk) Memo(name string) (any, bool) {
	f, ok := d.files[name]
	if !ok || f.memo == nil || f.memoAt != f.version {
		return nil, false
	}
	return f.memo, true
}

// SetMemo implements env.Memos.
func (d *Disk) SetMemo(name string, v any) {
	if f, ok := d.files[name]; ok {
		f.memo, f.memoAt = v, f.version
	}
}

var _ env.Memos = (*Disk)(nil)

// WriteAt implements env.Disk.
func (d *Disk) WriteAt(name string, p []byte, off int64) error {
	if off < 0 {
		return fmt.Errorf("write %s: negative offset %d", name, off)
	}
	f := d.create(name)
	d.Writes++
	if f.appendOnly && off != int64(len(f.data)) {
		f.materialize()
		f.appendOnly = false
	}
	if off < int64(len(f.data)) {
		d.changed(f)
	}
	end := off + int64(len(p))
	if end > int64(len(f.data)) {
		f.data = growTo(f.data, end)
	}
	copy(f.data[off:], p)
	if d.observe != nil {
		d.observe(Op{Kind: OpWrite, Name: name, Off: off, N: int64(len(p)), Sum: crc32.Checksum(p, castagnoli)})
	}
	w := write{off: off, n: int64(len(p))}
	if !f.appendOnly {
		w.data = append([]byte(nil), p...)
	}
	f.pending = append(f.pending, w)
	return nil
}

// materialize copies the bytes of pending appends out of the page cache
// before a write that could overwrite them: until then an append-only file
// keeps no second copy of its unsynced tail.
func (f *file) materialize() {
	for i := range f.pending {
		w := &f.pending[i]
		if w.data == nil {
			w.data = append([]byte(nil), f.data[w.off:w.off+w.n]...)
		}
	}
}

// pendingData returns the bytes of a pending write.
func (f *file) pendingData(w write) []byte {
	if w.data != nil {
		return w.data
	}
	return f.data[w.off : w.off+w.n]
}

func pendingBytes(f *file) int64 {
	var n int64
	for _, w := range f.pending {
		n += w.n
	}
	return n
}

// Append implements env.Disk.
func (d *Disk) Append(name string, p []byte) error {
	f := d.create(name)
	return d.WriteAt(name, p, int64(len(f.data)))
}

// Size implements env.Disk.
func (d *Disk) Size(name string) (int64, error) {
	f, err := d.get(name)
	if err != nil {
		return 0, err
	}
	return int64(len(f.data)), nil
}

// Sync implements env.Disk.
func (d *Disk) Sync(name string) error {
	f, err := d.get(name)
	if err != nil {
		return err
	}
	d.Syncs++
	if d.syncFailures > 0 {
		d.syncFailures--
		return fmt.Errorf("sync %s: %w", name, env.ErrIO)
	}
	if len(f.pending) == 0 {
		return nil
	}
	if f.appendOnly && len(f.data) >= len(f.durable) {
		f.durable = append(f.durable, f.data[len(f.durable):]...)
	} else {
		f.durable = append([]byte(nil), f.data...)
	}
	f.pending = f.pending[:0]
	f.appendOnly = true
	if d.observe != nil {
		d.observe(Op{Kind: OpSync, Name: name, Off: int64(len(f.durable))})
	}
	return nil
}

// Truncate implements env.Disk. A shrink is durable at once (it is a
// metadata operation): the durable image and every pending write are cut
// to size too.
func (d *Disk) Truncate(name string, size int64) error {
	if size < 0 {
		return fmt.Errorf("truncate %s: negative size %d", name, size)
	}
	f, err := d.get(name)
	if err != nil {
		return err
	}
	d.Writes++
	if d.observe != nil {
		d.observe(Op{Kind: OpTruncate, Name: name, Off: size})
	}
	if size >= int64(len(f.data)) {
		return d.WriteAt(name, make([]byte, size-int64(len(f.data))), int64(len(f.data)))
	}
	f.materialize()
	f.appendOnly = false
	d.changed(f)
	f.data = f.data[:size:size]
	if int64(len(f.durable)) > size {
		f.durable = f.durable[:size:size]
	}
	kept := f.pending[:0]
	for _, w := range f.pending {
		if w.off >= size {
			continue
		}
		if end := w.off + w.n; end > size {
			w.n = size - w.off
			w.data = w.data[:w.n]
		}
		kept = append(kept, w)
	}
	f.pending = kept
	return nil
}

// Rename implements env.Disk.
func (d *Disk) Rename(from, to string) error {
	f, err := d.get(from)
	if err != nil {
		return err
	}
	delete(d.files, from)
	d.removeName(from)
	if _, ok := d.files[to]; !ok {
		d.addName(to)
	}
	d.files[to] = f
	if d.observe != nil {
		d.observe(Op{Kind: OpRename, Name: from, To: to})
	}
	return nil
}

// Remove implements env.Disk.
func (d *Disk) Remove(name string) error {
	if _, ok := d.files[name]; ok && d.observe != nil {
		d.observe(Op{Kind: OpRemove, Name: name})
	}
	if _, ok := d.files[name]; ok {
		delete(d.files, name)
		d.removeName(name)
	}
	return nil
}

func (d *Disk) addName(name string) {
	i, _ := slices.BinarySearch(d.names, name)
	d.names = slices.Insert(d.names, i, name)
}

func (d *Disk) removeName(name string) {
	if i, ok := slices.BinarySearch(d.names, name); ok {
		d.names = slices.Delete(d.names, i, i+1)
	}
}

// List implements env.Disk.
func (d *Disk) List(prefix string) []string {
	i, _ := slices.BinarySearch(d.names, prefix)
	j := i
	for j < len(d.names) && strings.HasPrefix(d.names[j], prefix) {
		j++
	}
	if i == j {
		return nil
	}
	return slices.Clone(d.names[i:j])
}

func growTo(b []byte, n int64) []byte {
	if n <= int64(cap(b)) {
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	nb := make([]byte, n, max(n, int64(2*cap(b))))
	copy(nb, b)
	return nb
}
