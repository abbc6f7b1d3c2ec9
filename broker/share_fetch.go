package broker

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareManager is the leader side of share groups (KIP-932), Kafka's
// SharePartitionManager with its ShareSessionCache
// (core/src/main/java/kafka/server/share/SharePartitionManager.java,
// share/.../session/ShareSessionCache.java): the share partitions of the
// partitions this broker leads, and the share sessions of the members that
// fetch from it.
//
// A share partition is made on the first ShareFetch (or
// InitializeShareGroupState) that names it, starting at the group's
// share.auto.offset.reset (latest: the high watermark; earliest: the log
// start), unless the group coordinator initialized it with a start offset
// (AlterShareGroupOffsets). Its state lives in this broker's memory only:
// Kafka's leader writes each change to the share coordinator
// (__share_group_state) and the next leader reads it back, but here a
// share partition dies with the leadership it was made in. What a
// failover (or a restart of the leader) loses is therefore the whole
// share-partition state: the SPSO, which records were acknowledged or
// archived, the delivery counts, and the acquisitions. The new leader
// starts again from share.auto.offset.reset: with latest, records between
// the old SPSO and the high watermark that were not yet acknowledged are
// never delivered (a lost delivery for an at-least-once application);
// with earliest, every record still in the log is delivered again
// (acknowledged ones too, with delivery count 1). The SPSO an
// AlterShareGroupOffsets set is lost the same way.
//
// A share session (ShareFetch epoch 0 opens it, -1 closes it) holds the
// partitions the member fetches; each ShareFetch names only the partitions
// it adds and forgets, and carries the next session epoch
// (INVALID_SHARE_SESSION_EPOCH otherwise, SHARE_SESSION_NOT_FOUND with no
// session). Closing a session, or opening a new one for the same member,
// releases the records the member still holds on this broker.
//
// Not modelled: the share session cache's size limit and eviction of idle
// sessions (a session lasts until closed or replaced, or the broker
// restarts); releasing a disconnected member's records before their locks
// expire; KIP-951 leader hints in errors; checking that a fetching member
// belongs to the group (Kafka does not either).
type shareManager struct {
	b          *Broker
	partitions map[shareKey]*sharePartition
	sessions   map[shareSessionKey]*shareSession
}

type shareKey struct {
	group string
	tp    metadata.TopicPartition
}

func (k shareKey) String() string { return k.group + ":" + k.tp.String() }

func compareShareKeys(a, b shareKey) int {
	if c := cmp.Compare(a.group, b.group); c != 0 {
		return c
	}
	return a.tp.Compare(b.tp)
}

// sharePartition is one share partition at its leader: the state and the
// acquisition-lock timers, valid while p leads in epoch.
type sharePartition struct {
	key        shareKey
	p          *partition
	epoch      int32
	stateEpoch int32 // bumped by each InitializeShareGroupState (Kafka's state epoch)
	st         *sharePartitionState
	timers     map[uint64]env.TimerID // by acquisition
}

type shareSessionKey struct{ group, member string }

type shareSession struct {
	key   shareSessionKey
	epoch int32 // the epoch the next request must carry
	parts []metadata.TopicPartition
}

func newShareManager(b *Broker) *shareManager {
	return &shareManager{b: b, partitions: map[shareKey]*sharePartition{}, sessions: map[shareSessionKey]*shareSession{}}
}

// live reports whether sp still speaks for its partition's leadership.
func (m *shareManager) live(sp *sharePartition) bool {
	p := sp.p
	return m.partitions[sp.key] == sp && p.leading() && p.epoch() == sp.epoch && m.b.partitions[p.tp] == p
}

// metadataChanged drops the share partitions of leaderships this broker
// lost (their state is gone: see shareManager).
func (m *shareManager) metadataChanged() {
	for _, k := range slices.SortedFunc(maps.Keys(m.partitions), compareShareKeys) {
		sp := m.partitions[k]
		p := sp.p
		if p.leading() && p.epoch() == sp.epoch && m.b.partitions[p.tp] == p {
			continue
		}
		m.b.e.Log("share-partition-dropped", "share-partition", k.String(), "start", sp.st.startOffset, "in-flight", len(sp.st.records))
		m.drop(sp)
	}
}

