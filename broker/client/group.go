package client

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group membership, the classic protocol as Kafka's ConsumerCoordinator
// runs it with the eager range assignor:
//
//   - Subscribe names the topics; the next Poll joins: JoinGroup (a new
//     member first learns its id from MEMBER_ID_REQUIRED, KIP-394), then
//     SyncGroup. The member the coordinator names leader runs the range
//     assignor over every member's subscription and sends the assignment
//     in its SyncGroup; every member gets its share in the answer.
//   - Eager rebalancing: before rejoining, a member revokes all its
//     partitions (OnPartitionsRevoked, or OnPartitionsLost when its
//     generation was taken away); after SyncGroup it is assigned its new
//     share (OnPartitionsAssigned), whose positions start at the group's
//     committed offsets. Callbacks run on the process's loop: the revoke
//     callback before the JoinGroup goes out, so a commit it sends still
//     carries the old, valid generation.
//   - Heartbeats every heartbeat.interval.ms while the generation is
//     stable. REBALANCE_IN_PROGRESS asks for a rejoin, which happens in the
//     next Poll, as Kafka's does: an application finishes (and commits)
//     the batch in hand first, within max.poll.interval.ms — the rebalance
//     timeout the coordinator gives members to rejoin. ILLEGAL_GENERATION
//     and UNKNOWN_MEMBER_ID (the member was evicted: session timeout, or
//     it did not rejoin in time) lose the partitions; the next Poll rejoins.
//   - A member that does not call Poll within max.poll.interval.ms leaves
//     the group (LeaveGroup) and rejoins at its next Poll; Close leaves too.
//   - Commits carry the generation and member id, and are refused locally
//     (ErrCommitFailed) while the member is not in a stable generation.
//   - Retriable errors (REQUEST_TIMED_OUT when the coordinator could not
//     store the group, a coordinator move) make the member join again after
//     retry.backoff.ms; only errors Kafka does not retry (an inconsistent
//     protocol, a bad session timeout, authorization) stop the group, and
//     every Poll reports them then.
//
// The consumer protocol of KIP-848 (group.protocol=consumer) is
// consumer_group.go's.
//
// Not modelled: static membership (group.instance.id), cooperative
// rebalancing, assignors other than range, and rejoining when a subscribed
// topic's partition count changes.

// RebalanceListener is Kafka's ConsumerRebalanceListener. Any callback may
// be nil.
type RebalanceListener struct {
	// OnPartitionsRevoked: the member gives up these partitions to rejoin
	// the group; the last chance to commit their offsets.
	OnPartitionsRevoked func(revoked []TopicPartition)
	// OnPartitionsAssigned: the member owns these partitions in its new
	// generation.
	OnPartitionsAssigned func(assigned []TopicPartition)
	// OnPartitionsLost: the member's generation was taken away (it was
	// evicted): other members may own these partitions already, and
	// commits for them fail. Nil: OnPartitionsRevoked is called instead.
	OnPartitionsLost func(lost []TopicPartition)
}

type memberState uint8

const (
	memberUnjoined memberState = iota
	memberJoining              // JoinGroup out
	memberSyncing              // SyncGroup out, or the leader awaits metadata to assign
	memberStable
)

// rangeAssignor is the protocol every member offers.
const rangeAssignor = "range"

type membership struct {
	// consumer is the KIP-848 state under group.protocol=consumer
	// (consumer_group.go); nil under the classic protocol.
	consumer   *consumerProtocol
	topics     []string
	listener   RebalanceListener
	state      memberState
	memberID   string
	generation int32
	protocol   string
	rejoin     bool // the coordinator asked for a rejoin: at the next Poll
	lost       bool // the generation was taken away: the next revocation is a loss
	owned      []TopicPartition
	seq        uint64 // bumps with every join attempt: older answers are dropped
	plan       *leaderPlan
	hbTimer    env.TimerID
	pollTimer  env.TimerID
	fatal      error
	// joined is the generation and member id of the last completed join:
	// what GroupMetadata reports, kept when the generation is lost.
	joined GroupMetadata
}

// leaderPlan is a leader's assignment waiting for the metadata of the
// members' topics.
type leaderPlan struct {
	seq     uint64
	members []kmsg.JoinGroupResponseMember
}

