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

// A broker asked for a coordinator right after it restarted knows no live
// broker yet. It must not create the internal topics with one replica —
// with min.insync.replicas 2 no coordinator could ever write to them — but
// answer COORDINATOR_NOT_AVAILABLE until it can create them with their
// configured replication factor, as Kafka does (found by
// eos-consume-transform-produce under rapid: a leader restart at the
// workload's first instant left every transaction stuck).
func TestInternalTopicsAreCreatedWithTheirReplicationFactorOnly(t *testing.T) {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	c := newCluster(t, 35, 3, cfg)
	c.w.Node(c.brokers[0]).Restart()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorType, req.CoordinatorKeys = "app", 1, []string{"app"}
	resp, err := c.call(c.brokers[0], req)
	require.NoError(t, err)
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)

	a := c.actor("app", nil)
	a.findCoordinator("app", 1)
	require.NoError(t, c.w.RunFor(time.Second))
	img := c.controllerImage()
	for _, topic := range []string{metadata.OffsetsTopic, metadata.TransactionTopic} {
		require.NotNil(t, img.Topics[topic], topic)
		for _, p := range img.Topics[topic].Partitions {
			require.Len(t, p.Replicas, 3, "%v", p.TopicPartition)
		}
	}
}