func (m *shareManager) drop(sp *sharePartition) {
	for _, id := range slices.Sorted(maps.Keys(sp.timers)) {
		m.b.e.Cancel(sp.timers[id])
	}
	sp.timers = nil
	delete(m.partitions, sp.key)
}

// limit is where a share fetch of p stops: the high watermark, or the
// last stable offset under share.isolation.level=read_committed.
func (m *shareManager) limit(group string, p *partition) int64 {
	if m.b.shareSettings(group).ReadCommitted {
		return p.lastStableOffset()
	}
	return p.highWatermark()
}

// sharePartition finds or makes group's share partition of p (leading).
func (m *shareManager) sharePartition(group string, p *partition) *sharePartition {
	k := shareKey{group: group, tp: p.tp}
	if sp := m.partitions[k]; sp != nil {
		if m.live(sp) {
			return sp
		}
		m.drop(sp)
	}
	start := m.limit(group, p)
	if m.b.shareSettings(group).AutoOffsetResetEarliest {
		start = p.log.LogStartOffset()
	}
	return m.newSharePartition(k, p, start, 0)
}

func (m *shareManager) newSharePartition(k shareKey, p *partition, start int64, stateEpoch int32) *sharePartition {
	s := m.b.shareSettings(k.group)
	sp := &sharePartition{key: k, p: p, epoch: p.epoch(), stateEpoch: stateEpoch, timers: map[uint64]env.TimerID{},
		st: newSharePartitionState(start, s.DeliveryCountLimit, s.PartitionMaxRecordLocks)}
	m.partitions[k] = sp
	m.b.e.Log("share-partition-initialized", "share-partition", k.String(), "start", start, "state-epoch", stateEpoch)
	return sp
}

// lock starts acquisition a's lock timer: when it fires, the records a
// still holds are released.
func (m *shareManager) lock(sp *sharePartition, a *acquisition) {
	id := a.id
	sp.timers[id] = m.b.e.AfterFunc(m.b.shareSettings(sp.key.group).RecordLockDuration, func() {
		if sp.timers == nil || sp.timers[id] == 0 {
			return
		}
		delete(sp.timers, id)
		if !m.live(sp) {
			return
		}
		if n := sp.st.expire(id); n > 0 {
			m.b.e.Probe(probe.ShareRecordLockExpired, sp.key.String())
			m.b.e.Log("share-acquisition-lock-expired", "share-partition", sp.key.String(), "member", a.member, "available", n)
			sp.p.wakeWaiters()
		}
		m.b.checkInvariants()
	})
}

func (m *shareManager) unlock(sp *sharePartition, ids []uint64) {
	for _, id := range ids {
		if t, ok := sp.timers[id]; ok {
			m.b.e.Cancel(t)
			delete(sp.timers, id)
		}
	}
}

// releaseMember releases what member holds in group's share partitions
// on this broker (its session closed or replaced): those of its session,
// and any it forgot while still holding records there.
func (m *shareManager) releaseMember(group, member string) {
	for _, k := range slices.SortedFunc(maps.Keys(m.partitions), compareShareKeys) {
		sp := m.partitions[k]
		if k.group != group || !m.live(sp) {
			continue
		}
		ended, available := sp.st.releaseMember(member)
		m.unlock(sp, ended)
		if len(ended) > 0 {
			m.b.e.Log("share-member-released", "share-partition", sp.key.String(), "member", member, "available", available)
			m.b.e.Probe(probe.ShareRecordsReleased, sp.key.String())
		}
		if available > 0 {
			sp.p.wakeWaiters()
		}
	}
}

func (m *shareManager) closeSession(s *shareSession, why string) {
	delete(m.sessions, s.key)
	m.b.e.Log("share-session-closed", "group", s.key.group, "member", s.key.member, "why", why)
	m.releaseMember(s.key.group, s.key.member)
}

// nextSessionEpoch is Kafka's ShareRequestMetadata.nextEpoch: MaxInt32
// wraps to 1.
func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// ackResult is one partition's acknowledgement outcome.
type ackResult struct {
	code int16
	msg  string
}

