package envtest

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/kafkasim/kafkasim/env"
)

// diskCheck is what a disk script may do to report: it runs on the node's
// loop, where a test may record failures but not stop (t.Fatal must run on
// the test's goroutine).
type diskCheck struct {
	t *testing.T
	d env.Disk
}

func (c diskCheck) ok(what string, err error) {
	c.t.Helper()
	if err != nil {
		c.t.Errorf("%s: %v", what, err)
	}
}

func (c diskCheck) isErr(what string, err, want error) {
	c.t.Helper()
	if !errors.Is(err, want) {
		c.t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

func (c diskCheck) content(name string, want []byte) {
	c.t.Helper()
	got, err := c.d.ReadFile(name)
	if err != nil {
		c.t.Errorf("ReadFile %s: %v", name, err)
		return
	}
	if !bytes.Equal(got, want) {
		c.t.Errorf("%s holds %q, want %q", name, got, want)
	}
	size, err := c.d.Size(name)
	if err != nil || size != int64(len(want)) {
		c.t.Errorf("Size %s = %d, %v; want %d", name, size, err, len(want))
	}
}

func (c diskCheck) list(prefix string, want ...string) {
	c.t.Helper()
	if got := c.d.List(prefix); !slices.Equal(got, want) && (len(got) > 0 || len(want) > 0) {
		c.t.Errorf("List(%q) = %q, want %q", prefix, got, want)
	}
}

// onDisk boots a node whose process runs script on its disk from Start, and
// waits for the script to finish.
func onDisk(t *testing.T, h Harness, script func(c diskCheck)) {
	t.Helper()
	var done guarded[bool]
	h.Start(factory(proc{start: func(e env.Env) {
		script(diskCheck{t: t, d: e.Disk()})
		done.set(true)
	}}))
	waitFor(t, h, "the disk script finishing", done.get)
}

// Writing past the end creates the file and fills the gap with zeros.
func testDiskWriteAtZeroFills(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		c.ok("WriteAt a file that does not exist yet, at 3", c.d.WriteAt("f", []byte("xyz"), 3))
		c.content("f", []byte("\x00\x00\x00xyz"))
		c.ok("WriteAt over the middle", c.d.WriteAt("f", []byte("AB"), 2))
		c.content("f", []byte("\x00\x00AByz"))
		c.ok("WriteAt far past the end", c.d.WriteAt("f", []byte("!"), 8))
		c.content("f", []byte("\x00\x00AByz\x00\x00!"))
		c.ok("WriteAt nothing at 0 of a new file", c.d.WriteAt("empty", nil, 0))
		c.content("empty", []byte{})
		if err := c.d.WriteAt("f", []byte("x"), -1); err == nil {
			c.t.Errorf("WriteAt at offset -1 succeeded, want an error")
		}
	})
}

// Append creates a missing file and writes at its end, after any WriteAt.
func testDiskAppend(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		c.ok("Append to a file that does not exist yet", c.d.Append("log", []byte("one,")))
		c.ok("Append", c.d.Append("log", []byte("two,")))
		c.ok("WriteAt past the end", c.d.WriteAt("log", []byte("|"), 10))
		c.ok("Append after a gap", c.d.Append("log", []byte("three")))
		c.content("log", []byte("one,two,\x00\x00|three"))
		c.ok("Append nothing", c.d.Append("log", nil))
		c.content("log", []byte("one,two,\x00\x00|three"))
	})
}

// ReadAt fills what it can and says io.EOF when the file ends first; a
// missing file is fs.ErrNotExist, for ReadAt, ReadFile, Size and Sync alike.
func testDiskReadAt(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		c.ok("WriteAt", c.d.WriteAt("f", []byte("0123456789"), 0))
		read := func(n int, off int64, wantN int, want string, wantErr error) {
			c.t.Helper()
			p := make([]byte, n)
			got, err := c.d.ReadAt("f", p, off)
			if got != wantN || err != wantErr || string(p[:got]) != want {
				c.t.Errorf("ReadAt(%d bytes at %d) = %d %q, %v; want %d %q, %v",
					n, off, got, p[:got], err, wantN, want, wantErr)
			}
		}
		read(4, 0, 4, "0123", nil)
		read(4, 6, 4, "6789", nil) // ends exactly at the end: no EOF
		read(4, 8, 2, "89", io.EOF)
		read(4, 10, 0, "", io.EOF)
		read(4, 99, 0, "", io.EOF)
		read(0, 5, 0, "", nil)
		read(0, 10, 0, "", io.EOF)
		if _, err := c.d.ReadAt("f", make([]byte, 1), -1); err == nil {
			c.t.Errorf("ReadAt at offset -1 succeeded, want an error")
		}

		_, err := c.d.ReadAt("missing", make([]byte, 1), 0)
		c.isErr("ReadAt of a missing file", err, env.ErrNotExist)
		_, err = c.d.ReadFile("missing")
		c.isErr("ReadFile of a missing file", err, env.ErrNotExist)
		_, err = c.d.Size("missing")
		c.isErr("Size of a missing file", err, env.ErrNotExist)
		c.isErr("Sync of a missing file", c.d.Sync("missing"), env.ErrNotExist)
		c.isErr("Truncate of a missing file", c.d.Truncate("missing", 0), env.ErrNotExist)
		_, err = c.d.ReadFile("f/sub")
		c.isErr("ReadFile below a file", err, env.ErrNotExist)
		c.list("missing")
	})
}

