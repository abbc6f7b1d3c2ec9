package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *cluster) metadataFor(allow bool, topic string) int16 {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = allow
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[1], req)
	require.NoError(c.t, err)
	return resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode
}

// A producer that allows automatic topic creation (kgo's
// AllowAutoTopicCreation, Kafka's clients before Metadata v4) gets the
// topic it names created with num.partitions and
// default.replication.factor: LEADER_NOT_AVAILABLE first, the topic on
// the next ask. A request that does not allow it, or a cluster with
// auto.create.topics.enable=false, leaves the topic unknown.
func TestAMetadataRequestCreatesTheTopicsItAllowsToBeCreated(t *testing.T) {
	cfg := config.Default()
	cfg.NumPartitions = 2
	c := newCluster(t, 101, 3, cfg)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, c.metadataFor(false, "events"))
	require.NoError(t, c.w.RunFor(time.Second))
	require.Nil(t, c.controllerImage().Topics["events"], "not allowed: not created")

	require.Equal(t, kerr.LeaderNotAvailable.Code, c.metadataFor(true, "events"))
	require.NoError(t, c.w.RunFor(time.Second))
	require.Zero(t, c.metadataFor(true, "events"))
	top := c.controllerImage().Topics["events"]
	require.Len(t, top.Partitions, 2, "num.partitions")
	require.Len(t, top.Partitions[0].Replicas, cfg.DefaultReplicationFactor, "default.replication.factor")
	require.Equal(t, kerr.InvalidTopicException.Code, c.metadataFor(true, "no spaces"))

	cfg.AutoCreateTopicsEnable = false
	off := newCluster(t, 102, 3, cfg)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, off.metadataFor(true, "events"))
	require.NoError(t, off.w.RunFor(time.Second))
	require.Nil(t, off.controllerImage().Topics["events"])
}
