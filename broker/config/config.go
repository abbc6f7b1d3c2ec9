// Package config holds the cluster's knobs under Kafka's own names, shared
// by the controller and the brokers. Every knob changes behaviour: that is
// how a scenario turns a mechanism off and watches a guarantee fall.
package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/broker/defect"
)

// Cluster is the broker- and controller-side configuration.
type Cluster struct {
	// MinInsyncReplicas is min.insync.replicas: an acks=all write needs at
	// least this many in-sync replicas.
	MinInsyncReplicas int
	// UncleanLeaderElection is unclean.leader.election.enable.
	UncleanLeaderElection bool
	// LogFlushIntervalMessages is log.flush.interval.messages: fsync after
	// this many messages; 0 never (Kafka's default: rely on replication).
	LogFlushIntervalMessages int64
	// LeaderEpochTruncation is kip101.leader.epoch.truncation: a new
	// follower truncates by OffsetForLeaderEpoch; off, to its checkpointed
	// high watermark (the pre-KIP-101, lossy behaviour).
	LeaderEpochTruncation bool
	// FetchEpochValidation is kip320.fetch.epoch.validation: fetches carry
	// leader epochs, stale ones are fenced and diverging consumers told.
	FetchEpochValidation bool
	// TransactionPartitionVerification is
	// transaction.partition.verification.enable (KIP-890 part 1).
	TransactionPartitionVerification bool
	// EpochBumpPerTransaction is kip890.epoch.bump.per.transaction (KIP-890
	// part 2).
	EpochBumpPerTransaction bool
	// MetadataLogFsync is kafkasim's metadata.log.fsync: the controllers'
	// quorum fsyncs its log before counting an entry (Kafka always does:
	// KafkaRaftClient flushes before the leader counts its own end, a
	// follower before it fetches past what it appended). Off, entries
	// commit from the page cache, and controllers that lose power together
	// can lose committed metadata.
	MetadataLogFsync bool
	// MetadataLogMaxRecordBytesBetweenSnapshots is
	// metadata.log.max.record.bytes.between.snapshots: a controller or
	// broker snapshots its metadata once the entries it applied since its
	// last snapshot hold this many bytes (Kafka: 20 MiB), and its log then
	// starts at the snapshot; a replica behind the leader's log start
	// fetches the snapshot.
	MetadataLogMaxRecordBytesBetweenSnapshots int64

	// ReplicaLagTimeMax is replica.lag.time.max.ms.
	ReplicaLagTimeMax time.Duration
	// ReplicaFetchWaitMax is replica.fetch.wait.max.ms.
	ReplicaFetchWaitMax time.Duration
	// ReplicaFetchBackoff is replica.fetch.backoff.ms, after a failed fetch.
	ReplicaFetchBackoff time.Duration
	// BrokerSessionTimeout is broker.session.timeout.ms.
	BrokerSessionTimeout time.Duration
	// BrokerHeartbeatInterval is broker.heartbeat.interval.ms.
	BrokerHeartbeatInterval time.Duration
	// SegmentBytes is log.segment.bytes.
	SegmentBytes int64
	// MessageMaxBytes is message.max.bytes: the largest record batch a
	// topic accepts unless its max.message.bytes says otherwise.
	MessageMaxBytes int
	// DefaultReplicationFactor is default.replication.factor.
	DefaultReplicationFactor int
	// LogRetention is log.retention.ms (negative: forever) and
	// LogRetentionBytes log.retention.bytes (negative: no limit): the
	// cluster's retention, which a topic's retention.ms and
	// retention.bytes override. LogRetentionCheckInterval is
	// log.retention.check.interval.ms, how often a leader looks.
	LogRetention              time.Duration
	LogRetentionBytes         int64
	LogRetentionCheckInterval time.Duration
	// LogCleanerBackoff is log.cleaner.backoff.ms: how often each
	// broker's cleaner looks for compacted logs to clean.
	LogCleanerBackoff time.Duration
	// DeleteTopicEnable is delete.topic.enable: whether DeleteTopics may
	// delete anything.
	DeleteTopicEnable bool
	// NumPartitions is num.partitions: the partitions of a topic created
	// without a count (CreateTopics with -1, automatic creation).
	NumPartitions int
	// AutoCreateTopicsEnable is auto.create.topics.enable: a Metadata
	// request that allows it (v4+, or any before v4) creates the unknown
	// topics it names.
	AutoCreateTopicsEnable bool
	// OffsetsTopicPartitions and OffsetsTopicReplicationFactor shape
	// __consumer_offsets.
	OffsetsTopicPartitions        int
	OffsetsTopicReplicationFactor int
	// TransactionTopicPartitions and TransactionTopicReplicationFactor shape
	// __transaction_state.
	TransactionTopicPartitions        int
	TransactionTopicReplicationFactor int
	// TransactionTimeoutMax is transaction.max.timeout.ms.
	TransactionTimeoutMax time.Duration
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms.
	GroupInitialRebalanceDelay time.Duration
	// GroupSessionTimeoutMin and GroupSessionTimeoutMax bound the session
	// timeouts members may ask for.
	GroupSessionTimeoutMin, GroupSessionTimeoutMax time.Duration
	// GroupConsumerSessionTimeout is group.consumer.session.timeout.ms and
	// GroupConsumerHeartbeatInterval group.consumer.heartbeat.interval.ms:
	// a consumer group (KIP-848) member's session, and the heartbeat
	// interval it is told.
	GroupConsumerSessionTimeout, GroupConsumerHeartbeatInterval time.Duration
	// GroupConsumerAssignors is group.consumer.assignors: the server-side
	// assignors of consumer groups by name, comma-separated ("uniform,range"),
	// the first the default (Assignors splits it).
	GroupConsumerAssignors string
	// The share group (KIP-932) settings, each a group config's default
	// (group.go): GroupShareRecordLockDuration is
	// group.share.record.lock.duration.ms (how long an acquired record
	// stays acquired), GroupShareDeliveryCountLimit
	// group.share.delivery.count.limit (deliveries before a record is
	// archived), GroupSharePartitionMaxRecordLocks
	// group.share.partition.max.record.locks (in-flight records per share
	// partition), GroupShareSessionTimeout and GroupShareHeartbeatInterval
	// group.share.session.timeout.ms and group.share.heartbeat.interval.ms.
	GroupShareRecordLockDuration                          time.Duration
	GroupShareDeliveryCountLimit                          int
	GroupSharePartitionMaxRecordLocks                     int
	GroupShareSessionTimeout, GroupShareHeartbeatInterval time.Duration

	// Defects are bugs planted on purpose (package defect) for the
	// checkers' self-test; the zero set, everywhere else.
	Defects defect.Set
}

