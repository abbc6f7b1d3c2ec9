package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *cluster) deleteRecords(broker int, topic string, partition int32, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	return resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}

// DeleteRecords moves the log start offset on every replica: the leader
// answers once its followers start there too (the low watermark), a
// consumer fetching below it gets OFFSET_OUT_OF_RANGE, and a new leader
// starts at it as well. Records past the high watermark cannot be deleted,
// nor can an internal topic's.
func TestDeleteRecordsMovesTheLogStartOnEveryReplica(t *testing.T) {
	c := newCluster(t, 41, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	for i := range 10 {
		require.Zero(t, c.produce(leader, orders, -1, fmt.Sprintf("v%d", i)).ErrorCode)
	}
	require.Equal(t, kerr.OffsetOutOfRange.Code, c.deleteRecords(leader, "orders", 0, 11).ErrorCode)
	require.Equal(t, kerr.NotLeaderForPartition.Code, c.deleteRecords((leader+1)%3, "orders", 0, 4).ErrorCode)
	got := c.deleteRecords(leader, "orders", 0, 4)
	require.Zero(t, got.ErrorCode)
	require.Equal(t, int64(4), got.LowWatermark)
	for i := range 3 {
		s, _ := c.broker(i).Partition(orders)
		require.Equal(t, int64(4), s.LogStartOffset, "broker %d", i)
	}
	_, fr := c.fetch(leader, orders, 0)
	require.Equal(t, kerr.OffsetOutOfRange.Code, fr.ErrorCode)
	require.Equal(t, int64(4), fr.LogStartOffset)
	vs, fr := c.fetch(leader, orders, 4)
	require.Zero(t, fr.ErrorCode)
	require.Equal(t, []string{"v4", "v5", "v6", "v7", "v8", "v9"}, vs)

	c.coordinatorOf("g") // creates __consumer_offsets
	refused := 0
	for b := range 3 {
		if c.deleteRecords(b, "__consumer_offsets", 0, -1).ErrorCode == kerr.InvalidTopicException.Code {
			refused++ // its leader; the others are not leaders
		}
	}
	require.Equal(t, 1, refused, "an internal topic's records cannot be deleted")

	c.w.Node(c.brokers[leader]).Crash()
	next := c.waitLeader(orders, leader, 30*time.Second)
	s, _ := c.broker(next).Partition(orders)
	require.Equal(t, int64(4), s.LogStartOffset)
	vs, fr = c.fetch(next, orders, 4)
	require.Zero(t, fr.ErrorCode)
	require.Equal(t, []string{"v4", "v5", "v6", "v7", "v8", "v9"}, vs)

}

// A follower that was down while the leader deleted past its whole log
// finds its fetch out of range when it comes back, and starts over, empty,
// at the leader's log start, then catches up and rejoins the ISR.
func TestAFollowerBehindTheLeadersLogStartStartsOverThere(t *testing.T) {
	c := newCluster(t, 42, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	follower := (leader + 1) % 3
	require.Zero(t, c.produce(leader, orders, -1, "a", "b").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	c.w.Node(c.brokers[follower]).Crash()
	ok, err := c.w.RunWhile(func() bool { s, _ := c.broker(leader).Partition(orders); return len(s.ISR) == 3 }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the crashed follower left the ISR")
	for i := range 8 {
		require.Zero(t, c.produce(leader, orders, -1, fmt.Sprintf("v%d", i)).ErrorCode)
	}
	got := c.deleteRecords(leader, "orders", 0, 6)
	require.Zero(t, got.ErrorCode, "the dead follower does not hold the request back once fenced")

	c.w.Node(c.brokers[follower]).Start()
	ok, err = c.w.RunWhile(func() bool { s, _ := c.broker(leader).Partition(orders); return len(s.ISR) < 3 }, 60*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the follower caught up and rejoined the ISR")
	s, _ := c.broker(follower).Partition(orders)
	require.Equal(t, int64(6), s.LogStartOffset)
	require.Equal(t, int64(10), s.LogEndOffset)
}

// DescribeProducers lists an idempotent producer's state at the leader:
// its id, epoch and last sequence; other replicas refuse.
func TestDescribeProducersListsTheLeadersProducerState(t *testing.T) {
	c := newCluster(t, 43, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewProduceRequestTopicPartition()
	h := record.NewHeader()
	h.FirstTimestamp = c.w.Now().UnixMilli()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 4242, 3, 0
	batch, err := record.Encode(h, []record.Record{{Value: []byte("a")}, {Value: []byte("b")}})
	require.NoError(t, err)
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[leader], req)
	require.NoError(t, err)
	require.Zero(t, resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode)

	describe := func(b int) kmsg.DescribeProducersResponseTopicPartition {
		req := kmsg.NewPtrDescribeProducersRequest()
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = "orders", []int32{0}
		req.Topics = append(req.Topics, dt)
		resp, err := c.call(c.brokers[b], req)
		require.NoError(t, err)
		return resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	}
	got := describe(leader)
	require.Zero(t, got.ErrorCode)
	require.Len(t, got.ActiveProducers, 1)
	ap := got.ActiveProducers[0]
	require.Equal(t, int64(4242), ap.ProducerID)
	require.Equal(t, int32(3), ap.ProducerEpoch)
	require.Equal(t, int32(1), ap.LastSequence)
	require.Equal(t, int64(-1), ap.CurrentTxnStartOffset)
	require.Equal(t, kerr.NotLeaderForPartition.Code, describe((leader+1)%3).ErrorCode)
}