// Subscribe makes the consumer a member of its group (group.id),
// consuming topics; the partitions come from the group's rebalances,
// announced to l. The join happens in the next Poll. A consumer either
// subscribes or assigns.
func (c *Consumer) Subscribe(topics []string, l RebalanceListener) error {
	switch {
	case c.closed:
		return ErrConsumerClosed
	case c.opts.GroupID == "":
		return fmt.Errorf("subscribe: %w", ErrNoGroup)
	case c.group == nil && len(c.ordered) > 0:
		return fmt.Errorf("subscribe: partitions are assigned manually: %w", ErrNotSubscribed)
	case len(topics) == 0:
		return fmt.Errorf("subscribe: no topics")
	}
	topics = slices.Clone(topics)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	if c.group == nil {
		c.group = &membership{generation: -1, joined: GroupMetadata{GroupID: c.opts.GroupID, GenerationID: -1}}
		if c.opts.GroupProtocol == GroupProtocolConsumer {
			c.group.consumer = &consumerProtocol{topicIDs: map[string][16]byte{}}
		}
	}
	g := c.group
	changed := !slices.Equal(g.topics, topics)
	if changed && g.consumer == nil {
		g.rejoin = g.state != memberUnjoined
	}
	g.topics, g.listener = topics, l
	if changed && g.consumer != nil && g.state == memberStable {
		c.sendConsumerHeartbeat(g.seq) // the new subscription, at once
	}
	c.cl.want(topics...)
	c.wake()
	return nil
}

// GroupMetadata is the member's group, generation and member id, for
// SendOffsetsToTransaction: the group coordinator refuses a transaction's
// offsets from a member of an older generation (KIP-447). It is the last
// completed join's, kept after the generation is lost — as Kafka's
// ConsumerCoordinator sets its groupMetadata only in onJoinComplete — so a
// member evicted mid-transaction is refused (UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION) and its transaction aborts. Reporting generation -1
// instead would pass as a consumer without membership, which the
// coordinator accepts for transactional commits, and commit its stale
// offsets. Before the first join the generation is -1 and the member id
// empty.
func (c *Consumer) GroupMetadata() GroupMetadata {
	if c.group == nil {
		return GroupMetadata{GroupID: c.opts.GroupID, GenerationID: -1}
	}
	return c.group.joined
}

// maintainGroup, run inside the consumer's loop: a leader's pending
// assignment (under the consumer protocol, a pending reconciliation), and
// with a Poll pending, a join when one is due.
func (c *Consumer) maintainGroup() {
	g := c.group
	switch {
	case g.consumer != nil && g.consumer.target != nil:
		c.reconcile(g.seq)
	case g.consumer == nil && g.plan != nil:
		c.leaderAssign(g.plan)
	}
	if c.poll == nil {
		return
	}
	if g.fatal != nil {
		c.pollErr = g.fatal
		return
	}
	switch {
	case g.consumer != nil:
		if g.state == memberUnjoined {
			c.startConsumerJoin()
		}
	case g.state == memberUnjoined || (g.state == memberStable && g.rejoin):
		c.startRejoin()
	}
}

// startRejoin revokes the member's partitions (eagerly, all of them) and
// then sends JoinGroup, after the revoke callback has run.
func (c *Consumer) startRejoin() {
	g := c.group
	g.seq++
	seq := g.seq
	c.stopHeartbeats()
	g.state = memberJoining
	g.rejoin = false
	c.giveUpThenJoin(seq, c.sendJoin)
}

// giveUpThenJoin revokes every partition the member owns
// (OnPartitionsRevoked, or OnPartitionsLost when its membership was taken
// away), then calls join once the callback has run.
func (c *Consumer) giveUpThenJoin(seq uint64, join func(seq uint64)) {
	g := c.group
	if owned := g.owned; owned != nil {
		cb := g.listener.OnPartitionsRevoked
		if g.lost && g.listener.OnPartitionsLost != nil {
			cb = g.listener.OnPartitionsLost
		}
		g.owned = nil
		c.setAssignment(nil)
		if cb != nil {
			c.note(func() { cb(owned) })
		}
	}
	g.lost = false
	c.note(func() {
		if seq == g.seq && !c.closed {
			join(seq)
		}
	})
}

// retryJoin joins again after d, unless something newer happened.
func (c *Consumer) retryJoin(seq uint64, d time.Duration) {
	c.e.AfterFunc(d, func() {
		defer c.deliver()
		if seq == c.group.seq && !c.closed {
			c.group.state = memberJoining
			c.sendJoin(seq)
		}
	})
}