// Default is Kafka's defaults, except where a simulation needs smaller
// numbers to be quick; those are marked.
func Default() Cluster {
	return Cluster{
		MinInsyncReplicas:                         1,
		UncleanLeaderElection:                     false,
		LogFlushIntervalMessages:                  0,
		LeaderEpochTruncation:                     true,
		FetchEpochValidation:                      true,
		TransactionPartitionVerification:          true,
		EpochBumpPerTransaction:                   true,
		MetadataLogFsync:                          true,
		MetadataLogMaxRecordBytesBetweenSnapshots: 20 << 20,
		ReplicaLagTimeMax:                         10 * time.Second, // Kafka: 30 s
		ReplicaFetchWaitMax:                       500 * time.Millisecond,
		ReplicaFetchBackoff:                       time.Second,
		BrokerSessionTimeout:                      6 * time.Second, // Kafka: 9 s
		BrokerHeartbeatInterval:                   time.Second,     // Kafka: 2 s
		SegmentBytes:                              1 << 20,         // Kafka: 1 GiB
		MessageMaxBytes:                           1048588,
		DefaultReplicationFactor:                  3,
		NumPartitions:                             1,
		DeleteTopicEnable:                         true,
		LogRetention:                              7 * 24 * time.Hour,
		LogRetentionBytes:                         -1,
		LogRetentionCheckInterval:                 5 * time.Second, // Kafka: 5 min
		LogCleanerBackoff:                         2 * time.Second, // Kafka: 15 s
		AutoCreateTopicsEnable:                    true,
		OffsetsTopicPartitions:                    4, // Kafka: 50
		OffsetsTopicReplicationFactor:             3,
		TransactionTopicPartitions:                4, // Kafka: 50
		TransactionTopicReplicationFactor:         3,
		TransactionTimeoutMax:                     15 * time.Minute,
		GroupInitialRebalanceDelay:                0,                // Kafka: 3 s
		GroupSessionTimeoutMin:                    time.Second,      // Kafka: 6 s
		GroupSessionTimeoutMax:                    5 * time.Minute,  // Kafka: 30 min
		GroupConsumerSessionTimeout:               10 * time.Second, // Kafka: 45 s
		GroupConsumerHeartbeatInterval:            time.Second,      // Kafka: 5 s
		GroupConsumerAssignors:                    "uniform,range",
		GroupShareRecordLockDuration:              30 * time.Second,
		GroupShareDeliveryCountLimit:              5,
		GroupSharePartitionMaxRecordLocks:         2000,
		GroupShareSessionTimeout:                  10 * time.Second, // Kafka: 45 s
		GroupShareHeartbeatInterval:               time.Second,      // Kafka: 5 s
	}
}

