package raft_test

import (
	"testing"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/stretchr/testify/require"
)

// A node whose quorum-state file is older than its log (the file lost or
// torn by a failing disk) restarts Unattached in the log's epoch, with no
// vote and no leader, and persists that (QuorumState.initialize): never in
// an epoch below the entries it holds. For voters and observers alike.
func TestAQuorumStateOlderThanTheLogRestartsInTheLogsEpoch(t *testing.T) {
	log := []raft.Entry{{Offset: 0, Epoch: 1, LeaderChange: true}, {Offset: 1, Epoch: 1, Data: []byte("a")}, {Offset: 2, Epoch: 2, LeaderChange: true}}
	voter, observer := raft.Config{ID: 1, Voters: []int32{1, 2, 3}}, raft.Config{ID: 101, Voters: []int32{1, 2, 3}, Observer: true}
	for _, c := range []struct {
		cfg raft.Config
		st  raft.QuorumState
	}{
		{voter, raft.QuorumState{Epoch: 0, VotedID: raft.NoID, LeaderID: raft.NoID}},
		{voter, raft.QuorumState{Epoch: 1, VotedID: 1, LeaderID: 1}}, // it led epoch 1, the file says
		{observer, raft.QuorumState{Epoch: 0, VotedID: raft.NoID, LeaderID: raft.NoID}},
		{observer, raft.QuorumState{Epoch: 1, VotedID: raft.NoID, LeaderID: 2}},
	} {
		cfg, st := c.cfg, c.st
		n := raft.New(cfg, st, raft.Snapshot{}, log, 0)
		require.Equal(t, int32(2), n.Epoch(), "node %d", cfg.ID)
		require.Equal(t, raft.NoID, n.LeaderID())
		require.Equal(t, raft.NoID, n.VotedFor())
		var persisted *raft.PersistQuorumState
		for _, e := range n.Ready() {
			if p, ok := e.(raft.PersistQuorumState); ok {
				persisted = &p
			}
		}
		require.NotNil(t, persisted, "node %d persisted its new state", cfg.ID)
		require.Equal(t, int32(2), persisted.Epoch)
		require.NoError(t, n.Check())
	}
}

// A quorum-state file that names a leader outside the voter set (read
// back with another id in it: a flipped digit in the JSON, which carries no
// checksum) makes the node Unattached in that epoch, knowing no leader to
// follow, as QuorumState.initialize does when the leader's endpoints are
// unknown; it does not follow a node that is not a voter (the nightly run:
// acks0@disk and pipeline-commit-before-process@disk seed 2693, a
// controller's invariant panic "follower names leader 3081").
func TestAQuorumStateNamingALeaderOutsideTheVotersRestartsUnattached(t *testing.T) {
	log := []raft.Entry{{Offset: 0, Epoch: 3, LeaderChange: true}}
	st := raft.QuorumState{Epoch: 3, VotedID: raft.NoID, LeaderID: 81}
	for _, cfg := range []raft.Config{{ID: 1, Voters: []int32{1, 2, 3}}, {ID: 101, Voters: []int32{1, 2, 3}, Observer: true}} {
		n := raft.New(cfg, st, raft.Snapshot{}, log, 0)
		require.Equal(t, raft.Unattached, n.Role(), "node %d", cfg.ID)
		require.Equal(t, int32(3), n.Epoch())
		require.Equal(t, raft.NoID, n.LeaderID())
		require.NoError(t, n.Check())
	}
}