// acknowledge applies one partition's acknowledgement batches for member.
func (m *shareManager) acknowledge(group, member string, tp metadata.TopicPartition, batches []ackBatch) ackResult {
	b := m.b
	if _, code := b.leading(tp, -1); code != 0 {
		return ackResult{code: code}
	}
	sp := m.partitions[shareKey{group: group, tp: tp}]
	if sp == nil || !m.live(sp) {
		return ackResult{code: kerr.InvalidRecordState.Code, msg: fmt.Sprintf("share partition %s:%v has no records in flight", group, tp)}
	}
	released, renewed, err := sp.st.acknowledge(member, batches)
	if err != nil {
		code := kerr.InvalidRequest.Code
		if err.invalidState {
			code = kerr.InvalidRecordState.Code
		}
		b.e.Log("share-acknowledge-refused", "share-partition", sp.key.String(), "member", member, "why", err.msg)
		return ackResult{code: code, msg: err.msg}
	}
	// Acquisitions whose last record was acknowledged end without their
	// timer firing.
	var ended []uint64
	for _, id := range slices.Sorted(maps.Keys(sp.timers)) {
		if sp.st.acquired[id] == nil {
			ended = append(ended, id)
		}
	}
	m.unlock(sp, ended)
	if renewed != nil {
		m.lock(sp, renewed)
	}
	if released > 0 {
		b.e.Probe(probe.ShareRecordsReleased, sp.key.String())
		sp.p.wakeWaiters()
	}
	return ackResult{}
}

func ackBatchesOf[T any](in []T, get func(T) (int64, int64, []int8)) []ackBatch {
	out := make([]ackBatch, 0, len(in))
	for _, x := range in {
		first, last, types := get(x)
		out = append(out, ackBatch{first: first, last: last, types: types})
	}
	return out
}

