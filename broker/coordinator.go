package broker

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinator is the group coordinator and, through txn, the transaction
// coordinator of the internal partitions this broker leads. A group's
// committed offsets and membership live in the __consumer_offsets
// partition its id hashes to; the leader of that partition serves it, from
// a cache loaded from the partition's log when it takes over.
type coordinator struct {
	b        *Broker
	loaded   map[int32]int32 // offsets partition → leader epoch its groups were loaded in
	groups   map[string]*group
	creating bool // asked the controller for the internal topics
	txn      *txnCoordinator

	// outbox holds answers until the current event ends (respond).
	outbox   []outgoing
	flushing bool
}

type group struct {
	id      string
	offsets map[metadata.TopicPartition]committedOffset
	// pendingTxnOffsets are offsets committed inside open transactions, by
	// producer id: the producer's commit marker on the offsets partition
	// makes them committed offsets, its abort marker drops them.
	pendingTxnOffsets map[int64]map[metadata.TopicPartition]committedOffset
	// pendingCommits counts OffsetCommit writes in flight per partition: an
	// OffsetFetch with require_stable must not read around them either.
	pendingCommits map[metadata.TopicPartition]int
	membership     // the classic group protocol's state, group.go
}

type committedOffset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// LogOffset is where the commit sits in the offsets partition: a
	// transaction's offsets replace a plain commit only if written after
	// it, as Kafka orders them.
	LogOffset int64
}

func newCoordinator(b *Broker) *coordinator {
	c := &coordinator{b: b, loaded: map[int32]int32{}, groups: map[string]*group{}}
	c.txn = newTxnCoordinator(c)
	return c
}

type outgoing struct {
	r    *rpc.Request
	resp kmsg.Response
}

// respond answers r once the current event is over. Answering serves the
// connection's next request at once (rpc.Server), and a coordinator must
// not be re-entered halfway through a change of a group or transaction —
// a member's parked SyncGroup answered while the member is being removed
// would otherwise meet that member's next request mid-removal.
func (c *coordinator) respond(r *rpc.Request, resp kmsg.Response) {
	c.outbox = append(c.outbox, outgoing{r, resp})
	if !c.flushing {
		c.flushing = true
		c.b.e.AfterFunc(0, c.flush)
	}
}

func (c *coordinator) flush() {
	out := c.outbox
	c.outbox, c.flushing = nil, false
	for _, o := range out {
		o.r.Respond(o.resp)
	}
	c.b.checkInvariants()
}

func (c *coordinator) offsetsPartition(groupID string) metadata.TopicPartition {
	return metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor(groupID, c.b.cfg.OffsetsTopicPartitions)}
}

// metadataChanged loads groups of offsets partitions this broker now leads
// and forgets those of partitions it no longer leads.
func (c *coordinator) metadataChanged() {
	b := c.b
	for _, part := range slices.Sorted(maps.Keys(c.loaded)) {
		p := b.partitions[metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: part}]
		if p == nil || !p.leading() || p.epoch() != c.loaded[part] {
			delete(c.loaded, part)
			for _, id := range slices.Sorted(maps.Keys(c.groups)) {
				if c.offsetsPartition(id).Partition == part {
					c.unloadGroup(c.groups[id])
					delete(c.groups, id)
				}
			}
		}
	}
	for _, tp := range slices.SortedFunc(maps.Keys(b.partitions), metadata.TopicPartition.Compare) {
		p := b.partitions[tp]
		if tp.Topic != metadata.OffsetsTopic || !p.leading() {
			continue
		}
		if epoch, ok := c.loaded[tp.Partition]; ok && epoch == p.epoch() {
			continue
		}
		if err := c.load(p); err != nil {
			b.e.Halt(fmt.Sprintf("load %v: %v", tp, err))
			return
		}
		c.loaded[tp.Partition] = p.epoch()
		c.resumeGroups(tp.Partition)
	}
	c.txn.metadataChanged()
}

