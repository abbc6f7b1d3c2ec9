package history_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
)

// Read makes room for a history from the bytes left to read when the
// reader can say (a file, a bytes.Reader), instead of growing it by 1.25x
// at a time: it reads the same history whichever reader it reads from,
// and allocates well under what it does from a reader that cannot say.
func TestReadMakesRoomFromWhatTheFileHolds(t *testing.T) {
	h := historytest.Log(historytest.DefaultLogConfig(20_000, 4, 8), rand.New(rand.NewPCG(7, 0)))
	var file bytes.Buffer
	if err := h.Write(&file); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(name string, r io.Reader) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := history.Read(r)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("%s: read a different history", name)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	unsized := read("a reader that cannot say its size", iotest.HalfReader(bytes.NewReader(file.Bytes())))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, r := range map[string]io.Reader{"a bytes.Reader": bytes.NewReader(file.Bytes()), "a file": f} {
		if sized := read(name, r); sized > unsized*3/4 {
			t.Errorf("reading from %s allocated %d bytes, from a reader that cannot say its size %d: the room was not reckoned from the size", name, sized, unsized)
		}
	}
}
