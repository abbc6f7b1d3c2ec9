package controller

import (
	"testing"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
)

func part(leader int32, isr ...int32) metadata.Partition {
	return metadata.Partition{Replicas: []int32{0, 1, 2}, ISR: isr, Leader: leader}
}

func liveExcept(dead ...int32) func(int32) bool {
	return func(id int32) bool {
		for _, d := range dead {
			if d == id {
				return false
			}
		}
		return true
	}
}

func TestFencedLeaderIsReplacedByTheFirstLiveInSyncReplica(t *testing.T) {
	q, changed := fence(part(0, 0, 1, 2), 0, liveExcept(0), clean)
	require.True(t, changed)
	require.Equal(t, int32(1), q.Leader)
	require.Equal(t, []int32{1, 2}, q.ISR)
	require.Equal(t, int32(1), q.LeaderEpoch)
	require.Equal(t, int32(1), q.PartitionEpoch)
}

func TestLastInSyncReplicaStaysInTheISRAndTheCleanElectionWaits(t *testing.T) {
	q, changed := fence(part(0, 0), 0, liveExcept(0), clean)
	require.True(t, changed)
	require.Equal(t, metadata.NoLeader, q.Leader, "no live ISR member: offline")
	require.Equal(t, []int32{0}, q.ISR, "the ISR never empties")

	back, changed := unfence(q, 0, liveExcept(), clean)
	require.True(t, changed)
	require.Equal(t, int32(0), back.Leader)
	_, changed = unfence(q, 1, liveExcept(0), clean)
	require.False(t, changed, "an out-of-sync replica is not elected without unclean election")
}

func TestUncleanElectionPicksALiveReplicaOutsideTheISR(t *testing.T) {
	q, _ := fence(part(0, 0), 0, liveExcept(0), unclean)
	require.Equal(t, int32(1), q.Leader)
	require.Equal(t, []int32{1}, q.ISR)
}

func TestFencingAFollowerOnlyShrinksTheISR(t *testing.T) {
	q, changed := fence(part(0, 0, 1, 2), 2, liveExcept(2), clean)
	require.True(t, changed)
	require.Equal(t, int32(0), q.Leader)
	require.Equal(t, int32(0), q.LeaderEpoch, "the leader did not change")
	require.Equal(t, []int32{0, 1}, q.ISR)
	_, changed = fence(q, 2, liveExcept(2), clean)
	require.False(t, changed)
}

func TestProposedISRMustHoldTheLeaderAndOnlyEligibleReplicas(t *testing.T) {
	p := part(0, 0, 1)
	require.True(t, validISR(p, []int32{0, 1, 2}, liveExcept()))
	require.False(t, validISR(p, []int32{1, 2}, liveExcept()), "without the leader")
	require.False(t, validISR(p, []int32{0, 2}, liveExcept(2)), "adds a fenced replica")
	require.True(t, validISR(p, []int32{0, 1}, liveExcept(1)), "keeps a member already in")
	require.False(t, validISR(p, []int32{0, 0}, liveExcept()), "duplicates")
	require.False(t, validISR(p, []int32{0, 7}, liveExcept()), "not a replica")
	require.False(t, validISR(p, nil, liveExcept()))
}
