package host_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/host"
)

func openDisk(t *testing.T, dir string) *host.Disk {
	t.Helper()
	d, err := host.OpenDisk(dir)
	if err != nil {
		t.Fatalf("OpenDisk: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// A file name's elements are directories on the real filesystem, so an
// operator can find a partition's segments where the name says.
func TestDiskNamesAreDirectoriesOnTheFilesystem(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, dir)
	if err := d.Append("orders-0/00000000000000000000.log", []byte("batch")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "orders-0", "00000000000000000000.log"))
	if err != nil || string(got) != "batch" {
		t.Fatalf("file on the filesystem: %q, %v", got, err)
	}

	// Removing the last file of a directory removes the directory, so the
	// name can become a file.
	if err := d.Remove("orders-0/00000000000000000000.log"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "orders-0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("directory orders-0 outlived its last file: %v", err)
	}
	if err := d.WriteAt("orders-0", []byte("now a file"), 0); err != nil {
		t.Errorf("writing a file where a directory was: %v", err)
	}
}

// Names that could escape the data directory, or that no simulated disk
// could tell apart, are refused with fs.ErrInvalid.
func TestDiskRefusesNamesOutsideItsDirectory(t *testing.T) {
	d := openDisk(t, t.TempDir())
	for _, name := range []string{"", ".", "/etc/passwd", "../escape", "a/../b", "./a", "a//b", "a/", "a\x00b"} {
		if err := d.WriteAt(name, []byte("x"), 0); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("WriteAt %q: got %v, want an invalid name error", name, err)
		}
		if _, err := d.ReadFile(name); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("ReadFile %q: got %v, want an invalid name error", name, err)
		}
	}
	if err := d.Rename("../x", "y"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Rename from ../x: got %v, want an invalid name error", err)
	}
	if got := d.List("../"); len(got) != 0 {
		t.Errorf("List(\"../\") = %q, want nothing", got)
	}
}

// A real filesystem cannot hold "a" as both a file and a directory; the
// disk says which name is in the way instead of a bare ENOTDIR.
func TestDiskNamesCannotBeBothFileAndDirectory(t *testing.T) {
	d := openDisk(t, t.TempDir())
	if err := d.WriteAt("a", []byte("file"), 0); err != nil {
		t.Fatal(err)
	}
	err := d.WriteAt("a/b", []byte("x"), 0)
	if err == nil || !strings.Contains(err.Error(), "a is a file, so it cannot also be a directory") {
		t.Errorf("WriteAt a/b over file a: %v", err)
	}
	if err := d.WriteAt("x/y", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	err = d.WriteAt("x", []byte("x"), 0)
	if err == nil || !strings.Contains(err.Error(), "x is a directory of other files") {
		t.Errorf("WriteAt x over directory x: %v", err)
	}
	if _, err := d.Size("x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Size of directory x: got %v, want not-exist: there is no file x", err)
	}
	if err := d.Remove("x"); err != nil {
		t.Errorf("Remove of directory x: %v, want nil: there is no file x", err)
	}
}

// List reports files only: a stray directory or symlink is not a file of
// the disk.
func TestDiskListsOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, dir)
	d.Append("a/file", []byte("x"))
	os.MkdirAll(filepath.Join(dir, "a", "empty"), 0o755)
	os.Symlink("file", filepath.Join(dir, "a", "link"))
	if got, want := d.List(""), []string{"a/file"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

// More files than the disk keeps handles for all read back: closing a
// cached handle loses nothing.
func TestDiskManyFilesOutnumberTheOpenHandles(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, dir)
	const files = 300
	for round := range 2 {
		for i := range files {
			name := fmt.Sprintf("p%d/seg", i)
			if err := d.Append(name, []byte{byte(round)}); err != nil {
				t.Fatalf("Append %s: %v", name, err)
			}
		}
	}
	d.Close()
	d = openDisk(t, dir)
	for i := range files {
		name := fmt.Sprintf("p%d/seg", i)
		if got, err := d.ReadFile(name); err != nil || string(got) != "\x00\x01" {
			t.Fatalf("%s holds %q, %v after reopening; want both appends", name, got, err)
		}
	}
	if got := len(d.List("")); got != files {
		t.Errorf("List has %d files, want %d", got, files)
	}
}

func TestOpenDiskRefusesAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(f, nil, 0o644)
	if _, err := host.OpenDisk(f); err == nil || !strings.Contains(err.Error(), "not-a-dir") {
		t.Errorf("OpenDisk on a file: %v", err)
	}
}
