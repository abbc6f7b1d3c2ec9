package scenarios

import (
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/stretchr/testify/require"
)

// The controller's clock ran 2% fast while a broker was down: its rpc
// client re-armed a redial timer for the nanosecond left of its backoff,
// the simulator turned that into 0 ns of world time, and the world died of
// a livelock (a million timers at one instant) on about a third of the
// seeds of eos-consume-transform-produce under crash,clock.
func TestAFastControllerClockDuringABrokerCrashDoesNotLivelock(t *testing.T) {
	s, err := Lookup("eos-consume-transform-produce")
	require.NoError(t, err)
	s.Faults = "crash,clock"
	sched, err := faults.ParseSchedule("+600ms drift the controller by +20000ppm\n" +
		"+800ms crash broker-2\n" +
		"+800ms drift broker-1 by -75000ppm\n" +
		"+6s start broker-2")
	require.NoError(t, err)
	for seed := uint64(1); seed <= 3; seed++ {
		r, err := Run(s, RunOptions{Seed: seed, Faults: &sched})
		require.NoError(t, err)
		require.Empty(t, r.Panic, "seed %d", seed)
		require.True(t, r.Verdict.Holds(checkers.ExactlyOnce), "seed %d: %s", seed, r.Summary())
	}
}
