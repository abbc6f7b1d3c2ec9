package broker

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
// as Kafka's GroupCoordinator runs it. A rebalance gathers every member's
// JoinGroup, bumps the generation, hands the leader (a client) everyone's
// subscription, and distributes the assignment the leader computed in its
// SyncGroup. Members that do not rejoin within the rebalance timeout
// (max.poll.interval.ms) or do not heartbeat within session.timeout.ms are
// evicted, and their generation's offset commits are refused from then on:
// the fence against zombie consumers.
//
// Static membership (KIP-345): a member joining with a group.instance.id
// skips MEMBER_ID_REQUIRED and is mapped to its instance; when the instance
// joins again without a member id (a restarted consumer) it takes the old
// member's place, its assignment and leadership, without a rebalance while
// the group is Stable and the selected protocol stands — the old
// incarnation's parked requests, and any request it sends later, are told
// FENCED_INSTANCE_ID (GroupMetadataManager.updateStaticMemberThenRebalance-
// OrCompleteJoin, ClassicGroup.replaceStaticMember and validateMember). A
// static member leaves only by its session timeout or a LeaveGroup naming
// its instance.
//
// The consumer protocol of KIP-848 is consumer_group.go's; a group is of
// one protocol or the other.
//
// Not modelled: group.max.size, group and offset expiration.

type groupState uint8

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

