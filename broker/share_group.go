package broker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932) at the group coordinator, as Kafka's
// GroupMetadataManager runs them (shareGroupHeartbeat,
// shareGroupLeave, shareGroupFenceMember; modern/share/ShareGroup.java).
// Membership is KIP-848's without the reconciliation: a member joins with
// ShareGroupHeartbeat (epoch 0) and the topics it subscribes to; the
// group epoch is bumped when a member joins, leaves or changes its
// subscription, or the subscribed topics' partition counts change; the
// coordinator then computes the target assignment with the simple
// assignor, and each member takes its target at once, at the assignment
// epoch: a share partition may be assigned to several members at a time
// (records, not partitions, are what members divide among themselves, at
// the partition's leader: share_fetch.go), so there is nothing to revoke
// first. A member silent for share.session.timeout.ms is fenced.
//
// The group is written to __consumer_offsets as Kafka's records
// (share_group_records.go), so that the next coordinator resumes it with
// its epochs and assignments; a change is answered once its records are
// committed. The share-partition state itself is not the coordinator's:
// it lives at each partition's leader (Kafka: the share coordinator).
//
// Not modelled: rack-aware assignment; the assignor's stickiness (Kafka's
// simple assignor keeps members on the partitions they had where the
// balance allows; here the target is a function of the members and
// partitions only); group.share.max.size; regular expressions (share
// groups subscribe by name only, as in Kafka 4.2); initializing the
// share-partition state when a partition is first assigned (the leader
// initializes it on the first ShareFetch instead: share_fetch.go).

// shareAssignor is the only server-side assignor of share groups.
const shareAssignor = "simple"

// shareGroup is a group's share state; a group has it iff it is a share
// group.
type shareGroup struct {
	epoch, assignmentEpoch int32
	members                map[string]*shareMember
	// target is the target assignment of assignmentEpoch, per member.
	target map[string]partitionSet
	// topics is the subscription metadata: the partition counts of the
	// subscribed topics the target was computed from (Kafka 4.2 keeps only
	// its hash in ShareGroupMetadataValue; it is recomputed on load).
	topics map[string]int32
	// initialized are the partitions whose share-partition state exists
	// (ShareGroupStatePartitionMetadata's initialized topics): assigned to
	// a member once, or given a start offset by AlterShareGroupOffsets.
	initialized partitionSet
}

func newShareGroup() *shareGroup {
	return &shareGroup{members: map[string]*shareMember{}, target: map[string]partitionSet{}, topics: map[string]int32{}, initialized: partitionSet{}}
}

type shareMember struct {
	id, rackID, clientID, clientHost string
	subscribedTopics                 []string // sorted
	epoch, previousEpoch             int32
	assigned                         partitionSet
	sessionTimer                     env.TimerID
}

func (m *shareMember) clone() *shareMember {
	n := *m
	n.subscribedTopics = slices.Clone(m.subscribedTopics)
	n.assigned = m.assigned.clone()
	return &n
}

func (sg *shareGroup) sortedMembers() []*shareMember {
	return slices.SortedFunc(maps.Values(sg.members), func(a, b *shareMember) int { return cmp.Compare(a.id, b.id) })
}

// state is the group's, as Kafka's ShareGroup names it.
func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// shareGroupFor finds group id as a share group, or (create) makes it.
func (c *groupCoordinator) shareGroupFor(w *groupWrite, id string, create bool) (*group, *heartbeatError) {
	g := c.groups[id]
	switch {
	case g != nil && g.share != nil:
		return g, nil
	case g != nil && (g.consumer != nil || g.classic() || len(g.offsets) > 0):
		return nil, heartbeatErr(kerr.GroupIDNotFound, "Group %s is not a share group.", id)
	case !create:
		return nil, heartbeatErr(kerr.GroupIDNotFound, "Share group %s not found.", id)
	}
	g = c.group(id)
	g.share = newShareGroup()
	w.add(encodeShareGroupKey(id), encodeShareGroupValue(0))
	c.b.e.Log("share-group-created", "group", id)
	return g, nil
}

