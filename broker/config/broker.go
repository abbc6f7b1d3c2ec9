package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// BrokerConfigDef is one of the cluster's settings under its Kafka name
// (kafkasim's own knobs, the KIP switches and metadata.log.fsync, say so):
// the command line's flag, and what DescribeConfigs reports for a broker.
type BrokerConfigDef struct {
	Name string
	Type ConfigType
	// KafkaDefault is Kafka's default ("" for kafkasim's own knobs, whose
	// default is Default's).
	KafkaDefault string
	Doc          string
	field        func(*Cluster) any // *int, *int64, *bool or *time.Duration (a .ms knob)
}

var brokerConfigs = []BrokerConfigDef{
	{"min.insync.replicas", TypeInt, "1", "in-sync replicas an acks=all write needs", func(c *Cluster) any { return &c.MinInsyncReplicas }},
	{"unclean.leader.election.enable", TypeBoolean, "false", "let an out-of-sync replica become leader (may lose acknowledged writes)", func(c *Cluster) any { return &c.UncleanLeaderElection }},
	{"log.flush.interval.messages", TypeLong, longMax, "fsync the log after this many messages; 0 (or Kafka's " + longMax + ") never: rely on replication", func(c *Cluster) any { return &c.LogFlushIntervalMessages }},
	{"kip101.leader.epoch.truncation", TypeBoolean, "", "(kafkasim) followers truncate by OffsetForLeaderEpoch; false: to their high watermark (pre-KIP-101)", func(c *Cluster) any { return &c.LeaderEpochTruncation }},
	{"kip320.fetch.epoch.validation", TypeBoolean, "", "(kafkasim) fence fetches that carry a stale leader epoch (KIP-320)", func(c *Cluster) any { return &c.FetchEpochValidation }},
	{"transaction.partition.verification.enable", TypeBoolean, "true", "verify transactional writes against the coordinator (KIP-890 part 1)", func(c *Cluster) any { return &c.TransactionPartitionVerification }},
	{"kip890.epoch.bump.per.transaction", TypeBoolean, "", "(kafkasim) bump the producer epoch on every transaction end (KIP-890 part 2)", func(c *Cluster) any { return &c.EpochBumpPerTransaction }},
	{"metadata.log.fsync", TypeBoolean, "", "(kafkasim) controllers fsync the metadata log before an entry counts (Kafka always does); false: committed metadata can be lost to a power loss", func(c *Cluster) any { return &c.MetadataLogFsync }},
	{"metadata.log.max.record.bytes.between.snapshots", TypeLong, "20971520", "snapshot the metadata once the entries applied since the last snapshot hold this many bytes", func(c *Cluster) any { return &c.MetadataLogMaxRecordBytesBetweenSnapshots }},
	{"replica.lag.time.max.ms", TypeLong, "30000", "a follower this far behind leaves the ISR", func(c *Cluster) any { return &c.ReplicaLagTimeMax }},
	{"replica.fetch.wait.max.ms", TypeInt, "500", "longest a follower's fetch waits for data", func(c *Cluster) any { return &c.ReplicaFetchWaitMax }},
	{"replica.fetch.backoff.ms", TypeInt, "1000", "pause after a failed replica fetch", func(c *Cluster) any { return &c.ReplicaFetchBackoff }},
	{"broker.session.timeout.ms", TypeInt, "9000", "a broker silent this long is fenced by the controller", func(c *Cluster) any { return &c.BrokerSessionTimeout }},
	{"broker.heartbeat.interval.ms", TypeInt, "2000", "how often a broker heartbeats to the controller", func(c *Cluster) any { return &c.BrokerHeartbeatInterval }},
	{"log.retention.ms", TypeLong, "604800000", "how long a segment is kept after its newest record (-1: forever); a topic's retention.ms overrides it", func(c *Cluster) any { return &c.LogRetention }},
	{"log.retention.bytes", TypeLong, "-1", "the size each partition's log is cut back to (-1: no limit); a topic's retention.bytes overrides it", func(c *Cluster) any { return &c.LogRetentionBytes }},
	{"log.retention.check.interval.ms", TypeLong, "300000", "how often a leader applies retention", func(c *Cluster) any { return &c.LogRetentionCheckInterval }},
	{"log.cleaner.backoff.ms", TypeLong, "15000", "how often the log cleaner looks for compacted logs to clean", func(c *Cluster) any { return &c.LogCleanerBackoff }},
	{"log.segment.bytes", TypeInt, "1073741824", "size at which a log segment rolls", func(c *Cluster) any { return &c.SegmentBytes }},
	{"message.max.bytes", TypeInt, "1048588", "largest record batch a topic accepts unless its max.message.bytes says otherwise (MESSAGE_TOO_LARGE beyond)", func(c *Cluster) any { return &c.MessageMaxBytes }},
	{"delete.topic.enable", TypeBoolean, "true", "let DeleteTopics delete topics (false: TOPIC_DELETION_DISABLED)", func(c *Cluster) any { return &c.DeleteTopicEnable }},
	{"num.partitions", TypeInt, "1", "partitions of a topic created without a count", func(c *Cluster) any { return &c.NumPartitions }},
	{"auto.create.topics.enable", TypeBoolean, "true", "create a topic a Metadata request names and allows to be created", func(c *Cluster) any { return &c.AutoCreateTopicsEnable }},
	{"default.replication.factor", TypeInt, "1", "replication factor of topics created without one", func(c *Cluster) any { return &c.DefaultReplicationFactor }},
	{"offsets.topic.num.partitions", TypeInt, "50", "partitions of __consumer_offsets", func(c *Cluster) any { return &c.OffsetsTopicPartitions }},
	{"offsets.topic.replication.factor", TypeInt, "3", "replication factor of __consumer_offsets", func(c *Cluster) any { return &c.OffsetsTopicReplicationFactor }},
	{"transaction.state.log.num.partitions", TypeInt, "50", "partitions of __transaction_state", func(c *Cluster) any { return &c.TransactionTopicPartitions }},
	{"transaction.state.log.replication.factor", TypeInt, "3", "replication factor of __transaction_state", func(c *Cluster) any { return &c.TransactionTopicReplicationFactor }},
	{"transaction.max.timeout.ms", TypeInt, "900000", "longest transaction timeout a producer may ask for", func(c *Cluster) any { return &c.TransactionTimeoutMax }},
	{"group.initial.rebalance.delay.ms", TypeInt, "3000", "wait for more members before a new group's first rebalance", func(c *Cluster) any { return &c.GroupInitialRebalanceDelay }},
	{"group.min.session.timeout.ms", TypeInt, "6000", "shortest session timeout a group member may ask for", func(c *Cluster) any { return &c.GroupSessionTimeoutMin }},
	{"group.max.session.timeout.ms", TypeInt, "1800000", "longest session timeout a group member may ask for", func(c *Cluster) any { return &c.GroupSessionTimeoutMax }},
	{"group.consumer.session.timeout.ms", TypeInt, "45000", "a consumer group (KIP-848) member silent this long is fenced", func(c *Cluster) any { return &c.GroupConsumerSessionTimeout }},
	{"group.consumer.heartbeat.interval.ms", TypeInt, "5000", "how often a consumer group (KIP-848) member is told to heartbeat", func(c *Cluster) any { return &c.GroupConsumerHeartbeatInterval }},
	{"group.share.record.lock.duration.ms", TypeInt, "30000", "how long a share group (KIP-932) member holds a record it acquired; a group's share.record.lock.duration.ms overrides it", func(c *Cluster) any { return &c.GroupShareRecordLockDuration }},
	{"group.share.delivery.count.limit", TypeInt, "5", "deliveries of a record to share group members before it is archived", func(c *Cluster) any { return &c.GroupShareDeliveryCountLimit }},
	{"group.share.partition.max.record.locks", TypeInt, "2000", "records a share partition holds in flight (acquired or waiting for redelivery) at most", func(c *Cluster) any { return &c.GroupSharePartitionMaxRecordLocks }},
	{"group.share.session.timeout.ms", TypeInt, "45000", "a share group member silent this long is fenced; a group's share.session.timeout.ms overrides it", func(c *Cluster) any { return &c.GroupShareSessionTimeout }},
	{"group.share.heartbeat.interval.ms", TypeInt, "5000", "how often a share group member is told to heartbeat; a group's share.heartbeat.interval.ms overrides it", func(c *Cluster) any { return &c.GroupShareHeartbeatInterval }},
	{"group.consumer.assignors", TypeList, "uniform,range", "the server-side assignors of consumer groups (KIP-848): uniform, range; the first is the default", func(c *Cluster) any { return &c.GroupConsumerAssignors }},
}

