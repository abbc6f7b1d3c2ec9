package broker

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

func TestTransactionStateRecordRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := txnRecord{
			ProducerID:     rapid.Int64Range(0, 1<<40).Draw(t, "pid"),
			ProducerEpoch:  rapid.Int16Range(-1, maxProducerEpoch).Draw(t, "epoch"),
			EndedEpoch:     rapid.Int16Range(-1, maxProducerEpoch).Draw(t, "ended"),
			LastEpoch:      rapid.Int16Range(-1, maxProducerEpoch).Draw(t, "last"),
			NextProducerID: rapid.Int64Range(-1, 1<<40).Draw(t, "next"),
			Timeout:        time.Duration(rapid.IntRange(1, 900_000).Draw(t, "timeoutMs")) * time.Millisecond,
			State:          txnState(rapid.IntRange(0, 5).Draw(t, "state")),
			Started:        1e18,
			Updated:        2e18,
		}
		for i, n := 0, rapid.IntRange(0, 4).Draw(t, "partitions"); i < n; i++ {
			r.Partitions = addPartitions(r.Partitions, []metadata.TopicPartition{{Topic: rapid.StringMatching(`[a-z_]{1,12}`).Draw(t, "topic"), Partition: int32(i)}})
		}
		got, ok := decodeTxnValue(encodeTxnValue(r))
		require.True(t, ok)
		require.Equal(t, r, got)
		id, ok := decodeTxnKey(encodeTxnKey("pipeline-7"))
		require.True(t, ok)
		require.Equal(t, "pipeline-7", id)
	})
}

// Kafka's table of transitions, and the one kafkasim adds (KIP-890's abort
// of an empty transaction).
func TestTransactionStateTransitions(t *testing.T) {
	legal := map[txnState][]txnState{
		txnEmpty:          {txnEmpty, txnOngoing, txnPrepareAbort},
		txnOngoing:        {txnOngoing, txnPrepareCommit, txnPrepareAbort},
		txnPrepareCommit:  {txnCompleteCommit},
		txnPrepareAbort:   {txnCompleteAbort},
		txnCompleteCommit: {txnEmpty, txnOngoing, txnPrepareAbort},
		txnCompleteAbort:  {txnEmpty, txnOngoing, txnPrepareAbort},
	}
	for from := txnEmpty; from <= txnCompleteAbort; from++ {
		for to := txnEmpty; to <= txnCompleteAbort; to++ {
			want := false
			for _, s := range legal[from] {
				want = want || s == to
			}
			require.Equal(t, want, validTxnTransition(from, to), "%v → %v", from, to)
		}
	}
}

func TestGroupMetadataRecordRoundTrips(t *testing.T) {
	b := New(Options{})
	c := &groupCoordinator{b: b, groups: map[string]*group{}}
	g := c.group("etl")
	g.protocolType, g.protocol, g.generation, g.leader = "consumer", "range", 7, "m-1"
	g.members["m-1"] = &member{id: "m-1", clientID: "a", clientHost: "client", sessionTimeout: 3 * time.Second, rebalanceTimeout: 5 * time.Second,
		protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("orders")}}, assignment: []byte("orders/0"), seq: 1}
	g.members["m-2"] = &member{id: "m-2", clientID: "b", clientHost: "client", sessionTimeout: 4 * time.Second, rebalanceTimeout: 6 * time.Second,
		protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("orders")}}, seq: 2}
	value := encodeGroupValue(g, 1e18)
	id, ok := decodeGroupKey(encodeGroupKey("etl"))
	require.True(t, ok)
	require.Equal(t, "etl", id)

	c.groups = map[string]*group{}
	c.applyGroupMetadata("etl", value)
	got := c.groups["etl"]
	require.Equal(t, groupStable, got.state)
	require.Equal(t, int32(7), got.generation)
	require.Equal(t, "m-1", got.leader)
	require.Equal(t, []string{"m-1", "m-2"}, []string{got.sortedMembers()[0].id, got.sortedMembers()[1].id})
	require.Equal(t, "orders/0", string(got.members["m-1"].assignment))
	require.Equal(t, 4*time.Second, got.members["m-2"].sessionTimeout)
	require.Equal(t, []byte("orders"), got.members["m-2"].metadata("range"))
}