func (s groupState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// membership is a group's classic-protocol state.
type membership struct {
	state        groupState
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	// staticMembers maps each static member's group.instance.id to its
	// current member id.
	staticMembers map[string]string
	// pendingMembers were given a member id (MEMBER_ID_REQUIRED) and have
	// not joined with it yet; each expires after its session timeout.
	pendingMembers map[string]env.TimerID
	joinSeq        uint64 // numbers members in join order

	joinTimer env.TimerID // the rebalance's deadline (Kafka's DelayedJoin)
	// initialDelay: the first rebalance of an empty group waits
	// group.initial.rebalance.delay.ms for more members, extended while
	// they keep coming, up to the rebalance timeout.
	initialDelay     bool
	newMemberAdded   bool
	initialRemaining time.Duration

	// pendingSync are members of the new generation that have not sent
	// SyncGroup; after the rebalance timeout they are evicted.
	pendingSync map[string]bool
	syncTimer   env.TimerID
}

func newMembership() membership {
	return membership{members: map[string]*member{}, staticMembers: map[string]string{}, pendingMembers: map[string]env.TimerID{}}
}

type member struct {
	id               string
	instanceID       string // group.instance.id; "" for a dynamic member
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte
	seq              uint64 // join order: the leader is the earliest member
	join             *parkedJoin
	sync             *parkedSync
	heartbeatTimer   env.TimerID
}

type parkedJoin struct {
	r   *rpc.Request
	req *kmsg.JoinGroupRequest
}

type parkedSync struct {
	r   *rpc.Request
	req *kmsg.SyncGroupRequest
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// validateMember is Kafka's ClassicGroup.validateMember: a request naming
// a group.instance.id must come from the member id that instance is mapped
// to now (an older incarnation is FENCED_INSTANCE_ID), and the member must
// exist.
func (g *membership) validateMember(memberID, instanceID string) int16 {
	if instanceID != "" {
		id, ok := g.staticMembers[instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if id != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// instanceID reads a nullable group.instance.id field.
func instanceID(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sortedMembers lists the members in join order.
func (g *membership) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return cmp.Compare(a.seq, b.seq) })
	return ms
}

func (g *membership) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// candidateProtocols are the protocols every member supports, in the
// order of the earliest member's preference.
func (g *membership) candidateProtocols() []string {
	ms := g.sortedMembers()
	if len(ms) == 0 {
		return nil
	}
	var out []string
	for _, p := range ms[0].protocols {
		all := true
		for _, m := range ms[1:] {
			if !slices.ContainsFunc(m.protocols, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			out = append(out, p.Name)
		}
	}
	return out
}

// supportsProtocols is Kafka's check that a joining member can live in
// the group: same protocol type, and a protocol in common with everyone.
func (g *membership) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, c := range g.candidateProtocols() {
		if slices.ContainsFunc(protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == c }) {
			return true
		}
	}
	return false
}

// selectProtocol: each member votes for its most preferred candidate; the
// most votes win, ties going to the earliest member's preference.
func (g *membership) selectProtocol() string {
	candidates := g.candidateProtocols()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// live reports whether g is still this coordinator's group and m one of
// its members (timers outlive both).
func (c *groupCoordinator) live(g *group, m *member) bool {
	return c.groups[g.id] == g && (m == nil || g.members[m.id] == m)
}

func (c *groupCoordinator) newMemberID(clientID string) string {
	return clientID + "-" + c.b.e.Rand().UUID()
}

func (c *groupCoordinator) handleJoinGroup(r *rpc.Request, req *kmsg.JoinGroupRequest) {
	fail := func(code int16, memberID string) {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, memberID
		c.b.respond(r, resp)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := session
	if req.Version >= 1 && req.RebalanceTimeoutMillis > 0 {
		rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.Group == "" {
		fail(kerr.InvalidGroupID.Code, req.MemberID)
		return
	}
	if _, code := c.serving(req.Group); code != 0 {
		fail(code, req.MemberID)
		return
	}
	if session < c.b.cfg.GroupSessionTimeoutMin || session > c.b.cfg.GroupSessionTimeoutMax {
		fail(kerr.InvalidSessionTimeout.Code, req.MemberID)
		return
	}
	g := c.groups[req.Group]
	if g != nil && g.share != nil {
		// A share group is not a classic group, even empty (Kafka's
		// getOrMaybeCreateClassicGroup).
		fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		return
	}
	if g != nil && g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// No migration between the protocols
			// (group.consumer.migration.policy): a consumer group's
			// members are all KIP-848 members.
			fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
			return
		}
		if code := c.classicFromEmptyConsumerGroup(g); code != 0 {
			fail(code, req.MemberID)
			return
		}
	}
	if req.MemberID == "" {
		if g == nil {
			g = c.group(req.Group)
		}
	} else if g == nil {
		fail(kerr.UnknownMemberID.Code, req.MemberID)
		return
	}
	switch {
	case g.state == groupDead:
		fail(kerr.CoordinatorNotAvailable.Code, req.MemberID)
		return
	case !g.supportsProtocols(req.ProtocolType, req.Protocols):
		fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		return
	}
	instance := instanceID(req.InstanceID)
	if req.MemberID == "" && instance != "" {
		// A static member needs no MEMBER_ID_REQUIRED round: its instance
		// id already names it (Kafka: groupInstanceId + "-" + a UUID).
		id := c.newMemberID(instance)
		if old, ok := g.staticMembers[instance]; ok {
			c.replaceStaticMember(g, g.members[old], id, r, req, session, rebalance)
			return
		}
		c.addMemberAndRebalance(g, id, r, req, session, rebalance)
		return
	}
	if req.MemberID == "" {
		clientID := ""
		if r.Header.ClientID != nil {
			clientID = *r.Header.ClientID
		}
		id := c.newMemberID(clientID)
		if req.Version >= 4 {
			// KIP-394: the member must come back with its id, so that a
			// join whose answer is lost does not leave a ghost member.
			g.pendingMembers[id] = c.b.e.AfterFunc(session, func() { c.expirePendingMember(g, id) })
			fail(kerr.MemberIDRequired.Code, id)
			return
		}
		c.addMemberAndRebalance(g, id, r, req, session, rebalance)
		return
	}
	id := req.MemberID
	if t, ok := g.pendingMembers[id]; ok && instance == "" {
		c.b.e.Cancel(t)
		delete(g.pendingMembers, id)
		c.addMemberAndRebalance(g, id, r, req, session, rebalance)
		return
	}
	if code := g.validateMember(id, instance); code != 0 {
		c.fencedInstance(g, code, instance)
		fail(code, id)
		return
	}
	m := g.members[id]
	switch g.state {
	case groupPreparingRebalance:
		c.updateMemberAndRebalance(g, m, r, req, session, rebalance)
	case groupCompletingRebalance:
		if m.matches(req.Protocols) {
			// The member lost the join answer: give it again.
			c.respondJoin(g, m, r)
			return
		}
		c.updateMemberAndRebalance(g, m, r, req, session, rebalance)
	case groupStable:
		if m.id == g.leader || !m.matches(req.Protocols) {
			c.updateMemberAndRebalance(g, m, r, req, session, rebalance)
			return
		}
		c.respondJoin(g, m, r) // nothing changed: the current generation stands
	default:
		fail(kerr.UnknownMemberID.Code, id)
	}
}

func (c *groupCoordinator) expirePendingMember(g *group, id string) {
	if !c.live(g, nil) {
		return
	}
	if _, ok := g.pendingMembers[id]; !ok {
		return
	}
	delete(g.pendingMembers, id)
	c.b.e.Log("group-pending-member-expired", "group", g.id, "member", id)
	c.maybeCompleteJoin(g)
}

func (c *groupCoordinator) addMemberAndRebalance(g *group, id string, r *rpc.Request, req *kmsg.JoinGroupRequest, session, rebalance time.Duration) {
	clientID := ""
	if r.Header.ClientID != nil {
		clientID = *r.Header.ClientID
	}
	g.joinSeq++
	m := &member{id: id, instanceID: instanceID(req.InstanceID), clientID: clientID, clientHost: r.Peer, sessionTimeout: session, rebalanceTimeout: rebalance,
		protocolType: req.ProtocolType, protocols: cloneProtocols(req.Protocols), seq: g.joinSeq}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	if m.instanceID != "" {
		g.staticMembers[m.instanceID] = id
	}
	if g.state == groupPreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.members[id] = m
	if g.leader == "" {
		g.leader = id
	}
	m.join = &parkedJoin{r: r, req: req}
	c.b.e.Log("group-member-added", "group", g.id, "member", id, "members", len(g.members))
	c.maybePrepareRebalance(g, "member "+id+" joined")
	c.maybeCompleteJoin(g)
}

func (c *groupCoordinator) updateMemberAndRebalance(g *group, m *member, r *rpc.Request, req *kmsg.JoinGroupRequest, session, rebalance time.Duration) {
	if m.join != nil {
		// A second join on another connection supersedes the first.
		old := m.join
		m.join = nil
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.RebalanceInProgress.Code, -1, m.id
		c.b.respond(old.r, resp)
	}
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = cloneProtocols(req.Protocols), session, rebalance
	m.join = &parkedJoin{r: r, req: req}
	c.maybePrepareRebalance(g, "member "+m.id+" rejoined")
	c.maybeCompleteJoin(g)
}

// replaceStaticMember is Kafka's updateStaticMemberThenRebalanceOrComplete-
// Join: a static member's new incarnation (joining without a member id)
// takes old's place under member id id. Old's parked join and sync are
// told FENCED_INSTANCE_ID. In a Stable group whose selected protocol the
// new subscription does not change, the group is stored and the member
// answered with the current generation, no rebalance; in
// CompletingRebalance a rebalance starts, since the leader may be
// assigning to the old member id.
func (c *groupCoordinator) replaceStaticMember(g *group, old *member, id string, r *rpc.Request, req *kmsg.JoinGroupRequest, session, rebalance time.Duration) {
	c.b.e.Log("group-static-member-replaced", "group", g.id, "instance", old.instanceID, "old", old.id, "member", id)
	c.b.e.Probe(probe.StaticMemberReplaced, g.id)
	m := c.swapMemberID(g, old, id)
	oldProtocols, oldSession, oldRebalance := m.protocols, m.sessionTimeout, m.rebalanceTimeout
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = cloneProtocols(req.Protocols), session, rebalance
	pj := &parkedJoin{r: r, req: req}
	m.join = pj
	c.scheduleHeartbeat(g, m)
	switch g.state {
	case groupStable:
		if g.selectProtocol() != g.protocol {
			c.prepareRebalance(g, "static member "+id+" changed the selected protocol")
			return
		}
		gen := g.generation
		oldID := old.id
		c.storeGroup(g, func(code int16) {
			if !c.live(g, m) || m.join != pj || g.state != groupStable || g.generation != gen {
				return // a rebalance took the join over
			}
			m.join = nil
			if code != 0 {
				// Kafka reverts the replacement when storing it failed.
				m.protocols, m.sessionTimeout, m.rebalanceTimeout = oldProtocols, oldSession, oldRebalance
				back := c.swapMemberID(g, m, oldID)
				c.scheduleHeartbeat(g, back)
				resp := kmsg.NewPtrJoinGroupResponse()
				resp.ErrorCode, resp.Generation = code, g.generation
				resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
				resp.LeaderID = g.leader
				c.b.respond(r, resp)
				return
			}
			// From v9 the leader is told to skip the assignment: it
			// has the members, and the group keeps its assignment.
			skip := req.Version >= 9 && m.id == g.leader
			c.respondJoinMembers(g, m, r, skip, skip)
		})
	case groupCompletingRebalance:
		c.prepareRebalance(g, "static member "+id+" rejoined while the leader assigns")
	default:
		c.maybeCompleteJoin(g)
	}
}

// swapMemberID moves static member m to member id id, keeping its
// instance, subscription, assignment, join order and leadership; the
// requests parked under its old id are told FENCED_INSTANCE_ID.
func (c *groupCoordinator) swapMemberID(g *group, m *member, id string) *member {
	c.releaseMember(m, kerr.FencedInstanceID.Code)
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	n := &member{id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
		sessionTimeout: m.sessionTimeout, rebalanceTimeout: m.rebalanceTimeout, protocolType: m.protocolType,
		protocols: m.protocols, assignment: m.assignment, seq: m.seq}
	g.members[id] = n
	if g.leader == m.id {
		g.leader = id
	}
	g.staticMembers[m.instanceID] = id
	return n
}

// fencedInstance counts a request refused because its group.instance.id
// now belongs to a newer incarnation.
func (c *groupCoordinator) fencedInstance(g *group, code int16, instance string) {
	if code == kerr.FencedInstanceID.Code {
		c.b.e.Log("group-instance-fenced", "group", g.id, "instance", instance)
		c.b.e.Probe(probe.StaticMemberFenced, g.id)
	}
}

func cloneProtocols(ps []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, len(ps))
	for i, p := range ps {
		out[i] = kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)}
	}
	return out
}

