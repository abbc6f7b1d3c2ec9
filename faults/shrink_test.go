package faults_test

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// thirty is a schedule of 30 actions over n1..n5 in which exactly one crash
// of n1 and one partition isolating n2 are planted among faults of every
// kind that pair up (crash/start, power-loss/start, pause/resume,
// partition/heal, cut/heal) and some that stand alone.
func thirty(t *testing.T) faults.Schedule {
	s := mustParse(t, `
+1s crash n3
+1.5s clog n4 <-> n5 for 2s
+2s partition [n1, n3] [n4]
+3s start n3
+4s heal
+5s pause n5
+5.5s skew n4 by +2s
+6s crash n1
+7s resume n5
+8s power-loss n4
+9s reset n3
+10s cut n3 <-> n5
+11s start n1
+12s heal
+13s start n4
+14s partition [n2]
+15s crash n5
+16s drift n3 by +1000ppm
+17s heal
+18s start n5
+19s pause n1
+20s resume n1
+21s cut-one-way n2 -> n1
+22s restart n4
+23s heal
+24s clog n2 for 1s
+25s crash n2
+26s fail-sync n3 x1
+27s start n2
+28s skew n5 by -1s
`)
	require.Len(t, s, 30)
	return s
}

// fivePeers is the run the thirty-action schedule is for.
func fivePeers() faults.Options {
	return faults.Options{Duration: time.Minute, Brokers: []string{"n1", "n2", "n3", "n4", "n5"}, DiskFaultyMax: 5}
}

func has(s faults.Schedule, line string) bool {
	for _, a := range s {
		if strings.TrimPrefix(a.String(), "+"+a.At.String()+" ") == line {
			return true
		}
	}
	return false
}

// wellFormed fails the test if a schedule tried while shrinking broke a
// pair apart: an undo without its fault, or a fault never undone.
func wellFormed(t *testing.T, s faults.Schedule) {
	t.Helper()
	require.NoError(t, faults.ClassAll.Check(s, fivePeers()), "a fault lost what undoes it:\n%s", s)
	count := map[faults.Kind]int{}
	for _, a := range s {
		count[a.Kind]++
	}
	require.Equal(t, count[faults.KindCrash]+count[faults.KindPowerLoss], count[faults.KindStart], "starts without crashes:\n%s", s)
	require.Equal(t, count[faults.KindPause], count[faults.KindResume], "resumes without pauses:\n%s", s)
	if count[faults.KindHeal] > 0 {
		require.Positive(t, count[faults.KindPartition]+count[faults.KindCut]+count[faults.KindCutOneWay], "a heal of nothing:\n%s", s)
	}
}

func TestShrinkFindsThePlantedPairInThirtyActions(t *testing.T) {
	runs := 0
	fails := func(s faults.Schedule, size int) bool {
		runs++
		wellFormed(t, s)
		return has(s, "crash n1") && has(s, "partition [n2]")
	}
	var log []string
	got, size := faults.Shrink(thirty(t), 100, fails, faults.ShrinkOptions{
		SizeMin: 1,
		Log:     func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) },
	})
	require.Equal(t, `+6s crash n1
+11s start n1
+14s partition [n2]
+17s heal
`, got.String(), "the crash and the partition, each with what undoes it")
	require.Equal(t, 1, size, "the failure does not depend on the workload's size")
	t.Logf("%d runs; %s", runs, log[len(log)-1])
	require.Less(t, runs, 80)
}

func TestShrinkFindsTheSmallestFailingWorkload(t *testing.T) {
	runs := 0
	fails := func(s faults.Schedule, size int) bool {
		runs++
		return has(s, "crash n1") && size >= 37
	}
	got, size := faults.Shrink(thirty(t), 1000, fails, faults.ShrinkOptions{SizeMin: 1})
	require.Equal(t, "+6s crash n1\n+11s start n1\n", got.String())
	require.Equal(t, 37, size)
	t.Logf("%d runs", runs)
}

func TestShrinkNeverRunsTheSameCaseTwiceAndStopsAtItsBudget(t *testing.T) {
	failing := func(s faults.Schedule, size int) bool {
		return has(s, "crash n1") && has(s, "partition [n2]") && size > 10
	}
	seen := map[string]bool{}
	runs := 0
	fails := func(s faults.Schedule, size int) bool {
		runs++
		key := fmt.Sprint(size, s)
		require.False(t, seen[key], "ran twice:\n%s", key)
		seen[key] = true
		return failing(s, size)
	}
	got, size := faults.Shrink(thirty(t), 100, fails, faults.ShrinkOptions{})
	require.True(t, failing(got, size))
	require.Equal(t, 4, len(got))
	require.Equal(t, 11, size)

	runs = 0
	clear(seen)
	got, size = faults.Shrink(thirty(t), 100, fails, faults.ShrinkOptions{RunsMax: 15})
	require.Equal(t, 15, runs)
	require.True(t, failing(got, size), "what it returns when the budget runs out still fails")
	require.Less(t, len(got), 30, "and is smaller than what it was given")
}