// BrokerConfigDefs lists the cluster's settings, in the order the command
// line documents them.
func BrokerConfigDefs() []BrokerConfigDef { return brokerConfigs }

// Get is the setting's value in c, as Kafka writes it (whole milliseconds
// for a .ms knob).
func (d BrokerConfigDef) Get(c *Cluster) string {
	switch p := d.field(c).(type) {
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		if d.Name == "log.flush.interval.messages" && *p == 0 {
			return longMax
		}
		return strconv.FormatInt(*p, 10)
	case *bool:
		return strconv.FormatBool(*p)
	case *string:
		return *p
	case *time.Duration:
		if *p < 0 {
			return "-1" // log.retention.ms: forever
		}
		return strconv.FormatInt(p.Milliseconds(), 10)
	}
	panic("config: " + d.Name + " has no known type")
}

// Set parses v into c's setting. A .ms knob takes whole milliseconds or a
// Go duration ("1.5s"). Ranges are Cluster.Validate's to check.
func (d BrokerConfigDef) Set(c *Cluster, v string) error {
	switch p := d.field(c).(type) {
	case *int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		*p = n
	case *int64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		if d.Name == "log.flush.interval.messages" && n == math.MaxInt64 {
			n = 0
		}
		*p = n
	case *bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		*p = b
	case *string:
		*p = v
	case *time.Duration:
		if d.Name == "log.retention.ms" && strings.TrimSpace(v) == "-1" {
			*p = -1 // forever
			return nil
		}
		ms, err := ParseMs(v)
		if err != nil {
			return err
		}
		*p = ms
	}
	return nil
}