// load replays an offsets partition's whole log: as its new leader, what it
// holds is what will commit. Offsets written in a transaction stay pending
// until their producer's marker follows; group metadata records restore
// each group's last generation.
func (c *coordinator) load(p *partition) error {
	err := replayLog(p, func(bt record.Batch, r record.Record) {
		off := bt.BaseOffset() + int64(r.OffsetDelta)
		if bt.IsTransactional() {
			c.applyTxnOffset(bt.ProducerID(), r.Key, r.Value, off)
		} else {
			c.apply(r.Key, r.Value, off)
		}
	}, func(bt record.Batch, m record.EndTxnMarker) {
		c.completeTxnOffsets(p.tp.Partition, bt.ProducerID(), m.Commit())
	})
	if err != nil {
		return err
	}
	c.b.e.Log("offsets-loaded", "partition", p.tp.String(), "epoch", p.epoch(), "groups", len(c.groups))
	return nil
}

func (c *coordinator) group(id string) *group {
	g := c.groups[id]
	if g == nil {
		g = &group{
			id:                id,
			offsets:           map[metadata.TopicPartition]committedOffset{},
			pendingTxnOffsets: map[int64]map[metadata.TopicPartition]committedOffset{},
			pendingCommits:    map[metadata.TopicPartition]int{},
			membership:        newMembership(),
		}
		c.groups[id] = g
	}
	return g
}

// apply folds one __consumer_offsets record, at offset off of the
// partition, into the cache: an offset commit (key versions 0 and 1) or a
// group's metadata (key version 2).
func (c *coordinator) apply(key, value []byte, off int64) {
	if gid, ok := decodeGroupKey(key); ok {
		c.applyGroupMetadata(gid, value)
		return
	}
	gid, tp, ok := decodeOffsetKey(key)
	if !ok {
		return
	}
	g := c.group(gid)
	if value == nil {
		delete(g.offsets, tp)
		return
	}
	if o, ok := decodeOffsetValue(value); ok {
		o.LogOffset = off
		g.offsets[tp] = o
	}
}

// The record formats are Kafka's: OffsetCommitKey v1 and
// OffsetCommitValue v3.

