package sim

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/probe"
	"github.com/stretchr/testify/require"
)

// A probe is counted, and heard by listeners, but never traced: a world
// whose processes hit probes has the same trace hash as one whose do not.
func TestProbesAreCountedAndLeaveTheTraceHashUnchanged(t *testing.T) {
	run := func(hit bool) (*World, string) {
		w, a, b := twoNodes(31)
		c := dial(w, a, "b")
		for i := range 5 {
			w.Node("a").Exec(func() {
				a().e.Send(c, seqFrame(i))
				if hit {
					a().e.Probe(probe.LeaderElected, "orders/0")
				}
			})
			require.NoError(t, w.RunFor(10*time.Millisecond))
		}
		require.Equal(t, 5, b().frames())
		return w, w.Trace().HashString()
	}
	quiet, hashQuiet := run(false)
	require.Empty(t, quiet.Probes())
	w, hash := run(true)
	require.Equal(t, hashQuiet, hash, "probes leave the trace alone")
	require.Equal(t, uint64(5), w.Probes().Hits(probe.LeaderElected))

	var heard []ProbeHit
	w.OnProbe(func(h ProbeHit) { heard = append(heard, h) })
	w.Probe(probe.AcknowledgedMissingOnNewLeader, "orders/0")
	require.Equal(t, []ProbeHit{{Name: probe.AcknowledgedMissingOnNewLeader, Subject: "orders/0"}}, heard, "the world's own hits name no node")
}

// A power loss that drops unsynced bytes says so.
func TestAPowerLossThatDropsUnsyncedBytesHitsItsProbe(t *testing.T) {
	w, a, _ := twoNodes(32)
	w.Node("a").Exec(func() { require.NoError(t, a().e.Disk().Append("log", []byte("not synced"))) })
	require.NoError(t, w.RunFor(time.Millisecond))
	w.Node("b").PowerLoss(false)
	require.Zero(t, w.Probes().Hits(probe.PowerLossDroppedUnsynced), "b had nothing unsynced")
	w.Node("a").PowerLoss(false)
	require.Equal(t, uint64(1), w.Probes().Hits(probe.PowerLossDroppedUnsynced))
}