func (c *groupCoordinator) maybePrepareRebalance(g *group, why string) {
	switch g.state {
	case groupStable, groupCompletingRebalance, groupEmpty:
		c.prepareRebalance(g, why)
	}
}

// prepareRebalance opens a rebalance: members must rejoin within the
// rebalance timeout.
func (c *groupCoordinator) prepareRebalance(g *group, why string) {
	if g.state == groupCompletingRebalance {
		c.resetAndPropagateAssignmentError(g, kerr.RebalanceInProgress.Code)
	}
	c.cancelSyncTimer(g)
	g.pendingSync = nil
	if g.joinTimer != 0 {
		c.b.e.Cancel(g.joinTimer)
		g.joinTimer = 0
	}
	wasEmpty := g.state == groupEmpty
	c.transition(g, groupPreparingRebalance)
	c.b.e.Log("group-prepare-rebalance", "group", g.id, "generation", g.generation, "why", why)
	if wasEmpty {
		delay := c.b.cfg.GroupInitialRebalanceDelay
		g.initialDelay, g.newMemberAdded = true, false
		g.initialRemaining = max(g.rebalanceTimeout()-delay, 0)
		g.joinTimer = c.b.e.AfterFunc(delay, func() { c.initialDelayExpired(g) })
		return
	}
	g.initialDelay = false
	gen := g.generation
	g.joinTimer = c.b.e.AfterFunc(g.rebalanceTimeout(), func() {
		if c.live(g, nil) && g.state == groupPreparingRebalance && g.generation == gen {
			g.joinTimer = 0
			c.completeJoin(g)
		}
	})
	c.maybeCompleteJoin(g)
}

