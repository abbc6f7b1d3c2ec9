package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"slices"
	"testing"

	"github.com/kafkasim/kafkasim/env"
)

// A peer announcing a 100 MiB frame and sending ten bytes costs about one
// read chunk, not 100 MiB: memory follows the bytes that arrive.
func TestHostileLengthAllocatesOnlyWhatArrives(t *testing.T) {
	const announced = DefaultFrameBytesMax
	input := append(binary.BigEndian.AppendUint32(nil, announced), "ten bytes!"...)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(input), DefaultFrameBytesMax)
	runtime.ReadMemStats(&after)

	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a frame cut short gave %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*readChunkBytes {
		t.Errorf("reading 10 bytes of an announced %d allocated %d bytes", announced, got)
	}
}

// Long frames assembled chunk by chunk come out byte for byte.
func TestLongFramesAreReadWhole(t *testing.T) {
	for _, size := range []int{0, 1, readChunkBytes - 1, readChunkBytes, readChunkBytes + 1, 3*readChunkBytes + 17} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i * 13)
		}
		input := append(binary.BigEndian.AppendUint32(nil, uint32(size)), want...)
		got, err := readFrame(bytes.NewReader(input), DefaultFrameBytesMax)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("size %d: got %d bytes, %v", size, len(got), err)
		}
	}
}

// Timers fire in deadline order, ties in the order set, and a cancelled one
// leaves the queue at once.
func TestTimerQueueOrdersByDeadlineThenSetOrder(t *testing.T) {
	var q timerQueue
	var fired []int
	for i, deadline := range []int64{50, 10, 30, 10, 40, 20} {
		q.add(env.Time(deadline), func() { fired = append(fired, i) })
	}
	if !q.cancel(5) || q.cancel(5) {
		t.Fatalf("cancel of timer 5: want true once, then false")
	}
	for q.next() != nil {
		next := q.next()
		q.cancel(next.id)
		next.f()
	}
	// Timer ids are 1-based: index i is id i+1; id 5 (index 4) was cancelled.
	if want := []int{1, 3, 5, 2, 0}; !slices.Equal(fired, want) {
		t.Errorf("fired %v, want %v", fired, want)
	}
}
