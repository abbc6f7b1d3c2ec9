package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopicWith creates a topic with config overrides and returns the
// controller's answer for it.
func (c *cluster) createTopicWith(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsResponseTopic {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[0], req)
	require.NoError(c.t, err)
	require.NoError(c.t, c.w.RunFor(time.Second))
	return resp.(*kmsg.CreateTopicsResponse).Topics[0]
}

// alterTopic applies incremental operations (op, name, value triples;
// value "" for a delete) to a topic's configs and returns the error code.
func (c *cluster) alterTopic(topic string, ops ...any) int16 {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for i := 0; i+2 < len(ops)+1; i += 3 {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Op, cfg.Name = kmsg.IncrementalAlterConfigOp(ops[i].(int)), ops[i+1].(string)
		if v := ops[i+2].(string); v != "" {
			cfg.Value = kmsg.StringPtr(v)
		}
		rr.Configs = append(rr.Configs, cfg)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := c.call(c.brokers[0], req)
	require.NoError(c.t, err)
	require.NoError(c.t, c.w.RunFor(time.Second))
	return resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
}

// describeTopic returns a topic's configs as broker b describes them.
func (c *cluster) describeTopic(b int, topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, rr)
	resp, err := c.call(c.brokers[b], req)
	require.NoError(c.t, err)
	res := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	require.Zero(c.t, res.ErrorCode)
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range res.Configs {
		out[e.Name] = e
	}
	return out
}

// A topic created with min.insync.replicas=2 runs with 2, not with the
// cluster's 1 (the complaint: the config was silently dropped). Its
// acks=all writes are refused while the leader is alone in the ISR, and a
// topic without the override, in the same cluster, still takes them.
func TestATopicsMinInsyncReplicasOverridesTheClusters(t *testing.T) {
	c := newCluster(t, 21, 3, config.Default())
	strict := metadata.TopicPartition{Topic: "strict", Partition: 0}
	created := c.createTopicWith(strict.Topic, 1, 3, "min.insync.replicas", "2")
	require.Zero(t, created.ErrorCode)
	var reported string
	for _, e := range created.Configs {
		if e.Name == "min.insync.replicas" {
			reported = *e.Value
			require.Equal(t, int8(config.SourceDynamicTopic), e.Source)
		}
	}
	require.Equal(t, "2", reported, "CreateTopics answers with the topic's configs")

	leader := c.shrinkToLeader(strict)
	pr := c.produce(leader, strict, -1, "refused")
	require.Equal(t, kerr.NotEnoughReplicas.Code, pr.ErrorCode, "the topic's min.insync.replicas binds")
	c.w.Heal()
	require.NoError(t, c.w.RunFor(15*time.Second))

	c.createTopic("lax", 1, 3)
	lax := metadata.TopicPartition{Topic: "lax", Partition: 0}
	leader = c.shrinkToLeader(lax)
	require.Zero(t, c.produce(leader, lax, -1, "taken").ErrorCode, "the cluster's min.insync.replicas=1 binds the other topic")
}

// Kafka's LogConfig.validate: an unknown name, a value of the wrong type or
// out of range, and a null value are INVALID_CONFIG, and the topic is not
// created.
func TestCreateTopicsRefusesUnknownOrInvalidConfigs(t *testing.T) {
	c := newCluster(t, 22, 3, config.Default())
	for _, bad := range [][2]string{
		{"min.insync.replica", "2"},
		{"min.insync.replicas", "two"},
		{"min.insync.replicas", "0"},
		{"cleanup.policy", "compact,shred"},
		{"message.timestamp.type", "WallTime"},
		{"remote.storage.enable", "true"},
	} {
		got := c.createTopicWith("bad", 1, 3, bad[0], bad[1])
		require.Equal(t, kerr.InvalidConfig.Code, got.ErrorCode, "%s=%s", bad[0], bad[1])
		require.Contains(t, *got.ErrorMessage, bad[0])
	}
	resp, err := c.call(c.brokers[0], kmsg.NewPtrMetadataRequest())
	require.NoError(t, err)
	for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
		require.NotEqual(t, "bad", *tp.Topic, "a refused topic was created")
	}
}

