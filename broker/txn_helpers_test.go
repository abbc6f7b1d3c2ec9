package broker_test

import (
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The versions a transactional producer speaks: AddPartitionsToTxn v4+ is
// for brokers, and EndTxn v5 is what opts into KIP-890's epoch bump.
var (
	speaksTV1 = wire.NewVersions(wire.Range{Key: 24, Min: 0, Max: 3}, wire.Range{Key: 26, Min: 0, Max: 4})
	speaksTV2 = wire.NewVersions(wire.Range{Key: 24, Min: 0, Max: 3}, wire.Range{Key: 26, Min: 0, Max: 5})
)

// actor is one client of the test: its own connections (a parked
// JoinGroup blocks only its own), its own client id and versions.
type actor struct {
	c      *cluster
	name   string
	speaks wire.Versions
}

func (c *cluster) actor(name string, speaks wire.Versions) *actor {
	return &actor{c: c, name: name, speaks: speaks}
}

// reply is an answer still to come.
type reply struct {
	resp kmsg.Response
	err  error
	done bool
}

// send sends req to broker i without waiting.
func (a *actor) send(i int, req kmsg.Request) *reply {
	c := a.c
	addr := c.brokers[i]
	key := a.name + "|" + addr
	rep := &reply{}
	c.w.Node("client").Exec(func() {
		cl := c.clients[key]
		if cl == nil {
			cl = rpcClient(c, addr, a)
			c.clients[key] = cl
		}
		cl.Do(req, 60*time.Second, func(r kmsg.Response, e error) { rep.resp, rep.err, rep.done = r, e, true })
	})
	return rep
}

// wait runs the world until rep is answered.
func (a *actor) wait(rep *reply) kmsg.Response {
	ok, err := a.c.w.RunWhile(func() bool { return !rep.done }, 90*time.Second)
	require.NoError(a.c.t, err)
	require.True(a.c.t, ok, "%s: no answer", a.name)
	require.NoError(a.c.t, rep.err, a.name)
	return rep.resp
}

func (a *actor) call(i int, req kmsg.Request) kmsg.Response { return a.wait(a.send(i, req)) }

// findCoordinator asks until the coordinator of key is known (the internal
// topics are created on first ask).
func (a *actor) findCoordinator(key string, typ int8) int {
	for range 40 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType = key, typ
		req.CoordinatorKeys = []string{key}
		resp := a.call(0, req).(*kmsg.FindCoordinatorResponse)
		co := resp.Coordinators[0]
		if co.ErrorCode == 0 {
			// The broker must have loaded the partition too.
			return int(co.NodeID)
		}
		require.NoError(a.c.t, a.c.w.RunFor(500*time.Millisecond))
	}
	a.c.t.Fatalf("no coordinator for %q", key)
	return -1
}

// txnProducer drives a transactional producer with raw requests.
type txnProducer struct {
	*actor
	id          string
	pid         int64
	epoch       int16
	seq         map[metadata.TopicPartition]int32
	coordinator int
	timeout     time.Duration
}

func (c *cluster) txnProducer(name, id string, speaks wire.Versions) *txnProducer {
	return &txnProducer{actor: c.actor(name, speaks), id: id, seq: map[metadata.TopicPartition]int32{}, timeout: time.Minute}
}

func retriableCoordinatorError(code int16) bool {
	switch code {
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		return true
	}
	return false
}

// init is initTransactions: InitProducerId, retried while the coordinator
// finishes an earlier instance's transaction.
func (p *txnProducer) init() {
	for range 100 {
		p.coordinator = p.findCoordinator(p.id, 1)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(p.id)
		req.TransactionTimeoutMillis = int32(p.timeout.Milliseconds())
		resp := p.call(p.coordinator, req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode == 0 {
			p.pid, p.epoch = resp.ProducerID, resp.ProducerEpoch
			clear(p.seq)
			return
		}
		require.True(p.c.t, retriableCoordinatorError(resp.ErrorCode), "InitProducerId: %v", kerr.ErrorForCode(resp.ErrorCode))
		require.NoError(p.c.t, p.c.w.RunFor(200*time.Millisecond))
	}
	p.c.t.Fatal("InitProducerId never succeeded")
}

// add is AddPartitionsToTxn, retried on CONCURRENT_TRANSACTIONS (the last
// transaction's markers are still being written).
func (p *txnProducer) add(tps ...metadata.TopicPartition) int16 {
	for range 100 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
		for _, tp := range tps {
			t := kmsg.NewAddPartitionsToTxnRequestTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			req.Topics = append(req.Topics, t)
		}
		resp := p.call(p.coordinator, req).(*kmsg.AddPartitionsToTxnResponse)
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code != kerr.ConcurrentTransactions.Code {
			return code
		}
		require.NoError(p.c.t, p.c.w.RunFor(100*time.Millisecond))
	}
	return kerr.ConcurrentTransactions.Code
}

