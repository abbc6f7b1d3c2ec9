package scenarios

import (
	"testing"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/internal/invariant"
	"github.com/stretchr/testify/require"
)

// Two brokers leading one partition in one leader epoch is the cluster's
// broken invariant; a deposed leader of an older epoch is not.
func TestTwoLeadersInOneEpochBreakTheCluster(t *testing.T) {
	tp := metadata.TopicPartition{Topic: "input", Partition: 0}
	require.NotPanics(t, func() {
		checkOneLeaderPerEpoch(tp, map[int32]broker.PartitionState{
			0: {Role: "leader", LeaderEpoch: 3}, 1: {Role: "leader", LeaderEpoch: 4}, 2: {Role: "follower", LeaderEpoch: 4},
		})
	})
	require.PanicsWithValue(t, invariant.Message("cluster", "input/0: brokers 0 and 2 both lead leader epoch 4"), func() {
		checkOneLeaderPerEpoch(tp, map[int32]broker.PartitionState{
			2: {Role: "leader", LeaderEpoch: 4}, 1: {Role: "follower", LeaderEpoch: 4}, 0: {Role: "leader", LeaderEpoch: 4},
		})
	})
}
