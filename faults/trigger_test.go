package faults_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/stretchr/testify/require"
)

// A crash armed on a probe lands right after the event that hit it, on the
// node that hit it — not at its At, and not on whoever a role names.
func TestATriggeredCrashLandsRightAfterTheProbeHitOnTheProbedNode(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	in, start := install(t, w, mustParse(t, "+1s when produce-acknowledged-before-replication on orders/0 within 5s: crash the probed node as $1\n+9s start $1"), nil)
	// A hit before the trigger is armed, and one about another subject, do nothing.
	w.Node("b3").Exec(func() { probeOf(w, "b3").e.Probe("produce-acknowledged-before-replication", "orders/0") })
	at(t, w, start, 2*time.Second)
	w.Node("b3").Exec(func() { probeOf(w, "b3").e.Probe("produce-acknowledged-before-replication", "orders/1") })
	at(t, w, start, 2500*time.Millisecond)
	require.True(t, w.Node("b3").Running())
	hitAt := w.Now()
	w.Node("b2").Exec(func() {
		probeOf(w, "b2").e.Probe("produce-acknowledged-before-replication", "orders/0")
		require.True(t, w.Node("b2").Running(), "the fault waits for the event that hit the probe to end")
	})
	at(t, w, start, 2600*time.Millisecond)
	require.False(t, w.Node("b2").Running(), "crashed right after its probe hit")
	require.True(t, w.Node("b3").Running())
	fired := in.Fired()
	require.Len(t, fired, 1)
	require.Equal(t, "b2", fired[0].Node)
	require.Equal(t, hitAt, fired[0].At)
	at(t, w, start, 9*time.Second)
	require.True(t, w.Node("b2").Running(), "$1 is the probed node, started again")
}

// A trigger whose probe is not hit within its window is skipped, and so is
// what undoes it.
func TestATriggerNotHitInItsWindowIsSkippedWithItsUndo(t *testing.T) {
	o := cluster()
	w := world(t, 1, o)
	in, start := install(t, w, mustParse(t, "+1s when isr-expansion-pending within 2s: isolate the probed node\n+4s heal"), nil)
	at(t, w, start, 5*time.Second)
	fired := in.Fired()
	require.Len(t, fired, 2)
	require.Equal(t, "isr-expansion-pending not hit within 2s", fired[0].Skipped)
	require.Equal(t, start.Add(3*time.Second), fired[0].At)
	require.Empty(t, healthy(w))
}

func TestTriggersPrintParseAndSaveAsData(t *testing.T) {
	line := "+5s when follower-fetch-out-of-sync on input/0 within 3s: isolate the probed node"
	a, err := faults.ParseAction(line)
	require.NoError(t, err)
	require.Equal(t, faults.Action{At: 5 * time.Second, Kind: faults.KindIsolate, Target: faults.Probed(),
		When: "follower-fetch-out-of-sync", On: "input/0", Within: 3 * time.Second}, a)
	require.Equal(t, line, a.String())
	var b strings.Builder
	require.NoError(t, faults.Schedule{a}.Save(&b))
	require.Contains(t, b.String(), `"when":"follower-fetch-out-of-sync","on":"input/0","within":"3s"`)
	back, err := faults.Load(strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Equal(t, faults.Schedule{a}, back)

	for _, c := range []struct{ line, want string }{
		{"+1s when no-such-probe within 1s: crash b1", `unknown probe "no-such-probe"`},
		{"+1s when leader-elected: crash b1", `a trigger reads "when <probe> [on <subject>] within <duration>`},
		{"+1s when leader-elected within 0s: crash b1", "needs a positive window"},
		{"+1s crash the probed node", `"the probed node" is only for actions with a trigger`},
	} {
		_, err := faults.ParseAction(c.line)
		require.ErrorContains(t, err, c.want, c.line)
	}
}

func TestCheckRefusesAnUndoInsideTheTriggerWindow(t *testing.T) {
	o := cluster()
	s := mustParse(t, "+1s when leader-elected within 5s: crash the probed node as $1\n+3s start $1")
	require.ErrorContains(t, faults.ClassCrash.Check(s, o), "before its trigger window ends")
	s = mustParse(t, "+1s when leader-elected within 5s: crash the probed node as $1\n+6s start $1")
	require.NoError(t, faults.ClassCrash.Check(s, o))
}

// The nemesis paces its episodes: one at a time, each undone before the
// next begins, with a quiet interval between.
func TestGeneratedEpisodesNeverOverlap(t *testing.T) {
	o := cluster()
	o.Triggers = []faults.Trigger{{Probe: "leader-elected"}}
	for seed := uint64(1); seed <= 200; seed++ {
		s := faults.Generate(env.NewRand(seed).Fork("faults"), faults.ClassAll, o)
		require.NoError(t, faults.ClassAll.Check(s, o), "seed %d:\n%s", seed, s)
		busyUntil := time.Duration(-1) // when the open episode is undone
		episodeAt := time.Duration(-1)
		for i, a := range s {
			switch a.Kind {
			case faults.KindStart, faults.KindResume, faults.KindHeal:
				continue
			}
			if a.At != episodeAt {
				require.GreaterOrEqual(t, a.At, busyUntil, "seed %d: %q begins before the episode before it is undone:\n%s", seed, a, s)
				episodeAt = a.At
			}
			busyUntil = max(busyUntil, undoneAt(s, i))
		}
	}
}

// undoneAt is when the action at i stops acting: its start, resume or
// heal, the end of its clog, or its own time for an instant fault.
func undoneAt(s faults.Schedule, i int) time.Duration {
	a := s[i]
	if a.For > 0 || a.Kind == faults.KindReset || a.Kind == faults.KindDelayFrame || a.Kind == faults.KindSkew ||
		a.Kind == faults.KindDrift || a.Kind == faults.KindRestart {
		return a.At + a.For
	}
	for _, b := range s[i+1:] {
		switch {
		case a.Tag != "" && b.Target == faults.Tagged(a.Tag):
			return b.At
		case a.Tag == "" && a.Target.Role == faults.RoleNode && (b.Kind == faults.KindStart || b.Kind == faults.KindResume) && b.Target == a.Target:
			return b.At
		case b.Kind == faults.KindHeal && (a.Kind == faults.KindPartition || a.Kind == faults.KindIsolate || a.Kind == faults.KindCut || a.Kind == faults.KindCutOneWay):
			return b.At
		}
	}
	return a.At + a.For
}
