package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFramesArriveInOrderUnderRandomLatency(t *testing.T) {
	w, a, b := twoNodes(7)
	w.SetLatency("a", "b", 0, 50*time.Millisecond) // wide spread: would reorder if allowed
	c := dial(w, a, "b")
	const n = 2000
	w.Node("a").Exec(func() {
		for i := range n {
			a().e.Send(c, seqFrame(i))
		}
	})
	require.NoError(t, w.RunFor(2*time.Second))
	var got [][]byte
	for _, fs := range b().received {
		got = append(got, fs...)
	}
	require.Len(t, got, n)
	for i, f := range got {
		require.Equal(t, seqFrame(i), f, "frame %d out of order", i)
	}
}

// The network does not copy a sent frame (env.Env leaves it to the
// network): a sender that changes one after Send fails the run loudly
// instead of sending what it did not mean to.
func TestASenderThatChangesASentFrameFailsTheRun(t *testing.T) {
	w, a, _ := twoNodes(1)
	c := dial(w, a, "b")
	buf := []byte("original")
	w.Node("a").Exec(func() { a().e.Send(c, buf); copy(buf, "mutated!") })
	err := w.RunFor(time.Second)
	require.ErrorContains(t, err, "changed before it arrived")
}

func TestNoFrameCrossesACut(t *testing.T) {
	w, a, b := twoNodes(3)
	c := dial(w, a, "b")
	w.Node("a").Exec(func() { a().e.Send(c, []byte("in flight")) })
	w.Cut("a", "b") // at the same instant: the frame is already on the wire
	w.Node("a").Exec(func() { a().e.Send(c, []byte("after")) })
	require.NoError(t, w.RunFor(10*time.Second))
	require.Zero(t, b().frames(), "a frame crossed a cut")

	w.Heal()
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, 2, b().frames(), "frames held by a short cut arrive after heal, as TCP retransmits")
	require.Empty(t, a().closed)
}

func TestCutLongerThanStallTimeoutResetsBothEnds(t *testing.T) {
	w, a, b := twoNodes(4)
	c := dial(w, a, "b")
	w.Partition([]string{"a"}, []string{"b"})
	w.Node("a").Exec(func() { a().e.Send(c, []byte("lost")) })
	require.NoError(t, w.RunFor(DefaultOptions.StallTimeout+time.Second))
	require.Equal(t, []any{c}, toAny(a().closed))
	require.Len(t, b().closed, 1)
	w.Heal()
	require.NoError(t, w.RunFor(time.Second))
	require.Zero(t, b().frames())
}

func TestOneWayCutStopsOneDirectionOnly(t *testing.T) {
	w, a, b := twoNodes(5)
	c := dial(w, a, "b")
	var cb = b().connected[0]
	w.CutOneWay("a", "b")
	w.Node("a").Exec(func() { a().e.Send(c, []byte("a->b")) })
	w.Node("b").Exec(func() { b().e.Send(cb, []byte("b->a")) })
	require.NoError(t, w.RunFor(time.Second))
	require.Zero(t, b().frames())
	require.Equal(t, 1, a().frames())
}

func TestResetTellsBothEndsAndLosesInFlightFrames(t *testing.T) {
	w, a, b := twoNodes(6)
	c := dial(w, a, "b")
	w.SetLatency("a", "b", 10*time.Millisecond, 10*time.Millisecond)
	w.Node("a").Exec(func() { a().e.Send(c, []byte("doomed")) })
	w.After(time.Millisecond, func() { w.ResetLink("a", "b") })
	require.NoError(t, w.RunFor(time.Second))
	require.Zero(t, b().frames())
	require.Len(t, a().closed, 1)
	require.Len(t, b().closed, 1)
	// A reset connection stays dead.
	w.Node("a").Exec(func() { a().e.Send(c, []byte("after")) })
	require.NoError(t, w.RunFor(time.Second))
	require.Zero(t, b().frames())
}

func TestCloseTellsThePeerAfterFramesInFlight(t *testing.T) {
	w, a, b := twoNodes(8)
	c := dial(w, a, "b")
	w.Node("a").Exec(func() {
		a().e.Send(c, []byte("last words"))
		a().e.Close(c)
	})
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, 1, b().frames())
	require.Len(t, b().closed, 1)
	require.Empty(t, a().closed, "the closing side is not told")
}

func TestDialToStoppedProcessIsRefused(t *testing.T) {
	w, a, _ := twoNodes(9)
	w.Node("b").Crash()
	var c = dial(w, a, "b")
	require.Equal(t, []any{c}, toAny(a().closed))
	require.Empty(t, a().connected)
}

func TestDialToPoweredOffNodeTimesOut(t *testing.T) {
	w, a, _ := twoNodes(10)
	w.Node("b").PowerLoss(false)
	c := dial(w, a, "b")
	require.Empty(t, a().closed, "no answer yet: the machine is silent")
	require.NoError(t, w.RunFor(DefaultOptions.ConnectTimeout))
	require.Equal(t, []any{c}, toAny(a().closed))
}

func TestClogDelaysWithoutBreaking(t *testing.T) {
	w, a, b := twoNodes(11)
	c := dial(w, a, "b")
	w.Clog("a", "b", time.Minute) // longer than StallTimeout: a clog never resets
	w.Node("a").Exec(func() { a().e.Send(c, []byte("slow")) })
	require.NoError(t, w.RunFor(59*time.Second))
	require.Zero(t, b().frames())
	require.NoError(t, w.RunFor(2*time.Second))
	require.Equal(t, 1, b().frames())
	require.Empty(t, a().closed)
	require.Empty(t, b().closed)
}

func TestDelayedFrameHoldsBackTheFramesBehindIt(t *testing.T) {
	w, a, b := twoNodes(12)
	c := dial(w, a, "b")
	w.DelayFrame("a", "b", func(f []byte) bool { return bytes.Equal(f, []byte("late")) }, 5*time.Second, 1)
	w.Node("a").Exec(func() {
		a().e.Send(c, []byte("first"))
		a().e.Send(c, []byte("late"))
		a().e.Send(c, []byte("behind"))
	})
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, 1, b().frames())
	require.NoError(t, w.RunFor(5*time.Second))
	var got []string
	for _, fs := range b().received {
		for _, f := range fs {
			got = append(got, string(f))
		}
	}
	require.Equal(t, []string{"first", "late", "behind"}, got)
}

func TestCrashClosesConnectionsForThePeer(t *testing.T) {
	w, a, b := twoNodes(13)
	dial(w, a, "b")
	w.Node("a").Crash()
	require.NoError(t, w.RunFor(time.Second))
	require.Len(t, b().closed, 1)
}

func TestPowerLossLeavesThePeerUnawareUntilItSends(t *testing.T) {
	w, a, b := twoNodes(14)
	dial(w, a, "b")
	cb := b().connected[0]
	w.Node("a").PowerLoss(false)
	require.NoError(t, w.RunFor(time.Minute))
	require.Empty(t, b().closed, "a dead machine sends no FIN")

	w.Node("a").Start()
	require.NoError(t, w.RunFor(time.Second))
	w.Node("b").Exec(func() { b().e.Send(cb, []byte("anyone?")) })
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, []any{cb}, toAny(b().closed), "the rebooted kernel answers with a reset")
}

func toAny[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
