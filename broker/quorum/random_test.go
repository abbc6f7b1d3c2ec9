package quorum_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chaos runs seed for d of random faults among 3 voters — crashes, power
// losses (torn or not), restarts, isolations, splits, one-link cuts and
// heals — then restarts everyone and heals, and checks that a leader
// commits within 10s. Safety is checked all along by the harness (one
// leader per epoch, one entry per committed offset, HW never back, the
// core's and the voter's invariants). It returns the election times it
// measured: from a fault that took the leader away, with every other node
// up and connected, to the next election, when no other fault came
// between.
func chaos(t testing.TB, seed uint64, d time.Duration) (*harness, map[string][]time.Duration) {
	h := newHarness(t, seed, 3)
	rnd := h.w.Rand("chaos")
	// Half the seeds sync each step's appends at once, half after a delay,
	// so that power losses drop appended entries.
	h.flushDelay = []time.Duration{0, 0, 3 * time.Millisecond, 30 * time.Millisecond}[seed%4]
	times := map[string][]time.Duration{}
	var pendingFrom time.Duration = -1
	var pendingKind, kind string
	var pendingEpoch int32
	down := map[string]bool{} // crashed or powered off
	cut := false
	end := d
	for h.w.Elapsed() < end {
		step := rnd.Duration(stepMin, stepMax)
		// Measure while waiting for the next fault.
		deadline := h.w.Elapsed() + step
		h.until(func() bool { return h.w.Elapsed() >= deadline }, step)
		if pendingFrom >= 0 {
			if el, ok := h.electedAbove(pendingEpoch); ok && el.at >= pendingFrom {
				times[pendingKind] = append(times[pendingKind], el.at-pendingFrom)
			}
			pendingFrom = -1
		}
		leader := h.leader()
		var leaderEpoch int32
		if leader != "" {
			leaderEpoch = h.epochOf(leader)
		}
		healthyElse := !cut && len(down) == 0
		victim := h.names[rnd.Intn(len(h.names))]
		tookLeader := false
		kind = ""
		switch k := rnd.Intn(10); {
		case k < 2: // crash
			if !down[victim] {
				h.w.Node(victim).Crash()
				down[victim], kind = true, "crash"
				tookLeader = victim == leader
			}
		case k < 4: // power loss
			if !down[victim] {
				h.w.Node(victim).PowerLoss(rnd.Chance(0.5))
				down[victim], kind = true, "power-loss"
				tookLeader = victim == leader
			}
		case k < 6: // restart whoever is down
			for _, n := range h.names {
				if down[n] {
					h.w.Node(n).Start()
					delete(down, n)
				}
			}
		case k == 6: // isolate
			h.w.Isolate(victim)
			cut, kind = true, "partition"
			tookLeader = victim == leader
		case k == 7: // split: victim alone against the others
			var rest []string
			for _, n := range h.names {
				if n != victim {
					rest = append(rest, n)
				}
			}
			h.w.Partition([]string{victim}, rest)
			cut, kind = true, "partition"
			tookLeader = victim == leader
		case k == 8: // cut one link
			other := h.names[(rnd.Intn(2)+1+indexOf(h.names, victim))%3]
			h.w.Cut(victim, other)
			cut = true
		default:
			h.w.Heal()
			cut = false
		}
		if tookLeader && healthyElse {
			pendingFrom, pendingEpoch, pendingKind = h.w.Elapsed(), leaderEpoch, kind
		}
	}
	if pendingFrom >= 0 {
		h.run(10 * time.Second)
		if el, ok := h.electedAbove(pendingEpoch); ok && el.at >= pendingFrom {
			times[pendingKind] = append(times[pendingKind], el.at-pendingFrom)
		}
	}
	for _, n := range h.names {
		h.w.Node(n).Start()
	}
	h.w.Heal()
	hw := h.maxHW()
	if !h.until(func() bool { return h.leader() != "" && h.maxHW() > hw+1 }, 10*time.Second) {
		t.Fatalf("seed %d: no leader committing within 10s of the final heal (leader %q, hw %d)", seed, h.leader(), h.maxHW())
	}
	h.check(nil)
	h.agree()
	return h, times
}

// stepMin and stepMax bound the time between faults; QUORUM_STEP_MS=n
// makes them n/8 and n milliseconds for a harsher hunt.
var stepMin, stepMax = 500 * time.Millisecond, 4 * time.Second

func init() {
	if n, err := strconv.Atoi(os.Getenv("QUORUM_STEP_MS")); err == nil && n > 0 {
		stepMin, stepMax = time.Duration(n)*time.Millisecond/8, time.Duration(n)*time.Millisecond
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func TestRandomFaults(t *testing.T) {
	seeds := 50
	if testing.Short() {
		seeds = 10
	}
	if n, err := strconv.Atoi(os.Getenv("QUORUM_SEEDS")); err == nil {
		seeds = n // a longer hunt: QUORUM_SEEDS=1000 go test -run TestRandomFaults
	}
	var mu sync.Mutex
	all := map[string][]time.Duration{}
	commits := 0
	t.Run("seeds", func(t *testing.T) {
		for s := 1; s <= seeds; s++ {
			t.Run(fmt.Sprint(s), func(t *testing.T) {
				t.Parallel()
				h, times := chaos(t, uint64(s), 60*time.Second)
				mu.Lock()
				for k, ds := range times {
					all[k] = append(all[k], ds...)
				}
				commits += len(h.committed)
				mu.Unlock()
			})
		}
	})
	t.Logf("%d seeds × 60s: %d entries committed", seeds, commits)
	for _, k := range []string{"crash", "power-loss", "partition"} {
		t.Logf("election after the leader's %s: %s", k, summarize(all[k]))
	}
}

func TestDeterministic(t *testing.T) {
	a, _ := chaos(t, 7, 30*time.Second)
	b, _ := chaos(t, 7, 30*time.Second)
	require.Equal(t, a.w.Trace().HashString(), b.w.Trace().HashString())
	require.Equal(t, a.committed, b.committed)
	c, _ := chaos(t, 8, 30*time.Second)
	require.NotEqual(t, a.w.Trace().HashString(), c.w.Trace().HashString())
}
