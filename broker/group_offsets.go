package broker

import (
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// validateOffsetCommit is Kafka's fence on offset commits
// (ClassicGroup.validateOffsetCommit): a commit naming a member or a
// generation must come from a current member in the current generation;
// one naming neither (generation -1, no member: a consumer using assign())
// is accepted only while the group has no members — except transactional
// commits, whose older versions carry no member at all. A plain commit
// while the group awaits its leader's assignment is told
// REBALANCE_IN_PROGRESS. A consumer group's commits are fenced by member
// epoch instead (consumerOffsetCommitFence).
func (c *groupCoordinator) validateOffsetCommit(g *group, memberID, instance string, generation int32, transactional bool, version int16) (int16, partitionFence) {
	code, fence := c.offsetCommitFence(g, memberID, instance, generation, transactional, version)
	if code == kerr.FencedInstanceID.Code {
		c.fencedInstance(g, code, instance)
	}
	if code == kerr.UnknownMemberID.Code || code == kerr.IllegalGeneration.Code || code == kerr.FencedInstanceID.Code || code == kerr.StaleMemberEpoch.Code {
		c.b.e.Probe(probe.MemberFenced, groupName(g))
	}
	return code, fence
}

func groupName(g *group) string {
	if g == nil {
		return ""
	}
	return g.id
}

// partitionFence is the part of a commit's fence decided partition by
// partition (a consumer group's commit at an older member epoch,
// KIP-1251): the error one partition is refused with, 0 if it is
// accepted. A nil fence accepts every partition.
type partitionFence func(metadata.TopicPartition) int16

func (f partitionFence) code(tp metadata.TopicPartition) int16 {
	if f == nil {
		return 0
	}
	return f(tp)
}

// probeRefused counts a commit the fence refused some partitions of as a
// member fenced.
func (c *groupCoordinator) probeRefused(ob *offsetBatch) {
	if ob.refused != nil {
		c.b.e.Probe(probe.MemberFenced, ob.group)
	}
}

func (c *groupCoordinator) offsetCommitFence(g *group, memberID, instance string, generation int32, transactional bool, version int16) (int16, partitionFence) {
	if g == nil {
		switch {
		case generation < 0:
			return 0, nil // a simple consumer's group, created by the commit
		case !transactional && version >= 9:
			return kerr.GroupIDNotFound.Code, nil
		}
		return kerr.IllegalGeneration.Code, nil
	}
	if g.share != nil {
		return kerr.GroupIDNotFound.Code, nil // a share group commits no offsets (Kafka: "Group is not a consumer group")
	}
	if g.consumer != nil {
		return consumerOffsetCommitFence(g.consumer, memberID, generation, transactional, version)
	}
	if g.state == groupDead {
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	if generation < 0 && g.state == groupEmpty {
		return 0, nil
	}
	if generation >= 0 || memberID != "" {
		if code := g.validateMember(memberID, instance); code != 0 {
			return code, nil
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code, nil
		}
	} else if !transactional && g.state != groupEmpty {
		return kerr.UnknownMemberID.Code, nil
	}
	if !transactional && g.state == groupCompletingRebalance {
		return kerr.RebalanceInProgress.Code, nil
	}
	return 0, nil
}

// hasPendingCommit reports offsets for tp that may still change: written
// in an open transaction, or a plain commit not yet committed.
func (g *group) hasPendingCommit(tp metadata.TopicPartition) bool {
	if g.pendingCommits[tp] > 0 {
		return true
	}
	for _, pend := range g.pendingTxnOffsets {
		if _, ok := pend[tp]; ok {
			return true
		}
	}
	return false
}

// handleTxnOffsetCommit writes offsets into the producer's transaction
// (sendOffsetsToTransaction): a transactional batch on the group's
// offsets partition, carrying the producer's id and epoch, so the
// partition holds it open until the transaction coordinator's marker
// commits or aborts it. Fenced like OffsetCommit by generation and member
// (KIP-447), and by producer epoch at the log.
func (c *groupCoordinator) handleTxnOffsetCommit(r *rpc.Request, req *kmsg.TxnOffsetCommitRequest) {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	// respond answers code for every partition but those refused, which
	// are answered with their own error.
	respond := func(code int16, refused map[metadata.TopicPartition]int16) {
		for _, rt := range req.Topics {
			tr := kmsg.NewTxnOffsetCommitResponseTopic()
			tr.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				pr := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				pr.Partition, pr.ErrorCode = rp.Partition, code
				if rc, ok := refused[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]; ok {
					pr.ErrorCode = rc
				}
				tr.Partitions = append(tr.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, tr)
		}
		c.b.respond(r, resp)
	}
	generation, memberID, instance := int32(-1), "", ""
	if req.Version >= 3 {
		generation, memberID, instance = req.Generation, req.MemberID, instanceID(req.InstanceID)
	}
	validate := func() (*partition, int16, partitionFence) {
		p, code := c.serving(req.Group)
		var fence partitionFence
		if code == 0 {
			code, fence = c.validateOffsetCommit(c.groups[req.Group], memberID, instance, generation, true, req.Version)
		}
		return p, code, fence
	}
	p, code, _ := validate()
	if code != 0 {
		respond(code, nil)
		return
	}
	write := func() {
		p, code, fence := validate() // again: the verification took a round trip
		if code != 0 {
			respond(code, nil)
			return
		}
		c.writeTxnOffsets(p, req, fence, respond)
	}
	if !c.b.cfg.TransactionPartitionVerification {
		write()
		return
	}
	// KIP-890 part 1 for the offsets partition: an offset commit arriving
	// after its transaction ended must not open a new one here, or every
	// require_stable OffsetFetch of the group would stall behind it.
	v := txnVerification{tp: p.tp, pid: req.ProducerID, epoch: req.ProducerEpoch}
	c.b.txns.verify(req.TransactionalID, []txnVerification{v}, func(codes map[metadata.TopicPartition]int16) {
		if code := codes[p.tp]; code != 0 {
			switch produceVerificationCode(code) {
			case kerr.NotEnoughReplicas.Code:
				code = kerr.CoordinatorLoadInProgress.Code // retriable, and this coordinator stays right
			case kerr.InvalidProducerEpoch.Code:
				code = fencedCode(req.Version, 3)
			}
			respond(code, nil)
			return
		}
		write()
	})
}

// writeTxnOffsets writes the partitions of req the fence does not refuse.
func (c *groupCoordinator) writeTxnOffsets(p *partition, req *kmsg.TxnOffsetCommitRequest, fence partitionFence, respond func(int16, map[metadata.TopicPartition]int16)) {
	g := c.group(req.Group)
	ob := offsetBatch{group: req.Group, now: c.b.e.WallClock(), fence: fence}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			ob.add(rt.Topic, rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata)
		}
	}
	c.probeRefused(&ob)
	recs, tps, vals := ob.recs, ob.tps, ob.vals
	if len(recs) == 0 {
		respond(0, ob.refused)
		return
	}
	h := record.NewHeader()
	h.Attributes = record.AttrTransactional
	h.ProducerID, h.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	h.BaseSequence = 0
	if s, ok := p.log.Producer(req.ProducerID); ok && s.ProducerEpoch == req.ProducerEpoch && s.LastSequence != record.NoSequence {
		h.BaseSequence = record.IncrementSequence(s.LastSequence, 1)
	}
	c.b.appendReplicatedBatch(p, h, recs, req.Group, func(base int64, code int16) {
		if code == kerr.InvalidProducerEpoch.Code {
			code = fencedCode(req.Version, 3)
		}
		if code == 0 && c.groups[g.id] == g {
			pend := g.pendingTxnOffsets[req.ProducerID]
			if pend == nil {
				pend = map[metadata.TopicPartition]committedOffset{}
				g.pendingTxnOffsets[req.ProducerID] = pend
			}
			for i, tp := range tps {
				vals[i].LogOffset = base + int64(i)
				pend[tp] = vals[i]
			}
		}
		respond(code, ob.refused)
	})
}

