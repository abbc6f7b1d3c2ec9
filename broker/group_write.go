package broker

import (
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/record"
)

// A change to a KIP-848 consumer group or a KIP-932 share group is made
// in memory, and its records are written to the group's offsets
// partition; the answer waits for them to commit. If the partition's
// leader refuses the records at append — NOT_ENOUGH_REPLICAS while the
// ISR is below min.insync.replicas, a batch too large — the change is
// undone: the group goes back to what it was before the operation, as
// Kafka's CoordinatorRuntime reverts its state to the last written offset
// when an append fails (failCurrentBatch → revertLastWrittenOffset).
// Without it the coordinator goes on from a state its log does not hold:
// a member's release of a partition kept in memory, its record refused,
// then the partition given to another member and that record written,
// leaves the next coordinator a log in which two members own it.
//
// Records appended and then not committed (the wait timed out, the
// partition moved) are not undone: they are in the log, and the state is
// the log's; Kafka keeps them too, and a new leader loads what its log
// holds.
//
// Timers are not state: Kafka keys them by group and member and does not
// revert them. A member put back keeps the timers the operation left it
// (a refused heartbeat still restarted its session), except a rebalance
// timeout when it is no longer revoking; one the operation removed, and
// whose timers it cancelled, gets a fresh session (and rebalance timeout,
// if revoking); one the operation added loses its timers. A fence on a
// timer that the log refuses is tried again after
// coordinatorTimerRetryBackoff, as Kafka's timers with retry are
// (CoordinatorRuntime's EventBasedCoordinatorTimer).
//
// The snapshot is taken and the records written in one step of the
// broker (beginWrite, then write, with no event between): the change is
// all that can have happened to the group in between.

// coordinatorTimerRetryBackoff is how long a timer's operation that
// failed to write waits before it is tried again (Kafka's
// CoordinatorTimer.schedule default retryBackoff, 500 ms).
const coordinatorTimerRetryBackoff = 500 * time.Millisecond

// groupWrite gathers the records of one change of a group, and the
// group as it was before the change.
type groupWrite struct {
	recs   []record.Record
	before groupSnapshot
}

func (w *groupWrite) add(key, value []byte) {
	w.recs = append(w.recs, record.Record{Key: key, Value: value})
}

// groupSnapshot is a group's KIP-848, KIP-932 and classic membership
// state at the start of an operation.
type groupSnapshot struct {
	taken bool
	id    string
	g     *group // nil: there was no such group
	// consumer and share are g's state objects then, kept by identity
	// (timers check it); consumerState and shareState their contents,
	// maps copied (members are replaced, never changed, but for their
	// timers).
	consumer      *consumerGroup
	consumerState consumerGroup
	share         *shareGroup
	shareState    shareGroup
	membership    membership
}

// beginWrite starts a change of group id: what write undoes if the log
// refuses the change's records.
func (c *groupCoordinator) beginWrite(id string) groupWrite {
	s := groupSnapshot{taken: true, id: id, g: c.groups[id]}
	if g := s.g; g != nil {
		s.membership = g.membership
		if cg := g.consumer; cg != nil {
			s.consumer, s.consumerState = cg, *cg
			s.consumerState.members, s.consumerState.staticMembers = maps.Clone(cg.members), maps.Clone(cg.staticMembers)
			s.consumerState.target, s.consumerState.owners, s.consumerState.topics = maps.Clone(cg.target), maps.Clone(cg.owners), maps.Clone(cg.topics)
		}
		if sg := g.share; sg != nil {
			s.share, s.shareState = sg, *sg
			s.shareState.members, s.shareState.target = maps.Clone(sg.members), maps.Clone(sg.target)
			s.shareState.topics, s.shareState.initialized = maps.Clone(sg.topics), sg.initialized.clone()
		}
	}
	return groupWrite{before: s}
}

// write appends w's records to the group's offsets partition, then calls
// done; with no records, at once. If the leader refused the records, the
// change is undone (revert), done is called at once with the error, and
// write returns it too; else write returns 0.
func (c *groupCoordinator) write(p *partition, w groupWrite, done func(code int16)) (refused int16) {
	if len(w.recs) == 0 {
		done(0)
		return 0
	}
	res, code := c.b.appendInternal(p, record.NewHeader(), w.recs, "")
	if code != 0 {
		if w.before.taken {
			c.revert(w.before)
		}
		done(code)
		return code
	}
	c.b.awaitInternal(p, res, done)
	return 0
}

// revert puts group s.id back as s holds it.
func (c *groupCoordinator) revert(s groupSnapshot) {
	now := c.groups[s.id]
	if now != nil && now != s.g && s.g != nil {
		panic(invariantf("group %q: reverting a change, the group was replaced in the same step", s.id))
	}
	var postConsumer map[string]*consumerMember
	var postShare map[string]*shareMember
	if now != nil {
		if now.consumer != nil {
			postConsumer = now.consumer.members
		}
		if now.share != nil {
			postShare = now.share.members
		}
	}
	if s.g == nil {
		if now != nil {
			delete(c.groups, s.id)
		}
	} else {
		g := s.g
		g.membership = s.membership
		g.consumer, g.share = s.consumer, s.share
		if cg := g.consumer; cg != nil {
			*cg = s.consumerState
		}
		if sg := g.share; sg != nil {
			*sg = s.shareState
		}
	}
	c.revertConsumerTimers(s.g, postConsumer)
	c.revertShareTimers(s.g, postShare)
	c.b.e.Log("group-write-reverted", "group", s.id)
}

// revertConsumerTimers gives the members of g's consumer group, just put
// back, their timers; post are the members as the operation left them.
func (c *groupCoordinator) revertConsumerTimers(g *group, post map[string]*consumerMember) {
	var cg *consumerGroup
	if g != nil {
		cg = g.consumer
	}
	for _, id := range slices.Sorted(maps.Keys(post)) {
		if cg == nil || cg.members[id] == nil {
			c.stopConsumerMemberTimers(post[id])
		}
	}
	if cg == nil {
		return
	}
	for _, m := range cg.sortedMembers() {
		p := post[m.id]
		if p == nil {
			m.sessionTimer, m.rebalanceTimer = 0, 0
			c.armConsumerSession(g, m, c.b.cfg.GroupConsumerSessionTimeout)
			if m.state == memberUnrevokedPartitions {
				c.armConsumerRebalance(g, m, m.rebalanceTimeout)
			}
			continue
		}
		m.sessionTimer, m.rebalanceTimer = p.sessionTimer, p.rebalanceTimer
		if m.state != memberUnrevokedPartitions && m.rebalanceTimer != 0 {
			c.b.e.Cancel(m.rebalanceTimer)
			m.rebalanceTimer = 0
		}
	}
}

// revertShareTimers is revertConsumerTimers for a share group.
func (c *groupCoordinator) revertShareTimers(g *group, post map[string]*shareMember) {
	var sg *shareGroup
	if g != nil {
		sg = g.share
	}
	for _, id := range slices.Sorted(maps.Keys(post)) {
		if m := post[id]; (sg == nil || sg.members[id] == nil) && m.sessionTimer != 0 {
			c.b.e.Cancel(m.sessionTimer)
			m.sessionTimer = 0
		}
	}
	if sg == nil {
		return
	}
	for _, m := range sg.sortedMembers() {
		if p := post[m.id]; p != nil {
			m.sessionTimer = p.sessionTimer
			continue
		}
		m.sessionTimer = 0
		c.armShareSession(g, m, c.b.shareSettings(g.id).SessionTimeout)
	}
}
