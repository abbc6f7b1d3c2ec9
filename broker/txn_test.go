package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestZombieProducerIsFencedOnceANewInstanceInitializes(t *testing.T) {
	c := newCluster(t, 21, 3, config.Default())
	c.createTopic("orders", 1, 3)
	zombie := c.txnProducer("instance-1", "pipeline", speaksTV1)
	zombie.init()
	require.Zero(t, zombie.add(orders))
	require.Zero(t, zombie.produce(orders, "from-the-zombie").ErrorCode)

	// The process is presumed dead and restarted; the old one is only slow.
	fresh := c.txnProducer("instance-2", "pipeline", speaksTV1)
	fresh.init()
	require.Equal(t, zombie.pid, fresh.pid, "a transactional id keeps its producer id")
	require.Greater(t, fresh.epoch, zombie.epoch, "the new instance's epoch fences the old one")

	pr := zombie.produce(orders, "still-the-zombie")
	require.Equal(t, kerr.InvalidProducerEpoch.Code, pr.ErrorCode, "the zombie's write: %v", kerr.ErrorForCode(pr.ErrorCode))
	require.Equal(t, kerr.ProducerFenced.Code, zombie.add(orders))
	require.Equal(t, kerr.ProducerFenced.Code, zombie.end(true))
	require.Equal(t, kerr.ProducerFenced.Code, zombie.txnOffsetCommit("etl", -1, "", orders, 1), "nor can it commit offsets")

	require.Zero(t, fresh.add(orders))
	require.Zero(t, fresh.produce(orders, "from-the-new-instance").ErrorCode)
	require.Zero(t, fresh.end(true))
	fresh.waitCompleted()

	require.Equal(t, []string{"from-the-new-instance"}, c.consume(orders, 1).values,
		"the zombie's open transaction was aborted when the new instance initialized")
	require.Equal(t, []string{"from-the-zombie", "from-the-new-instance"}, c.consume(orders, 0).values)
}

func TestReadCommittedNeverReturnsAbortedRecords(t *testing.T) {
	c := newCluster(t, 22, 3, config.Default())
	c.createTopic("orders", 1, 3)
	p := c.txnProducer("app", "pipeline", speaksTV1)
	p.init()

	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "aborted-1", "aborted-2").ErrorCode)
	open := c.consume(orders, 1)
	require.Empty(t, open.values)
	require.Equal(t, int64(0), open.lso, "the open transaction holds the last stable offset at its first record")
	require.Equal(t, int64(2), open.hw)
	require.Zero(t, p.end(false))
	p.waitCompleted()

	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "committed-1").ErrorCode)
	require.Zero(t, p.end(true))
	p.waitCompleted()

	committed := c.consume(orders, 1)
	require.Equal(t, []string{"committed-1"}, committed.values)
	require.Equal(t, committed.hw, committed.lso, "no transaction open: LSO = HW")
	require.Equal(t, []string{"aborted-1", "aborted-2", "committed-1"}, c.consume(orders, 0).values,
		"read_uncommitted returns aborted records, never markers")
}

func TestTransactionTimeoutAbortsAndFencesTheProducer(t *testing.T) {
	c := newCluster(t, 23, 3, config.Default())
	c.createTopic("orders", 1, 3)
	p := c.txnProducer("app", "slow", speaksTV1)
	p.timeout = 2 * time.Second
	p.init()
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "never-ended").ErrorCode)

	// The producer stalls past transaction.timeout.ms (checked every 10 s).
	require.NoError(t, c.w.RunFor(15*time.Second))
	require.Equal(t, "CompleteAbort", p.waitCompleted())
	pr := p.produce(orders, "after-the-timeout")
	require.Equal(t, kerr.InvalidProducerEpoch.Code, pr.ErrorCode, "%v", kerr.ErrorForCode(pr.ErrorCode))
	require.Equal(t, kerr.ProducerFenced.Code, p.end(true))
	got := c.consume(orders, 1)
	require.Empty(t, got.values)
	require.Equal(t, got.hw, got.lso)

	// KIP-360/KIP-588: the producer itself recovers by re-initializing with
	// the epoch it had; any other epoch is a fenced instance's.
	stale := kmsg.NewPtrInitProducerIDRequest()
	stale.TransactionalID, stale.TransactionTimeoutMillis = kmsg.StringPtr(p.id), 60000
	stale.ProducerID, stale.ProducerEpoch = p.pid, p.epoch-1
	require.Equal(t, kerr.ProducerFenced.Code, p.call(p.coordinator, stale).(*kmsg.InitProducerIDResponse).ErrorCode)
	own := kmsg.NewPtrInitProducerIDRequest()
	own.TransactionalID, own.TransactionTimeoutMillis = kmsg.StringPtr(p.id), 60000
	own.ProducerID, own.ProducerEpoch = p.pid, p.epoch
	resp := p.call(p.coordinator, own).(*kmsg.InitProducerIDResponse)
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, p.epoch+2, resp.ProducerEpoch, "one bump fenced the timed-out transaction, one is the producer's own")
	p.epoch = resp.ProducerEpoch
	clear(p.seq)
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "recovered").ErrorCode)
	require.Zero(t, p.end(true))
	p.waitCompleted()
	require.Equal(t, []string{"recovered"}, c.consume(orders, 1).values)
}

