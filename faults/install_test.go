package faults_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
)

// at runs w until the given offset from start.
func at(t *testing.T, w *sim.World, start env.Time, d time.Duration) {
	t.Helper()
	require.NoError(t, w.RunUntil(start.Add(d)))
}

func install(t *testing.T, w *sim.World, s faults.Schedule, res faults.Resolver) (*faults.Installation, env.Time) {
	t.Helper()
	start := w.Now()
	in, err := faults.Install(w, s, res, start)
	require.NoError(t, err)
	return in, start
}

func TestInstalledCrashKillsTheNodeUntilItsStart(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	_, start := install(t, w, mustParse(t, "+1s crash b2\n+3s start b2"), nil)
	b2 := w.Node("b2")
	at(t, w, start, 999*time.Millisecond)
	require.True(t, b2.Running())
	at(t, w, start, time.Second)
	require.False(t, b2.Running(), "crashed at +1s")
	require.False(t, b2.PoweredOff(), "a crash leaves the machine on")
	at(t, w, start, 3*time.Second)
	require.True(t, b2.Running(), "started again at +3s")
}

func TestInstalledPowerLossTurnsTheMachineOffAndLosesUnsyncedBytes(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	d := w.Node("b1").Disk()
	require.NoError(t, d.Append("log", []byte("synced")))
	require.NoError(t, d.Sync("log"))
	require.NoError(t, d.Append("log", []byte(" and not")))
	_, start := install(t, w, mustParse(t, "+1s power-loss b1\n+2s start b1"), nil)
	at(t, w, start, 1500*time.Millisecond)
	require.True(t, w.Node("b1").PoweredOff())
	at(t, w, start, 2*time.Second)
	require.True(t, w.Node("b1").Running())
	data, err := d.ReadFile("log")
	require.NoError(t, err)
	require.Equal(t, "synced", string(data))
}

func TestInstalledPartitionCutsTheGroupsApartUntilTheHeal(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	_, start := install(t, w, mustParse(t, "+1s partition [b1, b2] [b3, controller]\n+4s heal"), nil)
	at(t, w, start, 2*time.Second)
	require.True(t, w.Reachable("b1", "b2"))
	require.False(t, w.Reachable("b1", "b3"))
	require.False(t, w.Reachable("controller", "b2"))
	require.False(t, w.Reachable("c1", "b1"), "nodes in no group form a group of their own")
	require.True(t, w.Reachable("c1", "sink"))
	at(t, w, start, 4*time.Second)
	require.Empty(t, healthy(w))
}

func TestInstalledIsolateAndOneWayCut(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	_, start := install(t, w, mustParse(t, "+1s isolate b3\n+2s heal\n+3s cut-one-way b1 -> b2\n+4s heal"), nil)
	at(t, w, start, time.Second)
	require.False(t, w.Reachable("b3", "b1"))
	require.False(t, w.Reachable("c2", "b3"))
	at(t, w, start, 3*time.Second)
	require.False(t, w.Reachable("b1", "b2"))
	require.True(t, w.Reachable("b2", "b1"), "only one way is cut")
	at(t, w, start, 4*time.Second)
	require.Empty(t, healthy(w))
}

func TestInstalledPauseFreezesUntilResume(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	_, start := install(t, w, mustParse(t, "+1s pause controller\n+2s resume controller"), nil)
	at(t, w, start, 1500*time.Millisecond)
	require.True(t, w.Node("controller").Paused())
	at(t, w, start, 2*time.Second)
	require.False(t, w.Node("controller").Paused())
}