func (p *txnProducer) addOffsets(group string) int16 {
	for range 100 {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, group
		code := p.call(p.coordinator, req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
		if code != kerr.ConcurrentTransactions.Code && code != kerr.CoordinatorNotAvailable.Code {
			return code
		}
		require.NoError(p.c.t, p.c.w.RunFor(100*time.Millisecond))
	}
	return kerr.ConcurrentTransactions.Code
}

// batch is a transactional batch of the producer at epoch and seq.
func (p *txnProducer) batch(epoch int16, seq int32, values ...string) []byte {
	h := record.NewHeader()
	h.Attributes = record.AttrTransactional
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = p.pid, epoch, seq
	h.FirstTimestamp = p.c.w.Now().UnixMilli()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i].Value = []byte(v)
	}
	b, err := record.Encode(h, recs)
	require.NoError(p.c.t, err)
	return b
}

func (p *txnProducer) produceRequest(tp metadata.TopicPartition, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr(p.id)
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = tp.Partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceAt writes one batch at an explicit epoch and sequence: how a late
// or a zombie's batch is made.
func (p *txnProducer) produceAt(tp metadata.TopicPartition, epoch int16, seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
	leader := p.c.waitLeader(tp, -1, 30*time.Second)
	resp := p.call(leader, p.produceRequest(tp, p.batch(epoch, seq, values...))).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

// produce writes the next batch of the producer's current epoch.
func (p *txnProducer) produce(tp metadata.TopicPartition, values ...string) kmsg.ProduceResponseTopicPartition {
	pr := p.produceAt(tp, p.epoch, p.seq[tp], values...)
	if pr.ErrorCode == 0 {
		p.seq[tp] += int32(len(values))
	}
	return pr
}

// end is EndTxn; with EndTxn v5 the producer adopts the epoch it is given.
func (p *txnProducer) end(commit bool) int16 {
	resp := p.endAt(p.epoch, commit)
	if resp.ErrorCode == 0 && resp.Version >= 5 && (resp.ProducerEpoch != p.epoch || resp.ProducerID != p.pid) {
		p.pid, p.epoch = resp.ProducerID, resp.ProducerEpoch
		clear(p.seq)
	}
	return resp.ErrorCode
}

func (p *txnProducer) endAt(epoch int16, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, epoch, commit
	return p.call(p.coordinator, req).(*kmsg.EndTxnResponse)
}

// waitCompleted runs the world until the coordinator has written the
// transaction's Complete* (or Empty) record.
func (p *txnProducer) waitCompleted() string {
	var state string
	ok, err := p.c.w.RunWhile(func() bool {
		for i := range p.c.brokers {
			b := p.c.broker(i)
			if b == nil {
				continue
			}
			if s, ok := b.Transaction(p.id); ok && p.c.leaderOfTxn(p.id) == i {
				state = s.State
				return s.Pending != "None" || (s.State != "CompleteCommit" && s.State != "CompleteAbort" && s.State != "Empty")
			}
		}
		return true
	}, 60*time.Second)
	require.NoError(p.c.t, err)
	require.True(p.c.t, ok, "transaction %q never completed", p.id)
	return state
}

func (p *txnProducer) txnOffsetCommit(group string, generation int32, memberID string, tp metadata.TopicPartition, offset int64) int16 {
	gc := p.findCoordinator(group, 0)
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.id, group, p.pid, p.epoch
	req.Generation, req.MemberID = generation, memberID
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = tp.Partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return p.call(gc, req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// leaderOfTxn is the broker leading the __transaction_state partition of
// id, or -1.
func (c *cluster) leaderOfTxn(id string) int {
	return c.leaderOf(metadata.TopicPartition{Topic: metadata.TransactionTopic, Partition: metadata.PartitionFor(id, c.cfg.TransactionTopicPartitions)})
}

// consumed is what a consumer reading tp from its start sees, and the
// partition's high watermark and last stable offset.
type consumed struct {
	values []string
	hw     int64
	lso    int64
}

// consume reads tp from offset 0 as a consumer with the isolation level
// (0 read_uncommitted, 1 read_committed) does: control batches are never
// returned, and read_committed drops the batches of the aborted
// transactions the fetch response lists (Kafka's consumer logic).
func (c *cluster) consume(tp metadata.TopicPartition, isolation int8) consumed {
	leader := c.waitLeader(tp, -1, 30*time.Second)
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = -1, 0, 1, 1<<20, isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = tp.Topic, c.topicID(tp.Topic) // by id from v13
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, 0, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	reader := c.actor("reader", nil)
	var resp kmsg.Response
	for range 10 { // a connection a fault broke fails once
		var ok bool
		if resp, ok = reader.tryCall(leader, req, 10*time.Second); ok {
			break
		}
		require.NoError(c.t, c.w.RunFor(time.Second))
	}
	require.NotNil(c.t, resp, "no fetch answer from %d", leader)
	pr := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	require.Zero(c.t, pr.ErrorCode, "fetch %v: %v", tp, kerr.ErrorForCode(pr.ErrorCode))
	aborted := slices.Clone(pr.AbortedTransactions)
	slices.SortFunc(aborted, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return int(a.FirstOffset - b.FirstOffset)
	})
	abortedPIDs := map[int64]bool{}
	batches, err := record.Split(pr.RecordBatches)
	require.NoError(c.t, err)
	out := consumed{hw: pr.HighWatermark, lso: pr.LastStableOffset}
	for _, b := range batches {
		for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
			abortedPIDs[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if b.IsControl() {
			if m, err := b.EndTxnMarker(); err == nil && !m.Commit() {
				delete(abortedPIDs, b.ProducerID())
			}
			continue
		}
		if b.IsTransactional() && abortedPIDs[b.ProducerID()] {
			continue
		}
		recs, err := b.DecodeRecords()
		require.NoError(c.t, err)
		for _, r := range recs {
			out.values = append(out.values, string(r.Value))
		}
	}
	return out
}

// markers returns the transaction markers in tp's log: commit or abort,
// and the coordinator epoch that wrote each.
func (c *cluster) markers(tp metadata.TopicPartition) []record.EndTxnMarker {
	leader := c.waitLeader(tp, -1, 30*time.Second)
	_, pr := c.fetch(leader, tp, 0)
	batches, err := record.Split(pr.RecordBatches)
	require.NoError(c.t, err)
	var out []record.EndTxnMarker
	for _, b := range batches {
		if b.IsControl() {
			m, err := b.EndTxnMarker()
			require.NoError(c.t, err)
			out = append(out, m)
		}
	}
	return out
}

// offsetFetch reads a group's committed offset for tp.
func (a *actor) offsetFetch(group string, tp metadata.TopicPartition, requireStable bool) (int64, int16) {
	gc := a.findCoordinator(group, 0)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = requireStable
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = tp.Topic, []int32{tp.Partition}
	rg.Topics = append(rg.Topics, gt)
	req.Groups = append(req.Groups, rg)
	req.Group = group
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = tp.Topic, []int32{tp.Partition}
	req.Topics = append(req.Topics, ot)
	resp := a.call(gc, req).(*kmsg.OffsetFetchResponse)
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return -1, g.ErrorCode
	}
	p := g.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// commit is OffsetCommit of one partition.
func (a *actor) commit(group string, generation int32, memberID string, tp metadata.TopicPartition, offset int64) int16 {
	return a.commitAs(group, generation, memberID, "", tp, offset)
}

// commitAs is commit from a static member: instance is its
// group.instance.id ("" for none).
func (a *actor) commitAs(group string, generation int32, memberID, instance string, tp metadata.TopicPartition, offset int64) int16 {
	return a.commitAt(a.findCoordinator(group, 0), group, generation, memberID, instance, tp, offset)
}

// commitAt is commitAs sent to broker gc, the group's coordinator.
func (a *actor) commitAt(gc int, group string, generation int32, memberID, instance string, tp metadata.TopicPartition, offset int64) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, generation, memberID
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = tp.Partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return a.call(gc, req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func (c *cluster) controllerImage() *metadata.Image {
	ctl, ok := c.w.Node("controller").Process().(*controller.Controller)
	require.True(c.t, ok)
	return ctl.Image()
}

func (c *cluster) controllerImageLeaderEpoch(tp metadata.TopicPartition) int32 {
	ps, ok := c.controllerImage().Partition(tp)
	require.True(c.t, ok)
	return ps.LeaderEpoch
}

func rpcClient(c *cluster, addr string, a *actor) *rpc.Client {
	return rpc.NewClient(c.d.Router, addr, rpc.ClientOptions{ClientID: a.name, Speaks: a.speaks})
}