// lateBatchAfterAbort: a transaction writes a batch and aborts; a second
// batch of it, held up in the network, reaches the leader afterwards.
func lateBatchAfterAbort(t *testing.T, cfg config.Cluster, speaks bool) (*cluster, *txnProducer, int16) {
	c := newCluster(t, 24, 3, cfg)
	c.createTopic("orders", 1, 3)
	versions := speaksTV1
	if speaks {
		versions = speaksTV2
	}
	p := c.txnProducer("app", "pipeline", versions)
	p.init()
	require.Zero(t, p.add(orders))
	epoch := p.epoch
	require.Zero(t, p.produce(orders, "t1-on-time").ErrorCode)
	require.Zero(t, p.end(false))
	require.Equal(t, "CompleteAbort", p.waitCompleted())
	late := p.produceAt(orders, epoch, 1, "t1-late")
	if late.ErrorCode == 0 && p.epoch == epoch {
		p.seq[orders] = 2 // the late batch was the producer's sequence 1
	}
	return c, p, late.ErrorCode
}

func TestLateTransactionalBatchAfterAbortIsRefusedWithVerification(t *testing.T) {
	cfg := config.Default()
	cfg.TransactionPartitionVerification = true
	cfg.EpochBumpPerTransaction = false
	c, _, code := lateBatchAfterAbort(t, cfg, false)
	require.Equal(t, kerr.InvalidTxnState.Code, code, "got %v", kerr.ErrorForCode(code))
	got := c.consume(orders, 1)
	require.Equal(t, got.hw, got.lso, "nothing hangs")
	require.Equal(t, []string{"t1-on-time"}, c.consume(orders, 0).values)
}

func TestLateTransactionalBatchWithoutVerificationHangsTheLSOThenJoinsTheNextTransaction(t *testing.T) {
	cfg := config.Default()
	cfg.TransactionPartitionVerification = false
	cfg.EpochBumpPerTransaction = false
	c, p, code := lateBatchAfterAbort(t, cfg, false)
	require.Zero(t, code, "without verification the leader appends the late batch")

	hung := c.consume(orders, 1)
	require.Less(t, hung.lso, hung.hw, "a transaction no coordinator knows holds the LSO")
	require.NoError(t, c.w.RunFor(3*p.timeout))
	still := c.consume(orders, 1)
	require.Equal(t, hung.lso, still.lso, "transaction.timeout.ms cannot help: the coordinator knows of no open transaction")
	require.Empty(t, still.values, "read_committed consumers are stuck")

	// The producer's next transaction touches the partition: its marker
	// settles the late batch along with its own records.
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "t2").ErrorCode)
	require.Zero(t, p.end(true))
	p.waitCompleted()
	require.Equal(t, []string{"t1-late", "t2"}, c.consume(orders, 1).values,
		"a record of the aborted transaction is now committed")
}

func TestLateTransactionalBatchIsFencedByTheEpochBumpWithoutVerification(t *testing.T) {
	cfg := config.Default()
	cfg.TransactionPartitionVerification = false
	cfg.EpochBumpPerTransaction = true
	c, p, code := lateBatchAfterAbort(t, cfg, true)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, code, "the abort marker carried the bumped epoch: got %v", kerr.ErrorForCode(code))
	got := c.consume(orders, 1)
	require.Equal(t, got.hw, got.lso)
	require.Zero(t, p.add(orders), "the producer goes on with the epoch EndTxn v5 gave it")
	require.Zero(t, p.produce(orders, "t2").ErrorCode)
	require.Zero(t, p.end(true))
	p.waitCompleted()
	require.Equal(t, []string{"t2"}, c.consume(orders, 1).values)
}

