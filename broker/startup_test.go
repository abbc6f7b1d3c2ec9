package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A restarted broker serves no request until it has caught up with the
// metadata log and published its first image, as Kafka's BrokerServer
// enables request processing only then: a Metadata request sent the
// moment it starts is answered with the cluster as it is, never with the
// empty image of a broker that has not caught up (which made a KIP-848
// member leave its partitions out of a heartbeat: eos-consume-transform-
// produce-848, seed 9469 of 10,000).
func TestARestartedBrokerAnswersOnlyOnceItsMetadataHasCaughtUp(t *testing.T) {
	c := newCluster(t, 81, 3, config.Default())
	c.createTopic("orders", 2, 3)
	n := c.w.Node(c.brokers[0])
	n.Crash()
	require.NoError(t, c.w.RunFor(15*time.Second))
	n.Start()

	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[0], req)
	require.NoError(t, err)
	m := resp.(*kmsg.MetadataResponse)
	require.GreaterOrEqual(t, len(m.Brokers), 2, "the other brokers at least (its own image may not yet hold its unfencing)")
	require.Len(t, m.Topics, 1)
	require.Zero(t, m.Topics[0].ErrorCode, "the topic is known")
	require.Len(t, m.Topics[0].Partitions, 2)
}
