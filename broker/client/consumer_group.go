package client

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group membership under the consumer protocol of KIP-848
// (group.protocol=consumer), as Kafka's AsyncKafkaConsumer and
// ConsumerMembershipManager run it:
//
//   - The member makes its own id (ConsumerGroupHeartbeat v1) and joins at
//     the next Poll with member epoch 0 and its subscription; the
//     coordinator assigns (group.remote.assignor names the server-side
//     assignor, empty for the broker's default) and answers with the
//     member's epoch and, when it changed, its assignment.
//   - It heartbeats every group.consumer.heartbeat.interval.ms the
//     coordinator gives, with its epoch and the partitions it owns.
//   - Reconciliation, when an assignment comes: the partitions no longer
//     in it are revoked first (OnPartitionsRevoked), then the new ones
//     assigned (OnPartitionsAssigned, with the added partitions, called
//     after every reconciliation, even with none: Kafka's incremental
//     callback), and a heartbeat at once acknowledges what it owns now.
//     The first assignment after a join is always reconciled, an empty one
//     too (the member's current assignment is none until then: Kafka's
//     LocalAssignment.NONE), so OnPartitionsAssigned tells the
//     application that its membership is new: a transaction it opened
//     before it was fenced must not commit under the new epoch.
//     The coordinator gives partitions another member held only once that
//     member acknowledged their revocation.
//   - FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID (the member was fenced:
//     session or rebalance timeout) lose the partitions (OnPartitionsLost,
//     or OnPartitionsRevoked); the next Poll rejoins with epoch 0, the same
//     member id.
//   - Commits carry the member epoch as their generation; a member that
//     does not Poll within max.poll.interval.ms (its rebalance timeout)
//     leaves (epoch -1) and rejoins at its next Poll; Close leaves too.
//
// Not modelled: static membership, regex subscriptions, and the client's
// rack.

// GroupProtocolClassic and GroupProtocolConsumer are group.protocol's
// values.
const (
	GroupProtocolClassic  = "classic"
	GroupProtocolConsumer = "consumer"
)

// consumerProtocol is a member's KIP-848 state.
type consumerProtocol struct {
	// interval is the heartbeat interval the coordinator gave.
	interval time.Duration
	// sentTopics is the subscription the coordinator has; nil: send it.
	sentTopics []string
	// target is an assignment to reconcile to, by topic id; nil: none.
	target []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic
	// reconciling: callbacks of a reconciliation are under way.
	reconciling bool
	// unassigned: no assignment reconciled since the join (Kafka's
	// LocalAssignment.NONE).
	unassigned bool
	// topicIDs are the ids of the topics of the assignments reconciled,
	// by name: a heartbeat reports the partitions the member owns by the
	// ids they were assigned by, as Kafka's LocalAssignment keys them,
	// whatever the metadata says of the topic now. Left out, an owned
	// partition would count as revoked, and the coordinator would give it
	// to another member while this one still processes it.
	topicIDs map[string][16]byte
	// inflight is the join (seq) whose heartbeat is out, 0 for none: one
	// of an older join does not hold the new join's back. ackDue: send
	// another once it is back.
	inflight uint64
	ackDue   bool
	// full: the next heartbeat carries every field (after an error, as
	// Kafka's HeartbeatState.reset), so the answer carries the assignment
	// again, whatever the coordinator did with the failed one.
	full bool
}

// startConsumerJoin joins with epoch 0; partitions still owned (a lost
// membership) are given up first.
func (c *Consumer) startConsumerJoin() {
	g := c.group
	g.seq++
	seq := g.seq
	c.stopHeartbeats()
	g.state, g.generation = memberJoining, 0
	if g.memberID == "" {
		g.memberID = c.e.Rand().UUID() // as the consumer makes its member id
	}
	g.consumer.sentTopics, g.consumer.target, g.consumer.reconciling = nil, nil, false
	c.giveUpThenJoin(seq, c.sendConsumerHeartbeat)
}