// initialDelayExpired is Kafka's InitialDelayedJoin: wait again while new
// members keep arriving, then complete.
func (c *groupCoordinator) initialDelayExpired(g *group) {
	if !c.live(g, nil) || g.state != groupPreparingRebalance || !g.initialDelay {
		return
	}
	g.joinTimer = 0
	if g.newMemberAdded && g.initialRemaining > 0 {
		g.newMemberAdded = false
		d := min(c.b.cfg.GroupInitialRebalanceDelay, g.initialRemaining)
		g.initialRemaining -= d
		g.joinTimer = c.b.e.AfterFunc(d, func() { c.initialDelayExpired(g) })
		return
	}
	g.initialDelay = false
	c.completeJoin(g)
}

// maybeCompleteJoin completes the rebalance early once every member has
// rejoined (and no member id handed out is still unused).
func (c *groupCoordinator) maybeCompleteJoin(g *group) {
	if g.state != groupPreparingRebalance || g.initialDelay || len(g.pendingMembers) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	if g.joinTimer != 0 {
		c.b.e.Cancel(g.joinTimer)
		g.joinTimer = 0
	}
	c.completeJoin(g)
}

// completeJoin ends the join phase: members that did not rejoin are
// evicted, the generation is bumped, and every member gets its JoinGroup
// answer — the leader with everyone's subscription.
func (c *groupCoordinator) completeJoin(g *group) {
	if g.state != groupPreparingRebalance {
		return
	}
	for _, m := range g.sortedMembers() {
		if m.join == nil {
			c.b.e.Log("group-member-evicted", "group", g.id, "member", m.id, "why", "did not rejoin within the rebalance timeout")
			c.removeMember(g, m)
		}
	}
	prev := g.generation
	g.generation++
	if g.generation <= prev {
		panic(invariantf("group %q: generation went from %d to %d", g.id, prev, g.generation))
	}
	if len(g.members) == 0 {
		g.protocol, g.protocolType, g.leader = "", "", ""
		c.transition(g, groupEmpty)
		c.b.e.Log("group-empty", "group", g.id, "generation", g.generation)
		c.storeGroup(g, func(int16) {})
		return
	}
	g.protocol = g.selectProtocol()
	c.transition(g, groupCompletingRebalance)
	c.b.e.Log("group-generation", "group", g.id, "generation", g.generation, "leader", g.leader, "members", len(g.members), "protocol", g.protocol)
	g.pendingSync = map[string]bool{}
	for _, m := range g.sortedMembers() {
		pj := m.join
		m.join = nil
		c.respondJoin(g, m, pj.r)
		g.pendingSync[m.id] = true
	}
	gen := g.generation
	g.syncTimer = c.b.e.AfterFunc(g.rebalanceTimeout(), func() { c.pendingSyncExpired(g, gen) })
}

