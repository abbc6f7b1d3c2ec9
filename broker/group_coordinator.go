package broker

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinator is the group coordinator and, through txn, the transaction
// coordinator of the internal partitions this broker leads. A group's
// committed offsets and membership live in the __consumer_offsets
// partition its id hashes to; the leader of that partition serves it, from
// a cache loaded from the partition's log when it takes over.
type groupCoordinator struct {
	b      *Broker
	loaded map[int32]int32 // offsets partition → leader epoch its groups were loaded in
	groups map[string]*group
	// sharePeers are connections to partition leaders for the share
	// groups' state (share_admin.go).
	sharePeers map[int32]*rpc.Client
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
	// consumer is the KIP-848 consumer group state (consumer_group.go),
	// nil unless this is a consumer group.
	consumer *consumerGroup
	// share is the KIP-932 share group state (share_group.go), nil unless
	// this is a share group.
	share *shareGroup
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

func newGroupCoordinator(b *Broker) *groupCoordinator {
	return &groupCoordinator{b: b, loaded: map[int32]int32{}, groups: map[string]*group{}}
}

func (c *groupCoordinator) offsetsPartition(groupID string) metadata.TopicPartition {
	return metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor(groupID, c.b.cfg.OffsetsTopicPartitions)}
}

// metadataChanged loads groups of offsets partitions this broker now leads
// and forgets those of partitions it no longer leads; false if loading
// failed and the broker halted.
func (c *groupCoordinator) metadataChanged() bool {
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
			return false
		}
		c.loaded[tp.Partition] = p.epoch()
		c.resumeGroups(tp.Partition)
	}
	return true
}

// load replays an offsets partition's whole log: as its new leader, what it
// holds is what will commit. Offsets written in a transaction stay pending
// until their producer's marker follows; group metadata records restore
// each group's last generation.
func (c *groupCoordinator) load(p *partition) error {
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

func (c *groupCoordinator) group(id string) *group {
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
func (c *groupCoordinator) apply(key, value []byte, off int64) {
	if gid, ok := decodeGroupKey(key); ok {
		c.applyGroupMetadata(gid, value)
		return
	}
	if c.applyConsumerGroupRecord(key, value) || c.applyShareGroupRecord(key, value) {
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

// serving returns the offsets partition if this broker coordinates
// groupID now, else an error code.
func (c *groupCoordinator) serving(groupID string) (*partition, int16) {
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
func (c *groupCoordinator) handleOffsetCommit(r *rpc.Request, req *kmsg.OffsetCommitRequest) {
	b := c.b
	resp := kmsg.NewPtrOffsetCommitResponse()
	// fill answers code for every partition but those refused, which are
	// answered with their own error.
	fill := func(code int16, refused map[metadata.TopicPartition]int16) {
		resp.Topics = resp.Topics[:0]
		for _, rt := range req.Topics {
			tr := kmsg.NewOffsetCommitResponseTopic()
			tr.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				pr := kmsg.NewOffsetCommitResponseTopicPartition()
				pr.Partition, pr.ErrorCode = rp.Partition, code
				if rc, ok := refused[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]; ok {
					pr.ErrorCode = rc
				}
				tr.Partitions = append(tr.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, tr)
		}
	}
	p, code := c.serving(req.Group)
	var fence partitionFence
	if code == 0 {
		code, fence = c.validateOffsetCommit(c.groups[req.Group], req.MemberID, instanceID(req.InstanceID), req.Generation, false, req.Version)
	}
	if code != 0 {
		fill(code, nil)
		r.Respond(resp)
		return
	}
	g := c.group(req.Group)
	ob := offsetBatch{group: req.Group, now: b.e.WallClock(), fence: fence}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			ob.add(rt.Topic, rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata)
		}
	}
	c.probeRefused(&ob)
	recs, tps, vals := ob.recs, ob.tps, ob.vals
	if len(recs) == 0 && ob.refused != nil {
		fill(0, ob.refused) // every partition refused: nothing to write
		r.Respond(resp)
		return
	}
	for _, tp := range tps {
		g.pendingCommits[tp]++
	}
	c.b.appendReplicatedBatch(p, record.NewHeader(), recs, req.Group, func(base int64, code int16) {
		for i, tp := range tps {
			if g.pendingCommits[tp]--; g.pendingCommits[tp] <= 0 {
				delete(g.pendingCommits, tp)
			}
			if code == 0 && c.groups[g.id] == g {
				vals[i].LogOffset = base + int64(i)
				g.offsets[tp] = vals[i]
			}
		}
		fill(code, ob.refused)
		r.Respond(resp)
	})
}

// offsetBatch gathers the records of one offset commit (plain or
// transactional) with the partitions and values they carry, leaving out
// the partitions its fence refuses.
type offsetBatch struct {
	group   string
	now     env.Time
	fence   partitionFence
	refused map[metadata.TopicPartition]int16 // partitions the fence refused, with their errors
	recs    []record.Record
	tps     []metadata.TopicPartition
	vals    []committedOffset
}

func (ob *offsetBatch) add(topic string, partition int32, offset int64, leaderEpoch int32, meta *string) {
	tp := metadata.TopicPartition{Topic: topic, Partition: partition}
	if code := ob.fence.code(tp); code != 0 {
		if ob.refused == nil {
			ob.refused = map[metadata.TopicPartition]int16{}
		}
		ob.refused[tp] = code
		return
	}
	o := committedOffset{Offset: offset, LeaderEpoch: leaderEpoch}
	if meta != nil {
		o.Metadata = *meta
	}
	ob.recs = append(ob.recs, record.Record{Key: encodeOffsetKey(ob.group, tp), Value: encodeOffsetValue(o, ob.now)})
	ob.tps = append(ob.tps, tp)
	ob.vals = append(ob.vals, o)
}

func (c *groupCoordinator) handleOffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
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
		g := c.groups[rg.Group]
		if code == 0 && g != nil && g.consumer != nil && req.Version >= 9 {
			code = consumerOffsetFetchFence(g.consumer, rg.MemberID, rg.MemberEpoch)
		}
		gr.ErrorCode = code
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