// consumerHeartbeatRequest: a join carries the whole subscription; later
// heartbeats their epoch, owned partitions, and the subscription only when
// it changed.
func (c *Consumer) consumerHeartbeatRequest() *kmsg.ConsumerGroupHeartbeatRequest {
	g := c.group
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = c.opts.GroupID, g.memberID, g.generation
	full := g.generation == 0 || g.consumer.full
	if full {
		req.RebalanceTimeoutMillis = int32(c.opts.MaxPollInterval / time.Millisecond)
		if c.opts.GroupRemoteAssignor != "" {
			req.ServerAssignor = kmsg.StringPtr(c.opts.GroupRemoteAssignor)
		}
	}
	if full || !slices.Equal(g.consumer.sentTopics, g.topics) {
		req.SubscribedTopicNames = slices.Clone(g.topics)
	}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if g.generation == 0 {
		return req
	}
	for _, tp := range g.owned {
		id, ok := g.consumer.topicIDs[tp.Topic] // every reconciled topic has one
		if !ok {
			continue
		}
		if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != id {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID = id
			req.Topics = append(req.Topics, t)
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	return req
}

func (c *Consumer) sendConsumerHeartbeat(seq uint64) {
	g := c.group
	cp := g.consumer
	if cp.inflight == seq {
		cp.ackDue = true
		return
	}
	cp.inflight = seq
	done := func() {
		if cp.inflight == seq {
			cp.inflight = 0
		}
	}
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if seq != g.seq || c.closed {
			done()
			return
		}
		if err != nil {
			done()
			c.retryConsumerHeartbeat(seq)
			return
		}
		req := c.consumerHeartbeatRequest()
		conn.Do(req, c.opts.RequestTimeout, func(resp kmsg.Response, err error) {
			defer c.deliver()
			done()
			if seq != g.seq || c.closed {
				return
			}
			c.handleConsumerHeartbeat(seq, req, resp, err)
			if cp.ackDue && seq == g.seq && g.state != memberUnjoined {
				cp.ackDue = false
				c.sendConsumerHeartbeat(seq)
			}
		})
	})
}

// retryConsumerHeartbeat heartbeats again after retry.backoff.ms.
func (c *Consumer) retryConsumerHeartbeat(seq uint64) {
	c.stopHeartbeats()
	c.group.hbTimer = c.e.AfterFunc(c.opts.RetryBackoff, func() {
		defer c.deliver()
		c.group.hbTimer = 0
		if seq == c.group.seq && !c.closed {
			c.sendConsumerHeartbeat(seq)
		}
	})
}

func (c *Consumer) handleConsumerHeartbeat(seq uint64, req *kmsg.ConsumerGroupHeartbeatRequest, resp kmsg.Response, err error) {
	g := c.group
	cp := g.consumer
	if err != nil {
		cp.full = true
		c.forgetCoordinator()
		c.retryConsumerHeartbeat(seq)
		return
	}
	r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	if r.ErrorCode != 0 {
		cp.full = true
	}
	switch code := r.ErrorCode; code {
	case 0:
		cp.full = false
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		c.consumerMembershipLost(code)
		return
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		c.forgetCoordinator()
		c.retryConsumerHeartbeat(seq)
		return
	case kerr.CoordinatorLoadInProgress.Code:
		c.retryConsumerHeartbeat(seq)
		return
	default:
		if retriable(codeErr(code)) {
			c.retryConsumerHeartbeat(seq)
			return
		}
		c.groupFatal(fmt.Errorf("ConsumerGroupHeartbeat: %w", codeErr(code)))
		return
	}
	if req.SubscribedTopicNames != nil {
		cp.sentTopics = req.SubscribedTopicNames
	}
	if r.MemberID != nil {
		g.memberID = *r.MemberID
	}
	if g.state == memberJoining {
		g.state = memberStable
		g.owned = []TopicPartition{}
		cp.unassigned = true
		c.e.Log("consumer-joined", "client", c.opts.ClientID, "group", c.opts.GroupID, "member", g.memberID, "epoch", r.MemberEpoch)
	}
	g.generation = r.MemberEpoch
	g.joined = GroupMetadata{GroupID: c.opts.GroupID, GenerationID: g.generation, MemberID: g.memberID}
	cp.interval = time.Duration(r.HeartbeatIntervalMillis) * time.Millisecond
	if r.Assignment != nil {
		cp.target = r.Assignment.Topics
		if cp.target == nil {
			cp.target = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		}
		c.reconcile(seq)
	}
	c.scheduleConsumerHeartbeat(seq)
}