// Validate reports the first impossible setting.
func (c Cluster) Validate() error {
	switch {
	case c.MinInsyncReplicas < 1:
		return fmt.Errorf("min.insync.replicas %d < 1", c.MinInsyncReplicas)
	case c.MetadataLogMaxRecordBytesBetweenSnapshots < 1:
		return fmt.Errorf("metadata.log.max.record.bytes.between.snapshots %d < 1", c.MetadataLogMaxRecordBytesBetweenSnapshots)
	case c.LogFlushIntervalMessages < 0:
		return fmt.Errorf("log.flush.interval.messages %d < 0", c.LogFlushIntervalMessages)
	case c.BrokerHeartbeatInterval <= 0 || c.BrokerSessionTimeout <= c.BrokerHeartbeatInterval:
		return fmt.Errorf("broker.session.timeout.ms %v must exceed broker.heartbeat.interval.ms %v", c.BrokerSessionTimeout, c.BrokerHeartbeatInterval)
	case c.ReplicaLagTimeMax <= 0:
		return fmt.Errorf("replica.lag.time.max.ms %v <= 0", c.ReplicaLagTimeMax)
	case c.ReplicaFetchWaitMax <= 0 || c.ReplicaFetchWaitMax >= c.ReplicaLagTimeMax:
		return fmt.Errorf("replica.fetch.wait.max.ms %v must be in (0, replica.lag.time.max.ms %v)", c.ReplicaFetchWaitMax, c.ReplicaLagTimeMax)
	case c.SegmentBytes < 1024:
		return fmt.Errorf("log.segment.bytes %d < 1024", c.SegmentBytes)
	case c.MessageMaxBytes < 0:
		return fmt.Errorf("message.max.bytes %d < 0", c.MessageMaxBytes)
	case c.OffsetsTopicPartitions < 1 || c.TransactionTopicPartitions < 1:
		return fmt.Errorf("internal topics need at least one partition")
	case c.LogRetentionCheckInterval <= 0:
		return fmt.Errorf("log.retention.check.interval.ms %v <= 0", c.LogRetentionCheckInterval)
	case c.LogCleanerBackoff <= 0:
		return fmt.Errorf("log.cleaner.backoff.ms %v <= 0", c.LogCleanerBackoff)
	case c.NumPartitions < 1:
		return fmt.Errorf("num.partitions %d < 1", c.NumPartitions)
	case c.DefaultReplicationFactor < 1 || c.OffsetsTopicReplicationFactor < 1 || c.TransactionTopicReplicationFactor < 1:
		return fmt.Errorf("replication factors must be at least 1")
	case c.GroupConsumerHeartbeatInterval <= 0 || c.GroupConsumerHeartbeatInterval >= c.GroupConsumerSessionTimeout:
		return fmt.Errorf("group.consumer.heartbeat.interval.ms %v must be in (0, group.consumer.session.timeout.ms %v)", c.GroupConsumerHeartbeatInterval, c.GroupConsumerSessionTimeout)
	case c.GroupShareHeartbeatInterval <= 0 || c.GroupShareHeartbeatInterval >= c.GroupShareSessionTimeout:
		return fmt.Errorf("group.share.heartbeat.interval.ms %v must be in (0, group.share.session.timeout.ms %v)", c.GroupShareHeartbeatInterval, c.GroupShareSessionTimeout)
	case c.GroupShareRecordLockDuration < time.Second:
		return fmt.Errorf("group.share.record.lock.duration.ms %v < 1000", c.GroupShareRecordLockDuration)
	case c.GroupShareDeliveryCountLimit < 2 || c.GroupShareDeliveryCountLimit > 10:
		return fmt.Errorf("group.share.delivery.count.limit %d not in [2, 10]", c.GroupShareDeliveryCountLimit)
	case c.GroupSharePartitionMaxRecordLocks < 100:
		return fmt.Errorf("group.share.partition.max.record.locks %d < 100", c.GroupSharePartitionMaxRecordLocks)
	case len(c.Assignors()) == 0:
		return fmt.Errorf("group.consumer.assignors names no assignor")
	}
	for _, a := range c.Assignors() {
		if !slices.Contains(ConsumerGroupAssignors, a) {
			return fmt.Errorf("group.consumer.assignors: unknown assignor %q (known: %s)", a, strings.Join(ConsumerGroupAssignors, ", "))
		}
	}
	return nil
}

// Assignors are group.consumer.assignors' names, in order.
func (c Cluster) Assignors() []string {
	var names []string
	for _, n := range strings.Split(c.GroupConsumerAssignors, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// ConsumerGroupAssignors are the server-side assignors a broker has for
// consumer groups (KIP-848), as group.consumer.assignors names them.
var ConsumerGroupAssignors = []string{"uniform", "range"}