// applyTxnOffset folds a transactional offset record, found while loading
// the partition, in as pending.
func (c *groupCoordinator) applyTxnOffset(pid int64, key, value []byte, off int64) {
	gid, tp, ok := decodeOffsetKey(key)
	if !ok || value == nil {
		return
	}
	o, ok := decodeOffsetValue(value)
	if !ok {
		return
	}
	o.LogOffset = off
	g := c.group(gid)
	pend := g.pendingTxnOffsets[pid]
	if pend == nil {
		pend = map[metadata.TopicPartition]committedOffset{}
		g.pendingTxnOffsets[pid] = pend
	}
	pend[tp] = o
}

// completeTxnOffsets applies a marker of producer pid on offsets partition
// part: commit makes its pending offsets committed (unless a later plain
// commit superseded one), abort drops them.
func (c *groupCoordinator) completeTxnOffsets(part int32, pid int64, commit bool) {
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[id]
		pend := g.pendingTxnOffsets[pid]
		if pend == nil || c.offsetsPartition(id).Partition != part {
			continue
		}
		delete(g.pendingTxnOffsets, pid)
		if !commit && !c.b.cfg.Defects.Has(defect.TxnOffsetsCommittedOnAbort) {
			continue
		}
		for tp, o := range pend {
			if cur, ok := g.offsets[tp]; !ok || cur.LogOffset < o.LogOffset {
				g.offsets[tp] = o
			}
		}
	}
}