// invalidShareHeartbeat is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid.
func invalidShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) *heartbeatError {
	invalid := func(msg string) *heartbeatError { return heartbeatErr(kerr.InvalidRequest, "%s", msg) }
	switch {
	case req.GroupID == "":
		return invalid("GroupId can't be empty.")
	case req.MemberID == "":
		return invalid("MemberId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	case req.MemberEpoch < leaveGroupMemberEpoch:
		return invalid("MemberEpoch is invalid.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return invalid("SubscribedTopicNames must be set in first request.")
	}
	return nil
}

// handleShareGroupHeartbeat serves ShareGroupHeartbeat (key 76): a join
// (epoch 0), a heartbeat, or a leave (-1). The answer waits for the
// records of what changed to be committed.
func (c *groupCoordinator) handleShareGroupHeartbeat(r *rpc.Request, req *kmsg.ShareGroupHeartbeatRequest) {
	fail := func(e *heartbeatError) {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.ErrorCode = e.code
		if e.msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(e.msg)
		}
		c.b.respond(r, resp)
	}
	if e := invalidShareHeartbeat(req); e != nil {
		fail(e)
		return
	}
	p, code := c.serving(req.GroupID)
	if code != 0 {
		fail(&heartbeatError{code: code})
		return
	}
	w := c.beginWrite(req.GroupID)
	var resp *kmsg.ShareGroupHeartbeatResponse
	var e *heartbeatError
	if req.MemberEpoch == leaveGroupMemberEpoch {
		resp, e = c.shareGroupLeave(&w, req)
	} else {
		resp, e = c.shareGroupHeartbeat(&w, r, req)
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

// shareGroupHeartbeat is Kafka's shareGroupHeartbeat.
func (c *groupCoordinator) shareGroupHeartbeat(w *groupWrite, r *rpc.Request, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, *heartbeatError) {
	g, e := c.shareGroupFor(w, req.GroupID, req.MemberEpoch == 0)
	if e != nil {
		return nil, e
	}
	sg := g.share
	old := sg.members[req.MemberID]
	switch {
	case old == nil && req.MemberEpoch != 0:
		return nil, heartbeatErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
	case old != nil && req.MemberEpoch > old.epoch:
		return nil, heartbeatErr(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, old.epoch)
	case old != nil && req.MemberEpoch > 0 && req.MemberEpoch < old.epoch && req.MemberEpoch != old.previousEpoch:
		return nil, heartbeatErr(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, old.epoch)
	}
	var m *shareMember
	if old == nil {
		m = &shareMember{id: req.MemberID, assigned: partitionSet{}}
		c.b.e.Log("share-group-member-joined", "group", g.id, "member", m.id)
	} else {
		m = old.clone()
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		m.subscribedTopics = slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
	}
	if r.Header.ClientID != nil {
		m.clientID = *r.Header.ClientID
	}
	m.clientHost = r.Peer
	bump := old == nil || !slices.Equal(old.subscribedTopics, m.subscribedTopics)
	if old == nil || bump || old.rackID != m.rackID || old.clientID != m.clientID || old.clientHost != m.clientHost {
		w.add(encodeShareMemberMetadataKey(g.id, m.id), encodeShareMemberMetadataValue(m))
	}
	sg.members[m.id] = m
	if topics := c.shareSubscriptionMetadata(sg); !maps.Equal(topics, sg.topics) {
		sg.topics = topics
		bump = true
	}
	if bump {
		sg.epoch++
		w.add(encodeShareGroupKey(g.id), encodeShareGroupValue(sg.epoch))
		c.b.e.Log("share-group-epoch", "group", g.id, "epoch", sg.epoch, "members", len(sg.members))
	}
	if sg.epoch > sg.assignmentEpoch {
		c.updateShareTargetAssignment(w, g)
	}
	before := m.assigned
	if m.epoch != sg.assignmentEpoch || old == nil {
		m.previousEpoch, m.epoch = m.epoch, sg.assignmentEpoch
		m.assigned = sg.target[m.id].clone()
		w.add(encodeShareCurrentAssignmentKey(g.id, m.id), c.encodeShareCurrentAssignmentValue(m))
	}
	c.markShareInitialized(w, g, m.assigned)
	c.scheduleShareSession(g, m)

	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.id), m.epoch
	resp.HeartbeatIntervalMillis = int32(c.b.shareSettings(g.id).HeartbeatInterval.Milliseconds())
	if req.MemberEpoch == 0 || old == nil || !before.equal(m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, t := range c.byTopicID(m.assigned) {
			at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			at.TopicID, at.Partitions = t.id, t.partitions
			a.TopicPartitions = append(a.TopicPartitions, at)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// markShareInitialized records that the share partitions of s exist
// (Kafka initializes them at the share coordinator when first assigned:
// ShareGroupStatePartitionMetadata's initialized topics).
func (c *groupCoordinator) markShareInitialized(w *groupWrite, g *group, s partitionSet) {
	sg, added := g.share, false
	for tp := range s {
		if !sg.initialized[tp] {
			sg.initialized[tp], added = true, true
		}
	}
	if added {
		w.add(encodeShareStatePartitionMetadataKey(g.id), c.encodeShareStatePartitionMetadataValue(sg.initialized))
	}
}

// shareSubscriptionMetadata is the partition count of every existing
// topic a member subscribes to.
func (c *groupCoordinator) shareSubscriptionMetadata(sg *shareGroup) map[string]int32 {
	out := map[string]int32{}
	for _, m := range sg.sortedMembers() {
		for _, name := range m.subscribedTopics {
			if t := c.b.image.Topics[name]; t != nil {
				out[name] = int32(len(t.Partitions))
			}
		}
	}
	return out
}

// updateShareTargetAssignment computes the target assignment of the
// group epoch with the simple assignor; the members whose target changed
// get a record.
func (c *groupCoordinator) updateShareTargetAssignment(w *groupWrite, g *group) {
	sg := g.share
	members := sg.sortedMembers()
	subs := make([][]string, len(members))
	for i, m := range members {
		for _, t := range m.subscribedTopics {
			if _, ok := sg.topics[t]; ok {
				subs[i] = append(subs[i], t)
			}
		}
	}
	target := simpleAssign(members, subs, sg.topics)
	for i, m := range members {
		t := target[i]
		if prev, ok := sg.target[m.id]; !ok || !prev.equal(t) {
			w.add(encodeShareTargetMemberKey(g.id, m.id), c.encodeShareTargetMemberValue(t))
		}
		sg.target[m.id] = t
	}
	sg.assignmentEpoch = sg.epoch
	w.add(encodeShareTargetMetadataKey(g.id), encodeShareTargetMetadataValue(sg.assignmentEpoch))
	c.b.e.Log("share-group-target-assignment", "group", g.id, "epoch", sg.assignmentEpoch, "assignor", shareAssignor, "members", len(members))
}

// simpleAssign is the simple assignor's balance (Kafka's SimpleAssignor,
// 4.1+): every subscribed partition goes to a member subscribed to its
// topic, the least loaded first (ties to the earliest id); then a member
// left without any — there are more members than partitions — shares the
// subscribed partition with the fewest members. members are sorted by id;
// subs[i] are member i's subscribed existing topics.
func simpleAssign(members []*shareMember, subs [][]string, topics map[string]int32) []partitionSet {
	out := make([]partitionSet, len(members))
	for i := range out {
		out[i] = partitionSet{}
	}
	sharers := map[metadata.TopicPartition]int{}
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		for p := int32(0); p < topics[name]; p++ {
			tp := metadata.TopicPartition{Topic: name, Partition: p}
			best := -1
			for i := range members {
				if slices.Contains(subs[i], name) && (best < 0 || len(out[i]) < len(out[best])) {
					best = i
				}
			}
			if best >= 0 {
				out[best][tp] = true
				sharers[tp]++
			}
		}
	}
	for i := range members {
		if len(out[i]) > 0 {
			continue
		}
		var pick metadata.TopicPartition
		found := false
		for _, name := range subs[i] {
			for p := int32(0); p < topics[name]; p++ {
				tp := metadata.TopicPartition{Topic: name, Partition: p}
				if !found || sharers[tp] < sharers[pick] {
					pick, found = tp, true
				}
			}
		}
		if found {
			out[i][pick] = true
			sharers[pick]++
		}
	}
	return out
}

// scheduleShareSession restarts m's session clock: a member silent for
// share.session.timeout.ms is fenced.
func (c *groupCoordinator) scheduleShareSession(g *group, m *shareMember) {
	c.armShareSession(g, m, c.b.shareSettings(g.id).SessionTimeout)
}

// armShareSession sets m's session timer to fire after d (in place of any
// it had); a fence the log refuses is tried again after
// coordinatorTimerRetryBackoff (group_write.go).
func (c *groupCoordinator) armShareSession(g *group, m *shareMember, d time.Duration) {
	if m.sessionTimer != 0 {
		c.b.e.Cancel(m.sessionTimer)
	}
	sg, id := g.share, m.id
	var t env.TimerID
	t = c.b.e.AfterFunc(d, func() {
		cur := sg.members[id]
		if c.groups[g.id] != g || g.share != sg || cur == nil || cur.sessionTimer != t {
			return
		}
		cur.sessionTimer = 0
		p, code := c.serving(g.id)
		if code != 0 {
			return
		}
		w := c.beginWrite(g.id)
		c.fenceShareMember(&w, g, cur, "its session expired")
		if c.write(p, w, func(int16) {}) != 0 {
			c.armShareSession(g, sg.members[id], coordinatorTimerRetryBackoff)
		}
		c.checkInvariants()
	})
	m.sessionTimer = t
}

// fenceShareMember is Kafka's shareGroupFenceMember: m is removed and the
// group epoch bumped, so that the next heartbeat computes a target
// without it. The records it holds at the partitions' leaders go back
// when it closes its share sessions, or their locks expire.
func (c *groupCoordinator) fenceShareMember(w *groupWrite, g *group, m *shareMember, why string) {
	sg := g.share
	c.b.e.Log("share-group-member-fenced", "group", g.id, "member", m.id, "epoch", m.epoch, "why", why)
	c.b.e.Probe(probe.ShareGroupMemberFenced, g.id)
	if m.sessionTimer != 0 {
		c.b.e.Cancel(m.sessionTimer)
		m.sessionTimer = 0
	}
	w.add(encodeShareCurrentAssignmentKey(g.id, m.id), nil)
	w.add(encodeShareTargetMemberKey(g.id, m.id), nil)
	w.add(encodeShareMemberMetadataKey(g.id, m.id), nil)
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	sg.epoch++
	w.add(encodeShareGroupKey(g.id), encodeShareGroupValue(sg.epoch))
}

// shareGroupLeave is Kafka's shareGroupLeave (epoch -1).
func (c *groupCoordinator) shareGroupLeave(w *groupWrite, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, *heartbeatError) {
	g := c.groups[req.GroupID]
	if g == nil || g.share == nil {
		return nil, heartbeatErr(kerr.GroupIDNotFound, "Share group %s not found.", req.GroupID)
	}
	m := g.share.members[req.MemberID]
	if m == nil {
		return nil, heartbeatErr(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
	}
	c.fenceShareMember(w, g, m, "it left the group")
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), leaveGroupMemberEpoch
	return resp, nil
}

// handleShareGroupDescribe is Kafka's shareGroupDescribe.
func (c *groupCoordinator) handleShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	for _, id := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = id
		dg.AuthorizedOperations = -2147483648
		g := c.groups[id]
		_, code := c.serving(id)
		switch {
		case code != 0:
			dg.ErrorCode = code
		case g == nil || g.share == nil:
			dg.ErrorCode, dg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr(fmt.Sprintf("Group %s is not a share group.", id))
		default:
			sg := g.share
			dg.GroupState, dg.GroupEpoch, dg.AssignmentEpoch, dg.Assignor = sg.state(), sg.epoch, sg.assignmentEpoch, shareAssignor
			for _, m := range sg.sortedMembers() {
				dm := kmsg.NewShareGroupDescribeResponseGroupMember()
				dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
				if m.rackID != "" {
					dm.RackID = kmsg.StringPtr(m.rackID)
				}
				dm.SubscribedTopicNames = slices.Clone(m.subscribedTopics)
				if dm.SubscribedTopicNames == nil {
					dm.SubscribedTopicNames = []string{}
				}
				for _, t := range c.byTopicID(m.assigned) {
					tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
					tp.TopicID, tp.Topic, tp.Partitions = t.id, t.name, t.partitions
					dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// resumeShareGroup starts the timers of a share group just loaded: every
// member gets a fresh session (Kafka's onLoaded); the subscription
// metadata is recomputed.
func (c *groupCoordinator) resumeShareGroup(g *group) {
	sg := g.share
	sg.topics = c.shareSubscriptionMetadata(sg)
	c.b.e.Log("share-group-resumed", "group", g.id, "epoch", sg.epoch, "members", len(sg.members))
	for _, m := range sg.sortedMembers() {
		c.scheduleShareSession(g, m)
	}
}

func (c *groupCoordinator) unloadShareGroup(g *group) {
	for _, m := range g.share.sortedMembers() {
		if m.sessionTimer != 0 {
			c.b.e.Cancel(m.sessionTimer)
			m.sessionTimer = 0
		}
	}
}

// shareGroupViolation is the share group's broken invariant, if any:
// member epochs at most the assignment epoch, which is at most the group
// epoch; a member at the assignment epoch has its target, and targets
// only partitions of topics it subscribes to within the subscription
// metadata; every assigned partition initialized; no classic or
// consumer-protocol state beside it.
func (c *groupCoordinator) shareGroupViolation(id string, g *group) string {
	sg := g.share
	switch {
	case len(g.members) > 0 || g.consumer != nil:
		return invariantf("share group %q has classic or consumer members", id)
	case sg.assignmentEpoch > sg.epoch:
		return invariantf("share group %q: assignment epoch %d > group epoch %d", id, sg.assignmentEpoch, sg.epoch)
	}
	for _, m := range sg.sortedMembers() {
		if m.epoch > sg.assignmentEpoch {
			return invariantf("share group %q: member %q at epoch %d > assignment epoch %d", id, m.id, m.epoch, sg.assignmentEpoch)
		}
		if m.epoch == sg.assignmentEpoch && !m.assigned.equal(sg.target[m.id]) {
			return invariantf("share group %q: member %q at the assignment epoch without its target", id, m.id)
		}
		for _, tp := range m.assigned.sorted() {
			if !sg.initialized[tp] {
				return invariantf("share group %q: %v assigned to %q, not initialized", id, tp, m.id)
			}
		}
		for _, tp := range sg.target[m.id].sorted() {
			if n, ok := sg.topics[tp.Topic]; !ok || tp.Partition >= n || !slices.Contains(m.subscribedTopics, tp.Topic) {
				return invariantf("share group %q: target %v of member %q outside its subscription", id, tp, m.id)
			}
		}
	}
	return ""
}