// delayedEndTxn: the producer commits T1, opens T2, and then an EndTxn of
// T1 — a retry held up in the network — reaches the coordinator.
func delayedEndTxn(t *testing.T, bump bool) (*cluster, *txnProducer, int16) {
	cfg := config.Default()
	cfg.EpochBumpPerTransaction = bump
	c := newCluster(t, 25, 3, cfg)
	c.createTopic("orders", 1, 3)
	p := c.txnProducer("app", "pipeline", speaksTV2)
	p.init()
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "t1").ErrorCode)
	t1 := p.epoch
	require.Zero(t, p.end(true))
	p.waitCompleted()
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "t2-not-yet-committed").ErrorCode)
	code := p.endAt(t1, true).ErrorCode
	return c, p, code
}

func TestDelayedEndTxnCommitsTheNextTransactionWithoutEpochBump(t *testing.T) {
	c, p, code := delayedEndTxn(t, false)
	require.Zero(t, code, "same epoch: the coordinator takes it for T2's EndTxn")
	p.waitCompleted()
	require.Equal(t, []string{"t1", "t2-not-yet-committed"}, c.consume(orders, 1).values,
		"T2 was committed by a request the producer never sent for it")
}

func TestDelayedEndTxnIsFencedWithEpochBumpPerTransaction(t *testing.T) {
	c, p, code := delayedEndTxn(t, true)
	require.Equal(t, kerr.ProducerFenced.Code, code, "got %v", kerr.ErrorForCode(code))
	require.Equal(t, []string{"t1"}, c.consume(orders, 1).values, "T2 stays open")
	require.Zero(t, p.end(false), "the producer still decides T2 itself")
	p.waitCompleted()
	require.Equal(t, []string{"t1"}, c.consume(orders, 1).values)
}

func TestRetriedEndTxnAfterEpochBumpIsAnswered(t *testing.T) {
	cfg := config.Default()
	c := newCluster(t, 26, 3, cfg)
	c.createTopic("orders", 1, 3)
	p := c.txnProducer("app", "pipeline", speaksTV2)
	p.init()
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "t1").ErrorCode)
	t1 := p.epoch
	require.Zero(t, p.end(true))
	require.Equal(t, t1+1, p.epoch, "EndTxn v5 bumped the epoch")
	p.waitCompleted()
	resp := p.endAt(t1, true) // the answer was lost; the producer retries
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, p.epoch, resp.ProducerEpoch)
	require.Equal(t, kerr.InvalidTxnState.Code, p.endAt(t1, false).ErrorCode, "T1 committed: it cannot be aborted")
}

func TestPendingTransactionalOffsetsAreUnstableUntilTheMarker(t *testing.T) {
	c := newCluster(t, 27, 3, config.Default())
	c.createTopic("orders", 1, 3)
	p := c.txnProducer("app", "pipeline", speaksTV1)
	p.init()
	require.Zero(t, p.addOffsets("etl"))
	require.Zero(t, p.txnOffsetCommit("etl", -1, "", orders, 5))

	_, code := p.offsetFetch("etl", orders, true)
	require.Equal(t, kerr.UnstableOffsetCommit.Code, code, "require_stable: the transaction may still move it")
	off, code := p.offsetFetch("etl", orders, false)
	require.Zero(t, code)
	require.Equal(t, int64(-1), off, "not committed yet")

	require.Zero(t, p.end(true))
	p.waitCompleted()
	off, code = p.offsetFetch("etl", orders, true)
	require.Zero(t, code)
	require.Equal(t, int64(5), off)

	require.Zero(t, p.addOffsets("etl"))
	require.Zero(t, p.txnOffsetCommit("etl", -1, "", orders, 9))
	require.Zero(t, p.end(false))
	p.waitCompleted()
	off, code = p.offsetFetch("etl", orders, true)
	require.Zero(t, code)
	require.Equal(t, int64(5), off, "the aborted transaction's offset is dropped")
}

// txnPartitionReplicas returns the replicas of id's __transaction_state
// partition.
func (c *cluster) txnPartitionReplicas(id string) []int32 {
	tp := metadata.TopicPartition{Topic: metadata.TransactionTopic, Partition: metadata.PartitionFor(id, c.cfg.TransactionTopicPartitions)}
	ps, ok := c.controllerImage().Partition(tp)
	require.True(c.t, ok)
	return ps.Replicas
}