func TestSkewMovesTheNodesClockAndHealAllPutsItBack(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	in, start := install(t, w, mustParse(t, "+1s skew b1 by -3s\n+2s skew b1 by +1s\n+2s drift b2 by +100000ppm"), nil)
	at(t, w, start, 2*time.Second)
	b1, b2 := probeOf(w, "b1").e, probeOf(w, "b2").e
	require.Equal(t, w.Now().Add(-2*time.Second), b1.WallClock())
	require.Equal(t, w.Now(), b1.Now(), "a skew steps the wall clock, never the monotonic one")
	at(t, w, start, 12*time.Second)
	require.Equal(t, w.Now().Add(time.Second), b2.Now(), "10%% fast for 10 s")
	require.Equal(t, w.Now().Add(time.Second), b2.WallClock(), "drift moves both clocks")
	in.HealAll(nodesOf(o))
	require.Equal(t, w.Now(), b1.WallClock(), "skew undone")
	require.Equal(t, w.Now(), b2.WallClock(), "drift's gain undone on the wall clock")
	mono := b2.Now()
	at(t, w, start, 22*time.Second)
	require.Equal(t, mono.Add(10*time.Second), b2.Now(), "drift stopped; the monotonic clock keeps its gain and never steps back")
	require.Equal(t, w.Now(), b2.WallClock())
}

func TestDelayFrameHoldsBackTheMatchingRequestOnly(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	c1 := probeOf(w, "c1")
	var conn env.ConnID
	w.Node("c1").Exec(func() { conn = c1.e.Dial("b1") })
	require.NoError(t, w.RunFor(100*time.Millisecond))
	_, start := install(t, w, mustParse(t, "+0s delay-frame EndTxn c1 -> b1 by 2s x1"), nil)
	require.NoError(t, w.RunFor(time.Millisecond))
	produce := []byte{0, 0, 0, 9} // API key 0, version 9
	endTxn := []byte{0, 26, 0, 3} // API key 26
	w.Node("c1").Exec(func() {
		c1.e.Send(conn, endTxn)
		c1.e.Send(conn, produce)
	})
	w.Node("c1").Exec(func() { c1.e.Send(conn, endTxn) })
	at(t, w, start, 5*time.Second)
	got := probeOf(w, "b1").frames
	require.Len(t, got, 3)
	sent := start.Add(time.Millisecond)
	require.GreaterOrEqual(t, got[0].at.Sub(sent), 2*time.Second, "the first EndTxn waits 2 s")
	require.Equal(t, endTxn, got[0].frame)
	require.Equal(t, produce, got[1].frame, "and the frames behind it wait too: a connection never reorders")
	require.Less(t, got[2].at.Sub(got[1].at), 10*time.Millisecond, "only one frame was delayed")
}

func TestDiskFaultsReachTheNodesDisk(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	d := w.Node("b1").Disk()
	require.NoError(t, d.Append("orders-0/log", []byte("0123456789")))
	require.NoError(t, d.Sync("orders-0/log"))
	in, start := install(t, w, mustParse(t, `+1s fail-sync b1 x1
+1s fail-read b1 x1 under "orders-0/"
+1s corrupt b1 under "orders-0/"
+1s corrupt b1 under "nothing-here/"`), nil)
	at(t, w, start, time.Second)
	require.Error(t, d.Sync("orders-0/log"), "the next sync fails")
	require.NoError(t, d.Sync("orders-0/log"), "only the next one")
	_, err := d.ReadFile("orders-0/log")
	require.Error(t, err, "the next read fails")
	data, err := d.ReadFile("orders-0/log")
	require.NoError(t, err)
	require.NotEqual(t, "0123456789", string(data), "a bit flipped")
	fired := in.Fired()
	require.Equal(t, `no file under "nothing-here/" on b1`, fired[3].Skipped)
}

func TestRolesResolveWhenTheActionFires(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	r := newRoles(o)
	s := mustParse(t, `
+1s crash leader of orders/0 as $1
+3s start $1
+4s isolate leader of orders/0
+5s heal`)
	in, start := install(t, w, s, r)
	w.At(start.Add(500*time.Millisecond), func() { r.leader["orders/0"] = "b2" })
	w.At(start.Add(2*time.Second), func() { r.leader["orders/0"] = "b3" }) // a new leader is elected
	at(t, w, start, 1500*time.Millisecond)
	require.False(t, w.Node("b2").Running(), "b2 led orders/0 when the crash fired")
	require.True(t, w.Node("b1").Running(), "b1 led it when the schedule was installed")
	at(t, w, start, 4*time.Second)
	require.True(t, w.Node("b2").Running(), "$1 started the node that was crashed, not today's leader")
	require.False(t, w.Reachable("b3", "b1"), "the isolation found the new leader")

	var lines []string
	for _, f := range in.Fired() {
		lines = append(lines, f.String())
	}
	require.Equal(t, []string{
		"+1s crash leader of orders/0 as $1 → b2",
		"+3s start $1 → b2",
		"+4s isolate leader of orders/0 → b3",
	}, lines)
	require.Equal(t, []string{"leader of orders/0", "leader of orders/0"}, r.asked, "tags never reach the resolver")
	require.Equal(t, start.Add(time.Second), in.Fired()[0].At)
}

