package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// keyedBatch is a plain batch of key=value records ("" is a tombstone).
func keyedBatch(ts int64, kvs ...string) []byte {
	h := record.NewHeader()
	h.FirstTimestamp = ts
	var recs []record.Record
	for i := 0; i+1 < len(kvs); i += 2 {
		r := record.Record{Key: []byte(kvs[i])}
		if kvs[i+1] != "" {
			r.Value = []byte(kvs[i+1])
		}
		recs = append(recs, r)
	}
	b, err := record.Encode(h, recs)
	if err != nil {
		panic(err)
	}
	return b
}

// A compacted topic: every replica's cleaner keeps the latest value of each
// key, a consumer reading from offset 0 rebuilds the same table as from
// the uncleaned log, and a record without a key is refused.
func TestEveryReplicaCompactsItsLogAndAConsumerRebuildsTheLatestTable(t *testing.T) {
	cfg := config.Default()
	c := newCluster(t, 121, 3, cfg)
	tp := metadata.TopicPartition{Topic: "accounts", Partition: 0}
	require.Zero(t, c.createTopicWith(tp.Topic, 1, 3, "cleanup.policy", "compact", "segment.bytes", "1024", "delete.retention.ms", "3000").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	leader := c.leaderOf(tp)
	want := map[string]string{}
	for i := range 120 {
		k, v := fmt.Sprint("acct-", i%7), fmt.Sprint("balance-", i)
		if i%23 == 22 {
			v = "" // closed
		}
		require.Zero(t, c.produceBatch(leader, tp, -1, keyedBatch(c.w.Now().UnixMilli(), k, v)).ErrorCode)
		if v == "" {
			delete(want, k)
		} else {
			want[k] = v
		}
	}
	pr := c.produceBatch(leader, tp, -1, record.Values(c.w.Now().UnixMilli(), []byte("no key")))
	require.Equal(t, kerr.InvalidRecord.Code, pr.ErrorCode, "a compacted topic refuses a record without a key")

	require.NoError(t, c.w.RunFor(3*cfg.LogCleanerBackoff))
	for i := range 3 {
		require.Positive(t, c.broker(i).CleanerCheckpointForTest(tp.Topic, tp.Partition), "broker %d cleaned its own replica", i)
	}
	got, n := map[string]string{}, 0
	for off := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = tp.Topic, c.topicID(tp.Topic)
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, off, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.call(c.brokers[leader], req)
		require.NoError(t, err)
		p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Zero(t, p.ErrorCode)
		batches, err := record.Split(p.RecordBatches)
		require.NoError(t, err)
		if len(batches) == 0 {
			break
		}
		for _, b := range batches {
			recs, err := b.DecodeRecords()
			require.NoError(t, err)
			for _, r := range recs {
				n++
				if r.Value == nil {
					delete(got, string(r.Key))
				} else {
					got[string(r.Key)] = string(r.Value)
				}
			}
			off = b.NextOffset()
		}
	}
	require.Equal(t, want, got, "the table rebuilt from the compacted log")
	require.Less(t, n, 120, "the cleaner removed superseded records")
}