// DescribeConfigs reports each topic config with its source, as Kafka
// does: the override as DYNAMIC_TOPIC_CONFIG, a cluster setting that is not
// Kafka's default (log.segment.bytes, 1 MiB here) as STATIC_BROKER_CONFIG,
// the rest as DEFAULT_CONFIG, each with its synonyms in order; a config
// kafkasim does not honour says so. Every broker describes the same.
func TestDescribeConfigsReportsValuesWithTheirSources(t *testing.T) {
	c := newCluster(t, 23, 3, config.Default())
	c.createTopicWith("orders", 1, 3, "retention.ms", "1000", "unclean.leader.election.enable", "true")
	for b := range 3 {
		got := c.describeTopic(b, "orders")
		require.Len(t, got, len(config.TopicConfigDefs()))
		ret := got["retention.ms"]
		require.Equal(t, "1000", *ret.Value)
		require.Equal(t, kmsg.ConfigSource(config.SourceDynamicTopic), ret.Source)
		require.NotContains(t, *ret.Documentation, "no effect", "retention is honoured")
		require.Contains(t, *got["segment.ms"].Documentation, "no effect")
		seg := got["segment.bytes"]
		require.Equal(t, "1048576", *seg.Value)
		require.Equal(t, kmsg.ConfigSource(config.SourceStaticBroker), seg.Source)
		require.Len(t, seg.ConfigSynonyms, 2)
		require.Equal(t, "log.segment.bytes", seg.ConfigSynonyms[0].Name)
		require.Equal(t, "1073741824", *seg.ConfigSynonyms[1].Value)
		mmb := got["max.message.bytes"]
		require.Equal(t, kmsg.ConfigSource(config.SourceDefault), mmb.Source)
		require.Equal(t, "1048588", *mmb.Value)
		require.Equal(t, "true", *got["unclean.leader.election.enable"].Value)
		require.NotContains(t, *got["unclean.leader.election.enable"].Documentation, "no effect")
	}
}

// IncrementalAlterConfigs sets and deletes overrides through the
// controller, and the brokers honour them once the metadata carries them:
// max.message.bytes=200 refuses a larger batch with MESSAGE_TOO_LARGE
// (nothing appended), deleting it admits the batch again; APPEND on a
// list config extends it from Kafka's default, and APPEND on a scalar is
// INVALID_CONFIG.
func TestAlteredConfigsReachTheBrokers(t *testing.T) {
	c := newCluster(t, 24, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	big := strings.Repeat("x", 300)

	require.Zero(t, c.alterTopic("orders", 0, "max.message.bytes", "200"))
	require.Equal(t, "200", *c.describeTopic(leader, "orders")["max.message.bytes"].Value)
	pr := c.produce(leader, orders, -1, big)
	require.Equal(t, kerr.MessageTooLarge.Code, pr.ErrorCode)
	require.Zero(t, c.produce(leader, orders, -1, "small").ErrorCode)

	require.Zero(t, c.alterTopic("orders", 1, "max.message.bytes", ""))
	require.Zero(t, c.produce(leader, orders, -1, big).ErrorCode)
	require.Equal(t, []string{"small", big}, c.values(orders))

	require.Zero(t, c.alterTopic("orders", 2, "cleanup.policy", "compact"))
	require.Equal(t, "delete,compact", *c.describeTopic(0, "orders")["cleanup.policy"].Value)
	require.Equal(t, kerr.InvalidConfig.Code, c.alterTopic("orders", 2, "min.insync.replicas", "2"))
	require.Equal(t, kerr.InvalidConfig.Code, c.alterTopic("orders", 0, "no.such.config", "1"))
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, c.alterTopic("nope", 0, "retention.ms", "1"))
}

