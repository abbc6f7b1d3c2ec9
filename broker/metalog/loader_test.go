package metalog_test

import (
	"testing"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/metalog"
	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/stretchr/testify/require"
)

// A snapshot rebuilds exactly the state the entries it covers made, and
// the chain carries on from it as if every entry had been applied.
func TestASnapshotRebuildsTheStateAndChainTheEntriesMade(t *testing.T) {
	entries := []raft.Entry{
		{Offset: 0, Epoch: 1, LeaderChange: true},
		{Offset: 1, Epoch: 1, Data: metadata.EncodeRecords([]metadata.Record{{Broker: &metadata.BrokerRecord{ID: 0, Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Addr: "broker-0"}}, Epoch: 1}}})},
		{Offset: 2, Epoch: 1, Data: metadata.EncodeRecords([]metadata.Record{{Fence: &metadata.FenceRecord{ID: 0, Fenced: false}}})},
		{Offset: 3, Epoch: 2, LeaderChange: true},
		{Offset: 4, Epoch: 2, Data: metadata.EncodeRecords([]metadata.Record{
			{Broker: &metadata.BrokerRecord{ID: 1, Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Addr: "broker-1"}}, Epoch: 4}},
			{Topic: &metadata.Topic{Name: "orders", Partitions: []metadata.Partition{{
				TopicPartition: metadata.TopicPartition{Topic: "orders", Partition: 0},
				Replicas:       []int32{0, 1}, ISR: []int32{0}, Leader: 0, LeaderEpoch: 0, PartitionEpoch: 0,
			}}}},
			{ProducerIDs: 2000},
		})},
		{Offset: 5, Epoch: 2, Data: metadata.EncodeRecords([]metadata.Record{{Partition: &metadata.Partition{
			TopicPartition: metadata.TopicPartition{Topic: "orders", Partition: 0},
			Replicas:       []int32{0, 1}, ISR: []int32{0, 1}, Leader: 0, LeaderEpoch: 0, PartitionEpoch: 1,
		}}})},
	}
	all := metalog.New(0)
	for _, en := range entries {
		require.NoError(t, all.Apply(en))
	}
	for cut := int64(1); cut <= int64(len(entries)); cut++ {
		head := metalog.New(0)
		for _, en := range entries[:cut] {
			require.NoError(t, head.Apply(en))
		}
		snap := raft.Snapshot{ID: raft.SnapshotID{EndOffset: cut, Epoch: entries[cut-1].Epoch}, Data: head.Encode()}
		loaded := metalog.New(0)
		require.NoError(t, loaded.Load(snap))
		require.Equal(t, head.St.Image(), loaded.St.Image(), "cut %d: the snapshot's image", cut)
		require.Equal(t, head.St.NextProducerID, loaded.St.NextProducerID)
		for _, en := range entries[cut:] {
			require.NoError(t, loaded.Apply(en))
		}
		require.Equal(t, all.St.Image(), loaded.St.Image(), "cut %d: the entries after it", cut)
		require.Equal(t, all.Chain.Last(), loaded.Chain.Last(), "cut %d: the chain carries on", cut)
		require.Equal(t, all.Applied, loaded.Applied)
	}
	require.Error(t, metalog.New(0).Apply(entries[1]), "entries apply in order")
}