func (c *Consumer) joinRequest() *kmsg.JoinGroupRequest {
	g := c.group
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = c.opts.GroupID, g.memberID, "consumer"
	req.SessionTimeoutMillis = int32(c.opts.SessionTimeout / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(c.opts.MaxPollInterval / time.Millisecond)
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 1
	meta.Topics = slices.Clone(g.topics)
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = rangeAssignor, meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

// groupCallTimeout bounds a JoinGroup or SyncGroup: the coordinator parks
// them for up to the rebalance timeout (Kafka: rebalance timeout + 5 s).
func (c *Consumer) groupCallTimeout() time.Duration {
	return c.opts.MaxPollInterval + max(c.opts.RequestTimeout, 5*time.Second)
}

func (c *Consumer) sendJoin(seq uint64) {
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if seq != c.group.seq || c.closed {
			return
		}
		if err != nil {
			c.retryJoin(seq, c.opts.RetryBackoff)
			return
		}
		conn.Do(c.joinRequest(), c.groupCallTimeout(), func(resp kmsg.Response, err error) {
			defer c.deliver()
			c.handleJoin(seq, resp, err)
		})
	})
}

func (c *Consumer) handleJoin(seq uint64, resp kmsg.Response, err error) {
	g := c.group
	if c.closed || seq != g.seq {
		return
	}
	if err != nil {
		c.forgetCoordinator()
		c.retryJoin(seq, c.opts.RetryBackoff)
		return
	}
	r := resp.(*kmsg.JoinGroupResponse)
	switch code := r.ErrorCode; code {
	case 0:
		g.memberID, g.generation = r.MemberID, r.Generation
		if r.Protocol != nil {
			g.protocol = *r.Protocol
		}
		g.state = memberSyncing
		c.e.Log("consumer-joined", "client", c.opts.ClientID, "group", c.opts.GroupID, "member", g.memberID, "generation", g.generation, "leader", r.LeaderID == r.MemberID)
		if r.LeaderID == r.MemberID {
			g.plan = &leaderPlan{seq: seq, members: r.Members}
			c.leaderAssign(g.plan)
			return
		}
		c.sendSync(seq, nil)
	case kerr.MemberIDRequired.Code:
		g.memberID = r.MemberID
		c.sendJoin(seq)
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code:
		g.memberID, g.generation = "", -1
		c.sendJoin(seq)
	case kerr.RebalanceInProgress.Code:
		c.sendJoin(seq)
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		c.forgetCoordinator()
		c.retryJoin(seq, c.opts.RetryBackoff)
	case kerr.CoordinatorLoadInProgress.Code:
		c.retryJoin(seq, c.opts.RetryBackoff)
	default:
		if retriable(codeErr(code)) { // REQUEST_TIMED_OUT: the coordinator could not store the group
			c.retryJoin(seq, c.opts.RetryBackoff)
			return
		}
		c.groupFatal(fmt.Errorf("JoinGroup: %w", codeErr(code)))
	}
}

func (c *Consumer) groupFatal(err error) {
	g := c.group
	g.fatal = err
	g.state = memberUnjoined
	c.stopHeartbeats()
	c.e.Log("consumer-group-fatal", "client", c.opts.ClientID, "error", err.Error())
	c.wake()
}

// leaderAssign is the leader's part: the range assignor over every member's
// subscription, once the metadata of their topics is known.
func (c *Consumer) leaderAssign(plan *leaderPlan) {
	g := c.group
	if plan.seq != g.seq || g.state != memberSyncing {
		g.plan = nil
		return
	}
	subs := map[string][]string{}
	var all []string
	for _, m := range plan.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			c.e.Log("consumer-bad-member-metadata", "client", c.opts.ClientID, "member", m.MemberID)
			continue
		}
		subs[m.MemberID] = meta.Topics
		all = append(all, meta.Topics...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	counts := map[string]int{}
	c.cl.want(all...)
	for _, t := range all {
		n, ok := c.cl.partitions(t)
		if !ok {
			c.cl.requestUpdate() // assign once it is known: the metadata answer wakes us
			return
		}
		counts[t] = n
	}
	g.plan = nil
	shares := rangeAssign(subs, counts)
	var assignments []kmsg.SyncGroupRequestGroupAssignment
	for _, m := range plan.members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = m.MemberID
		a.MemberAssignment = encodeAssignment(shares[m.MemberID])
		assignments = append(assignments, a)
	}
	c.sendSync(plan.seq, assignments)
}

