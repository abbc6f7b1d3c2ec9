package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Retention by size: with small segments and retention.bytes, a leader's
// log start moves past its oldest segments at the next check, on every
// replica, and a consumer asking below it is OFFSET_OUT_OF_RANGE; the
// active segment and what lies above the high watermark stay.
func TestRetentionBytesMovesTheLogStartOnEveryReplica(t *testing.T) {
	cfg := config.Default()
	cfg.LogRetentionCheckInterval = time.Second
	c := newCluster(t, 111, 3, cfg)
	resp := c.createTopicWith("orders", 1, 3, "segment.bytes", "1024", "retention.bytes", "2048")
	require.Zero(t, resp.ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	leader := c.leaderOf(orders)
	for i := range 60 {
		require.Zero(t, c.produce(leader, orders, -1, fmt.Sprintf("value-%03d-%s", i, string(make([]byte, 100)))).ErrorCode)
	}
	require.NoError(t, c.w.RunFor(3*time.Second))
	s, _ := c.broker(leader).Partition(orders)
	require.Positive(t, s.LogStartOffset, "retention moved the log start")
	require.Equal(t, int64(60), s.LogEndOffset)
	for i := range 3 {
		f, _ := c.broker(i).Partition(orders)
		require.Equal(t, s.LogStartOffset, f.LogStartOffset, "broker %d", i)
	}
	_, fr := c.fetch(leader, orders, 0)
	require.Equal(t, kerr.OffsetOutOfRange.Code, fr.ErrorCode)
	vs, fr := c.fetch(leader, orders, s.LogStartOffset)
	require.Zero(t, fr.ErrorCode)
	require.NotEmpty(t, vs)
}

// Retention by time: segments whose newest record is older than
// retention.ms go; with cleanup.policy=compact nothing does.
func TestRetentionMsDeletesOldSegmentsUnlessTheTopicIsCompacted(t *testing.T) {
	cfg := config.Default()
	cfg.LogRetentionCheckInterval = time.Second
	c := newCluster(t, 112, 3, cfg)
	require.Zero(t, c.createTopicWith("orders", 1, 3, "segment.bytes", "1024", "retention.ms", "5000").ErrorCode)
	require.Zero(t, c.createTopicWith("table", 1, 3, "segment.bytes", "1024", "retention.ms", "5000", "cleanup.policy", "compact").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	table := orders
	table.Topic = "table"
	for _, tp := range []struct {
		name string
		l    int
	}{{"orders", c.leaderOf(orders)}, {"table", c.leaderOf(table)}} {
		p := orders
		p.Topic = tp.name
		for i := range 30 {
			v := fmt.Sprintf("value-%03d-%s", i, string(make([]byte, 100)))
			require.Zero(t, c.produceBatch(tp.l, p, -1, keyedBatch(c.w.Now().UnixMilli(), fmt.Sprint("k", i), v)).ErrorCode)
		}
	}
	require.NoError(t, c.w.RunFor(2*time.Second))
	s, _ := c.broker(c.leaderOf(orders)).Partition(orders)
	require.Zero(t, s.LogStartOffset, "younger than retention.ms")
	require.NoError(t, c.w.RunFor(8*time.Second))
	s, _ = c.broker(c.leaderOf(orders)).Partition(orders)
	require.Positive(t, s.LogStartOffset, "older than retention.ms")
	require.Equal(t, int64(30), s.LogStartOffset, "every record expired: the active segment is rolled and goes too")
	for i := range 3 {
		segs := c.broker(i).SegmentsForTest("orders", 0)
		require.Len(t, segs, 1, "broker %d removed the segments below its log start", i)
		require.Equal(t, int64(30), segs[0])
	}
	ts, _ := c.broker(c.leaderOf(table)).Partition(table)
	require.Zero(t, ts.LogStartOffset, "cleanup.policy=compact: no retention")
}