// Truncate cuts a file or extends it with zeros; writes then land as usual.
func testDiskTruncate(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		c.ok("WriteAt", c.d.WriteAt("f", []byte("0123456789"), 0))
		c.ok("Truncate to 4", c.d.Truncate("f", 4))
		c.content("f", []byte("0123"))
		c.ok("Truncate to 6", c.d.Truncate("f", 6))
		c.content("f", []byte("0123\x00\x00"))
		c.ok("Append", c.d.Append("f", []byte("x")))
		c.content("f", []byte("0123\x00\x00x"))
		c.ok("Truncate to 0", c.d.Truncate("f", 0))
		c.content("f", []byte{})
		if err := c.d.Truncate("f", -1); err == nil {
			c.t.Errorf("Truncate to -1 succeeded, want an error")
		}
	})
}

// Rename replaces the target whole and the source is gone; renaming a
// missing file is fs.ErrNotExist.
func testDiskRename(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		c.ok("WriteAt new", c.d.WriteAt("new", []byte("new"), 0))
		c.ok("WriteAt old", c.d.WriteAt("old", []byte("old and longer"), 0))
		c.ok("Rename new over old", c.d.Rename("new", "old"))
		c.content("old", []byte("new"))
		_, err := c.d.ReadFile("new")
		c.isErr("ReadFile of the renamed-away name", err, env.ErrNotExist)
		c.list("", "old")

		c.ok("Rename into a subdirectory", c.d.Rename("old", "dir/sub/moved"))
		c.content("dir/sub/moved", []byte("new"))
		c.list("", "dir/sub/moved")
		c.ok("Rename out of it", c.d.Rename("dir/sub/moved", "back"))
		c.list("", "back")
		c.isErr("Rename of a missing file", c.d.Rename("missing", "back"), env.ErrNotExist)
		c.content("back", []byte("new"))
	})
}

// Remove deletes; removing what is not there is not an error.
func testDiskRemove(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		c.ok("Remove of a file that never existed", c.d.Remove("never"))
		c.ok("Append", c.d.Append("topic/0/segment", []byte("x")))
		c.ok("Remove", c.d.Remove("topic/0/segment"))
		_, err := c.d.Size("topic/0/segment")
		c.isErr("Size after Remove", err, env.ErrNotExist)
		c.ok("Remove again", c.d.Remove("topic/0/segment"))
		c.list("")
		// A name once a directory can be a file again.
		c.ok("WriteAt where a directory was", c.d.WriteAt("topic", []byte("t"), 0))
		c.content("topic", []byte("t"))
	})
}

// List returns every file whose name starts with the prefix — '/' is just a
// byte — sorted bytewise.
func testDiskList(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		for _, name := range []string{"b", "a/y", "ab", "a-z", "a/x/deep", "a/x2", "c/0", "a0"} {
			c.ok("Append "+name, c.d.Append(name, []byte(name)))
		}
		c.list("", "a-z", "a/x/deep", "a/x2", "a/y", "a0", "ab", "b", "c/0")
		c.list("a", "a-z", "a/x/deep", "a/x2", "a/y", "a0", "ab")
		c.list("a/", "a/x/deep", "a/x2", "a/y")
		c.list("a/x", "a/x/deep", "a/x2")
		c.list("a/x/", "a/x/deep")
		c.list("c/0", "c/0")
		c.list("c/0/")
		c.list("zzz")
		c.content("a/x/deep", []byte("a/x/deep"))
	})
}

// WriteFileAtomic replaces a file's content whole and leaves nothing beside
// it.
func testDiskWriteFileAtomic(t *testing.T, h Harness) {
	onDisk(t, h, func(c diskCheck) {
		c.ok("WriteFileAtomic of a new file", env.WriteFileAtomic(c.d, "meta/checkpoint", []byte("first, longer")))
		c.content("meta/checkpoint", []byte("first, longer"))
		c.ok("WriteFileAtomic over it", env.WriteFileAtomic(c.d, "meta/checkpoint", []byte("second")))
		c.content("meta/checkpoint", []byte("second"))
		c.list("", "meta/checkpoint")
	})
}

// A node writes and syncs, renames, removes and checkpoints, then restarts:
// the new process finds everything that was made durable.
func testDiskSyncedDataSurvivesRestart(t *testing.T, h Harness) {
	segment := bytes.Repeat([]byte("record;"), 10_000)
	var boots guarded[int]
	var wrote, checked guarded[bool]
	node := h.Start(func() env.Process {
		var boot int
		boots.update(func(b *int) { *b++; boot = *b })
		return &proc{start: func(e env.Env) {
			c := diskCheck{t: t, d: e.Disk()}
			switch boot {
			case 1:
				c.ok("Append segment", c.d.Append("log/0/segment.tmp", segment))
				c.ok("Sync segment", c.d.Sync("log/0/segment.tmp"))
				c.ok("Rename segment", c.d.Rename("log/0/segment.tmp", "log/0/segment"))
				c.ok("WriteAt index", c.d.WriteAt("log/0/index", []byte("index"), 0))
				c.ok("Sync index", c.d.Sync("log/0/index"))
				c.ok("Truncate index", c.d.Truncate("log/0/index", 3))
				c.ok("Append doomed", c.d.Append("doomed", []byte("x")))
				c.ok("Sync doomed", c.d.Sync("doomed"))
				c.ok("Remove doomed", c.d.Remove("doomed"))
				c.ok("WriteFileAtomic checkpoint", env.WriteFileAtomic(c.d, "checkpoint", []byte("epoch=7")))
				wrote.set(true)
			case 2:
				c.content("log/0/segment", segment)
				c.content("log/0/index", []byte("ind"))
				c.content("checkpoint", []byte("epoch=7"))
				c.list("", "checkpoint", "log/0/index", "log/0/segment")
				checked.set(true)
			default:
				t.Errorf("node booted %d times, want 2", boot)
			}
		}}
	})
	waitFor(t, h, "the first boot writing its disk", wrote.get)
	h.Restart(node)
	waitFor(t, h, "the second boot reading its disk", checked.get)
}
