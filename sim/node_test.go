package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/stretchr/testify/require"
)

// writer is a process that appends a record to its disk on every tick and
// syncs when told to.
type writer struct {
	e       env.Env
	booted  []byte // the file's content when the process started
	syncOn  bool
	written int
}

func (p *writer) Start(e env.Env) {
	p.e = e
	p.booted, _ = e.Disk().ReadFile("log")
	e.AfterFunc(time.Millisecond, p.tick)
}

func (p *writer) tick() {
	p.written++
	if err := p.e.Disk().Append("log", []byte{byte(p.written)}); err != nil {
		panic(err)
	}
	if p.syncOn {
		if err := p.e.Disk().Sync("log"); err != nil {
			panic(err)
		}
	}
	p.e.AfterFunc(time.Millisecond, p.tick)
}

func (p *writer) Connected(env.ConnID, string, bool) {}
func (p *writer) Received(env.ConnID, []byte)        {}
func (p *writer) Closed(env.ConnID)                  {}

func writerWorld(syncOn bool) (*World, *Node, func() *writer) {
	w := New(Options{Seed: 1})
	n := w.AddNode("w", func() env.Process { return &writer{syncOn: syncOn} })
	n.Start()
	return w, n, func() *writer { return n.Process().(*writer) }
}

func TestCrashKeepsUnsyncedBytesInThePageCache(t *testing.T) {
	w, n, p := writerWorld(false)
	require.NoError(t, w.RunFor(10*time.Millisecond+time.Microsecond))
	require.Equal(t, 10, p().written)
	n.Crash()
	require.Nil(t, n.Process(), "a crashed node runs nothing")
	n.Start()
	require.NoError(t, w.RunFor(0))
	require.Len(t, p().booted, 10, "the operating system survived: its page cache did too")
}

func TestPowerLossDropsUnsyncedBytes(t *testing.T) {
	w, n, _ := writerWorld(false)
	require.NoError(t, w.RunFor(10*time.Millisecond+time.Microsecond))
	n.PowerLoss(false)
	n.Start()
	require.NoError(t, w.RunFor(0))
	_, err := n.Disk().Size("log")
	require.NoError(t, err, "the file itself exists: creating it was durable")
	booted := n.Process().(*writer).booted
	require.Empty(t, booted, "nothing was synced, so nothing survives")
}

func TestPowerLossKeepsSyncedBytes(t *testing.T) {
	w, n, _ := writerWorld(true)
	require.NoError(t, w.RunFor(10*time.Millisecond+time.Microsecond))
	n.PowerLoss(true)
	n.Start()
	require.NoError(t, w.RunFor(0))
	require.Len(t, n.Process().(*writer).booted, 10)
}

func TestCrashDiscardsTimers(t *testing.T) {
	w, n, p := writerWorld(false)
	require.NoError(t, w.RunFor(5*time.Millisecond+time.Microsecond))
	n.Crash()
	size, _ := n.Disk().Size("log")
	require.NoError(t, w.RunFor(time.Second))
	after, _ := n.Disk().Size("log")
	require.Equal(t, size, after, "a timer of the dead process ran")
	n.Start()
	require.NoError(t, w.RunFor(5*time.Millisecond+time.Microsecond))
	require.Equal(t, 5, p().written, "the new process starts from nothing in memory")
}

func TestPausedNodeRunsNothingUntilResumed(t *testing.T) {
	w, a, b := twoNodes(2)
	c := dial(w, a, "b")
	var ticks int
	w.Node("b").Exec(func() {
		var tick func()
		tick = func() { ticks++; b().e.AfterFunc(10*time.Millisecond, tick) }
		b().e.AfterFunc(10*time.Millisecond, tick)
	})
	require.NoError(t, w.RunFor(time.Millisecond))
	w.Node("b").Pause()
	w.Node("a").Exec(func() {
		for i := range 3 {
			a().e.Send(c, seqFrame(i))
		}
	})
	require.NoError(t, w.RunFor(time.Second))
	require.Zero(t, ticks, "a timer ran on a paused node")
	require.Zero(t, b().frames(), "a frame was handled by a paused node")

	w.Node("b").Resume()
	require.NoError(t, w.RunFor(0))
	require.Equal(t, 1, ticks, "the timer due during the pause runs once at resume")
	require.Equal(t, 3, b().frames())
	require.NoError(t, w.RunFor(time.Second))
	require.Greater(t, ticks, 90)
}

