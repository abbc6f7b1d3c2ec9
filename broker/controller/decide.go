package controller

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/probe"
)

// Decisions. Only the active controller decides, and a decision exists
// once its entry is committed: until then no broker hears of it and no
// request that asked for it is answered. Decisions are taken one at a
// time, each reading the metadata as the committed entries before it left
// it — Kafka's QuorumController runs its operations on one event queue
// too; it applies records before they commit and reverts on failover,
// which this controller need not, at the price of one commit round trip
// per decision.

// A decision is one request's (or the session timer's) turn at the
// metadata. decide reads the committed state and returns the records to
// commit (none: nothing changes) and what to do once they are committed;
// refuse answers instead when this controller is not, or stops being, the
// active one before that.
type decision struct {
	decide func() ([]metadata.Record, func())
	refuse func()
}

// awaitingCommit is the decision whose entry was proposed.
type awaitingCommit struct {
	offset int64
	then   func()
	refuse func()
}

func (c *Controller) enqueue(d decision) {
	c.queue = append(c.queue, d)
	c.next()
}

// next takes queued decisions in order until one is waiting for its commit.
// It does not nest: a commit inside Propose (a quorum of one) calls it
// again, and the loop already running goes on.
func (c *Controller) next() {
	if c.deciding {
		return
	}
	c.deciding = true
	defer func() { c.deciding = false }()
	for c.voter != nil && c.awaiting == nil && len(c.queue) > 0 {
		d := c.queue[0]
		c.queue[0] = decision{}
		c.queue = c.queue[1:]
		if !c.active {
			d.refuse()
			continue
		}
		rs, then := d.decide()
		if len(rs) == 0 {
			then()
			continue
		}
		offset, err := c.voter.Propose(metadata.EncodeRecords(rs))
		if err != nil {
			c.e.Log("controller-propose-failed", "error", err.Error())
			d.refuse()
			continue
		}
		if offset < c.voter.HighWatermark() {
			// Committed within Propose (a quorum of one syncs and
			// commits at once): committed has applied it already.
			then()
			continue
		}
		c.awaiting = &awaitingCommit{offset: offset, then: then, refuse: d.refuse}
	}
}

// refuseAll refuses the decision awaiting its commit and every queued one.
// An entry already proposed may still commit under the next leader; every
// controller then applies it, and the requester, refused, asks again.
func (c *Controller) refuseAll() {
	if w := c.awaiting; w != nil {
		c.awaiting = nil
		w.refuse()
	}
	for len(c.queue) > 0 {
		d := c.queue[0]
		c.queue = c.queue[1:]
		d.refuse()
	}
}

// fencing returns the records that fence (or unfence) broker id: its new
// state and every partition change that follows, computed as if it were
// already applied.
func (c *Controller) fencing(id int32, fenced bool, why string) []metadata.Record {
	rule, live := unfence, func(b int32) bool { return b == id || c.st.Live(b) }
	if fenced {
		rule, live = fence, func(b int32) bool { return b != id && c.st.Live(b) }
	}
	rs := []metadata.Record{{Fence: &metadata.FenceRecord{ID: id, Fenced: fenced}}}
	for _, p := range c.st.Partitions() {
		if q, changed := rule(p, id, live, c.election(p.Topic)); changed {
			rs = append(rs, metadata.Record{Partition: &q})
			c.logElection(why, id, p, q)
		}
	}
	return rs
}

// offlineFor reports whether some leaderless partition could be led by
// broker id — after a failover, brokers are live without having been
// unfenced, and offline partitions wait for them.
func (c *Controller) offlineFor(id int32) bool {
	live := func(b int32) bool { return b == id || c.st.Live(b) }
	for _, p := range c.st.Partitions() {
		if _, ok := unfence(p, id, live, c.election(p.Topic)); ok {
			return true
		}
	}
	return false
}

func (c *Controller) logElection(why string, broker int32, p, q metadata.Partition) {
	if q.Leader != p.Leader && q.Leader != metadata.NoLeader && p.LeaderEpoch >= 0 {
		if !p.InISR(q.Leader) {
			c.e.Probe(probe.UncleanElection, p.TopicPartition.String())
		}
	}
	if p.Leader != metadata.NoLeader && q.Leader != p.Leader {
		c.e.Probe(probe.LeaderFailover, p.TopicPartition.String())
	}
	c.e.Log("partition-change", "why", why, "broker", broker, "partition", p.TopicPartition.String(),
		"leader", fmt.Sprintf("%d->%d", p.Leader, q.Leader), "epoch", q.LeaderEpoch, "isr", fmt.Sprint(q.ISR))
}