func TestCoordinatorCrashBetweenPrepareCommitAndMarkersStillCommitsEverywhere(t *testing.T) {
	cfg := config.Default()
	cfg.TransactionTopicReplicationFactor = 2 // one broker is no replica of the coordinator's partition
	c := newCluster(t, 28, 3, cfg)
	c.createTopic("orders", 3, 1)
	p := c.txnProducer("app", "pipeline", speaksTV1)
	p.init()
	coordinator := p.coordinator
	replicas := c.txnPartitionReplicas(p.id)
	// far: the leader of a data partition that the coordinator can be cut
	// off from without stopping its own partition's replication.
	var far, near metadata.TopicPartition
	for part := range int32(3) {
		tp := metadata.TopicPartition{Topic: "orders", Partition: part}
		switch l := c.leaderOf(tp); {
		case !containsID(replicas, int32(l)):
			far = tp
		case l != coordinator:
			near = tp
		}
	}
	require.NotEmpty(t, far.Topic)
	require.NotEmpty(t, near.Topic)
	farLeader := c.leaderOf(far)

	require.Zero(t, p.add(far, near))
	require.Zero(t, p.produce(far, "far").ErrorCode)
	require.Zero(t, p.produce(near, "near").ErrorCode)
	require.Zero(t, p.addOffsets("etl"))
	require.Zero(t, p.txnOffsetCommit("etl", -1, "", orders, 1))

	c.w.Cut(c.brokers[coordinator], c.brokers[farLeader])
	require.Zero(t, p.end(true), "PrepareCommit is committed in the transaction log: the decision is made")
	require.NoError(t, c.w.RunFor(time.Second))
	s, _ := c.broker(coordinator).Transaction(p.id)
	require.Equal(t, "PrepareCommit", s.State, "the far partition's marker cannot arrive")
	require.Empty(t, c.consume(far, 1).values)

	c.w.Node(c.brokers[coordinator]).Crash()
	successor := c.waitLeader(metadata.TopicPartition{Topic: metadata.TransactionTopic, Partition: metadata.PartitionFor(p.id, cfg.TransactionTopicPartitions)}, coordinator, 30*time.Second)
	p.coordinator = successor
	require.Equal(t, "CompleteCommit", p.waitCompleted(), "the new coordinator finished the decision")
	c.w.Heal()
	c.w.Node(c.brokers[coordinator]).Start()
	require.NoError(t, c.w.RunFor(10*time.Second))

	require.Equal(t, []string{"far"}, c.consume(far, 1).values)
	require.Equal(t, []string{"near"}, c.consume(near, 1).values)
	off, code := p.offsetFetch("etl", orders, true)
	require.Zero(t, code)
	require.Equal(t, int64(1), off, "the offsets partition got its marker too")
	successorEpoch := c.controllerImageLeaderEpoch(metadata.TopicPartition{Topic: metadata.TransactionTopic, Partition: metadata.PartitionFor(p.id, cfg.TransactionTopicPartitions)})
	ms := c.markers(far)
	require.NotEmpty(t, ms)
	require.True(t, ms[0].Commit())
	require.Equal(t, successorEpoch, ms[0].CoordinatorEpoch, "the far marker was written by the new coordinator")
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestTransactionStoryIsDeterministic(t *testing.T) {
	run := func() string {
		c := newCluster(t, 29, 3, config.Default())
		c.createTopic("orders", 1, 3)
		p := c.txnProducer("app", "pipeline", speaksTV2)
		p.init()
		for i, commit := range []bool{true, false, true} {
			require.Zero(t, p.add(orders))
			require.Zero(t, p.produce(orders, string(rune('a'+i))).ErrorCode)
			require.Zero(t, p.end(commit))
		}
		p.waitCompleted()
		require.Equal(t, []string{"a", "c"}, c.consume(orders, 1).values)
		return c.w.Trace().HashString()
	}
	require.Equal(t, run(), run())
}

func TestExhaustedEpochMovesTheProducerToANewID(t *testing.T) {
	c := newCluster(t, 30, 3, config.Default())
	c.createTopic("orders", 1, 3)
	p := c.txnProducer("app", "pipeline", speaksTV2)
	p.init()
	first := p.pid
	require.True(t, c.broker(p.coordinator).SetProducerEpochForTest(p.id, 32765))
	p.epoch = 32765
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "at-32765").ErrorCode)
	require.Zero(t, p.end(true))
	require.Equal(t, int16(32766), p.epoch)
	p.waitCompleted()

	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "at-32766").ErrorCode)
	require.Zero(t, p.end(true), "the bump past 32766 needs a new producer id")
	require.NotEqual(t, first, p.pid)
	require.Zero(t, p.epoch)
	p.waitCompleted()

	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "new-id").ErrorCode)
	require.Zero(t, p.end(true))
	p.waitCompleted()
	require.Equal(t, []string{"at-32765", "at-32766", "new-id"}, c.consume(orders, 1).values)

	require.True(t, c.broker(p.coordinator).SetProducerEpochForTest(p.id, 32766))
	before := p.pid
	p.init()
	require.NotEqual(t, before, p.pid, "InitProducerId at an exhausted epoch also moves to a new id")
	require.Zero(t, p.epoch)
}