// IsBool reports whether the setting is a boolean (a command-line flag
// that may stand alone).
func (d BrokerConfigDef) IsBool() bool {
	_, ok := d.field(&Cluster{}).(*bool)
	return ok
}

// ParseMs reads a duration as Kafka writes its *.ms settings, whole
// milliseconds, or as a Go duration ("1.5s").
func ParseMs(s string) (time.Duration, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 || ms > int64(time.Duration(math.MaxInt64)/time.Millisecond) {
			return 0, fmt.Errorf("%d ms out of range", ms)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want milliseconds or a duration such as 1.5s")
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %v", d)
	}
	return d, nil
}

// DescribeBroker is every setting as DescribeConfigs reports a broker's:
// STATIC_BROKER_CONFIG where this cluster's value differs from Kafka's
// default, else DEFAULT_CONFIG.
func (c Cluster) DescribeBroker() []ConfigEntry {
	out := make([]ConfigEntry, 0, len(brokerConfigs))
	for _, d := range brokerConfigs {
		v := d.Get(&c)
		e := ConfigEntry{Name: d.Name, Value: v, Type: d.Type, Doc: d.Doc, Source: SourceDefault}
		if d.KafkaDefault == "" || v != d.KafkaDefault {
			e.Source = SourceStaticBroker
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Name, Value: v, Source: SourceStaticBroker})
		}
		if d.KafkaDefault != "" {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Name, Value: d.KafkaDefault, Source: SourceDefault})
		}
		out = append(out, e)
	}
	return out
}