func TestCancelledTimerNeverFires(t *testing.T) {
	w, a, _ := twoNodes(3)
	fired := false
	w.Node("a").Exec(func() {
		id := a().e.AfterFunc(time.Second, func() { fired = true })
		require.True(t, a().e.Cancel(id))
		require.False(t, a().e.Cancel(id), "a second cancel finds nothing")
	})
	require.NoError(t, w.RunFor(time.Minute))
	require.False(t, fired)
}

func TestTimersFireInDeadlineOrderAtTheirTime(t *testing.T) {
	w, a, _ := twoNodes(4)
	var order []int
	var at []env.Time
	w.Node("a").Exec(func() {
		for _, d := range []int{30, 10, 20, 10} {
			d := d
			a().e.AfterFunc(time.Duration(d)*time.Millisecond, func() {
				order = append(order, d)
				at = append(at, w.Now())
			})
		}
	})
	start := w.Now()
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, []int{10, 10, 20, 30}, order)
	require.Equal(t, start.Add(10*time.Millisecond), at[0])
	require.Equal(t, start.Add(30*time.Millisecond), at[3])
}

func TestSkewStepsTheWallClockNotTheMonotonicClockNorTheTimers(t *testing.T) {
	w, a, _ := twoNodes(5)
	before, wall := a().e.Now(), a().e.WallClock()
	w.Node("a").SkewClock(-time.Hour)
	require.Equal(t, wall.Add(-time.Hour), a().e.WallClock())
	require.Equal(t, before, a().e.Now(), "the monotonic clock never steps")
	fired := false
	w.Node("a").Exec(func() { a().e.AfterFunc(time.Second, func() { fired = true }) })
	require.NoError(t, w.RunFor(time.Second+time.Microsecond))
	require.True(t, fired)
}

func TestDriftStretchesLocalTime(t *testing.T) {
	w, a, _ := twoNodes(6)
	w.Node("a").DriftClock(100_000) // 10% fast
	before := a().e.Now()
	var firedAt env.Time
	w.Node("a").Exec(func() { a().e.AfterFunc(110*time.Millisecond, func() { firedAt = w.Now() }) })
	start := w.Now()
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, before.Add(1100*time.Millisecond), a().e.Now(), "a fast clock reads 1.1 s after 1 s")
	require.Equal(t, start.Add(100*time.Millisecond), firedAt, "a 110 ms local timer is 100 ms of world time")
}

// A process that waits for a deadline by re-arming a timer for what is
// left (as the rpc client's redial backoff does) must see its clock reach
// the deadline: on a fast clock a 1 ns timer once took 0 ns of world time,
// the clock never moved, and the world died of a livelock.
func TestATimerOnAFastClockAlwaysLetsTimeMove(t *testing.T) {
	w, a, _ := twoNodes(8)
	w.Node("a").DriftClock(20_000)
	var deadline env.Time
	fires := 0
	var wait func()
	wait = func() {
		fires++
		if left := deadline.Sub(a().e.Now()); left > 0 {
			a().e.AfterFunc(left, wait)
		}
	}
	w.Node("a").Exec(func() {
		deadline = a().e.Now().Add(time.Nanosecond)
		a().e.AfterFunc(time.Nanosecond, wait)
	})
	require.NoError(t, w.RunFor(time.Millisecond))
	require.LessOrEqual(t, fires, 2)
	require.False(t, a().e.Now().Before(deadline))
	for _, ppm := range []int64{-100_000, -1, 1, 999, 100_000} {
		c := clock{driftPPM: ppm}
		for _, d := range []time.Duration{1, 2, 3, 999, 1_000_001, time.Second} {
			wd := c.worldDuration(d)
			require.Positive(t, wd)
			require.GreaterOrEqual(t, scale(wd, 1_000_000+ppm, 1_000_000), d, "ppm %d: a %v timer fires before its clock reads %v", ppm, d, d)
		}
	}
}

