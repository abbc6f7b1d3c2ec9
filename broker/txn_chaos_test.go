package broker_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tryCall sends req to broker i and waits at most timeout: unlike call, a
// lost connection or a dead broker is an outcome, not a test failure.
func (a *actor) tryCall(i int, req kmsg.Request, timeout time.Duration) (kmsg.Response, bool) {
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
		cl.Do(req, timeout, func(r kmsg.Response, e error) { rep.resp, rep.err, rep.done = r, e, true })
	})
	ok, err := c.w.RunWhile(func() bool { return !rep.done }, timeout+time.Second)
	require.NoError(c.t, err)
	require.True(c.t, ok)
	return rep.resp, rep.err == nil
}

// chaosProducer is a transactional producer that survives what a broker
// crash does to it, as a Kafka client would: retriable errors are retried
// with the same sequence or decision; anything else ends the transaction.
type chaosProducer struct {
	*txnProducer
	ready bool
}

const chaosAttempts = 150

func (p *chaosProducer) pause() { require.NoError(p.c.t, p.c.w.RunFor(200*time.Millisecond)) }

func (p *chaosProducer) locate() bool {
	for i := range p.c.brokers {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType, req.CoordinatorKeys = p.id, 1, []string{p.id}
		resp, ok := p.tryCall(i, req, 2*time.Second)
		if ok && resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode == 0 {
			p.coordinator = int(resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].NodeID)
			return true
		}
	}
	return false
}

// coordinatorCall sends a request to the transaction coordinator until it
// answers something other than a retriable coordinator error.
func (p *chaosProducer) coordinatorCall(req func() kmsg.Request, code func(kmsg.Response) int16) int16 {
	for range chaosAttempts {
		if !p.locate() {
			p.pause()
			continue
		}
		resp, ok := p.tryCall(p.coordinator, req(), 5*time.Second)
		if ok {
			if c := code(resp); !retriableCoordinatorError(c) && c != kerr.RequestTimedOut.Code {
				return c
			}
		}
		p.pause()
	}
	return kerr.RequestTimedOut.Code
}

func (p *chaosProducer) init() bool {
	var resp *kmsg.InitProducerIDResponse
	code := p.coordinatorCall(func() kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(p.id)
		req.TransactionTimeoutMillis = int32(p.timeout.Milliseconds())
		return req
	}, func(r kmsg.Response) int16 { resp = r.(*kmsg.InitProducerIDResponse); return resp.ErrorCode })
	if code != 0 {
		return false
	}
	p.pid, p.epoch, p.ready = resp.ProducerID, resp.ProducerEpoch, true
	clear(p.seq)
	return true
}

func (p *chaosProducer) produceRetrying(tp metadata.TopicPartition, value string) bool {
	seq := p.seq[tp]
	for range chaosAttempts {
		leader := p.c.leaderOf(tp)
		if leader < 0 {
			p.pause()
			continue
		}
		resp, ok := p.tryCall(leader, p.produceRequest(tp, p.batch(p.epoch, seq, value)), 5*time.Second)
		if !ok {
			p.pause()
			continue
		}
		switch code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code {
		case 0:
			p.seq[tp] = seq + 1
			return true
		case kerr.NotLeaderForPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code,
			kerr.RequestTimedOut.Code, kerr.UnknownTopicOrPartition.Code, kerr.KafkaStorageError.Code:
			p.pause()
		default:
			return false
		}
	}
	return false
}

// groupCall sends a request to the group's coordinator until it answers
// something other than a retriable error.
func (p *chaosProducer) groupCall(group string, req kmsg.Request, code func(kmsg.Response) int16) int16 {
	for range chaosAttempts {
		gc := -1
		for i := range p.c.brokers {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKey, fc.CoordinatorKeys = group, []string{group}
			if resp, ok := p.tryCall(i, fc, 2*time.Second); ok && resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode == 0 {
				gc = int(resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].NodeID)
				break
			}
		}
		if gc >= 0 {
			if resp, ok := p.tryCall(gc, req, 5*time.Second); ok {
				if c := code(resp); !retriableCoordinatorError(c) && c != kerr.RequestTimedOut.Code {
					return c
				}
			}
		}
		p.pause()
	}
	return kerr.RequestTimedOut.Code
}

// sendOffsets is sendOffsetsToTransaction: AddOffsetsToTxn, then
// TxnOffsetCommit to the group coordinator.
func (p *chaosProducer) sendOffsets(group string, tp metadata.TopicPartition, offset int64) bool {
	code := p.coordinatorCall(func() kmsg.Request {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, group
		return req
	}, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode })
	if code != 0 {
		return false
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.id, group, p.pid, p.epoch
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = tp.Partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return p.groupCall(group, req, func(r kmsg.Response) int16 {
		return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}) == 0
}