// respondJoin answers a JoinGroup with the current generation, and starts
// the member's session clock.
func (c *groupCoordinator) respondJoin(g *group, m *member, r *rpc.Request) {
	c.respondJoinMembers(g, m, r, m.id == g.leader, false)
}

// respondJoinMembers answers a JoinGroup with the current generation, the
// members' subscriptions if withMembers, and SkipAssignment (v9+) if skip.
func (c *groupCoordinator) respondJoinMembers(g *group, m *member, r *rpc.Request, withMembers, skip bool) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID, resp.MemberID = g.leader, m.id
	resp.SkipAssignment = skip
	if withMembers {
		for _, o := range g.sortedMembers() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.ProtocolMetadata = o.id, o.metadata(g.protocol)
			if o.instanceID != "" {
				rm.InstanceID = kmsg.StringPtr(o.instanceID)
			}
			resp.Members = append(resp.Members, rm)
		}
	}
	c.b.respond(r, resp)
	c.scheduleHeartbeat(g, m)
}

func (c *groupCoordinator) pendingSyncExpired(g *group, gen int32) {
	if !c.live(g, nil) || g.generation != gen || (g.state != groupCompletingRebalance && g.state != groupStable) {
		return
	}
	g.syncTimer = 0
	var gone []string
	for _, id := range slices.Sorted(maps.Keys(g.pendingSync)) {
		if m := g.members[id]; m != nil {
			c.b.e.Log("group-member-evicted", "group", g.id, "member", id, "why", "no SyncGroup within the rebalance timeout")
			c.removeMember(g, m)
			gone = append(gone, id)
		}
	}
	g.pendingSync = nil
	if len(gone) > 0 {
		c.prepareRebalance(g, "members did not sync")
	}
}

