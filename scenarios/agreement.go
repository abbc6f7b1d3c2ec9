package scenarios

import (
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/internal/invariant"
)

// What must hold across the cluster's processes at any instant — Kafka's
// RaftEventSimulationTest checks its like after every step; the harness
// checks these at every replica sample and at the final read. A break is
// the cluster's invariant: the run fails with it.

// checkControllersAgree: every running controller, and every broker
// following the metadata log, has applied a prefix of the one committed
// metadata log (their applied digests agree wherever both reach). Not with
// metadata.log.fsync off, whose point is that a power loss can take
// committed entries.
func (c *cluster) checkControllersAgree() {
	if !c.cfg.MetadataLogFsync {
		return
	}
	var longest []uint64
	longestName := ""
	agree := func(name string, chain []uint64) {
		n := min(len(chain), len(longest))
		if n > 0 && chain[n-1] != longest[n-1] {
			i := 0
			for i < n && chain[i] == longest[i] {
				i++
			}
			invariant.Fail("cluster", "%s and %s applied different metadata entries at offset %d", longestName, name, i)
		}
		if len(chain) > len(longest) {
			longest, longestName = chain, name
		}
	}
	for _, name := range c.controllers {
		if ctl, ok := c.w.Node(name).Process().(*controller.Controller); ok {
			agree(name, ctl.Applied())
		}
	}
	for _, name := range c.brokers {
		if b, ok := c.w.Node(name).Process().(*broker.Broker); ok {
			agree(name, b.MetadataApplied())
		}
	}
}

// checkOneLeaderPerEpoch: no two brokers lead tp in the same leader epoch
// (a deposed leader may still lead an older one).
func checkOneLeaderPerEpoch(tp metadata.TopicPartition, states map[int32]broker.PartitionState) {
	ids := slices.Sorted(maps.Keys(states))
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			sa, sb := states[a], states[b]
			if sa.Role == "leader" && sb.Role == "leader" && sa.LeaderEpoch == sb.LeaderEpoch {
				invariant.Fail("cluster", "%v: brokers %d and %d both lead leader epoch %d", tp, min(a, b), max(a, b), sa.LeaderEpoch)
			}
		}
	}
}
