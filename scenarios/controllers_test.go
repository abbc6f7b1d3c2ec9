package scenarios

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A cluster whose metadata quorum has three controllers keeps its claim
// when the active controller crashes and, later, another one: a new active
// controller is elected from the log each time, brokers move on to it, and
// writes go on being acknowledged.
func TestThreeControllersKeepTheClaimWhenTheActiveOneCrashes(t *testing.T) {
	s, err := Lookup("acks-all-idempotent")
	require.NoError(t, err)
	s.Name = "acks-all-idempotent-three-controllers"
	s.Cluster.Controllers = 3
	s.Faults = "crash"
	s.FaultsSchedule = "+5s crash the active controller as $1\n+9s start $1\n+14s crash a controller as $2\n+17s start $2\n+20s crash the active controller as $3\n+24s start $3"
	require.NoError(t, s.Validate())
	for seed := uint64(1); seed <= 5; seed++ {
		r, err := Run(s, RunOptions{Seed: seed})
		require.NoError(t, err)
		require.True(t, r.Holds, "seed %d: %s", seed, r.Failure)
		require.GreaterOrEqual(t, r.Power.AcknowledgedFraction(), 0.8, "seed %d: %s", seed, r.Power)
		require.Equal(t, 6, r.Power.FaultsFired, "seed %d: every crash and start found its controller", seed)
	}
}

// The quorum's size is checked: 1, 3 or 5 voters.
func TestAQuorumOfTwoControllersIsRefused(t *testing.T) {
	s, err := Lookup("acks-all-idempotent")
	require.NoError(t, err)
	s.Cluster.Controllers = 2
	require.ErrorContains(t, s.Validate(), "controllers 2: a quorum has 1, 3 or 5 voters")
}

// The twin of the metadata log without fsync fails under its schedule on
// every seed; the same schedule with fsync holds: the knob is the
// difference.
func TestTheQuorumsPowerLossIsSurvivedWithMetadataFsync(t *testing.T) {
	twin, err := Lookup("acks-all-fsync-no-metadata-fsync")
	require.NoError(t, err)
	fsynced := twin
	fsynced.Name, fsynced.Cluster.MetadataLogFsync = "with-metadata-fsync", true
	fsynced.Expect, fsynced.Refutes, fsynced.Order = acksAllFsync.Expect, "", acksAllFsync.Order
	require.NoError(t, fsynced.Validate())
	for seed := uint64(1); seed <= 3; seed++ {
		r, err := Run(twin, RunOptions{Seed: seed})
		require.NoError(t, err)
		require.False(t, r.Holds, "seed %d: without fsync the quorum's power loss is survived", seed)
		r, err = Run(fsynced, RunOptions{Seed: seed})
		require.NoError(t, err)
		require.True(t, r.Holds, "seed %d: %s", seed, r.Failure)
		require.Equal(t, 1.0, r.Power.AcknowledgedFraction(), "seed %d", seed)
	}
}