func (c *groupCoordinator) cancelSyncTimer(g *group) {
	if g.syncTimer != 0 {
		c.b.e.Cancel(g.syncTimer)
		g.syncTimer = 0
	}
}

// scheduleHeartbeat restarts m's session clock: without a heartbeat (or
// join, or sync) within session.timeout.ms it is evicted.
func (c *groupCoordinator) scheduleHeartbeat(g *group, m *member) {
	if m.heartbeatTimer != 0 {
		c.b.e.Cancel(m.heartbeatTimer)
	}
	m.heartbeatTimer = c.b.e.AfterFunc(m.sessionTimeout, func() {
		m.heartbeatTimer = 0
		if !c.live(g, m) || m.join != nil || m.sync != nil {
			return // a parked join or sync keeps it alive; its answer restarts the clock
		}
		c.b.e.Log("group-member-evicted", "group", g.id, "member", m.id, "why", "session timeout")
		c.removeMemberAndUpdateGroup(g, m)
	})
}

// releaseMember stops m's session clock and answers its parked join and
// sync with code: it is gone (UNKNOWN_MEMBER_ID), replaced by a newer
// incarnation (FENCED_INSTANCE_ID), or its group moved (NOT_COORDINATOR).
func (c *groupCoordinator) releaseMember(m *member, code int16) {
	if m.heartbeatTimer != 0 {
		c.b.e.Cancel(m.heartbeatTimer)
		m.heartbeatTimer = 0
	}
	if m.join != nil {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, m.id
		c.b.respond(m.join.r, resp)
		m.join = nil
	}
	if m.sync != nil {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = code
		c.b.respond(m.sync.r, resp)
		m.sync = nil
	}
}

