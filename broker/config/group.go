package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Group configs are Kafka's per-group settings (KIP-848 and KIP-932:
// org.apache.kafka.coordinator.group.GroupConfig), set with
// IncrementalAlterConfigs on a GROUP resource (type 32) and kept, as Kafka
// keeps them, as ConfigRecords in the metadata log, so that every broker —
// the group's coordinator and the leaders of the partitions a share group
// reads — sees the same values. A group need not exist to have configs.
// Each falls back to its broker synonym (group.share.record.lock.duration.ms
// for share.record.lock.duration.ms, ...).
//
// Honoured: the share group ones (share_group.go, share_partition.go).
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms are
// accepted and described but the KIP-848 coordinator uses the broker's.

// GroupConfigDef is one group config.
type GroupConfigDef struct {
	Name, Synonym string
	Type          ConfigType
	KafkaDefault  string
	Cluster       func(Cluster) string // the synonym's value here; nil: Kafka's default holds
	Honoured      bool
	Doc           string
	valid         func(string) error
}

func msOf(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// groupConfigs is the table, by name.
var groupConfigs = []GroupConfigDef{
	{Name: "consumer.heartbeat.interval.ms", Synonym: "group.consumer.heartbeat.interval.ms", Type: TypeInt, KafkaDefault: "5000",
		Cluster: func(c Cluster) string { return msOf(c.GroupConsumerHeartbeatInterval) }, valid: intAtLeast(1),
		Doc: "accepted, not honoured here: consumer groups use the broker's group.consumer.heartbeat.interval.ms"},
	{Name: "consumer.session.timeout.ms", Synonym: "group.consumer.session.timeout.ms", Type: TypeInt, KafkaDefault: "45000",
		Cluster: func(c Cluster) string { return msOf(c.GroupConsumerSessionTimeout) }, valid: intAtLeast(1),
		Doc: "accepted, not honoured here: consumer groups use the broker's group.consumer.session.timeout.ms"},
	{Name: "share.auto.offset.reset", Type: TypeString, KafkaDefault: "latest", valid: oneOf("latest", "earliest"), Honoured: true,
		Doc: "where a share partition without state starts: latest (the high watermark) or earliest (the log start)"},
	{Name: "share.heartbeat.interval.ms", Synonym: "group.share.heartbeat.interval.ms", Type: TypeInt, KafkaDefault: "5000",
		Cluster: func(c Cluster) string { return msOf(c.GroupShareHeartbeatInterval) }, valid: intAtLeast(1), Honoured: true,
		Doc: "how often a share group member is told to heartbeat"},
	{Name: "share.isolation.level", Type: TypeString, KafkaDefault: "read_uncommitted", valid: oneOf("read_uncommitted", "read_committed"), Honoured: true,
		Doc: "read_committed: share partitions deliver records below the last stable offset and archive aborted transactions' records"},
	{Name: "share.record.lock.duration.ms", Synonym: "group.share.record.lock.duration.ms", Type: TypeInt, KafkaDefault: "30000",
		Cluster: func(c Cluster) string { return msOf(c.GroupShareRecordLockDuration) }, valid: intAtLeast(1000), Honoured: true,
		Doc: "how long a share group member holds a record it acquired before the record is available again"},
	{Name: "share.session.timeout.ms", Synonym: "group.share.session.timeout.ms", Type: TypeInt, KafkaDefault: "45000",
		Cluster: func(c Cluster) string { return msOf(c.GroupShareSessionTimeout) }, valid: intAtLeast(1), Honoured: true,
		Doc: "a share group member silent this long is fenced"},
}

// GroupConfigDefs lists every group config, by name.
func GroupConfigDefs() []GroupConfigDef { return groupConfigs }

// LookupGroupConfig returns the named group config.
func LookupGroupConfig(name string) (GroupConfigDef, bool) {
	i, ok := slices.BinarySearchFunc(groupConfigs, name, func(d GroupConfigDef, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return GroupConfigDef{}, false
	}
	return groupConfigs[i], true
}

// ValidateGroupConfig checks one group config as Kafka's GroupConfig.validate
// does (INVALID_CONFIG otherwise).
func ValidateGroupConfig(name, value string) error {
	d, ok := LookupGroupConfig(name)
	if !ok {
		return fmt.Errorf("unknown group config name: %s", name)
	}
	if err := d.valid(strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("invalid value %s for configuration %s: %v", value, name, err)
	}
	return nil
}

// SourceGroup is Kafka's GROUP_CONFIG source: a group's own override.
const SourceGroup ConfigSource = 8

// DescribeGroup is every group config of a group with these overrides, as
// DescribeConfigs reports them.
func (c Cluster) DescribeGroup(overrides map[string]string) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(groupConfigs))
	for _, d := range groupConfigs {
		def, src := d.KafkaDefault, SourceDefault
		if d.Cluster != nil {
			if v := d.Cluster(c); v != d.KafkaDefault {
				def, src = v, SourceStaticBroker
			}
		}
		e := ConfigEntry{Name: d.Name, Value: def, Source: src, Type: d.Type, Doc: d.Doc}
		if v, ok := overrides[d.Name]; ok {
			e.Value, e.Source = v, SourceGroup
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Name, Value: v, Source: SourceGroup})
		}
		if d.Synonym != "" && src == SourceStaticBroker {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Synonym, Value: def, Source: SourceStaticBroker})
		}
		if d.Synonym != "" {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Synonym, Value: d.KafkaDefault, Source: SourceDefault})
		}
		out = append(out, e)
	}
	return out
}

// ShareSettings are the share group configs as they apply to one group:
// its overrides over the cluster's settings (validated when written).
type ShareSettings struct {
	AutoOffsetResetEarliest bool          // share.auto.offset.reset=earliest
	ReadCommitted           bool          // share.isolation.level=read_committed
	RecordLockDuration      time.Duration // share.record.lock.duration.ms
	SessionTimeout          time.Duration // share.session.timeout.ms
	HeartbeatInterval       time.Duration // share.heartbeat.interval.ms
	DeliveryCountLimit      int           // group.share.delivery.count.limit (broker only)
	PartitionMaxRecordLocks int           // group.share.partition.max.record.locks (broker only)
}

// ShareSettings is the share group settings of a group with these overrides.
func (c Cluster) ShareSettings(overrides map[string]string) ShareSettings {
	s := ShareSettings{
		RecordLockDuration:      c.GroupShareRecordLockDuration,
		SessionTimeout:          c.GroupShareSessionTimeout,
		HeartbeatInterval:       c.GroupShareHeartbeatInterval,
		DeliveryCountLimit:      c.GroupShareDeliveryCountLimit,
		PartitionMaxRecordLocks: c.GroupSharePartitionMaxRecordLocks,
	}
	ms := func(name string, into *time.Duration) {
		if v, ok := overrides[name]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				*into = time.Duration(n) * time.Millisecond
			}
		}
	}
	s.AutoOffsetResetEarliest = strings.TrimSpace(overrides["share.auto.offset.reset"]) == "earliest"
	s.ReadCommitted = strings.TrimSpace(overrides["share.isolation.level"]) == "read_committed"
	ms("share.record.lock.duration.ms", &s.RecordLockDuration)
	ms("share.session.timeout.ms", &s.SessionTimeout)
	ms("share.heartbeat.interval.ms", &s.HeartbeatInterval)
	return s
}
