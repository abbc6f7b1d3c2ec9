package scenarios

import (
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/quorum"
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
	var longest *quorum.Chain
	longestName := ""
	agree := func(name string, chain *quorum.Chain) {
		if longest != nil {
			// Compare at the last offset both reach; a chain that
			// started from a snapshot past it holds no digest there.
			at := min(chain.End(), longest.End()) - 1
			a, okA := chain.At(at)
			b, okB := longest.At(at)
			if okA && okB && a != b {
				invariant.Fail("cluster", "%s and %s applied different metadata entries at or before offset %d", longestName, name, at)
			}
		}
		if longest == nil || chain.End() > longest.End() {
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