// acquireFrom acquires records of sp for member: at most maxRecords, in
// at most maxBytes of batches (at least one). It returns the batches that
// hold what was acquired, and the acquired ranges.
func (m *shareManager) acquireFrom(sp *sharePartition, member string, maxRecords, maxBytes int) ([]byte, []acquiredRange, int16) {
	b, p, st := m.b, sp.p, sp.st
	if ended := st.moveStartTo(p.log.LogStartOffset()); len(ended) > 0 {
		m.unlock(sp, ended)
	}
	limit := m.limit(sp.key.group, p)
	if !st.mayAcquire(limit) {
		return nil, nil, 0
	}
	readCommitted := b.shareSettings(sp.key.group).ReadCommitted
	q := st.beginAcquire(member, maxRecords)
	var out []byte
	from := st.firstAvailable()
	// Bounded: each read moves from past at least one batch.
	for reads := 0; reads < 8 && from < limit && !q.full(); reads++ {
		data, err := p.log.Read(from, maxBytes, limit)
		if err != nil {
			switch {
			case errors.Is(err, log.ErrOffsetOutOfRange):
				return nil, nil, kerr.OffsetOutOfRange.Code
			case errors.Is(err, log.ErrCorruptMessage):
				b.e.Log("corrupt-batch", "partition", p.tp.String(), "error", err.Error())
				b.e.Probe(probe.CorruptBatchDetected, p.tp.String())
				return nil, nil, kerr.KafkaStorageError.Code
			}
			b.e.Halt(err.Error())
			return nil, nil, kerr.KafkaStorageError.Code
		}
		batches, _ := record.Split(data)
		if len(batches) == 0 {
			break
		}
		var aborted []log.AbortedTxn
		if readCommitted {
			aborted = p.log.AbortedTransactions(from, limit)
			slices.SortFunc(aborted, func(x, y log.AbortedTxn) int { return cmp.Compare(x.FirstOffset, y.FirstOffset) })
		}
		abortedProducers := map[int64]bool{}
		going := true
		for _, bt := range batches {
			for len(aborted) > 0 && aborted[0].FirstOffset <= bt.LastOffset() {
				abortedProducers[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			deliverable := !bt.IsControl()
			if readCommitted && bt.IsTransactional() && abortedProducers[bt.ProducerID()] {
				deliverable = false
				if bt.IsControl() {
					delete(abortedProducers, bt.ProducerID())
				}
			}
			before := q.a.records
			for off := max(bt.BaseOffset(), from); off <= bt.LastOffset() && going; off++ {
				going = q.offer(off, deliverable)
			}
			if q.a.records > before {
				out = append(out, bt...)
			}
			from = bt.NextOffset()
			if !going {
				break
			}
		}
		if !going || q.a.records > 0 {
			break
		}
		maxBytes = max(maxBytes-len(data), 0)
	}
	a, ranges := q.finish()
	if a != nil {
		m.lock(sp, a)
		b.e.Probe(probe.ShareRecordsAcquired, sp.key.String())
	}
	return out, ranges, 0
}

// handleShareFetch serves ShareFetch (key 78): the session's epoch
// checked, its partitions updated, the piggy-backed acknowledgements
// applied, then records acquired for the member from every partition of
// the session; with none, it waits up to MaxWait for some.
func (m *shareManager) handleShareFetch(r *rpc.Request, req *kmsg.ShareFetchRequest) {
	b := m.b
	fail := func(code int16, msg string) {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		b.respond(r, resp)
	}
	if req.GroupID == nil || *req.GroupID == "" || req.MemberID == nil || *req.MemberID == "" {
		fail(kerr.InvalidRequest.Code, "GroupId and MemberId must be set.")
		return
	}
	group, member := *req.GroupID, *req.MemberID
	hasAcks := false
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			hasAcks = hasAcks || len(rp.AcknowledgementBatches) > 0
		}
	}
	key := shareSessionKey{group: group, member: member}
	s := m.sessions[key]
	switch e := req.ShareSessionEpoch; {
	case e == 0:
		if hasAcks {
			fail(kerr.InvalidRequest.Code, "Acknowledge data present in initial ShareFetch request.")
			return
		}
		if s != nil {
			m.closeSession(s, "replaced by a new session")
		}
		s = &shareSession{key: key, epoch: 1}
		m.sessions[key] = s
		b.e.Log("share-session-opened", "group", group, "member", member)
	case s == nil:
		fail(kerr.ShareSessionNotFound.Code, fmt.Sprintf("Share session for member %s of group %s not found.", member, group))
		return
	case e == -1:
	case e != s.epoch:
		fail(kerr.InvalidShareSessionEpoch.Code, fmt.Sprintf("Share session epoch %d, expected %d.", e, s.epoch))
		return
	default:
		s.epoch = nextSessionEpoch(s.epoch)
	}
	d := &delayedShareFetch{m: m, r: r, req: req, s: s, acks: map[metadata.TopicPartition]ackResult{}, unknown: map[[16]byte][]int32{}}
	for _, rt := range req.Topics {
		name, ok := b.topicNames[rt.TopicID]
		for _, rp := range rt.Partitions {
			if !ok {
				d.unknown[rt.TopicID] = append(d.unknown[rt.TopicID], rp.Partition)
				continue
			}
			tp := metadata.TopicPartition{Topic: name, Partition: rp.Partition}
			if req.ShareSessionEpoch != -1 && !slices.Contains(s.parts, tp) {
				s.parts = append(s.parts, tp)
			}
			if len(rp.AcknowledgementBatches) > 0 {
				d.acks[tp] = m.acknowledge(group, member, tp, ackBatchesOf(rp.AcknowledgementBatches, func(x kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return x.FirstOffset, x.LastOffset, x.AcknowledgeTypes
				}))
			}
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		name, ok := b.topicNames[ft.TopicID]
		if !ok {
			continue
		}
		for _, p := range ft.Partitions {
			tp := metadata.TopicPartition{Topic: name, Partition: p}
			s.parts = slices.DeleteFunc(s.parts, func(x metadata.TopicPartition) bool { return x == tp })
		}
	}
	if req.ShareSessionEpoch == -1 {
		m.closeSession(s, "closed by the member")
		resp, _ := d.build(false)
		d.finish(resp)
		return
	}
	resp, acquired := d.build(true)
	if acquired || req.MaxWaitMillis <= 0 || len(d.acks) > 0 && len(s.parts) == 0 {
		d.finish(resp)
		return
	}
	d.parked = slices.Clone(s.parts)
	for _, tp := range d.parked {
		if p := b.partitions[tp]; p != nil {
			p.waiters = append(p.waiters, d)
		}
	}
	d.timer = b.e.AfterFunc(time.Duration(req.MaxWaitMillis)*time.Millisecond, d.timeout)
}

// delayedShareFetch is a ShareFetch waiting for records (Kafka's
// DelayedShareFetch); its acknowledgements are already applied.
type delayedShareFetch struct {
	m        *shareManager
	r        *rpc.Request
	req      *kmsg.ShareFetchRequest
	s        *shareSession
	acks     map[metadata.TopicPartition]ackResult
	unknown  map[[16]byte][]int32 // partitions of topic ids not in the metadata
	parked   []metadata.TopicPartition
	timer    env.TimerID
	answered bool
}

func (d *delayedShareFetch) wake() bool {
	if d.answered {
		return true
	}
	if !d.r.Live() {
		d.answered = true
		if d.timer != 0 {
			d.m.b.e.Cancel(d.timer)
			d.timer = 0
		}
		d.r.NoResponse()
		return true
	}
	if d.m.sessions[d.s.key] != d.s {
		resp, _ := d.build(false)
		d.finish(resp)
		return true
	}
	if !d.mayAcquire() {
		return false
	}
	resp, acquired := d.build(true)
	if !acquired {
		return false
	}
	d.finish(resp)
	return true
}

// mayAcquire is false when a fetch now would surely acquire nothing.
func (d *delayedShareFetch) mayAcquire() bool {
	m := d.m
	group := d.s.key.group
	for _, tp := range d.s.parts {
		p, code := m.b.leading(tp, -1)
		if code != 0 {
			return true
		}
		sp := m.partitions[shareKey{group: group, tp: tp}]
		if sp == nil || !m.live(sp) || sp.st.mayAcquire(m.limit(group, p)) {
			return true
		}
	}
	return false
}

func (d *delayedShareFetch) timeout() {
	d.timer = 0
	if !d.answered {
		resp, _ := d.build(d.m.sessions[d.s.key] == d.s)
		d.finish(resp)
	}
}

func (d *delayedShareFetch) finish(resp *kmsg.ShareFetchResponse) {
	d.answered = true
	if d.timer != 0 {
		d.m.b.e.Cancel(d.timer)
		d.timer = 0
	}
	d.m.b.respond(d.r, resp)
}

// build answers the request: the acknowledgement outcomes and, if fetch,
// the records acquired now from the session's partitions; acquired
// reports whether there are any (or an error to tell at once).
func (d *delayedShareFetch) build(fetch bool) (*kmsg.ShareFetchResponse, bool) {
	m, b, req := d.m, d.m.b, d.req
	group, member := d.s.key.group, d.s.key.member
	resp := kmsg.NewPtrShareFetchResponse()
	resp.AcquisitionLockTimeoutMillis = int32(b.shareSettings(group).RecordLockDuration.Milliseconds())
	parts := map[metadata.TopicPartition]*kmsg.ShareFetchResponseTopicPartition{}
	var order []metadata.TopicPartition
	part := func(tp metadata.TopicPartition) *kmsg.ShareFetchResponseTopicPartition {
		if rp := parts[tp]; rp != nil {
			return rp
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		rp.Records = []byte{}
		parts[tp] = &rp
		order = append(order, tp)
		return &rp
	}
	for _, tp := range slices.SortedFunc(maps.Keys(d.acks), metadata.TopicPartition.Compare) {
		a := d.acks[tp]
		rp := part(tp)
		rp.AcknowledgeErrorCode = a.code
		if a.msg != "" {
			rp.AcknowledgeErrorMessage = kmsg.StringPtr(a.msg)
		}
	}
	acquired := false
	if fetch {
		records := int(req.MaxRecords)
		if records <= 0 {
			records = 500 // Kafka's share.max.fetch.records default
		}
		budget := int(req.MaxBytes)
		if budget <= 0 {
			budget = 1 << 30
		}
		for _, tp := range d.s.parts {
			if records <= 0 {
				break
			}
			p, code := b.leading(tp, -1)
			if code != 0 {
				part(tp).ErrorCode = code
				acquired = true
				continue
			}
			sp := m.sharePartition(group, p)
			maxBytes := budget
			for _, rt := range req.Topics {
				for _, rq := range rt.Partitions {
					if rq.Partition == tp.Partition && b.topicNames[rt.TopicID] == tp.Topic && rq.PartitionMaxBytes > 0 {
						maxBytes = min(maxBytes, int(rq.PartitionMaxBytes))
					}
				}
			}
			data, ranges, code := m.acquireFrom(sp, member, records, max(maxBytes, 1))
			if code != 0 {
				part(tp).ErrorCode = code
				acquired = true
				continue
			}
			if len(ranges) == 0 {
				continue
			}
			acquired = true
			rp := part(tp)
			rp.Records = data
			for _, g := range ranges {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = g.first, g.last, g.deliveryCount
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
				records -= int(g.last - g.first + 1)
			}
			budget -= len(data)
		}
	}
	// By topic, in the order the partitions came.
	for _, tp := range order {
		id := b.image.Topics[tp.Topic].ID
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != id {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = id
			resp.Topics = append(resp.Topics, t)
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, *parts[tp])
	}
	for _, id := range slices.SortedFunc(maps.Keys(d.unknown), func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) }) {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = id
		for _, p := range d.unknown[id] {
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, kerr.UnknownTopicID.Code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rp.Records = []byte{}
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
		acquired = true
	}
	return resp, acquired
}

// handleShareAcknowledge serves ShareAcknowledge (key 79): the
// acknowledgements of a member's open share session, at its next epoch,
// or closing it (-1).
func (m *shareManager) handleShareAcknowledge(r *rpc.Request, req *kmsg.ShareAcknowledgeRequest) {
	b := m.b
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.AcquisitionLockTimeoutMillis = -1
	fail := func(code int16, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		b.respond(r, resp)
	}
	if req.GroupID == nil || *req.GroupID == "" || req.MemberID == nil || *req.MemberID == "" {
		fail(kerr.InvalidRequest.Code, "GroupId and MemberId must be set.")
		return
	}
	group, member := *req.GroupID, *req.MemberID
	resp.AcquisitionLockTimeoutMillis = int32(b.shareSettings(group).RecordLockDuration.Milliseconds())
	key := shareSessionKey{group: group, member: member}
	s := m.sessions[key]
	switch e := req.ShareSessionEpoch; {
	case e == 0:
		fail(kerr.InvalidShareSessionEpoch.Code, "ShareAcknowledge cannot open a share session (epoch 0).")
		return
	case s == nil:
		fail(kerr.ShareSessionNotFound.Code, fmt.Sprintf("Share session for member %s of group %s not found.", member, group))
		return
	case e == -1:
	case e != s.epoch:
		fail(kerr.InvalidShareSessionEpoch.Code, fmt.Sprintf("Share session epoch %d, expected %d.", e, s.epoch))
		return
	default:
		s.epoch = nextSessionEpoch(s.epoch)
	}
	for _, rt := range req.Topics {
		t := kmsg.NewShareAcknowledgeResponseTopic()
		t.TopicID = rt.TopicID
		name, known := b.topicNames[rt.TopicID]
		for _, rp := range rt.Partitions {
			pr := kmsg.NewShareAcknowledgeResponseTopicPartition()
			pr.Partition = rp.Partition
			pr.CurrentLeader.LeaderID, pr.CurrentLeader.LeaderEpoch = -1, -1
			if !known {
				pr.ErrorCode = kerr.UnknownTopicID.Code
			} else {
				a := m.acknowledge(group, member, metadata.TopicPartition{Topic: name, Partition: rp.Partition},
					ackBatchesOf(rp.AcknowledgementBatches, func(x kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
						return x.FirstOffset, x.LastOffset, x.AcknowledgeTypes
					}))
				pr.ErrorCode = a.code
				if a.msg != "" {
					pr.ErrorMessage = kmsg.StringPtr(a.msg)
				}
			}
			t.Partitions = append(t.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if req.ShareSessionEpoch == -1 {
		m.closeSession(s, "closed by the member")
	}
	b.respond(r, resp)
}

// checkInvariants asserts every live share partition's invariants, and
// that it starts no later than its partition's high watermark allows.
func (m *shareManager) checkInvariants() {
	checkEach(m.partitions, compareShareKeys, func(k shareKey, sp *sharePartition) string {
		if !m.live(sp) {
			return ""
		}
		if msg := sp.st.violation(&sp.key); msg != "" {
			return msg
		}
		if end := sp.st.endOffset(); len(sp.st.records) > 0 && end > sp.p.log.LogEndOffset() {
			return invariantf("share partition %s: end offset %d past the log end %d", k, end, sp.p.log.LogEndOffset())
		}
		if len(sp.timers) != len(sp.st.acquired) {
			return invariantf("share partition %s: %d acquisitions, %d lock timers", k, len(sp.st.acquired), len(sp.timers))
		}
		return ""
	})
}