func TestPanicInProcessStopsTheWorldWithTheNode(t *testing.T) {
	w, a, _ := twoNodes(7)
	w.Node("a").Exec(func() { a().e.AfterFunc(time.Millisecond, func() { panic("invariant broken") }) })
	err := w.RunFor(time.Second)
	var pe *PanicError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, "node a", pe.Where)
	require.Equal(t, "invariant broken", pe.Value)
	require.False(t, w.Step(), "a failed world stays stopped")
}

func TestZeroDelayLoopIsALivelock(t *testing.T) {
	w := New(Options{Seed: 1, InstantEventsMax: 1000})
	n := w.AddNode("spin", func() env.Process { return newPeer() })
	n.Start()
	require.NoError(t, w.RunFor(time.Millisecond))
	p := n.Process().(*peer)
	var spin func()
	spin = func() { p.e.AfterFunc(0, spin) }
	n.Exec(spin)
	var le *LivelockError
	require.ErrorAs(t, w.RunFor(time.Second), &le)
}

func TestRestartGivesAFreshProcessOnTheSameDisk(t *testing.T) {
	w, n, p := writerWorld(true)
	require.NoError(t, w.RunFor(3*time.Millisecond+time.Microsecond))
	first := p()
	n.Restart()
	require.NoError(t, w.RunFor(0))
	require.NotSame(t, first, p())
	require.Len(t, p().booted, 3)
	require.Equal(t, uint64(3), n.Incarnation(), "boot, crash, boot")
}

func TestHealNetworkLiftsClogsAndDelaysAtOnce(t *testing.T) {
	w, a, b := twoNodes(20)
	c := dial(w, a, "b")
	w.Clog("a", "b", time.Hour)
	w.DelayFrame("a", "b", nil, time.Hour, 5)
	w.Node("a").Exec(func() { a().e.Send(c, []byte("held")) })
	require.NoError(t, w.RunFor(time.Second))
	require.Zero(t, b().frames())
	w.HealNetwork()
	w.Node("a").Exec(func() { a().e.Send(c, []byte("free")) })
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, 2, b().frames())
}

func TestResetClockUndoesSkewAndDrift(t *testing.T) {
	w, a, _ := twoNodes(21)
	w.Node("a").SkewClock(time.Minute)
	w.Node("a").DriftClock(50_000)
	require.NoError(t, w.RunFor(time.Second))
	require.NotZero(t, w.Node("a").ClockOffset())
	mono := a().e.Now()
	w.Node("a").ResetClock()
	require.Zero(t, w.Node("a").ClockOffset())
	require.Equal(t, w.Now(), a().e.WallClock())
	require.Equal(t, mono, a().e.Now(), "the monotonic clock does not step back")
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, mono.Add(time.Second), a().e.Now(), "and no longer drifts")
}

// The trace hash is the determinism check's evidence: two runs that wrote
// different bytes to a disk, or synced differently, must not hash alike even
// when every message and timer matched (issue 15: the fsync and no-fsync
// twins of the power scenarios once shared trace hashes).
func TestTheTraceHashCoversWhatWasWrittenAndSynced(t *testing.T) {
	hash := func(syncOn bool, edit func(n *Node)) string {
		w, n, _ := writerWorld(syncOn)
		require.NoError(t, w.RunFor(5*time.Millisecond+time.Microsecond))
		if edit != nil {
			n.Exec(func() { edit(n) })
		}
		require.NoError(t, w.RunFor(5*time.Millisecond))
		return w.Trace().HashString()
	}
	plain := hash(false, nil)
	require.Equal(t, plain, hash(false, nil), "same seed, same disk: same hash")
	require.NotEqual(t, plain, hash(true, nil), "syncing is part of the trace")
	write := func(b byte) func(n *Node) {
		return func(n *Node) { require.NoError(t, n.Disk().WriteAt("other", []byte{b}, 0)) }
	}
	require.NotEqual(t, hash(false, write(1)), hash(false, write(2)), "the bytes written are part of the trace")
	require.NotEqual(t, plain, hash(false, func(n *Node) { require.NoError(t, n.Disk().Truncate("log", 2)) }), "a truncation is part of the trace")
	require.NotEqual(t, plain, hash(false, func(n *Node) { require.NoError(t, n.Disk().Rename("log", "log.old")) }), "a rename is part of the trace")
}
