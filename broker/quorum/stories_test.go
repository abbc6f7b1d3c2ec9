package quorum_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/stretchr/testify/require"
)

// elect runs until a leader exists (within budget) and returns it.
func (h *harness) elect(budget time.Duration) string {
	h.t.Helper()
	if !h.until(func() bool { return h.leader() != "" }, budget) {
		h.t.Fatalf("seed %d: no leader within %v", h.w.Seed(), budget)
	}
	return h.leader()
}

// commitsPast runs until the highest HW passes hw, within budget.
func (h *harness) commitsPast(hw int64, budget time.Duration) bool {
	h.t.Helper()
	return h.until(func() bool { return h.maxHW() > hw+2 }, budget)
}

func TestThreeVotersElectALeader(t *testing.T) {
	h := newHarness(t, 1, 3)
	l := h.elect(5 * time.Second)
	t.Logf("leader %s elected at %v (epoch %d)", l, h.w.Elapsed(), h.epochOf(l))
	h.run(3 * time.Second)
	require.Equal(t, l, h.leader(), "leadership is stable without faults")
	for _, name := range h.names {
		p := h.proc(name)
		require.Greater(t, p.v.HighWatermark(), int64(20), "%s commits", name)
		require.Equal(t, raft.Leader == p.v.Role(), name == l)
	}
	h.agree()
	require.NotEmpty(t, h.w.Node(l).Disk().List("quorum-state"))
}

func TestLeaderCrashElectsANewOne(t *testing.T) {
	h := newHarness(t, 2, 3)
	old := h.elect(5 * time.Second)
	h.run(2 * time.Second)
	epoch := h.epochOf(old)
	hw := h.maxHW()
	h.w.Node(old).Crash()
	t0 := h.w.Elapsed()
	if !h.until(func() bool { return h.leaderAbove(epoch) != "" }, 10*time.Second) {
		t.Fatal("no new leader after the leader crashed")
	}
	el, _ := h.electedAbove(epoch)
	t.Logf("leader %s crashed at %v; %s elected in epoch %d after %v", old, t0, el.node, el.epoch, el.at-t0)
	require.True(t, h.commitsPast(hw, 5*time.Second), "the new leader commits")
	h.w.Node(old).Start()
	h.run(3 * time.Second)
	p := h.proc(old)
	require.Equal(t, raft.Follower, p.v.Role())
	require.Greater(t, p.v.HighWatermark(), hw)
	h.agree()
}

func TestPartitionedLeaderResigns(t *testing.T) {
	h := newHarness(t, 3, 3)
	old := h.elect(5 * time.Second)
	h.run(2 * time.Second)
	epoch := h.epochOf(old)
	hw := h.maxHW()
	h.w.Isolate(old)
	t0 := h.w.Elapsed()
	if !h.until(func() bool { return h.proc(old).v.Role() != raft.Leader }, 5*time.Second) {
		t.Fatal("the isolated leader did not resign")
	}
	resigned := h.w.Elapsed() - t0
	require.Equal(t, raft.Resigned, h.proc(old).v.Role(), "check quorum resigns")
	newLeader := func() string {
		for _, name := range h.names {
			if p := h.proc(name); name != old && p.v.Role() == raft.Leader && h.epochOf(name) > epoch {
				return name
			}
		}
		return ""
	}
	if !h.until(func() bool { return newLeader() != "" }, 10*time.Second) {
		t.Fatal("the majority elected no leader")
	}
	el, _ := h.electedAbove(epoch)
	t.Logf("leader %s isolated at %v: resigned after %v; %s elected in epoch %d after %v", old, t0, resigned, el.node, el.epoch, el.at-t0)
	require.True(t, h.commitsPast(hw, 5*time.Second), "the majority keeps committing")
	stuck := h.proc(old).v.HighWatermark()
	h.run(2 * time.Second)
	require.Equal(t, stuck, h.proc(old).v.HighWatermark(), "the isolated node commits nothing")
	h.w.Heal()
	h.run(5 * time.Second)
	require.Equal(t, raft.Follower, h.proc(old).v.Role())
	require.Greater(t, h.proc(old).v.HighWatermark(), stuck, "it catches up after the heal")
	h.agree()
}

func TestPowerLossRejoinsWithCommittedEntriesIntact(t *testing.T) {
	for _, victim := range []string{"follower", "leader"} {
		t.Run(victim, func(t *testing.T) {
			h := newHarness(t, 4, 3)
			l := h.elect(5 * time.Second)
			h.run(3 * time.Second)
			name := l
			if victim == "follower" {
				for _, n := range h.names {
					if n != l {
						name = n
						break
					}
				}
			}
			before := h.proc(name).got
			hw := h.proc(name).v.HighWatermark()
			require.Greater(t, hw, int64(10))
			h.w.Node(name).PowerLoss(true)
			h.run(3 * time.Second)
			h.w.Node(name).Start()
			h.run(5 * time.Second)
			p := h.proc(name)
			require.Greater(t, p.v.HighWatermark(), hw, "%s rejoined and commits", name)
			require.GreaterOrEqual(t, len(p.got), len(before))
			for i, en := range before {
				require.Equal(t, entryString(en), entryString(p.got[i]), "committed entry %d changed after the power loss", i)
			}
			h.agree()
		})
	}
}

func TestFiveVotersSurviveTwoCrashes(t *testing.T) {
	h := newHarness(t, 5, 5)
	l := h.elect(5 * time.Second)
	h.run(2 * time.Second)
	epoch := h.epochOf(l)
	var other string
	for _, n := range h.names {
		if n != l {
			other = n
			break
		}
	}
	hw := h.maxHW()
	h.w.Node(l).Crash()
	h.w.Node(other).Crash()
	t0 := h.w.Elapsed()
	if !h.until(func() bool { return h.leaderAbove(epoch) != "" }, 10*time.Second) {
		t.Fatal("three of five voters elected no leader")
	}
	el, _ := h.electedAbove(epoch)
	t.Logf("leader %s and %s crashed; %s elected in epoch %d after %v", l, other, el.node, el.epoch, el.at-t0)
	require.True(t, h.commitsPast(hw, 5*time.Second), "three of five commit")
	// A third crash stops commits.
	nl := h.leaderAbove(epoch)
	var third string
	for _, n := range h.names {
		if n != l && n != other && n != nl {
			third = n
			break
		}
	}
	h.w.Node(third).Crash()
	h.run(5 * time.Second)
	stuck := h.maxHW()
	h.run(3 * time.Second)
	require.Equal(t, stuck, h.maxHW(), "two of five commit nothing")
	for _, n := range []string{l, other, third} {
		h.w.Node(n).Start()
	}
	require.True(t, h.commitsPast(stuck, 10*time.Second), "all five back commit again")
	h.agree()
}