// Group metadata records: the key is Kafka's GroupMetadataKey (version 2,
// group id); the value is Kafka's GroupMetadataValue version 3: protocol
// type, generation, protocol, leader, state timestamp, and per member its
// id, instance id, client id and host, timeouts, subscription and
// assignment.

// applyGroupMetadata restores a group's membership from its latest
// metadata record: Stable in its stored generation if it had members,
// else Empty.
func (c *groupCoordinator) applyGroupMetadata(id string, value []byte) {
	g := c.group(id)
	g.membership = newMembership()
	if value == nil {
		return
	}
	be := binary.BigEndian
	b := value
	if len(b) < 2 || be.Uint16(b) != 3 {
		return
	}
	var ok bool
	var m membership = newMembership()
	if m.protocolType, b, ok = readString(b[2:]); !ok || len(b) < 4 {
		return
	}
	m.generation = int32(be.Uint32(b))
	if m.protocol, b, ok = readNullableString(b[4:]); !ok {
		return
	}
	if m.leader, b, ok = readNullableString(b); !ok || len(b) < 12 {
		return
	}
	n := int(be.Uint32(b[8:]))
	b = b[12:]
	for range n {
		mb := &member{}
		var s string
		if mb.id, b, ok = readString(b); !ok {
			return
		}
		if mb.instanceID, b, ok = readNullableString(b); !ok {
			return
		}
		if mb.clientID, b, ok = readString(b); !ok {
			return
		}
		if s, b, ok = readString(b); !ok || len(b) < 8 {
			return
		}
		mb.clientHost = s
		mb.rebalanceTimeout = time.Duration(be.Uint32(b)) * time.Millisecond
		mb.sessionTimeout = time.Duration(be.Uint32(b[4:])) * time.Millisecond
		var sub []byte
		if sub, b, ok = readBytes(b[8:]); !ok {
			return
		}
		if mb.assignment, b, ok = readBytes(b); !ok {
			return
		}
		mb.protocolType = m.protocolType
		mb.protocols = []kmsg.JoinGroupRequestProtocol{{Name: m.protocol, Metadata: sub}}
		m.joinSeq++
		mb.seq = m.joinSeq
		m.members[mb.id] = mb
		if mb.instanceID != "" {
			m.staticMembers[mb.instanceID] = mb.id
		}
	}
	if len(m.members) > 0 {
		m.state = groupStable
	}
	g.membership = m
}

// storeGroup writes g's membership (generation, leader, members and their
// assignments) to its offsets partition: a new coordinator resumes the
// group in this generation.
func (c *groupCoordinator) storeGroup(g *group, done func(code int16)) {
	p, code := c.serving(g.id)
	if code != 0 {
		done(code)
		return
	}
	rec := record.Record{Key: encodeGroupKey(g.id), Value: encodeGroupValue(g, c.b.e.WallClock())}
	c.b.appendReplicated(p, []record.Record{rec}, done)
}

// resumeGroups starts the session clocks of the members of the groups just
// loaded from offsets partition part: they must heartbeat to the new
// coordinator within their session timeout.
func (c *groupCoordinator) resumeGroups(part int32) {
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[id]
		if c.offsetsPartition(id).Partition != part {
			continue
		}
		if g.consumer != nil {
			g.consumer.rebuildOwners()
			c.resumeConsumerGroup(g)
			continue
		}
		if g.share != nil {
			c.resumeShareGroup(g)
			continue
		}
		if len(g.members) == 0 {
			continue
		}
		c.b.e.Log("group-resumed", "group", id, "generation", g.generation, "state", g.state.String(), "members", len(g.members))
		for _, m := range g.sortedMembers() {
			c.scheduleHeartbeat(g, m)
		}
	}
}

// unloadGroup stops g's timers and tells its parked requests to find the
// new coordinator.
func (c *groupCoordinator) unloadGroup(g *group) {
	e := c.b.e
	if g.joinTimer != 0 {
		e.Cancel(g.joinTimer)
	}
	c.cancelSyncTimer(g)
	for _, id := range slices.Sorted(maps.Keys(g.pendingMembers)) {
		e.Cancel(g.pendingMembers[id])
	}
	for _, m := range g.sortedMembers() {
		c.releaseMember(m, kerr.NotCoordinator.Code)
	}
	if g.consumer != nil {
		c.unloadConsumerGroup(g)
	}
	if g.share != nil {
		c.unloadShareGroup(g)
	}
}
