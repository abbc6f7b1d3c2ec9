package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *cluster) listOffset(broker int, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	return resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// A consumer seeking by time (offsetsForTimes) gets the first record at or
// after the time, with its timestamp; max timestamp (KIP-734) the record
// with the largest; nothing when no record is that late; earliest, latest
// and latest-tiered as Kafka answers them without tiered storage.
func TestListOffsetsFindsRecordsByTimestamp(t *testing.T) {
	c := newCluster(t, 91, 3, config.Default())
	// Timestamps from 1970: past any retention.ms but forever.
	require.Zero(t, c.createTopicWith("orders", 1, 3, "retention.ms", "-1").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	leader := c.leaderOf(orders)
	produce := func(first int64, deltas ...int64) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewProduceRequestTopicPartition()
		h := record.NewHeader()
		h.FirstTimestamp = first
		var recs []record.Record
		for i, d := range deltas {
			recs = append(recs, record.Record{TimestampDelta: d, OffsetDelta: int32(i), Value: []byte("v")})
		}
		b, err := record.Encode(h, recs)
		require.NoError(t, err)
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.call(c.brokers[leader], req)
		require.NoError(t, err)
		require.Zero(t, resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode)
	}
	produce(1000, 0, 500, 200) // offsets 0-2 at 1000, 1500, 1200
	produce(3000, 0, 0)        // offsets 3-4 at 3000
	require.NoError(t, c.w.RunFor(time.Second))

	for _, tc := range []struct {
		ts, offset, stamp int64
	}{
		{0, 0, 1000}, {1000, 0, 1000}, {1001, 1, 1500}, {1200, 1, 1500}, {1501, 3, 3000}, {3000, 3, 3000},
		{3001, -1, -1}, // no record that late
		{-3, 3, 3000},  // the first record with the largest timestamp
		{-1, 5, -1}, {-2, 0, -1}, {-4, 0, -1}, {-5, -1, -1},
	} {
		got := c.listOffset(leader, tc.ts)
		require.Zero(t, got.ErrorCode, "ts %d", tc.ts)
		require.Equal(t, tc.offset, got.Offset, "ts %d", tc.ts)
		require.Equal(t, tc.stamp, got.Timestamp, "ts %d", tc.ts)
		if tc.offset >= 0 && tc.ts != -1 {
			require.Equal(t, int32(0), got.LeaderEpoch, "ts %d", tc.ts)
		}
	}
	require.Equal(t, kerr.NotLeaderForPartition.Code, c.listOffset((leader+1)%3, 0).ErrorCode)
}

// A new leader whose high watermark still lags the start of its epoch
// does not answer latest (it would be an offset below records the old
// leader had exposed): OFFSET_NOT_AVAILABLE until a follower's fetch in
// the new epoch advances it, as Kafka's Partition.fetchOffsetForTimestamp.
func TestANewLeaderWithALaggingHighWatermarkAnswersLatestOnlyOnceItAdvanced(t *testing.T) {
	c := newCluster(t, 92, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	require.Zero(t, c.produce(leader, orders, -1, "a", "b", "c").ErrorCode)
	c.w.Node(c.brokers[leader]).Crash()
	next := c.waitLeader(orders, leader, 30*time.Second)
	s, _ := c.broker(next).Partition(orders)
	require.Less(t, s.HighWatermark, s.LogEndOffset, "the followers learn the last high watermark a fetch later")
	require.Equal(t, kerr.OffsetNotAvailable.Code, c.listOffset(next, -1).ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	got := c.listOffset(next, -1)
	require.Zero(t, got.ErrorCode)
	require.Equal(t, int64(3), got.Offset)
}