// rangeAssign is Kafka's RangeAssignor: for each topic, its subscribers
// in member id order each take a consecutive range of partitions, the
// first ones one more when they do not divide evenly.
func rangeAssign(subs map[string][]string, counts map[string]int) map[string][]TopicPartition {
	byTopic := map[string][]string{}
	for m, topics := range subs {
		for _, t := range topics {
			byTopic[t] = append(byTopic[t], m)
		}
	}
	out := map[string][]TopicPartition{}
	topics := make([]string, 0, len(byTopic))
	for t := range byTopic {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		members := byTopic[t]
		slices.Sort(members)
		n := counts[t]
		per, extra := n/len(members), n%len(members)
		for i, m := range members {
			start := per*i + min(i, extra)
			length := per
			if i < extra {
				length++
			}
			for p := start; p < start+length; p++ {
				out[m] = append(out[m], TopicPartition{Topic: t, Partition: int32(p)})
			}
		}
	}
	return out
}

func encodeAssignment(tps []TopicPartition) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for _, tp := range tps {
		if n := len(a.Topics); n == 0 || a.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic = tp.Topic
			a.Topics = append(a.Topics, t)
		}
		t := &a.Topics[len(a.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	return a.AppendTo(nil)
}

func decodeAssignment(b []byte) ([]TopicPartition, error) {
	if len(b) == 0 {
		return nil, nil // the leader gave this member nothing
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, err
	}
	var out []TopicPartition
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	slices.SortFunc(out, TopicPartition.Compare)
	return slices.Compact(out), nil
}

func (c *Consumer) sendSync(seq uint64, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	g := c.group
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if seq != g.seq || c.closed {
			return
		}
		if err != nil {
			c.retryJoin(seq, c.opts.RetryBackoff)
			return
		}
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.Generation, req.MemberID = c.opts.GroupID, g.generation, g.memberID
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr(g.protocol)
		req.GroupAssignment = assignments
		conn.Do(req, c.groupCallTimeout(), func(resp kmsg.Response, err error) {
			defer c.deliver()
			c.handleSync(seq, resp, err)
		})
	})
}

func (c *Consumer) handleSync(seq uint64, resp kmsg.Response, err error) {
	g := c.group
	if c.closed || seq != g.seq {
		return
	}
	if err != nil {
		c.forgetCoordinator()
		c.retryJoin(seq, c.opts.RetryBackoff)
		return
	}
	r := resp.(*kmsg.SyncGroupResponse)
	switch code := r.ErrorCode; code {
	case 0:
		tps, err := decodeAssignment(r.MemberAssignment)
		if err != nil {
			c.groupFatal(fmt.Errorf("SyncGroup: undecodable assignment: %w", err))
			return
		}
		g.state = memberStable
		g.joined = GroupMetadata{GroupID: c.opts.GroupID, GenerationID: g.generation, MemberID: g.memberID}
		g.owned = tps
		if g.owned == nil {
			g.owned = []TopicPartition{}
		}
		c.setAssignment(tps)
		c.e.Log("consumer-assigned", "client", c.opts.ClientID, "group", c.opts.GroupID, "generation", g.generation, "partitions", fmt.Sprint(tps))
		if cb := g.listener.OnPartitionsAssigned; cb != nil {
			c.note(func() { cb(slices.Clone(tps)) })
		}
		c.scheduleHeartbeat(seq)
		c.wake()
	case kerr.RebalanceInProgress.Code:
		c.sendJoin(seq)
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code:
		g.memberID, g.generation = "", -1
		c.sendJoin(seq)
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		c.forgetCoordinator()
		c.retryJoin(seq, c.opts.RetryBackoff)
	case kerr.CoordinatorLoadInProgress.Code:
		c.retryJoin(seq, c.opts.RetryBackoff)
	default:
		if retriable(codeErr(code)) { // REQUEST_TIMED_OUT: the coordinator could not store the group
			c.retryJoin(seq, c.opts.RetryBackoff)
			return
		}
		c.groupFatal(fmt.Errorf("SyncGroup: %w", codeErr(code)))
	}
}

func (c *Consumer) stopHeartbeats() {
	if t := c.group.hbTimer; t != 0 {
		c.e.Cancel(t)
		c.group.hbTimer = 0
	}
}

func (c *Consumer) scheduleHeartbeat(seq uint64) {
	c.stopHeartbeats()
	c.group.hbTimer = c.e.AfterFunc(c.opts.HeartbeatInterval, func() {
		c.group.hbTimer = 0
		c.heartbeat(seq)
	})
}

