package prefetch

import (
	"testing"
	"unsafe"
)

// A prefetch is a hint: it neither faults nor changes memory, whatever it
// is given.
func TestAHintNeitherFaultsNorWrites(t *testing.T) {
	Line(nil)
	b := []byte{1, 2, 3}
	Line(unsafe.Pointer(&b[0]))
	if b[0] != 1 || b[1] != 2 || b[2] != 3 {
		t.Fatalf("prefetch changed memory: %v", b)
	}
}