// The legacy AlterConfigs replaces a topic's overrides wholly: what it does
// not name goes back to the cluster's setting.
func TestAlterConfigsReplacesEveryOverride(t *testing.T) {
	c := newCluster(t, 25, 3, config.Default())
	c.createTopicWith("orders", 1, 3, "retention.ms", "1000", "min.insync.replicas", "2")
	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
	cfg := kmsg.NewAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("2000")
	rr.Configs = append(rr.Configs, cfg)
	req.Resources = append(req.Resources, rr)
	resp, err := c.call(c.brokers[1], req)
	require.NoError(t, err)
	require.Zero(t, resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	got := c.describeTopic(2, "orders")
	require.Equal(t, "2000", *got["retention.ms"].Value)
	require.Equal(t, "1", *got["min.insync.replicas"].Value)
	require.Equal(t, kmsg.ConfigSource(config.SourceDefault), got["min.insync.replicas"].Source)
}

// With message.timestamp.type=LogAppendTime the leader stamps each batch
// with its clock (Kafka's LogValidator): the produce answer carries the
// append time, and a consumer reads that time, not the producer's.
func TestLogAppendTimeStampsBatchesWithTheLeadersClock(t *testing.T) {
	c := newCluster(t, 26, 3, config.Default())
	c.createTopicWith("orders", 1, 3, "message.timestamp.type", "LogAppendTime")
	leader := c.leaderOf(orders)
	before := c.w.Now().UnixMilli()
	pr := c.produce(leader, orders, -1, "stamped")
	require.Zero(t, pr.ErrorCode)
	require.GreaterOrEqual(t, pr.LogAppendTime, before-1000)

	_, part := c.fetch(leader, orders, 0)
	batches, err := record.Split(part.RecordBatches)
	require.NoError(t, err)
	require.Len(t, batches, 1)
	require.True(t, batches[0].Attributes().LogAppendTime())
	require.Equal(t, pr.LogAppendTime, batches[0].MaxTimestamp())
	require.NoError(t, batches[0].VerifyCRC())
}

// Turning a topic's unclean.leader.election.enable on elects a leader for
// its offline partition at once, from the out-of-sync replicas: the write
// only the dead leader had is lost, as the config warns.
func TestTurningUncleanElectionOnElectsAnOfflinePartitionsLeader(t *testing.T) {
	c := newCluster(t, 27, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.shrinkToLeader(orders)
	require.Zero(t, c.produce(leader, orders, -1, "only-on-the-leader").ErrorCode)
	c.w.Node(c.brokers[leader]).Crash()
	c.w.Heal()
	require.NoError(t, c.w.RunFor(20*time.Second))
	require.Equal(t, -1, c.leaderOf(orders), "clean election: offline")

	require.Zero(t, c.alterTopic("orders", 0, "unclean.leader.election.enable", "true"))
	next := c.waitLeader(orders, -1, 10*time.Second)
	require.NotEqual(t, leader, next)
	require.NotContains(t, c.values(orders), "only-on-the-leader")
}

// A topic created with unclean.leader.election.enable=true, in a cluster
// whose setting is false, elects an out-of-sync replica when its last
// in-sync one dies, and loses what only that one had; a topic without the
// override waits, offline.
func TestATopicsUncleanElectionOverridesTheClusters(t *testing.T) {
	c := newCluster(t, 28, 3, config.Default())
	c.createTopicWith("orders", 1, 3, "unclean.leader.election.enable", "true")
	leader := c.shrinkToLeader(orders)
	require.Zero(t, c.produce(leader, orders, -1, "only-on-the-leader").ErrorCode)
	c.w.Node(c.brokers[leader]).Crash()
	c.w.Heal()
	next := c.waitLeader(orders, leader, 30*time.Second)
	require.NotEqual(t, leader, next, "an out-of-sync replica was elected")
	require.NotContains(t, c.values(orders), "only-on-the-leader")
}
