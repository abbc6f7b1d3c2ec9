package broker

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group protocol of KIP-848 (ConsumerGroupHeartbeat), beside
// the classic one (group.go), as Kafka's GroupMetadataManager runs it
// (consumerGroupHeartbeat, consumerGroupLeave, consumerGroupFenceMember).
// There is no rebalance barrier: the group has an epoch, bumped whenever
// a member joins, leaves or changes its subscription, or the subscribed
// topics' partitions change; the coordinator then computes a target
// assignment with a server-side assignor (assignors.go) at that epoch,
// and each member converges to its target on its own heartbeats
// (reconcile, Kafka's CurrentAssignmentBuilder): it first gives up the
// partitions it must revoke, acknowledging them by no longer listing
// them in its owned partitions, and only then is it given partitions
// another member held, once that member has released them. A member's
// epoch fences its offset commits (STALE_MEMBER_EPOCH).
//
// Members leave with epoch -1, or -2 for a static member
// (group.instance.id) that will come back: it keeps its partitions until
// its session times out, and its next incarnation takes its place and
// assignment (a live incarnation's instance is UNRELEASED_INSTANCE_ID).
// A member is fenced — removed, the group epoch bumped — when it does not
// heartbeat within group.consumer.session.timeout.ms, or does not revoke
// within its rebalance timeout.
//
// The group's state is written to __consumer_offsets as Kafka's records
// (consumer_group_records.go), so that the next coordinator resumes the
// group with its epochs and assignments. A change is applied in memory
// and answered once its records are committed; if the partition's leader
// refuses them, the change is undone and the answer is the error
// (group_write.go, as Kafka's CoordinatorRuntime reverts).
//
// Not modelled: migration between the protocols
// (group.consumer.migration.policy) — a classic group with members
// refuses ConsumerGroupHeartbeat with GROUP_ID_NOT_FOUND, a consumer group
// with members refuses JoinGroup with INCONSISTENT_GROUP_PROTOCOL, and an
// empty group of either kind becomes the other; group.consumer.max.size;
// rack-aware assignment; per-group configs; regular expressions are
// resolved on the heartbeat (Kafka resolves them in the background).

type memberState int8

// The states of a member's reconciliation, as Kafka's MemberState numbers
// them in ConsumerGroupCurrentMemberAssignmentValue.
const (
	memberStable               memberState = 0 // at its target
	memberUnrevokedPartitions  memberState = 1 // must revoke partitions first
	memberUnreleasedPartitions memberState = 2 // waits for partitions others still own
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "Stable"
	case memberUnrevokedPartitions:
		return "UnrevokedPartitions"
	case memberUnreleasedPartitions:
		return "UnreleasedPartitions"
	}
	return fmt.Sprintf("MemberState(%d)", int8(s))
}

const (
	leaveGroupMemberEpoch       = -1
	leaveGroupStaticMemberEpoch = -2
)

// consumerGroup is a group's KIP-848 state; a group has it iff it is a
// consumer group.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	staticMembers   map[string]string // group.instance.id → member id
	// target is the target assignment of assignmentEpoch, per member.
	target map[string]partitionSet
	// owners are the members owning each partition now: assigned to them
	// or still pending their revocation (Kafka's currentPartitionEpoch).
	owners map[metadata.TopicPartition]string
	// topics is the subscription metadata: the partition counts of the
	// subscribed topics the target assignment was computed from.
	topics map[string]int32
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*consumerMember{}, staticMembers: map[string]string{},
		target: map[string]partitionSet{}, owners: map[metadata.TopicPartition]string{}, topics: map[string]int32{}}
}

type consumerMember struct {
	id, instanceID, rackID, clientID, clientHost string
	rebalanceTimeout                             time.Duration
	serverAssignor                               string
	subscribedTopics                             []string // sorted
	subscribedRegex                              string
	regex                                        *regexp.Regexp // subscribedRegex compiled; nil for none
	epoch, previousEpoch                         int32
	state                                        memberState
	assigned, pendingRevocation                  partitionSet
	// assignmentEpochs holds, for every partition the member owns
	// (assigned or pending revocation), the member epoch at which it was
	// given to the member (KIP-1251's assignment epoch): a commit at an
	// older member epoch than the member's is accepted for a partition
	// assigned at or before that epoch.
	assignmentEpochs             map[metadata.TopicPartition]int32
	sessionTimer, rebalanceTimer env.TimerID
}

// subscription is what a member's metadata record holds.
func (m *consumerMember) subscription() consumerMember {
	return consumerMember{id: m.id, instanceID: m.instanceID, rackID: m.rackID, clientID: m.clientID, clientHost: m.clientHost,
		rebalanceTimeout: m.rebalanceTimeout, serverAssignor: m.serverAssignor, subscribedTopics: m.subscribedTopics, subscribedRegex: m.subscribedRegex}
}

func (m *consumerMember) sameSubscription(o *consumerMember) bool {
	a, b := m.subscription(), o.subscription()
	return a.id == b.id && a.instanceID == b.instanceID && a.rackID == b.rackID && a.clientID == b.clientID && a.clientHost == b.clientHost &&
		a.rebalanceTimeout == b.rebalanceTimeout && a.serverAssignor == b.serverAssignor && slices.Equal(a.subscribedTopics, b.subscribedTopics) &&
		a.subscribedRegex == b.subscribedRegex
}

func (m *consumerMember) sameAssignment(o *consumerMember) bool {
	return m.epoch == o.epoch && m.previousEpoch == o.previousEpoch && m.state == o.state &&
		m.assigned.equal(o.assigned) && m.pendingRevocation.equal(o.pendingRevocation) && maps.Equal(m.assignmentEpochs, o.assignmentEpochs)
}