func TestShrinkIsDeterministic(t *testing.T) {
	shrink := func() (string, []string) {
		var tried []string
		got, size := faults.Shrink(thirty(t), 64, func(s faults.Schedule, size int) bool {
			tried = append(tried, fmt.Sprint(size, len(s)))
			return has(s, "pause n5") && size%2 == 0
		}, faults.ShrinkOptions{})
		return fmt.Sprint(size, got), tried
	}
	a, triedA := shrink()
	b, triedB := shrink()
	require.Equal(t, a, b)
	require.Equal(t, triedA, triedB)
}

func TestShrinkLeavesAPassingScheduleAlone(t *testing.T) {
	s := thirty(t)
	runs := 0
	got, size := faults.Shrink(s, 50, func(faults.Schedule, int) bool { runs++; return false }, faults.ShrinkOptions{})
	require.Equal(t, s, got)
	require.Equal(t, 50, size)
	require.Equal(t, 1, runs)
}

func TestShrinkKeepsTheFaultWhoseTagAKeptActionUses(t *testing.T) {
	s := mustParse(t, `
+1s crash n3
+2s pause leader of orders/0 as $1
+3s clog $1 for 1s
+4s start n3
+5s resume $1`)
	got, _ := faults.Shrink(s, 1, func(s faults.Schedule, _ int) bool {
		return slices.ContainsFunc(s, func(a faults.Action) bool { return a.Kind == faults.KindClog })
	}, faults.ShrinkOptions{})
	require.Equal(t, "+2s pause leader of orders/0 as $1\n+3s clog $1 for 1s\n+5s resume $1\n", got.String())
}

func TestShrinkEmptiesAScheduleWhenTheWorkloadFailsAlone(t *testing.T) {
	got, size := faults.Shrink(thirty(t), 8, func(_ faults.Schedule, size int) bool { return size >= 3 }, faults.ShrinkOptions{})
	require.Empty(t, got)
	require.Equal(t, 3, size)
}

// recorder is a rapid.TB that keeps a failure to itself, so a test can
// watch rapid shrink a property that is meant to fail.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()                       {}
func (r *recorder) Name() string                  { return r.TB.Name() }
func (r *recorder) Logf(string, ...any)           {}
func (r *recorder) Log(...any)                    {}
func (r *recorder) Errorf(string, ...any)         { r.failed = true }
func (r *recorder) Error(...any)                  { r.failed = true }
func (r *recorder) Fatalf(string, ...any)         { r.failed = true }
func (r *recorder) Fatal(...any)                  { r.failed = true }
func (r *recorder) FailNow()                      { r.failed = true }
func (r *recorder) Fail()                         { r.failed = true }
func (r *recorder) Failed() bool                  { return r.failed }
func (r *recorder) Skipf(format string, a ...any) { r.TB.Skipf(format, a...) }

func TestRapidShrinksADrawnScheduleToTheFaultThatMatters(t *testing.T) {
	// The property fails whenever a leader is crashed and some node paused;
	// rapid must shrink to one of each, aimed at the first role there is.
	prev := flag.Lookup("rapid.nofailfile").Value.String()
	require.NoError(t, flag.Set("rapid.nofailfile", "true")) // the failure is the point; do not save it
	t.Cleanup(func() { _ = flag.Set("rapid.nofailfile", prev) })

	o := cluster()
	class := faults.ClassCrash | faults.ClassClock
	var last faults.Schedule
	rec := &recorder{TB: t}
	rapid.Check(rec, func(t *rapid.T) {
		s := faults.Gen(class, o).Draw(t, "schedule")
		last = s
		crashesLeader := slices.ContainsFunc(s, func(a faults.Action) bool {
			return a.Kind == faults.KindCrash && a.Target.Role == faults.RoleLeader
		})
		pauses := slices.ContainsFunc(s, func(a faults.Action) bool { return a.Kind == faults.KindPause })
		if crashesLeader && pauses {
			t.Fatalf("crashed a leader and paused a node")
		}
	})
	require.True(t, rec.failed, "rapid found the failure")
	require.NoError(t, class.Check(last, o))
	require.Equal(t, `+1s crash leader of orders/0 as $1
+1.5s start $1
+1.5s pause leader of orders/0 as $2
+1.6s resume $2
`, last.String(), "shrunk to two faults, one after the other (paced), as early (after the warm-up), short and first-role as they go, and their undoing")
	t.Logf("rapid's minimal schedule:\n%s", last)
}

func TestNemesisSchedulesShrinkToo(t *testing.T) {
	o := cluster()
	for seed := uint64(1); seed <= 20; seed++ {
		s := faults.Generate(env.NewRand(seed), faults.ClassAll, o)
		var target faults.Action
		for _, a := range s {
			if a.Kind == faults.KindCrash || a.Kind == faults.KindPowerLoss || a.Kind == faults.KindPartition {
				target = a
				break
			}
		}
		if target.Kind == 0 {
			continue
		}
		got, _ := faults.Shrink(s, 1, func(s faults.Schedule, _ int) bool {
			require.NoError(t, faults.ClassAll.Check(s, o))
			return slices.ContainsFunc(s, func(a faults.Action) bool { return a.String() == target.String() })
		}, faults.ShrinkOptions{})
		require.Len(t, got, 2, "seed %d: the fault and what undoes it:\n%s", seed, got)
		require.Equal(t, target, got[0])
	}
}