func TestARoleNobodyPlaysSkipsTheActionAndWhatUndoesIt(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	r := newRoles(o)
	r.refuses = true
	in, start := install(t, w, mustParse(t, "+1s crash leader of orders/0 as $1\n+2s start $1\n+3s clog b1 <-> b1 for 1s"), r)
	at(t, w, start, 3*time.Second)
	require.Empty(t, healthy(w))
	var skipped []string
	for _, f := range in.Fired() {
		skipped = append(skipped, f.Skipped)
	}
	require.Equal(t, []string{"no node is leader of orders/0", "$1 was not applied", "both ends are b1"}, skipped)
}

func TestEveryFiredActionWritesATraceNote(t *testing.T) {
	o := cluster()
	var trace bytes.Buffer
	w := sim.New(sim.Options{Seed: 1, TraceJSON: &trace})
	for _, n := range nodesOf(o) {
		w.AddNode(n, func() env.Process { return &probe{} }).Start()
	}
	_, start := install(t, w, mustParse(t, "+1s crash leader of orders/0 as $1\n+2s start $1\n+3s partition [b1] [b2]\n+4s heal"), newRoles(o))
	var fired []string
	at(t, w, start, 5*time.Second)
	for _, line := range strings.Split(trace.String(), "\n") {
		if i := strings.Index(line, "faults: "); i >= 0 {
			fired = append(fired, line[i:i+strings.IndexByte(line[i:], '"')])
		}
	}
	require.Equal(t, []string{
		"faults: +1s crash leader of orders/0 as $1 → b1",
		"faults: +2s start $1 → b1",
		"faults: +3s partition [b1] [b2] → [b1] [b2]",
		"faults: +4s heal",
	}, fired)
}

func TestInstallRefusesWhatItCannotApply(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	_, err := faults.Install(w, mustParse(t, "+1s crash b9"), nil, w.Now())
	require.ErrorContains(t, err, "names node b9, which the world does not have")
	_, err = faults.Install(w, mustParse(t, "+1s crash a client"), nil, w.Now())
	require.ErrorContains(t, err, `needs a Resolver for "a client"`)
}

func TestHealAllLeavesAHealthyWorldWhateverWasLeftBroken(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	w.AddNode("late", func() env.Process { return &probe{} }) // never started
	_, start := install(t, w, mustParse(t, `
+1s crash b1
+1s power-loss torn b2
+1s pause controller
+1s partition [b3] [c1, c2]
+1s cut-one-way sink -> b1`), nil)
	at(t, w, start, 2*time.Second)
	require.NotEmpty(t, healthy(w))
	faults.HealAll(w, append(nodesOf(o), "late"))
	require.NoError(t, w.RunFor(time.Millisecond))
	require.Empty(t, healthy(w))
}

func TestAGeneratedScheduleRunsOnAWorldAndReplaysExactly(t *testing.T) {
	o := cluster()
	run := func() (string, []string) {
		w := world(t, 7, o)
		s := faults.Generate(w.Rand("faults"), faults.ClassAll, o)
		in, start := install(t, w, s, newRoles(o))
		at(t, w, start, o.Duration)
		in.HealAll(nodesOf(o))
		require.NoError(t, w.RunFor(time.Second))
		require.Empty(t, healthy(w))
		require.Len(t, in.Fired(), len(s), "every action fired")
		var fired []string
		for _, f := range in.Fired() {
			fired = append(fired, f.String())
		}
		return w.Trace().HashString(), fired
	}
	h1, f1 := run()
	h2, f2 := run()
	require.Equal(t, f1, f2)
	require.Equal(t, h1, h2, "same seed, same schedule, same trace")
}