// removeMember takes m out of g; parked requests are told it is unknown.
func (c *groupCoordinator) removeMember(g *group, m *member) {
	c.releaseMember(m, kerr.UnknownMemberID.Code)
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != "" && g.staticMembers[m.instanceID] == m.id {
		delete(g.staticMembers, m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

func (c *groupCoordinator) removeMemberAndUpdateGroup(g *group, m *member) {
	c.removeMember(g, m)
	switch g.state {
	case groupStable, groupCompletingRebalance:
		c.prepareRebalance(g, "member "+m.id+" left")
	case groupPreparingRebalance:
		c.maybeCompleteJoin(g)
	}
}

// resetAndPropagateAssignmentError answers every parked SyncGroup with
// code and forgets the assignments.
func (c *groupCoordinator) resetAndPropagateAssignmentError(g *group, code int16) {
	for _, m := range g.sortedMembers() {
		m.assignment = nil
		if m.sync != nil {
			resp := kmsg.NewPtrSyncGroupResponse()
			resp.ErrorCode = code
			c.b.respond(m.sync.r, resp)
			m.sync = nil
			c.scheduleHeartbeat(g, m)
		}
	}
}

// transition moves g to state next, asserting Kafka's table of legal
// transitions.
func (c *groupCoordinator) transition(g *group, next groupState) {
	ok := false
	switch next {
	case groupPreparingRebalance:
		ok = g.state == groupStable || g.state == groupCompletingRebalance || g.state == groupEmpty
	case groupCompletingRebalance:
		ok = g.state == groupPreparingRebalance
	case groupStable:
		ok = g.state == groupCompletingRebalance || g.state == groupStable
	case groupEmpty:
		ok = g.state == groupPreparingRebalance || g.state == groupEmpty
	}
	if !ok {
		panic(invariantf("group %q: illegal transition %v → %v", g.id, g.state, next))
	}
	g.state = next
}

func (c *groupCoordinator) handleSyncGroup(r *rpc.Request, req *kmsg.SyncGroupRequest) {
	fail := func(code int16) {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = code
		c.b.respond(r, resp)
	}
	if _, code := c.serving(req.Group); code != 0 {
		fail(code)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	if code := g.validateMember(req.MemberID, instanceID(req.InstanceID)); code != 0 {
		c.fencedInstance(g, code, instanceID(req.InstanceID))
		fail(code)
		return
	}
	m := g.members[req.MemberID]
	switch {
	case req.Generation != g.generation:
		fail(kerr.IllegalGeneration.Code)
		return
	case (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol):
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	switch g.state {
	case groupPreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case groupStable:
		delete(g.pendingSync, m.id)
		c.respondSync(g, m, r)
	case groupCompletingRebalance:
		delete(g.pendingSync, m.id)
		if len(g.pendingSync) == 0 {
			c.cancelSyncTimer(g)
		}
		if m.sync != nil {
			resp := kmsg.NewPtrSyncGroupResponse()
			resp.ErrorCode = kerr.RebalanceInProgress.Code
			c.b.respond(m.sync.r, resp)
		}
		m.sync = &parkedSync{r: r, req: req}
		if m.id != g.leader {
			return // waits for the leader's assignment
		}
		assignments := map[string][]byte{}
		for _, a := range req.GroupAssignment {
			assignments[a.MemberID] = slices.Clone(a.MemberAssignment)
		}
		for _, o := range g.members {
			o.assignment = assignments[o.id] // a member the leader left out gets nothing
		}
		gen := g.generation
		c.storeGroup(g, func(code int16) {
			if !c.live(g, nil) || g.state != groupCompletingRebalance || g.generation != gen {
				return
			}
			if code != 0 {
				c.resetAndPropagateAssignmentError(g, code)
				c.maybePrepareRebalance(g, "storing the assignment failed")
				return
			}
			c.transition(g, groupStable)
			c.b.e.Log("group-stable", "group", g.id, "generation", g.generation)
			for _, o := range g.sortedMembers() {
				if o.sync != nil {
					ps := o.sync
					o.sync = nil
					c.respondSync(g, o, ps.r)
				}
			}
		})
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

func (c *groupCoordinator) respondSync(g *group, m *member, r *rpc.Request) {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = m.assignment
	c.b.respond(r, resp)
	c.scheduleHeartbeat(g, m)
}

func (c *groupCoordinator) handleHeartbeat(r *rpc.Request, req *kmsg.HeartbeatRequest) {
	respond := func(code int16) {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = code
		c.b.respond(r, resp)
	}
	if _, code := c.serving(req.Group); code != 0 {
		respond(code)
		return
	}
	g := c.groups[req.Group]
	code := kerr.UnknownMemberID.Code
	var m *member
	if g != nil {
		if code = g.validateMember(req.MemberID, instanceID(req.InstanceID)); code == 0 {
			m = g.members[req.MemberID]
		}
	}
	switch {
	case g != nil && g.state == groupDead:
		respond(kerr.CoordinatorNotAvailable.Code)
	case m == nil:
		if g != nil {
			c.fencedInstance(g, code, instanceID(req.InstanceID))
		}
		respond(code)
	case req.Generation != g.generation:
		respond(kerr.IllegalGeneration.Code)
	case g.state == groupPreparingRebalance:
		c.scheduleHeartbeat(g, m)
		respond(kerr.RebalanceInProgress.Code)
	default:
		c.scheduleHeartbeat(g, m)
		respond(0)
	}
}

func (c *groupCoordinator) handleLeaveGroup(r *rpc.Request, req *kmsg.LeaveGroupRequest) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	leaving := []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	if req.Version >= 3 {
		leaving = req.Members
	}
	if _, code := c.serving(req.Group); code != 0 {
		resp.ErrorCode = code
		c.b.respond(r, resp)
		return
	}
	g := c.groups[req.Group]
	for _, lm := range leaving {
		id, instance := lm.MemberID, instanceID(lm.InstanceID)
		code := kerr.UnknownMemberID.Code
		if g != nil {
			if id == "" {
				// KIP-345: an administrator removes a static member by
				// its instance id alone.
				if sid, ok := g.staticMembers[instance]; ok && instance != "" {
					c.b.e.Log("group-member-left", "group", g.id, "member", sid, "instance", instance)
					c.removeMemberAndUpdateGroup(g, g.members[sid])
					code = 0
				}
			} else if t, ok := g.pendingMembers[id]; ok {
				c.b.e.Cancel(t)
				delete(g.pendingMembers, id)
				c.maybeCompleteJoin(g)
				code = 0
			} else if code = g.validateMember(id, instance); code == 0 {
				c.b.e.Log("group-member-left", "group", g.id, "member", id)
				c.removeMemberAndUpdateGroup(g, g.members[id])
			} else {
				c.fencedInstance(g, code, instance)
			}
		}
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = id, lm.InstanceID, code
		resp.Members = append(resp.Members, rm)
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	c.b.respond(r, resp)
}

// GroupState is a snapshot of a group at its coordinator, for tests and
// the harness.
type GroupState struct {
	State      string
	Generation int32
	Leader     string
	Protocol   string
	Members    []string // in join order
}

// Group returns the state of group id if this broker coordinates it.
func (b *Broker) Group(id string) (GroupState, bool) {
	g := b.groups.groups[id]
	if g == nil {
		return GroupState{}, false
	}
	s := GroupState{State: g.state.String(), Generation: g.generation, Leader: g.leader, Protocol: g.protocol}
	for _, m := range g.sortedMembers() {
		s.Members = append(s.Members, m.id)
	}
	return s, true
}

// checkInvariants asserts the group coordinator's invariants: every group
// in a generation has its leader among its members and an Empty group has
// none; a consumer group's are consumerGroupViolation's.
func (c *groupCoordinator) checkInvariants() {
	checkEach(c.groups, cmp.Compare[string], func(id string, g *group) string {
		if g.consumer != nil {
			return c.consumerGroupViolation(id, g)
		}
		if g.share != nil {
			return c.shareGroupViolation(id, g)
		}
		switch g.state {
		case groupStable, groupCompletingRebalance:
			if len(g.members) == 0 {
				return invariantf("group %q: %v without members", id, g.state)
			}
			if g.members[g.leader] == nil {
				return invariantf("group %q: leader %q not a member", id, g.leader)
			}
		case groupEmpty:
			if len(g.members) != 0 {
				return invariantf("group %q: Empty with %d members", id, len(g.members))
			}
		}
		statics, mapped := 0, true
		for _, m := range g.members {
			if m.instanceID != "" {
				statics++
				mapped = mapped && g.staticMembers[m.instanceID] == m.id
			}
		}
		if !mapped {
			for _, m := range g.sortedMembers() { // the report, in a stable order
				if m.instanceID != "" && g.staticMembers[m.instanceID] != m.id {
					return invariantf("group %q: static member %q of instance %q not mapped to it (%q)", id, m.id, m.instanceID, g.staticMembers[m.instanceID])
				}
			}
		}
		if statics != len(g.staticMembers) {
			return invariantf("group %q: %d instance ids mapped, %d static members", id, len(g.staticMembers), statics)
		}
		return ""
	})
}