func (c *Consumer) scheduleConsumerHeartbeat(seq uint64) {
	g := c.group
	c.stopHeartbeats()
	d := g.consumer.interval
	if d <= 0 {
		d = c.opts.RetryBackoff
	}
	g.hbTimer = c.e.AfterFunc(d, func() {
		defer c.deliver()
		g.hbTimer = 0
		if seq == g.seq && !c.closed && g.state == memberStable {
			c.sendConsumerHeartbeat(seq)
		}
	})
}

// reconcile moves the member to its target assignment: revoke, then
// assign, then acknowledge with a heartbeat. A target naming a topic
// whose id the metadata does not know yet waits for the metadata.
func (c *Consumer) reconcile(seq uint64) {
	g := c.group
	cp := g.consumer
	if cp.reconciling || cp.target == nil || g.state != memberStable {
		return
	}
	var target []TopicPartition
	names := make(map[string][16]byte, len(cp.target))
	for _, t := range cp.target {
		name, ok := c.cl.topicName(t.TopicID)
		if !ok {
			c.cl.requestUpdate()
			return
		}
		names[name] = t.TopicID
		for _, p := range t.Partitions {
			target = append(target, TopicPartition{Topic: name, Partition: p})
		}
	}
	slices.SortFunc(target, TopicPartition.Compare)
	cp.target = nil
	var revoked, added []TopicPartition
	for _, tp := range g.owned {
		if !slices.Contains(target, tp) {
			revoked = append(revoked, tp)
		}
	}
	for _, tp := range target {
		if !slices.Contains(g.owned, tp) {
			added = append(added, tp)
		}
	}
	if len(revoked) == 0 && len(added) == 0 && !cp.unassigned {
		return
	}
	cp.reconciling, cp.unassigned = true, false
	maps.Copy(cp.topicIDs, names)
	c.e.Log("consumer-reconciling", "client", c.opts.ClientID, "group", c.opts.GroupID, "epoch", g.generation, "revoked", fmt.Sprint(revoked), "added", fmt.Sprint(added))
	if cb := g.listener.OnPartitionsRevoked; cb != nil && len(revoked) > 0 {
		c.note(func() { cb(revoked) })
	}
	c.note(func() {
		if seq != g.seq || c.closed {
			return
		}
		cp.reconciling = false
		g.owned = target
		c.setAssignment(target)
		c.e.Log("consumer-assigned", "client", c.opts.ClientID, "group", c.opts.GroupID, "epoch", g.generation, "partitions", fmt.Sprint(target))
		if cb := g.listener.OnPartitionsAssigned; cb != nil {
			cb(slices.Clone(added))
		}
		c.sendConsumerHeartbeat(seq) // acknowledge at once
		c.wake()
	})
}

// consumerMembershipLost: the member was fenced; its partitions may be
// another's already. The next Poll rejoins with epoch 0.
func (c *Consumer) consumerMembershipLost(code int16) {
	g := c.group
	c.e.Log("consumer-generation-lost", "client", c.opts.ClientID, "group", c.opts.GroupID, "epoch", g.generation, "error", codeErr(code).Error())
	g.generation = 0
	g.state, g.lost = memberUnjoined, true
	g.consumer.target, g.consumer.reconciling = nil, false
	c.stopHeartbeats()
	c.wake()
}

// leaveConsumerGroup sends the leave heartbeat (epoch -1), then calls
// done, whatever the answer.
func (c *Consumer) leaveConsumerGroup(done func()) {
	g := c.group
	if g.memberID == "" || g.state == memberUnjoined {
		done()
		return
	}
	id := g.memberID
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if err != nil {
			done()
			return
		}
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = c.opts.GroupID, id, -1
		conn.Do(req, c.opts.RequestTimeout, func(kmsg.Response, error) { done() })
	})
}
