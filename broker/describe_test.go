package broker_test

import (
	"fmt"
	"testing"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describePage is one DescribeTopicPartitions answer: topic/partition
// names in order and the next cursor ("" when none).
func (c *cluster) describePage(limit int32, cursor string, cursorPartition int32, topics ...string) ([]string, string) {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = limit
	for _, t := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	if cursor != "" {
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: cursor, Partition: cursorPartition}
	}
	resp, err := c.call(c.brokers[0], req)
	require.NoError(c.t, err)
	r := resp.(*kmsg.DescribeTopicPartitionsResponse)
	var got []string
	for _, t := range r.Topics {
		if t.ErrorCode != 0 {
			got = append(got, fmt.Sprintf("%s:%s", *t.Topic, kerr.ErrorForCode(t.ErrorCode)))
			continue
		}
		for _, p := range t.Partitions {
			require.Zero(c.t, p.ErrorCode)
			require.Len(c.t, p.ISR, len(p.Replicas))
			got = append(got, fmt.Sprintf("%s/%d", *t.Topic, p.Partition))
		}
	}
	next := ""
	if r.NextCursor != nil {
		next = fmt.Sprintf("%s/%d", r.NextCursor.Topic, r.NextCursor.Partition)
	}
	return got, next
}

// An admin client pages through every partition of the cluster with
// DescribeTopicPartitions (KIP-966): topics by name, each page at most the
// limit, the cursor where the next one starts.
func TestDescribeTopicPartitionsPagesThroughTheTopicsByName(t *testing.T) {
	c := newCluster(t, 81, 3, config.Default())
	c.createTopic("b", 3, 2)
	c.createTopic("a", 2, 3)
	got, next := c.describePage(4, "", 0)
	require.Equal(t, []string{"a/0", "a/1", "b/0", "b/1"}, got)
	require.Equal(t, "b/2", next)
	got, next = c.describePage(4, "b", 2)
	require.Equal(t, []string{"b/2"}, got)
	require.Empty(t, next)
	got, next = c.describePage(2, "", 0, "b", "nope", "a")
	require.Equal(t, []string{"a/0", "a/1"}, got)
	require.Equal(t, "b/0", next, "the page is full at the end of a: the next starts at b")
	got, _ = c.describePage(10, "b", 1, "b", "nope")
	require.Equal(t, []string{"b/1", "b/2", "nope:" + kerr.UnknownTopicOrPartition.Error()}, got)
	got, _ = c.describePage(10, "c", 0, "a")
	require.Equal(t, []string{"a:" + kerr.InvalidRequest.Error()}, got, "the cursor's topic must be among those named")
}

// DescribeLogDirs tells the size of each replica a broker holds, and that
// it grows with what is written.
func TestDescribeLogDirsReportsReplicaSizes(t *testing.T) {
	c := newCluster(t, 82, 3, config.Default())
	c.createTopic("orders", 1, 3)
	size := func(b int) int64 {
		resp, err := c.call(c.brokers[b], kmsg.NewPtrDescribeLogDirsRequest())
		require.NoError(t, err)
		dirs := resp.(*kmsg.DescribeLogDirsResponse).Dirs
		require.Len(t, dirs, 1)
		require.Equal(t, broker.DefaultLogDir, dirs[0].Dir)
		for _, tp := range dirs[0].Topics {
			if tp.Topic == "orders" {
				return tp.Partitions[0].Size
			}
		}
		return -1
	}
	for b := range 3 {
		require.Equal(t, int64(0), size(b))
	}
	leader := c.leaderOf(orders)
	require.Zero(t, c.produce(leader, orders, -1, "a", "b", "c").ErrorCode)
	grown := size(leader)
	require.Positive(t, grown)
	for b := range 3 {
		require.Equal(t, grown, size(b), "broker %d holds the same bytes", b)
	}
}
