package broker

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinator is the group coordinator (and, later, the transaction
// coordinator) of the internal partitions this broker leads. A group's
// committed offsets live in the __consumer_offsets partition its id hashes
// to; the leader of that partition serves it, from a cache loaded from the
// partition's log when it takes over.
type coordinator struct {
	b        *Broker
	loaded   map[int32]int32 // offsets partition → leader epoch its groups were loaded in
	groups   map[string]*group
	creating bool // asked the controller for the internal topics
}

type group struct {
	id      string
	offsets map[metadata.TopicPartition]committedOffset
}

type committedOffset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

func newCoordinator(b *Broker) *coordinator {
	return &coordinator{b: b, loaded: map[int32]int32{}, groups: map[string]*group{}}
}

func (c *coordinator) offsetsPartition(groupID string) metadata.TopicPartition {
	return metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor(groupID, c.b.cfg.OffsetsTopicPartitions)}
}

// metadataChanged loads groups of offsets partitions this broker now leads
// and forgets those of partitions it no longer leads.
func (c *coordinator) metadataChanged() {
	b := c.b
	for part, epoch := range c.loaded {
		p := b.partitions[metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: part}]
		if p == nil || p.role != roleLeader || p.state.LeaderEpoch != epoch {
			delete(c.loaded, part)
			for id := range c.groups {
				if c.offsetsPartition(id).Partition == part {
					delete(c.groups, id)
				}
			}
		}
	}
	for _, tp := range sortedKeys(b.partitions) {
		p := b.partitions[tp]
		if tp.Topic != metadata.OffsetsTopic || p.role != roleLeader {
			continue
		}
		if epoch, ok := c.loaded[tp.Partition]; ok && epoch == p.state.LeaderEpoch {
			continue
		}
		if err := c.load(p); err != nil {
			b.e.Halt(fmt.Sprintf("load %v: %v", tp, err))
			return
		}
		c.loaded[tp.Partition] = p.state.LeaderEpoch
	}
}

// load replays an offsets partition's whole log: as its new leader, what it
// holds is what will commit.
func (c *coordinator) load(p *partition) error {
	from := p.log.LogStartOffset()
	for from < p.log.LogEndOffset() {
		data, err := p.log.Read(from, 1<<20, p.log.LogEndOffset())
		if err != nil {
			return err
		}
		batches, err := record.Split(data)
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			break
		}
		for _, bt := range batches {
			from = bt.NextOffset()
			if bt.IsControl() {
				continue
			}
			recs, err := bt.DecodeRecords()
			if err != nil {
				return err
			}
			for _, r := range recs {
				c.apply(r.Key, r.Value)
			}
		}
	}
	c.b.e.Log("offsets-loaded", "partition", p.tp.String(), "epoch", p.state.LeaderEpoch, "groups", len(c.groups))
	return nil
}

func (c *coordinator) group(id string) *group {
	g := c.groups[id]
	if g == nil {
		g = &group{id: id, offsets: map[metadata.TopicPartition]committedOffset{}}
		c.groups[id] = g
	}
	return g
}

// apply folds one __consumer_offsets record into the cache.
func (c *coordinator) apply(key, value []byte) {
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
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 1 {
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

// ensureInternalTopics asks the controller for the internal topics once.
func (c *coordinator) ensureInternalTopics() {
	b := c.b
	if c.creating || (b.image.Topics[metadata.OffsetsTopic] != nil && b.image.Topics[metadata.TransactionTopic] != nil) {
		return
	}
	c.creating = true
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
		if b.image.Topics[t.name] != nil {
			continue
		}
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = t.name
		rt.NumPartitions = int32(t.parts)
		rt.ReplicationFactor = int16(max(1, min(t.factor, live)))
		req.Topics = append(req.Topics, rt)
	}
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
	if p == nil || p.role != roleLeader {
		return nil, kerr.NotCoordinator.Code
	}
	if epoch, ok := c.loaded[tp.Partition]; !ok || epoch != p.state.LeaderEpoch {
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
		code = c.checkMember(req.Group, req.Generation, req.MemberID)
	}
	if code != 0 {
		fill(code)
		r.Respond(resp)
		return
	}
	now := b.e.Now()
	var recs []record.Record
	var tps []metadata.TopicPartition
	var vals []committedOffset
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			o := committedOffset{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch}
			if rp.Metadata != nil {
				o.Metadata = *rp.Metadata
			}
			recs = append(recs, record.Record{Key: encodeOffsetKey(req.Group, tp), Value: encodeOffsetValue(o, now)})
			tps = append(tps, tp)
			vals = append(vals, o)
		}
	}
	c.appendCommitted(p, recs, func(code int16) {
		if code == 0 {
			g := c.group(req.Group)
			for i, tp := range tps {
				g.offsets[tp] = vals[i]
			}
		}
		fill(code)
		r.Respond(resp)
	})
}

// checkMember fences commits from stale group members. Until groups have
// members (consumers using assign()), any commit with generation -1 is a
// simple consumer's and is allowed, as Kafka allows it for empty groups.
func (c *coordinator) checkMember(groupID string, generation int32, memberID string) int16 {
	if generation < 0 && memberID == "" {
		return 0
	}
	return kerr.IllegalGeneration.Code
}

// appendCommitted appends records to an internal partition as leader and
// calls done with 0 once they are committed (the high watermark passed
// them), or with the error that stopped them.
func (c *coordinator) appendCommitted(p *partition, recs []record.Record, done func(code int16)) {
	b := c.b
	h := record.NewHeader()
	h.FirstTimestamp = b.e.Now().UnixMilli()
	batch, err := record.Encode(h, recs)
	if err != nil {
		done(kerr.UnknownServerError.Code)
		return
	}
	res, code := b.appendAsLeader(p.tp, batch, -1)
	if code != 0 {
		done(coordinatorCode(code))
		return
	}
	w := &delayedAppend{p: p, epoch: p.state.LeaderEpoch, required: res.LastOffset + 1, done: done}
	if !w.wake() {
		p.waiters = append(p.waiters, w)
		w.timer = b.e.AfterFunc(5*time.Second, func() {
			if !w.finished {
				w.finish(kerr.RequestTimedOut.Code)
			}
		})
	}
}

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

type delayedAppend struct {
	p        *partition
	epoch    int32
	required int64
	done     func(int16)
	timer    env.TimerID
	finished bool
}

func (d *delayedAppend) wake() bool {
	if d.finished {
		return true
	}
	switch {
	case d.p.role != roleLeader || d.p.state.LeaderEpoch != d.epoch || d.p.b.partitions[d.p.tp] != d.p:
		d.finish(kerr.NotCoordinator.Code)
	case d.p.hw >= d.required:
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
				for _, tp := range sortedKeys(g.offsets) {
					byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
				}
				for _, tp := range sortedKeys(g.offsets) {
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
					if g != nil {
						if o, ok := g.offsets[metadata.TopicPartition{Topic: rt.Topic, Partition: part}]; ok {
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

// Transactions arrive with the transactions issue; these are their seams.

func (c *coordinator) verifyTxnPartition(string, metadata.TopicPartition, []byte) int16 { return 0 }

func (c *coordinator) handleInitTransactionalProducer(r *rpc.Request, req *kmsg.InitProducerIDRequest) {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	r.Respond(resp)
}