// heartbeat tells the coordinator the member lives, and hears whether it
// must rejoin or was evicted.
func (c *Consumer) heartbeat(seq uint64) {
	g := c.group
	if c.closed || seq != g.seq || g.state != memberStable {
		return
	}
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if c.closed || seq != g.seq || g.state != memberStable {
			return
		}
		if err != nil {
			c.scheduleHeartbeat(seq)
			return
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = c.opts.GroupID, g.generation, g.memberID
		conn.Do(req, c.opts.RequestTimeout, func(resp kmsg.Response, err error) {
			defer c.deliver()
			if c.closed || seq != g.seq || g.state != memberStable {
				return
			}
			if err != nil {
				c.forgetCoordinator()
				c.scheduleHeartbeat(seq)
				return
			}
			code := resp.(*kmsg.HeartbeatResponse).ErrorCode
			switch code {
			case 0:
			case kerr.RebalanceInProgress.Code:
				if !g.rejoin {
					c.e.Log("consumer-rebalance-requested", "client", c.opts.ClientID, "group", c.opts.GroupID, "generation", g.generation)
				}
				g.rejoin = true
				c.wake()
			case kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code:
				c.generationLost(code)
				return
			case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
				c.forgetCoordinator()
			case kerr.CoordinatorLoadInProgress.Code:
			default:
				if !retriable(codeErr(code)) {
					c.groupFatal(fmt.Errorf("Heartbeat: %w", codeErr(code)))
					return
				}
			}
			c.scheduleHeartbeat(seq)
		})
	})
}

// generationLost handles ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID: the
// member was evicted, its partitions may be someone else's already. It
// rejoins at the next Poll (UNKNOWN_MEMBER_ID: as a new member).
func (c *Consumer) generationLost(code int16) {
	g := c.group
	c.e.Log("consumer-generation-lost", "client", c.opts.ClientID, "group", c.opts.GroupID, "generation", g.generation, "error", codeErr(code).Error())
	if code == kerr.UnknownMemberID.Code {
		g.memberID = ""
	}
	g.generation = -1
	g.state, g.lost = memberUnjoined, true
	c.stopHeartbeats()
	c.wake()
}

// notePoll is called by every Poll: it restarts the max.poll.interval.ms
// clock.
func (c *Consumer) notePoll() {
	g := c.group
	if g.pollTimer != 0 {
		c.e.Cancel(g.pollTimer)
	}
	g.pollTimer = c.e.AfterFunc(c.opts.MaxPollInterval, c.pollIntervalExpired)
}

// pollIntervalExpired: the application did not call Poll within
// max.poll.interval.ms: the member leaves, so the group can move on
// without it (Kafka's "consumer poll timeout has expired").
func (c *Consumer) pollIntervalExpired() {
	g := c.group
	g.pollTimer = 0
	if c.closed {
		return
	}
	if c.poll != nil {
		c.notePoll() // in a Poll now: not stuck
		return
	}
	if g.memberID == "" {
		return
	}
	c.e.Log("consumer-poll-timeout", "client", c.opts.ClientID, "group", c.opts.GroupID, "member", g.memberID)
	c.leaveGroup(func() {})
	g.seq++ // answers of a join in flight are moot
	g.memberID, g.generation = "", -1
	g.state, g.lost = memberUnjoined, true
	g.plan = nil
	c.stopHeartbeats()
}

// leaveGroup sends LeaveGroup for the member, then calls done (whatever
// the answer: leaving is best effort; the session timeout does the rest).
func (c *Consumer) leaveGroup(done func()) {
	g := c.group
	if g.consumer != nil {
		c.leaveConsumerGroup(done)
		return
	}
	id := g.memberID
	if id == "" {
		done()
		return
	}
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if err != nil {
			done()
			return
		}
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = c.opts.GroupID, id
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
		conn.Do(req, c.opts.RequestTimeout, func(kmsg.Response, error) { done() })
	})
}

// commitGeneration is the generation and member id a commit carries, or
// an error if the member is not in a stable generation.
func (c *Consumer) commitGeneration() (int32, string, error) {
	g := c.group
	if g == nil {
		return -1, "", nil // assign(): a simple consumer's commit
	}
	if g.state != memberStable || g.generation < 0 {
		return -1, "", ErrCommitFailed
	}
	return g.generation, g.memberID, nil
}

// commitFenced handles a group error in an offset commit's answer.
func (c *Consumer) commitFenced(code int16) {
	g := c.group
	if g == nil {
		return
	}
	if g.consumer != nil {
		// STALE_MEMBER_EPOCH: the next heartbeat brings the epoch.
		if code == kerr.UnknownMemberID.Code && g.state == memberStable {
			c.consumerMembershipLost(code)
		}
		return
	}
	switch code {
	case kerr.IllegalGeneration.Code, kerr.UnknownMemberID.Code:
		if g.state == memberStable {
			c.generationLost(code)
		}
	case kerr.RebalanceInProgress.Code:
		g.rejoin = true
	}
}