// transaction writes value to every partition, commits offset in the
// group, and ends with the decision; it returns "committed", "aborted" or
// "unknown".
func (p *chaosProducer) transaction(value string, offset int64, commit bool, tps ...metadata.TopicPartition) string {
	if !p.ready && !p.init() {
		return "aborted" // nothing was written
	}
	code := p.coordinatorCall(func() kmsg.Request {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
		for _, tp := range tps {
			t := kmsg.NewAddPartitionsToTxnRequestTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			req.Topics = append(req.Topics, t)
		}
		return req
	}, func(r kmsg.Response) int16 {
		return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
	})
	if code != 0 {
		p.ready = false
		return "aborted"
	}
	for _, tp := range tps {
		if !p.produceRetrying(tp, value) {
			commit = false
			break
		}
	}
	if commit && !p.sendOffsets("chaos-group", tps[0], offset) {
		commit = false
	}
	var resp *kmsg.EndTxnResponse
	code = p.coordinatorCall(func() kmsg.Request {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
		return req
	}, func(r kmsg.Response) int16 { resp = r.(*kmsg.EndTxnResponse); return resp.ErrorCode })
	switch {
	case code == 0:
		if resp.Version >= 5 {
			p.pid, p.epoch = resp.ProducerID, resp.ProducerEpoch
			clear(p.seq)
		}
		if commit {
			return "committed"
		}
		return "aborted"
	case !commit:
		p.ready = false
		return "aborted" // re-initializing aborts it if the coordinator has not
	default:
		p.ready = false
		return "unknown"
	}
}

// TestTransactionsAreAllOrNothingThroughBrokerCrashes runs transactions
// across two partitions while brokers crash and restart one at a time:
// every committed transaction is read by read_committed in both
// partitions, exactly once; no aborted one is read; a transaction whose
// outcome the producer never learned is in both or in neither.
func TestTransactionsAreAllOrNothingThroughBrokerCrashes(t *testing.T) {
	for _, seed := range chaosSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { txnChaos(t, seed) })
	}
}

func txnChaos(t *testing.T, seed uint64) {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	// Power losses follow each other before a restarted broker has caught
	// up: without fsync that is correlated power loss, which loses
	// acknowledged data whatever transactions do.
	cfg.LogFlushIntervalMessages = 1
	c := newCluster(t, seed, 3, cfg)
	c.createTopic("orders", 2, 3)
	a, b := metadata.TopicPartition{Topic: "orders", Partition: 0}, metadata.TopicPartition{Topic: "orders", Partition: 1}
	p := &chaosProducer{txnProducer: c.txnProducer("app", "chaos", speaksTV2)}
	p.timeout = 30 * time.Second
	r := c.w.Rand("nemesis")
	crashes := 0
	var nemesis func()
	nemesis = func() {
		victim := c.brokers[r.Intn(len(c.brokers))]
		switch r.Intn(3) {
		case 0:
			c.w.Node(victim).Crash()
		case 1:
			c.w.Node(victim).PowerLoss(r.Chance(0.5))
		default:
			c.w.Isolate(victim)
		}
		crashes++
		c.w.After(r.Duration(time.Second, 10*time.Second), func() {
			c.w.Heal()
			c.w.Node(victim).Start()
			c.w.After(r.Duration(2*time.Second, 10*time.Second), nemesis)
		})
	}
	c.w.After(2*time.Second, nemesis)

	outcomes := map[string]string{}
	for i := range 40 {
		v := fmt.Sprintf("v%02d", i)
		outcomes[v] = p.transaction(v, int64(i+1), r.Chance(0.75), a, b)
		require.NoError(t, c.w.RunFor(r.Duration(200*time.Millisecond, 2*time.Second)))
	}
	require.GreaterOrEqual(t, crashes, 2, "the nemesis struck")
	nemesis = func() {}
	for _, name := range c.brokers {
		c.w.Node(name).Start()
	}
	require.NoError(t, c.w.RunFor(time.Minute))
	if !p.ready {
		require.True(t, p.init(), "re-initializing settles whatever was left open")
	}
	require.NoError(t, c.w.RunFor(10*time.Second))

	readA, readB := c.consume(a, 1), c.consume(b, 1)
	require.Equal(t, readA.hw, readA.lso, "nothing left open in %v", a)
	require.Equal(t, readB.hw, readB.lso, "nothing left open in %v", b)
	count := map[string]int{}
	committed := 0
	for _, v := range readA.values {
		count[v] += 1
	}
	for _, v := range readB.values {
		count[v] += 100
	}
	for _, v := range slices.Sorted(maps.Keys(outcomes)) {
		switch outcomes[v] {
		case "committed":
			committed++
			require.Equal(t, 101, count[v], "%s committed: once in each partition", v)
		case "aborted":
			require.Zero(t, count[v], "%s aborted but read", v)
		default:
			require.Contains(t, []int{0, 101}, count[v], "%s torn", v)
		}
	}
	require.Greater(t, committed, 5, "the workload made progress")
	// The group's offset is that of the last committed transaction (or of
	// a later one whose outcome the producer never learned).
	var allowed []int64
	for i := len(outcomes) - 1; i >= 0; i-- {
		o := outcomes[fmt.Sprintf("v%02d", i)]
		if o == "unknown" {
			allowed = append(allowed, int64(i+1))
		}
		if o == "committed" {
			allowed = append(allowed, int64(i+1))
			break
		}
	}
	off, code := c.actor("checker", nil).offsetFetch("chaos-group", a, true)
	require.Zero(t, code, "%v", kerr.ErrorForCode(code))
	require.Contains(t, allowed, off, "the group's committed offset")
	t.Logf("seed %d: %d crashes, %d committed of %d; outcomes %v", seed, crashes, committed, len(outcomes), outcomes)
}

var chaosSeeds = []uint64{101, 102, 103, 104}