func encodeOffsetKey(group string, tp metadata.TopicPartition) []byte {
	b := binary.BigEndian.AppendUint16(nil, 1)
	b = appendString(b, group)
	b = appendString(b, tp.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
}

func decodeOffsetKey(b []byte) (string, metadata.TopicPartition, bool) {
	if len(b) < 2 || binary.BigEndian.Uint16(b) > 1 {
		return "", metadata.TopicPartition{}, false
	}
	g, b, ok1 := readString(b[2:])
	t, b, ok2 := readString(b)
	if !ok1 || !ok2 || len(b) != 4 {
		return "", metadata.TopicPartition{}, false
	}
	return g, metadata.TopicPartition{Topic: t, Partition: int32(binary.BigEndian.Uint32(b))}, true
}

func encodeOffsetValue(o committedOffset, now env.Time) []byte {
	b := binary.BigEndian.AppendUint16(nil, 3)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
	b = appendString(b, o.Metadata)
	return binary.BigEndian.AppendUint64(b, uint64(now.UnixMilli()))
}

func decodeOffsetValue(b []byte) (committedOffset, bool) {
	if len(b) < 14 || binary.BigEndian.Uint16(b) != 3 {
		return committedOffset{}, false
	}
	o := committedOffset{Offset: int64(binary.BigEndian.Uint64(b[2:])), LeaderEpoch: int32(binary.BigEndian.Uint32(b[10:]))}
	m, rest, ok := readString(b[14:])
	if !ok || len(rest) != 8 {
		return committedOffset{}, false
	}
	o.Metadata = m
	return o, true
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func readString(b []byte) (string, []byte, bool) {
	if len(b) < 2 {
		return "", b, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > len(b)-2 {
		return "", b, false
	}
	return string(b[2 : 2+n]), b[2+n:], true
}

// ensureInternalTopics asks the controller for the internal topics once,
// with their configured replication factors. As in Kafka, an internal
// topic is not created while fewer brokers are live than its replication
// factor (coordinators stay COORDINATOR_NOT_AVAILABLE until then): created
// smaller — by a broker that has just restarted and knows no live broker
// yet — it could never meet min.insync.replicas, and every coordinator
// write would fail for good.
func (c *coordinator) ensureInternalTopics() {
	b := c.b
	if c.creating || (b.image.Topics[metadata.OffsetsTopic] != nil && b.image.Topics[metadata.TransactionTopic] != nil) {
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	live := len(b.image.Brokers)
	for _, t := range []struct {
		name   string
		parts  int
		factor int
	}{
		{metadata.OffsetsTopic, b.cfg.OffsetsTopicPartitions, b.cfg.OffsetsTopicReplicationFactor},
		{metadata.TransactionTopic, b.cfg.TransactionTopicPartitions, b.cfg.TransactionTopicReplicationFactor},
	} {
		if b.image.Topics[t.name] != nil || live < t.factor {
			continue
		}
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = t.name
		rt.NumPartitions = int32(t.parts)
		rt.ReplicationFactor = int16(t.factor)
		req.Topics = append(req.Topics, rt)
	}
	if len(req.Topics) == 0 {
		return
	}
	c.creating = true
	b.controller.Do(req, b.cfg.BrokerSessionTimeout, func(kmsg.Response, error) { c.creating = false })
}

// coordinatorFor returns the leader of the internal partition for key, or
// an error code.
func (c *coordinator) coordinatorFor(topic, key string, partitions int) (metadata.Broker, int16) {
	b := c.b
	t := b.image.Topics[topic]
	if t == nil {
		c.ensureInternalTopics()
		return metadata.Broker{}, kerr.CoordinatorNotAvailable.Code
	}
	p := t.Partitions[metadata.PartitionFor(key, len(t.Partitions))]
	br, ok := b.image.Broker(p.Leader)
	if !ok {
		return metadata.Broker{}, kerr.CoordinatorNotAvailable.Code
	}
	return br, 0
}

func (c *coordinator) handleFindCoordinator(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		topic, parts := metadata.OffsetsTopic, c.b.cfg.OffsetsTopicPartitions
		switch req.CoordinatorType {
		case 0:
		case 1:
			topic, parts = metadata.TransactionTopic, c.b.cfg.TransactionTopicPartitions
		default:
			rc.ErrorCode = kerr.InvalidRequest.Code
		}
		if rc.ErrorCode == 0 {
			br, code := c.coordinatorFor(topic, key, parts)
			rc.ErrorCode = code
			rc.NodeID = br.ID
			rc.Host, rc.Port = metadata.SplitAddr(br.Addr)
			if code != 0 {
				rc.NodeID, rc.Host, rc.Port = -1, "", -1
			}
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		rc := resp.Coordinators[0]
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = rc.ErrorCode, rc.NodeID, rc.Host, rc.Port
	}
	return resp
}

// serving returns the offsets partition if this broker coordinates
// groupID now, else an error code.
func (c *coordinator) serving(groupID string) (*partition, int16) {
	tp := c.offsetsPartition(groupID)
	p := c.b.partitions[tp]
	if p == nil || !p.leading() {
		return nil, kerr.NotCoordinator.Code
	}
	if epoch, ok := c.loaded[tp.Partition]; !ok || epoch != p.epoch() {
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return p, 0
}

// handleOffsetCommit writes the offsets to the group's partition and
// answers once they are committed there (replicated to the ISR).
func (c *coordinator) handleOffsetCommit(r *rpc.Request, req *kmsg.OffsetCommitRequest) {
	b := c.b
	resp := kmsg.NewPtrOffsetCommitResponse()
	fill := func(code int16) {
		resp.Topics = resp.Topics[:0]
		for _, rt := range req.Topics {
			tr := kmsg.NewOffsetCommitResponseTopic()
			tr.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				pr := kmsg.NewOffsetCommitResponseTopicPartition()
				pr.Partition, pr.ErrorCode = rp.Partition, code
				tr.Partitions = append(tr.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, tr)
		}
	}
	p, code := c.serving(req.Group)
	if code == 0 {
		code = c.validateOffsetCommit(c.groups[req.Group], req.MemberID, req.Generation, false, req.Version)
	}
	if code != 0 {
		fill(code)
		r.Respond(resp)
		return
	}
	g := c.group(req.Group)
	ob := offsetBatch{group: req.Group, now: b.e.WallClock()}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			ob.add(rt.Topic, rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata)
		}
	}
	recs, tps, vals := ob.recs, ob.tps, ob.vals
	for _, tp := range tps {
		g.pendingCommits[tp]++
	}
	c.appendReplicatedBatch(p, record.NewHeader(), recs, req.Group, func(base int64, code int16) {
		for i, tp := range tps {
			if g.pendingCommits[tp]--; g.pendingCommits[tp] <= 0 {
				delete(g.pendingCommits, tp)
			}
			if code == 0 && c.groups[g.id] == g {
				vals[i].LogOffset = base + int64(i)
				g.offsets[tp] = vals[i]
			}
		}
		fill(code)
		r.Respond(resp)
	})
}

// offsetBatch gathers the records of one offset commit (plain or
// transactional) with the partitions and values they carry.
type offsetBatch struct {
	group string
	now   env.Time
	recs  []record.Record
	tps   []metadata.TopicPartition
	vals  []committedOffset
}

func (ob *offsetBatch) add(topic string, partition int32, offset int64, leaderEpoch int32, meta *string) {
	tp := metadata.TopicPartition{Topic: topic, Partition: partition}
	o := committedOffset{Offset: offset, LeaderEpoch: leaderEpoch}
	if meta != nil {
		o.Metadata = *meta
	}
	ob.recs = append(ob.recs, record.Record{Key: encodeOffsetKey(ob.group, tp), Value: encodeOffsetValue(o, ob.now)})
	ob.tps = append(ob.tps, tp)
	ob.vals = append(ob.vals, o)
}

// appendReplicated appends records to an internal partition as leader and
// calls done with 0 once the high watermark has passed them (every ISR
// member holds them), or with the error that stopped them.
func (c *coordinator) appendReplicated(p *partition, recs []record.Record, done func(code int16)) {
	c.appendReplicatedBatch(p, record.NewHeader(), recs, "", func(_ int64, code int16) { done(code) })
}

// appendReplicatedBatch is appendReplicated for a batch with header h (a
// transactional offset commit carries its producer's id, epoch and
// sequence); done also gets the offset of the first record. An offset
// commit names its group: the coordinator then hits
// offset-commit-awaiting-replication while it waits.
func (c *coordinator) appendReplicatedBatch(p *partition, h record.BatchHeader, recs []record.Record, offsetsOf string, done func(base int64, code int16)) {
	b := c.b
	h.FirstTimestamp = b.e.WallClock().UnixMilli()
	batch, err := record.Encode(h, recs)
	if err != nil {
		done(-1, kerr.UnknownServerError.Code)
		return
	}
	res, code := b.appendAsLeader(p.tp, batch, -1)
	if code != 0 {
		done(-1, coordinatorCode(code))
		return
	}
	if offsetsOf != "" && p.highWatermark() <= res.LastOffset {
		b.e.Probe(probe.OffsetCommitAwaitingReplication, offsetsOf)
	}
	if (p.tp.Topic == metadata.TransactionTopic && b.cfg.Defects.Has(defect.TxnStateAdoptedBeforeReplication)) ||
		(p.tp.Topic == metadata.OffsetsTopic && b.cfg.Defects.Has(defect.OffsetCommitAckedBeforeReplication)) {
		done(res.FirstOffset, 0)
		return
	}
	c.awaitReplicated(p, res.LastOffset+1, func(code int16) { done(res.FirstOffset, code) })
}

// awaitReplicated calls done with 0 once p's high watermark reaches
// required, with NOT_COORDINATOR if p loses its leadership first, or with
// REQUEST_TIMED_OUT after internalAppendTimeout.
func (c *coordinator) awaitReplicated(p *partition, required int64, done func(code int16)) {
	w := &delayedAppend{hwWait: waitFor(p, required), done: done}
	if !w.wake() {
		p.waiters = append(p.waiters, w)
		w.timer = c.b.e.AfterFunc(internalAppendTimeout, func() {
			if !w.finished {
				w.finish(kerr.RequestTimedOut.Code)
			}
		})
	}
}

// internalAppendTimeout bounds how long a coordinator waits for its write
// to an internal partition to commit (Kafka: the request's timeout, or
// offsets.commit.timeout.ms = 5 s).
const internalAppendTimeout = 5 * time.Second

// coordinatorCode maps a partition error to what a coordinator answers.
func coordinatorCode(code int16) int16 {
	switch code {
	case kerr.NotLeaderForPartition.Code:
		return kerr.NotCoordinator.Code
	case kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	}
	return code
}

// delayedAppend is a coordinator's write to its internal partition
// waiting to commit.
type delayedAppend struct {
	hwWait
	done     func(int16)
	timer    env.TimerID
	finished bool
}

func (d *delayedAppend) wake() bool {
	if d.finished {
		return true
	}
	switch d.state() {
	case hwDeposed:
		d.finish(kerr.NotCoordinator.Code)
	case hwReached:
		d.finish(0)
	default:
		return false
	}
	return true
}

func (d *delayedAppend) finish(code int16) {
	d.finished = true
	if d.timer != 0 {
		d.p.b.e.Cancel(d.timer)
	}
	d.done(code)
}

func (c *coordinator) handleOffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	groups := req.Groups
	if req.Version < 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = req.Group
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			g.Topics = append(g.Topics, gt)
		}
		if req.Topics == nil {
			g.Topics = nil
		}
		groups = []kmsg.OffsetFetchRequestGroup{g}
	}
	for _, rg := range groups {
		gr := kmsg.NewOffsetFetchResponseGroup()
		gr.Group = rg.Group
		_, code := c.serving(rg.Group)
		gr.ErrorCode = code
		g := c.groups[rg.Group]
		if code == 0 {
			topics := rg.Topics
			if topics == nil && g != nil { // all committed partitions
				byTopic := map[string][]int32{}
				for _, tp := range slices.SortedFunc(maps.Keys(g.offsets), metadata.TopicPartition.Compare) {
					byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
				}
				for _, tp := range slices.SortedFunc(maps.Keys(g.offsets), metadata.TopicPartition.Compare) {
					if parts, ok := byTopic[tp.Topic]; ok {
						gt := kmsg.NewOffsetFetchRequestGroupTopic()
						gt.Topic, gt.Partitions = tp.Topic, parts
						topics = append(topics, gt)
						delete(byTopic, tp.Topic)
					}
				}
			}
			for _, rt := range topics {
				tr := kmsg.NewOffsetFetchResponseGroupTopic()
				tr.Topic = rt.Topic
				for _, part := range rt.Partitions {
					pr := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					pr.Partition, pr.Offset, pr.LeaderEpoch = part, -1, -1
					tp := metadata.TopicPartition{Topic: rt.Topic, Partition: part}
					if req.RequireStable && g != nil && g.hasPendingCommit(tp) && !c.b.cfg.Defects.Has(defect.OffsetFetchIgnoresPendingTransactions) {
						// A transaction (or a plain commit) may still move
						// this offset: a read_committed consumer must not
						// start from the old one (KIP-447).
						pr.ErrorCode = kerr.UnstableOffsetCommit.Code
						tr.Partitions = append(tr.Partitions, pr)
						continue
					}
					if g != nil {
						if o, ok := g.offsets[tp]; ok {
							pr.Offset, pr.LeaderEpoch = o.Offset, o.LeaderEpoch
							pr.Metadata = kmsg.StringPtr(o.Metadata)
						}
					}
					tr.Partitions = append(tr.Partitions, pr)
				}
				gr.Topics = append(gr.Topics, tr)
			}
		}
		resp.Groups = append(resp.Groups, gr)
	}
	if req.Version < 8 {
		g := resp.Groups[0]
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		resp.Groups = nil
	}
	return resp
}

// handleInitTransactionalProducer is InitProducerId with a transactional
// id: the transaction coordinator's (txn_coordinator.go).
func (c *coordinator) handleInitTransactionalProducer(r *rpc.Request, req *kmsg.InitProducerIDRequest) {
	c.txn.handleInitProducerID(r, req)
}