// assignmentEpoch is the epoch at which m was given tp, or -1 if m does
// not own it (Kafka's assignment epoch of an unassigned partition).
func (m *consumerMember) assignmentEpoch(tp metadata.TopicPartition) int32 {
	if e, ok := m.assignmentEpochs[tp]; ok {
		return e
	}
	return -1
}

// carryAssignmentEpochs gives n's partitions their assignment epochs: a
// partition old already owned keeps the epoch it was given at; one new
// to the member is given at n's epoch.
func (n *consumerMember) carryAssignmentEpochs(old *consumerMember) {
	epochs := make(map[metadata.TopicPartition]int32, len(n.assigned)+len(n.pendingRevocation))
	for _, s := range []partitionSet{n.assigned, n.pendingRevocation} {
		for tp := range s {
			if e, ok := old.assignmentEpochs[tp]; ok { // old's epochs are exactly its partitions' (checkInvariants)
				epochs[tp] = e
			} else {
				epochs[tp] = max(n.epoch, 0)
			}
		}
	}
	n.assignmentEpochs = epochs
}

// reconciledTo is Kafka's isReconciledTo.
func (m *consumerMember) reconciledTo(epoch int32) bool {
	return m.state == memberStable && m.epoch == epoch
}

// clone copies m, without its timers.
func (m *consumerMember) clone() *consumerMember {
	n := *m
	n.assigned, n.pendingRevocation = m.assigned.clone(), m.pendingRevocation.clone()
	n.assignmentEpochs = maps.Clone(m.assignmentEpochs)
	n.subscribedTopics = slices.Clone(m.subscribedTopics)
	return &n
}

// state is the group's, as Kafka's ConsumerGroup.maybeUpdateGroupState
// names it.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if !m.reconciledTo(cg.assignmentEpoch) {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *consumerGroup) sortedMembers() []*consumerMember {
	return slices.SortedFunc(maps.Values(cg.members), func(a, b *consumerMember) int { return cmp.Compare(a.id, b.id) })
}

// setOwnership moves the partitions owned by m (before: old, nil for a
// new member) to what m owns now; a partition another member still owns
// breaks the protocol (Kafka: IllegalStateException in addPartitionEpochs).
func (cg *consumerGroup) setOwnership(groupID string, old, m *consumerMember) {
	if old != nil {
		for tp := range old.assigned {
			delete(cg.owners, tp)
		}
		for tp := range old.pendingRevocation {
			delete(cg.owners, tp)
		}
	}
	if m == nil {
		return
	}
	for _, s := range []partitionSet{m.assigned, m.pendingRevocation} {
		for _, tp := range s.sorted() {
			if o, ok := cg.owners[tp]; ok && o != m.id {
				panic(invariantf("consumer group %q: %v given to member %q while member %q still owns it", groupID, tp, m.id, o))
			}
			cg.owners[tp] = m.id
		}
	}
}

// consumerGroupAssignors are the names group.consumer.assignors lists, the
// first the default.
func (c *groupCoordinator) consumerGroupAssignors() []string {
	return c.b.cfg.Assignors()
}

// preferredAssignor is the assignor most members name, ties to the
// earliest in name order; else the default (ConsumerGroup.preferred-
// ServerAssignor).
func (c *groupCoordinator) preferredAssignor(cg *consumerGroup) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := ""
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	if best == "" {
		best = c.consumerGroupAssignors()[0]
	}
	return best
}

// heartbeatError is a ConsumerGroupHeartbeat refused: the code and
// Kafka's message.
type heartbeatError struct {
	code int16
	msg  string
}

func heartbeatErr(e *kerr.Error, format string, args ...any) *heartbeatError {
	return &heartbeatError{code: e.Code, msg: fmt.Sprintf(format, args...)}
}

// invalidHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid
// (4.0: v1 members make their own ids, and may join with a regex or no
// topics at all).
func (c *groupCoordinator) invalidHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *heartbeatError {
	invalid := func(msg string) *heartbeatError { return heartbeatErr(kerr.InvalidRequest, "%s", msg) }
	switch {
	case req.Group == "":
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	case req.Version >= 1 && req.MemberID == "":
		return invalid("MemberId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == leaveGroupMemberEpoch:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
	case e == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		case req.Topics == nil || len(req.Topics) > 0:
			return invalid("TopicPartitions must be empty when (re-)joining.")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case e == leaveGroupStaticMemberEpoch:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	default:
		return invalid("MemberEpoch is invalid.")
	}
	if a := req.ServerAssignor; a != nil && !slices.Contains(c.consumerGroupAssignors(), *a) {
		return heartbeatErr(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.", *a, strings.Join(c.consumerGroupAssignors(), ", "))
	}
	if r := req.SubscribedTopicRegex; r != nil {
		if _, err := subscriptionRegex(*r); err != nil {
			return heartbeatErr(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *r, err)
		}
	}
	return nil
}

// handleConsumerGroupHeartbeat serves ConsumerGroupHeartbeat: a join
// (epoch 0), a heartbeat, or a leave (-1, -2). The answer waits for the
// records of what changed to be committed.
func (c *groupCoordinator) handleConsumerGroupHeartbeat(r *rpc.Request, req *kmsg.ConsumerGroupHeartbeatRequest) {
	fail := func(e *heartbeatError) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.ErrorCode, resp.ErrorMessage = e.code, kmsg.StringPtr(e.msg)
		c.b.respond(r, resp)
	}
	if e := c.invalidHeartbeat(req); e != nil {
		fail(e)
		return
	}
	p, code := c.serving(req.Group)
	if code != 0 {
		fail(&heartbeatError{code: code})
		return
	}
	w := c.beginWrite(req.Group)
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	var e *heartbeatError
	if req.MemberEpoch == leaveGroupMemberEpoch || req.MemberEpoch == leaveGroupStaticMemberEpoch {
		resp, e = c.consumerGroupLeave(&w, req)
	} else {
		resp, e = c.consumerGroupHeartbeat(&w, r, req)
	}
	if e != nil {
		fail(e)
		return
	}
	c.write(p, w, func(code int16) {
		if code != 0 {
			fail(&heartbeatError{code: code})
			return
		}
		c.b.respond(r, resp)
	})
}

// consumerGroupFor is Kafka's getOrMaybeCreateConsumerGroup: a join may
// create the group, or turn an empty classic group into a consumer group.
func (c *groupCoordinator) consumerGroupFor(w *groupWrite, id string, create bool) (*group, *heartbeatError) {
	g := c.groups[id]
	switch {
	case g != nil && g.consumer != nil:
		return g, nil
	case g != nil && g.share != nil:
		return nil, heartbeatErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", id)
	case g == nil || !g.classic():
		if !create {
			return nil, heartbeatErr(kerr.GroupIDNotFound, "Consumer group %s not found.", id)
		}
		g = c.group(id)
	case create && len(g.members) == 0 && g.state == groupEmpty && len(g.pendingMembers) == 0:
		c.b.e.Log("group-converted", "group", id, "to", "consumer")
		w.add(encodeGroupKey(id), nil) // Kafka's maybeDeleteEmptyClassicGroup
		g.membership = newMembership()
	default:
		return nil, heartbeatErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", id)
	}
	g.consumer = newConsumerGroup()
	return g, nil
}

// classic reports whether g is a classic group: one with classic
// membership state (members, or a generation stored), as opposed to a
// group known only by its committed offsets.
func (g *group) classic() bool {
	return g.consumer == nil && (len(g.members) > 0 || g.generation > 0 || g.state != groupEmpty || len(g.pendingMembers) > 0)
}

// memberEpochError is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a
// member may come with its epoch, or with its previous one if it owns no
// more than it is assigned (the answer bumping it may have been lost).
func memberEpochError(m *consumerMember, epoch int32, owned partitionSet) *heartbeatError {
	switch {
	case epoch > m.epoch:
		return heartbeatErr(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	case epoch < m.epoch:
		subset := owned != nil
		for tp := range owned {
			subset = subset && m.assigned[tp]
		}
		if epoch != m.previousEpoch || !subset {
			return heartbeatErr(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
		}
	}
	return nil
}

// ownedPartitions reads a heartbeat's owned partitions (by topic id);
// nil when the field is null (not sent).
func (c *groupCoordinator) ownedPartitions(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) partitionSet {
	if topics == nil {
		return nil
	}
	names := c.topicNamesByID()
	out := partitionSet{}
	for _, t := range topics {
		name, ok := names[t.TopicID]
		if !ok {
			continue // a deleted topic: owned no longer
		}
		for _, p := range t.Partitions {
			out[metadata.TopicPartition{Topic: name, Partition: p}] = true
		}
	}
	return out
}

func (c *groupCoordinator) topicNamesByID() map[[16]byte]string {
	out := make(map[[16]byte]string, len(c.b.image.Topics))
	for name, t := range c.b.image.Topics {
		out[t.ID] = name
	}
	return out
}

// consumerGroupMember finds (or, joining, makes) the member a heartbeat
// is from: Kafka's getOrMaybeSubscribeDynamicConsumerGroupMember and
// getOrMaybeSubscribeStaticConsumerGroupMember. A static member's new
// incarnation replaces the old one only once that one left with epoch -2.
func (c *groupCoordinator) consumerGroupMember(w *groupWrite, g *group, req *kmsg.ConsumerGroupHeartbeatRequest, owned partitionSet) (*consumerMember, *heartbeatError) {
	cg := g.consumer
	join := req.MemberEpoch == 0
	instance := instanceID(req.InstanceID)
	newMember := func() *consumerMember {
		return &consumerMember{id: req.MemberID, assigned: partitionSet{}, pendingRevocation: partitionSet{}}
	}
	if instance == "" {
		m := cg.members[req.MemberID]
		if m == nil {
			if !join {
				return nil, heartbeatErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
			}
			m = newMember()
		}
		return m, memberEpochError(m, req.MemberEpoch, owned)
	}
	old := cg.members[cg.staticMembers[instance]]
	if !join {
		switch {
		case old == nil:
			return nil, heartbeatErr(kerr.UnknownMemberID, "Instance id %s is unknown.", instance)
		case old.id != req.MemberID:
			c.b.e.Probe(probe.StaticMemberFenced, g.id)
			return nil, heartbeatErr(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by existing member %s.", req.MemberID, instance, old.id)
		}
		return old, memberEpochError(old, req.MemberEpoch, owned)
	}
	if old == nil {
		return newMember(), nil
	}
	if old.epoch != leaveGroupStaticMemberEpoch {
		return nil, heartbeatErr(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", req.MemberID, instance, old.id)
	}
	// The new incarnation takes the old one's place, subscription and
	// assignment, at epoch 0 (Kafka's replaceMember).
	c.b.e.Log("consumer-group-static-member-replaced", "group", g.id, "instance", instance, "old", old.id, "member", req.MemberID)
	c.b.e.Probe(probe.StaticMemberReplaced, g.id)
	m := old.clone()
	m.id, m.epoch, m.previousEpoch = req.MemberID, 0, 0
	m.sessionTimer, m.rebalanceTimer = 0, 0
	target := cg.target[old.id]
	c.removeConsumerMember(w, g, old)
	c.putConsumerMember(w, g, nil, m, true)
	if target != nil {
		cg.target[m.id] = target
		w.add(encodeTargetMemberKey(g.id, m.id), c.encodeTargetMemberValue(target))
	}
	return m, nil
}

// putConsumerMember makes m the group's member of its id in place of old
// (nil if new), writing its subscription record if changed and its
// assignment record if changed, or both if force.
func (c *groupCoordinator) putConsumerMember(w *groupWrite, g *group, old, m *consumerMember, force bool) {
	cg := g.consumer
	if force || old == nil || !old.sameSubscription(m) {
		w.add(encodeMemberMetadataKey(g.id, m.id), encodeMemberMetadataValue(m))
	}
	if force || old == nil || !old.sameAssignment(m) {
		w.add(encodeCurrentAssignmentKey(g.id, m.id), c.encodeCurrentAssignmentValue(m))
	}
	cg.setOwnership(g.id, old, m)
	cg.members[m.id] = m
	if m.instanceID != "" {
		cg.staticMembers[m.instanceID] = m.id
	}
}

// removeConsumerMember takes m out of the group with tombstones for its
// records, stopping its timers (Kafka's removeMember).
func (c *groupCoordinator) removeConsumerMember(w *groupWrite, g *group, m *consumerMember) {
	cg := g.consumer
	w.add(encodeCurrentAssignmentKey(g.id, m.id), nil)
	w.add(encodeTargetMemberKey(g.id, m.id), nil)
	w.add(encodeMemberMetadataKey(g.id, m.id), nil)
	c.stopConsumerMemberTimers(m)
	cg.setOwnership(g.id, m, nil)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != "" && cg.staticMembers[m.instanceID] == m.id {
		delete(cg.staticMembers, m.instanceID)
	}
}

func (c *groupCoordinator) stopConsumerMemberTimers(m *consumerMember) {
	if m.sessionTimer != 0 {
		c.b.e.Cancel(m.sessionTimer)
		m.sessionTimer = 0
	}
	if m.rebalanceTimer != 0 {
		c.b.e.Cancel(m.rebalanceTimer)
		m.rebalanceTimer = 0
	}
}

// consumerGroupHeartbeat is Kafka's consumerGroupHeartbeat: update the
// member, bump the group epoch if the subscriptions (or their topics)
// changed, compute the target assignment of a new epoch, and reconcile
// the member towards its target.
func (c *groupCoordinator) consumerGroupHeartbeat(w *groupWrite, r *rpc.Request, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	g, e := c.consumerGroupFor(w, req.Group, req.MemberEpoch == 0)
	if e != nil {
		return nil, e
	}
	cg := g.consumer
	if req.MemberID == "" { // v0: the coordinator names a joining member
		req.MemberID = c.b.e.Rand().UUID()
	}
	owned := c.ownedPartitions(req.Topics)
	old, e := c.consumerGroupMember(w, g, req, owned)
	if e != nil {
		return nil, e
	}
	m := old.clone()
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		m.subscribedTopics = slices.Sorted(slices.Values(req.SubscribedTopicNames))
		m.subscribedTopics = slices.Compact(m.subscribedTopics)
	}
	if req.SubscribedTopicRegex != nil {
		m.setRegex(*req.SubscribedTopicRegex)
	}
	if r.Header.ClientID != nil {
		m.clientID = *r.Header.ClientID
	}
	m.clientHost = r.Peer
	_, known := cg.members[old.id]
	bump := !known && (len(m.subscribedTopics) > 0 || m.subscribedRegex != "")
	bump = bump || (known && (!slices.Equal(old.subscribedTopics, m.subscribedTopics) || old.subscribedRegex != m.subscribedRegex))
	if !known {
		c.b.e.Log("consumer-group-member-joined", "group", g.id, "member", m.id, "instance", m.instanceID)
	}
	c.putConsumerMember(w, g, cg.members[old.id], m, false)

	if topics := c.subscriptionMetadata(cg); !maps.Equal(topics, cg.topics) {
		cg.topics = topics
		w.add(encodePartitionMetadataKey(g.id), c.encodePartitionMetadataValue(topics))
		bump = true
	}
	if bump {
		cg.epoch++
		w.add(encodeConsumerGroupKey(g.id), encodeConsumerGroupValue(cg.epoch))
		c.b.e.Log("consumer-group-epoch", "group", g.id, "epoch", cg.epoch, "members", len(cg.members))
	}
	if cg.epoch > cg.assignmentEpoch {
		c.updateTargetAssignment(w, g)
	}
	before := m.clone()
	m = c.reconcile(w, g, m, owned)
	c.scheduleConsumerSession(g, m)

	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), m.epoch
	resp.HeartbeatIntervalMillis = int32(c.b.cfg.GroupConsumerHeartbeatInterval.Milliseconds())
	// Kafka sends the assignment on a full request (a join, or one with
	// every field a full request carries) or when it changed.
	full := req.MemberEpoch == 0 || (req.RebalanceTimeoutMillis != -1 && req.SubscribedTopicNames != nil && req.Topics != nil)
	if full || !known || !before.assigned.equal(m.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, t := range c.byTopicID(m.assigned) {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = t.id, t.partitions
			a.Topics = append(a.Topics, at)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// topicPartitions are one topic's partitions of an assignment, by id.
type topicPartitions struct {
	id         [16]byte
	name       string
	partitions []int32
}

// byTopicID groups s by topic, in name order; topics no longer in the
// metadata are left out.
func (c *groupCoordinator) byTopicID(s partitionSet) []topicPartitions {
	var out []topicPartitions
	for _, tp := range s.sorted() {
		if len(out) == 0 || out[len(out)-1].name != tp.Topic {
			t := c.b.image.Topics[tp.Topic]
			if t == nil {
				continue
			}
			out = append(out, topicPartitions{id: t.ID, name: tp.Topic})
		}
		last := &out[len(out)-1]
		last.partitions = append(last.partitions, tp.Partition)
	}
	return out
}

// memberTopics are the existing topics m subscribes to, by name or by its
// regular expression, sorted. Kafka matches a regex against whole topic
// names with RE2 syntax (re2j), internal topics included.
func (c *groupCoordinator) memberTopics(m *consumerMember) []string {
	var out []string
	for _, t := range m.subscribedTopics {
		if c.b.image.Topics[t] != nil {
			out = append(out, t)
		}
	}
	if re := m.regex; re != nil {
		for _, t := range c.b.image.TopicNames() {
			if re.MatchString(t) && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// subscribes reports whether m subscribes to topic, by name or regex.
func (m *consumerMember) subscribes(topic string) bool {
	if slices.Contains(m.subscribedTopics, topic) {
		return true
	}
	return m.regex != nil && m.regex.MatchString(topic)
}

// setRegex sets m's regular expression (valid: invalidHeartbeat checked
// it), "" for none.
func (m *consumerMember) setRegex(expr string) {
	m.subscribedRegex = expr
	m.regex, _ = subscriptionRegex(expr)
}

// subscriptionRegex compiles a member's regular expression, matching
// whole topic names; nil for none.
func subscriptionRegex(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + expr + ")$")
}

// subscriptionMetadata is the partition count of every existing topic a
// member subscribes to (Kafka's computeSubscriptionMetadata).
func (c *groupCoordinator) subscriptionMetadata(cg *consumerGroup) map[string]int32 {
	out := map[string]int32{}
	for _, m := range cg.sortedMembers() {
		for _, t := range c.memberTopics(m) {
			out[t] = int32(len(c.b.image.Topics[t].Partitions))
		}
	}
	return out
}

// updateTargetAssignment is Kafka's TargetAssignmentBuilder: the
// assignor's answer for every member, from their subscriptions and
// current targets, becomes the target of the group epoch; the members
// whose target changed get a record.
func (c *groupCoordinator) updateTargetAssignment(w *groupWrite, g *group) {
	cg := g.consumer
	spec := assignmentSpec{partitions: cg.topics}
	for _, m := range cg.sortedMembers() {
		var topics []string
		for _, t := range c.memberTopics(m) {
			if _, ok := cg.topics[t]; ok {
				topics = append(topics, t)
			}
		}
		spec.members = append(spec.members, assignmentMember{id: m.id, instanceID: m.instanceID, topics: topics, current: cg.target[m.id]})
	}
	name := c.preferredAssignor(cg)
	var target map[string]partitionSet
	if len(spec.members) > 0 {
		target = assignors[name](spec)
	}
	for _, m := range cg.sortedMembers() {
		t := target[m.id]
		if t == nil {
			t = partitionSet{}
		}
		if prev, ok := cg.target[m.id]; !ok || !prev.equal(t) {
			w.add(encodeTargetMemberKey(g.id, m.id), c.encodeTargetMemberValue(t))
		}
		cg.target[m.id] = t
	}
	cg.assignmentEpoch = cg.epoch
	w.add(encodeTargetMetadataKey(g.id), encodeTargetMetadataValue(cg.assignmentEpoch))
	c.b.e.Log("consumer-group-target-assignment", "group", g.id, "epoch", cg.assignmentEpoch, "assignor", name, "members", len(cg.members))
}

// reconcile moves m towards its target assignment, as Kafka's
// CurrentAssignmentBuilder does, and starts (or stops) its rebalance
// timer: a member asked to revoke must do so within its rebalance
// timeout.
func (c *groupCoordinator) reconcile(w *groupWrite, g *group, m *consumerMember, owned partitionSet) *consumerMember {
	cg := g.consumer
	if m.reconciledTo(cg.assignmentEpoch) {
		return m
	}
	n := nextAssignment(m, cg.assignmentEpoch, cg.target[m.id], owned, func(tp metadata.TopicPartition) bool {
		_, ok := cg.owners[tp]
		return ok
	})
	if n.sameAssignment(m) {
		return m
	}
	c.b.e.Log("consumer-group-member-reconciled", "group", g.id, "member", m.id, "epoch", n.epoch, "state", n.state.String(),
		"assigned", len(n.assigned), "revoking", len(n.pendingRevocation))
	if n.state == memberUnrevokedPartitions {
		c.b.e.Probe(probe.ConsumerGroupRevocationPending, g.id)
	}
	if m.state == memberUnrevokedPartitions && n.state != memberUnrevokedPartitions {
		c.b.e.Probe(probe.ConsumerGroupRevocationAcknowledged, g.id)
	}
	c.putConsumerMember(w, g, m, n, false)
	if n.rebalanceTimer != 0 {
		c.b.e.Cancel(n.rebalanceTimer)
		n.rebalanceTimer = 0
	}
	if n.state == memberUnrevokedPartitions {
		c.scheduleConsumerRebalance(g, n)
	}
	return n
}

// scheduleConsumerRebalance gives m, asked to revoke partitions, its
// rebalance timeout to do so: still at this epoch then, it is fenced
// (Kafka's scheduleConsumerGroupRebalanceTimeout).
func (c *groupCoordinator) scheduleConsumerRebalance(g *group, m *consumerMember) {
	c.armConsumerRebalance(g, m, m.rebalanceTimeout)
}

// armConsumerRebalance sets m's rebalance timer to fire after d (in
// place of any it had); a fence the log refuses is tried again after
// coordinatorTimerRetryBackoff (group_write.go).
func (c *groupCoordinator) armConsumerRebalance(g *group, m *consumerMember, d time.Duration) {
	if m.rebalanceTimer != 0 {
		c.b.e.Cancel(m.rebalanceTimer)
	}
	cg, id, epoch := g.consumer, m.id, m.epoch
	var t env.TimerID
	t = c.b.e.AfterFunc(d, func() {
		if cur := cg.members[id]; c.groups[g.id] == g && g.consumer == cg && cur != nil && cur.rebalanceTimer == t {
			cur.rebalanceTimer = 0
			if cur.epoch == epoch && !c.fenceConsumerMemberLater(g, cur, "it did not revoke its partitions within the rebalance timeout") {
				c.armConsumerRebalance(g, cg.members[id], coordinatorTimerRetryBackoff)
			}
		}
	})
	m.rebalanceTimer = t
}

// nextAssignment is CurrentAssignmentBuilder.build: a Stable member
// behind the target epoch, an Unreleased one, or an Unrevoked one that
// no longer owns what it had to revoke (then at epoch+1) computes its
// next step; otherwise m stays. owned is what the member reports owning
// (nil: not reported, so it may still own anything); taken reports a
// partition another member still owns.
func nextAssignment(m *consumerMember, targetEpoch int32, target, owned partitionSet, taken func(metadata.TopicPartition) bool) *consumerMember {
	ownsAny := func(s partitionSet) bool {
		if owned == nil {
			return true
		}
		for tp := range owned {
			if s[tp] {
				return true
			}
		}
		return false
	}
	epoch := m.epoch
	switch m.state {
	case memberStable:
		if m.epoch == targetEpoch {
			return m
		}
	case memberUnrevokedPartitions:
		if ownsAny(m.pendingRevocation) {
			return m
		}
		epoch = m.epoch + 1
	}
	assigned, revoking := partitionSet{}, partitionSet{}
	for tp := range m.assigned {
		if target[tp] {
			assigned[tp] = true
		} else {
			revoking[tp] = true
		}
	}
	unreleased, adding := false, false
	for tp := range target {
		if assigned[tp] {
			continue
		}
		if taken(tp) {
			unreleased = true
		} else {
			adding = true
		}
	}
	n := m.clone()
	n.previousEpoch = m.epoch
	if len(revoking) > 0 && ownsAny(revoking) {
		n.state, n.epoch, n.assigned, n.pendingRevocation = memberUnrevokedPartitions, epoch, assigned, revoking
		n.carryAssignmentEpochs(m)
		return n
	}
	if adding {
		for tp := range target {
			if !assigned[tp] && !taken(tp) {
				assigned[tp] = true
			}
		}
	}
	n.state, n.epoch, n.assigned, n.pendingRevocation = memberStable, targetEpoch, assigned, partitionSet{}
	if unreleased {
		n.state = memberUnreleasedPartitions
	}
	n.carryAssignmentEpochs(m)
	return n
}

// scheduleConsumerSession restarts m's session clock: a member silent for
// group.consumer.session.timeout.ms is fenced.
func (c *groupCoordinator) scheduleConsumerSession(g *group, m *consumerMember) {
	c.armConsumerSession(g, m, c.b.cfg.GroupConsumerSessionTimeout)
}

// armConsumerSession sets m's session timer to fire after d (in place of
// any it had); a fence the log refuses is tried again after
// coordinatorTimerRetryBackoff (group_write.go).
func (c *groupCoordinator) armConsumerSession(g *group, m *consumerMember, d time.Duration) {
	if m.sessionTimer != 0 {
		c.b.e.Cancel(m.sessionTimer)
	}
	cg, id := g.consumer, m.id
	var t env.TimerID
	t = c.b.e.AfterFunc(d, func() {
		if cur := cg.members[id]; c.groups[g.id] == g && g.consumer == cg && cur != nil && cur.sessionTimer == t {
			cur.sessionTimer = 0
			if !c.fenceConsumerMemberLater(g, cur, "its session expired") {
				c.armConsumerSession(g, cg.members[id], coordinatorTimerRetryBackoff)
			}
		}
	})
	m.sessionTimer = t
}

// fenceConsumerMemberLater fences m on a timer: there is no request to
// answer, and the records are written for the next coordinator. False if
// the log refused them, the fence undone (the member is back).
func (c *groupCoordinator) fenceConsumerMemberLater(g *group, m *consumerMember, why string) bool {
	p, code := c.serving(g.id)
	if code != 0 {
		return true // not the coordinator: Kafka drops the timer's operation
	}
	w := c.beginWrite(g.id)
	c.fenceConsumerMember(&w, g, m, why)
	refused := c.write(p, w, func(int16) {})
	c.checkInvariants()
	return refused == 0
}

// fenceConsumerMember is Kafka's consumerGroupFenceMember: m is removed,
// its partitions free, and the group epoch bumped so that the next
// heartbeat computes a target assignment without it.
func (c *groupCoordinator) fenceConsumerMember(w *groupWrite, g *group, m *consumerMember, why string) {
	cg := g.consumer
	c.b.e.Log("consumer-group-member-fenced", "group", g.id, "member", m.id, "epoch", m.epoch, "why", why)
	c.b.e.Probe(probe.ConsumerGroupMemberFenced, g.id)
	c.removeConsumerMember(w, g, m)
	if topics := c.subscriptionMetadata(cg); !maps.Equal(topics, cg.topics) {
		cg.topics = topics
		w.add(encodePartitionMetadataKey(g.id), c.encodePartitionMetadataValue(topics))
	}
	cg.epoch++
	w.add(encodeConsumerGroupKey(g.id), encodeConsumerGroupValue(cg.epoch))
}

// consumerGroupLeave is Kafka's consumerGroupLeave: epoch -1 removes the
// member; -2 (a static member's temporary leave) keeps it, and its
// assigned partitions, at epoch -2 until its session expires or its next
// incarnation joins.
func (c *groupCoordinator) consumerGroupLeave(w *groupWrite, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	g := c.groups[req.Group]
	if g == nil || g.consumer == nil {
		if g == nil || !g.classic() {
			return nil, heartbeatErr(kerr.GroupIDNotFound, "Consumer group %s not found.", req.Group)
		}
		return nil, heartbeatErr(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
	}
	cg := g.consumer
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), req.MemberEpoch
	instance := instanceID(req.InstanceID)
	if instance == "" {
		m := cg.members[req.MemberID]
		if m == nil {
			return nil, heartbeatErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
		}
		c.fenceConsumerMember(w, g, m, "it left the group")
		return resp, nil
	}
	m := cg.members[cg.staticMembers[instance]]
	switch {
	case m == nil:
		return nil, heartbeatErr(kerr.UnknownMemberID, "Instance id %s is unknown.", instance)
	case m.id != req.MemberID:
		c.b.e.Probe(probe.StaticMemberFenced, g.id)
		return nil, heartbeatErr(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by existing member %s.", req.MemberID, instance, m.id)
	case req.MemberEpoch == leaveGroupStaticMemberEpoch:
		c.b.e.Log("consumer-group-static-member-left", "group", g.id, "member", m.id, "instance", instance)
		n := m.clone()
		n.epoch, n.pendingRevocation = leaveGroupStaticMemberEpoch, partitionSet{}
		// The instance's next incarnation starts at epoch 0 with this
		// assignment: its partitions count as given at 0 (KIP-1251).
		n.assignmentEpochs = map[metadata.TopicPartition]int32{}
		for tp := range n.assigned {
			n.assignmentEpochs[tp] = 0
		}
		if n.rebalanceTimer != 0 {
			c.b.e.Cancel(n.rebalanceTimer)
			n.rebalanceTimer = 0
		}
		c.putConsumerMember(w, g, m, n, false)
		return resp, nil
	}
	c.fenceConsumerMember(w, g, m, "it left the group")
	return resp, nil
}

// handleConsumerGroupDescribe is Kafka's consumerGroupDescribe: each
// consumer group's epochs, assignor, and members with their current and
// target assignments.
func (c *groupCoordinator) handleConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = -2147483648
		g := c.groups[id]
		_, code := c.serving(id)
		switch {
		case code != 0:
			dg.ErrorCode = code
		case g == nil || (g.consumer == nil && !g.classic()):
			dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr(fmt.Sprintf("Group %s not found.", id))
		case g.consumer == nil:
			dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr(fmt.Sprintf("Group %s is not a consumer group.", id))
		default:
			cg := g.consumer
			dg.State, dg.Epoch, dg.AssignmentEpoch, dg.AssignorName = cg.state(), cg.epoch, cg.assignmentEpoch, c.preferredAssignor(cg)
			for _, m := range cg.sortedMembers() {
				dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
				if m.instanceID != "" {
					dm.InstanceID = kmsg.StringPtr(m.instanceID)
				}
				if m.rackID != "" {
					dm.RackID = kmsg.StringPtr(m.rackID)
				}
				dm.SubscribedTopics = slices.Clone(m.subscribedTopics)
				if dm.SubscribedTopics == nil {
					dm.SubscribedTopics = []string{}
				}
				if m.subscribedRegex != "" {
					dm.SubscribedTopicRegex = kmsg.StringPtr(m.subscribedRegex)
				}
				dm.Assignment, dm.TargetAssignment = c.describedAssignment(m.assigned), c.describedAssignment(cg.target[m.id])
				dm.MemberType = 1 // the consumer protocol (KIP-1099)
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *groupCoordinator) describedAssignment(s partitionSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	for _, t := range c.byTopicID(s) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t.id, t.name, t.partitions
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// consumerOffsetCommitFence is Kafka's ConsumerGroup.validateOffsetCommit:
// a commit naming no member epoch is accepted while the group has no
// members; otherwise it must come from a member, with OffsetCommit v9+
// unless transactional, at an epoch no newer than the member's
// (STALE_MEMBER_EPOCH). One at the member's epoch is accepted whole; one
// at an older epoch — the member's heartbeat bumped its epoch while the
// commit was on its way — is checked partition by partition, as KIP-1251
// (Kafka 4.3, KAFKA-20066) checks it: accepted for a partition the member
// owns and was given at or before that epoch (assignment epoch ≤ commit
// epoch ≤ member epoch), STALE_MEMBER_EPOCH for any other.
func consumerOffsetCommitFence(cg *consumerGroup, memberID string, epoch int32, transactional bool, version int16) (int16, partitionFence) {
	if epoch < 0 && len(cg.members) == 0 {
		return 0, nil
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code, nil
	case !transactional && version < 9:
		return kerr.UnsupportedVersion.Code, nil
	case epoch > m.epoch:
		return kerr.StaleMemberEpoch.Code, nil
	case epoch < m.epoch:
		return 0, func(tp metadata.TopicPartition) int16 {
			if e := m.assignmentEpoch(tp); e < 0 || e > epoch {
				return kerr.StaleMemberEpoch.Code
			}
			return 0
		}
	}
	return 0, nil
}

// consumerOffsetFetchFence is ConsumerGroup.validateOffsetFetch: a fetch
// naming a member must come from one, at its current epoch; one naming
// neither (an admin client) is accepted.
func consumerOffsetFetchFence(cg *consumerGroup, memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	m := cg.members[instanceID(memberID)]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// resumeConsumerGroup starts the timers of a consumer group just loaded:
// every member gets a fresh session, and one still revoking a fresh
// rebalance timeout (Kafka's onLoaded).
func (c *groupCoordinator) resumeConsumerGroup(g *group) {
	cg := g.consumer
	c.b.e.Log("consumer-group-resumed", "group", g.id, "epoch", cg.epoch, "state", cg.state(), "members", len(cg.members))
	for _, m := range cg.sortedMembers() {
		c.scheduleConsumerSession(g, m)
		if m.state == memberUnrevokedPartitions {
			c.scheduleConsumerRebalance(g, m)
		}
	}
}

// classicFromEmptyConsumerGroup turns an empty consumer group that a
// JoinGroup names into a classic group, its records deleted (Kafka's
// maybeDeleteEmptyConsumerGroup); its offsets stay.
// A non-zero code if the log refused the tombstones: the group is then
// still the consumer group.
func (c *groupCoordinator) classicFromEmptyConsumerGroup(g *group) int16 {
	p, code := c.serving(g.id)
	if code != 0 {
		return code
	}
	c.b.e.Log("group-converted", "group", g.id, "to", "classic")
	w := c.beginWrite(g.id)
	for _, k := range consumerGroupTombstoneKeys(g.id) {
		w.add(k, nil)
	}
	c.unloadConsumerGroup(g)
	g.consumer = nil
	return c.write(p, w, func(int16) {})
}

// unloadConsumerGroup stops a consumer group's timers.
func (c *groupCoordinator) unloadConsumerGroup(g *group) {
	for _, m := range g.consumer.sortedMembers() {
		c.stopConsumerMemberTimers(m)
	}
}

// consumerGroupViolation is the consumer group's broken invariant, if
// any: member epochs at most the group epoch, the target assignment's
// epoch too; no partition owned (assigned or pending revocation) by two
// members, and the owners index agreeing with the members; targets only
// of partitions of topics the member subscribes to that exist in the
// subscription metadata, none targeted to two members; static members
// mapped to their instances; no classic members.
func (c *groupCoordinator) consumerGroupViolation(id string, g *group) string {
	cg := g.consumer
	if len(g.members) > 0 {
		return invariantf("consumer group %q has %d classic members", id, len(g.members))
	}
	if cg.assignmentEpoch > cg.epoch {
		return invariantf("consumer group %q: assignment epoch %d > group epoch %d", id, cg.assignmentEpoch, cg.epoch)
	}
	owners, targeted := map[metadata.TopicPartition]string{}, map[metadata.TopicPartition]string{}
	for _, m := range cg.sortedMembers() {
		if m.epoch > cg.epoch {
			return invariantf("consumer group %q: member %q at epoch %d > group epoch %d", id, m.id, m.epoch, cg.epoch)
		}
		if m.instanceID != "" && cg.staticMembers[m.instanceID] != m.id {
			return invariantf("consumer group %q: static member %q of instance %q not mapped to it", id, m.id, m.instanceID)
		}
		for _, s := range []partitionSet{m.assigned, m.pendingRevocation} {
			for _, tp := range s.sorted() {
				if o, ok := owners[tp]; ok {
					return invariantf("consumer group %q: %v owned by members %q and %q", id, tp, o, m.id)
				}
				owners[tp] = m.id
				if e, ok := m.assignmentEpochs[tp]; !ok || e < 0 || e > max(m.epoch, 0) {
					return invariantf("consumer group %q: %v of member %q at epoch %d has assignment epoch %d (given: %v)", id, tp, m.id, m.epoch, e, ok)
				}
			}
		}
		if len(m.assignmentEpochs) != len(m.assigned)+len(m.pendingRevocation) {
			return invariantf("consumer group %q: member %q holds %d assignment epochs for %d partitions", id, m.id, len(m.assignmentEpochs), len(m.assigned)+len(m.pendingRevocation))
		}
		for _, tp := range cg.target[m.id].sorted() {
			if n, ok := cg.topics[tp.Topic]; !ok || tp.Partition >= n {
				return invariantf("consumer group %q: target %v of member %q not in the subscription metadata", id, tp, m.id)
			}
			if !m.subscribes(tp.Topic) {
				return invariantf("consumer group %q: target %v of member %q, not subscribed to %q", id, tp, m.id, tp.Topic)
			}
			if o, ok := targeted[tp]; ok {
				return invariantf("consumer group %q: %v targeted to members %q and %q", id, tp, o, m.id)
			}
			targeted[tp] = m.id
		}
	}
	if !maps.Equal(owners, cg.owners) {
		return invariantf("consumer group %q: owners index %v disagrees with the members' assignments %v", id, cg.owners, owners)
	}
	if len(cg.staticMembers) > len(cg.members) {
		return invariantf("consumer group %q: %d instances mapped, %d members", id, len(cg.staticMembers), len(cg.members))
	}
	return ""
}
