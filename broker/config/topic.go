package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Topic configs are Kafka's topic-level settings (LogConfig, TopicConfig):
// a topic created or altered with one overrides the broker setting it
// stands for (its synonym: min.insync.replicas for min.insync.replicas,
// message.max.bytes for max.message.bytes). The controller validates every
// override and writes it to the metadata log (a ConfigRecord); brokers and
// the controller read a topic's settings from TopicConfigs.For.
//
// Every config Kafka defines for topics is accepted and reported, so that
// tools that set them work, but only those marked Honoured change what the
// cluster does; the others are stored, described with a note saying so,
// and have no effect here.

// ConfigType is a config's type as DescribeConfigs v3+ reports it.
type ConfigType int8

// Kafka's ConfigEntry.ConfigType codes.
const (
	TypeBoolean ConfigType = 1
	TypeString  ConfigType = 2
	TypeInt     ConfigType = 3
	TypeLong    ConfigType = 5
	TypeDouble  ConfigType = 6
	TypeList    ConfigType = 7
)

// TopicConfigDef is one topic config.
type TopicConfigDef struct {
	Name string
	// Synonym is the broker config that gives its default.
	Synonym string
	Type    ConfigType
	// KafkaDefault is the synonym's default in Kafka; the cluster's value
	// (Cluster) replaces it for the configs kafkasim's cluster sets.
	KafkaDefault string
	// Cluster is the synonym's value in this cluster's configuration; nil
	// when the cluster has no such knob (the Kafka default holds).
	Cluster func(Cluster) string
	// Honoured: the config changes what the cluster does.
	Honoured bool
	// Doc is what DescribeConfigs says of it.
	Doc   string
	valid func(string) error
}

const longMax = "9223372036854775807"

// topicConfigs is the table, by name.
var topicConfigs = []TopicConfigDef{
	{Name: "cleanup.policy", Synonym: "log.cleanup.policy", Type: TypeList, KafkaDefault: "delete", valid: oneOfList("compact", "delete"), Honoured: true,
		Doc: "delete: retention.ms and retention.bytes apply; compact: the log cleaner keeps each key's latest record (a record without a key is refused); both: both"},
	{Name: "compression.type", Synonym: "compression.type", Type: TypeString, KafkaDefault: "producer", valid: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		Doc: "the codec the broker stores batches in; batches are kept as the producer compressed them"},
	{Name: "delete.retention.ms", Synonym: "log.cleaner.delete.retention.ms", Type: TypeLong, KafkaDefault: "86400000", valid: longAtLeast(0), Honoured: true,
		Doc: "how long tombstones (and markers of transactions that left no records) stay after the cleaner first keeps them"},
	{Name: "file.delete.delay.ms", Synonym: "log.segment.delete.delay.ms", Type: TypeLong, KafkaDefault: "60000", valid: longAtLeast(0),
		Doc: "how long a deleted segment's file stays before removal"},
	{Name: "flush.messages", Synonym: "log.flush.interval.messages", Type: TypeLong, KafkaDefault: longMax, valid: longAtLeast(1), Honoured: true,
		Cluster: func(c Cluster) string {
			if c.LogFlushIntervalMessages == 0 {
				return longMax
			}
			return strconv.FormatInt(c.LogFlushIntervalMessages, 10)
		},
		Doc: "fsync the partition's log after this many messages"},
	{Name: "flush.ms", Synonym: "log.flush.interval.ms", Type: TypeLong, KafkaDefault: longMax, valid: longAtLeast(0),
		Doc: "fsync the partition's log after this long"},
	{Name: "index.interval.bytes", Synonym: "log.index.interval.bytes", Type: TypeInt, KafkaDefault: "4096", valid: intAtLeast(0),
		Doc: "bytes between offset index entries"},
	{Name: "max.compaction.lag.ms", Synonym: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, KafkaDefault: longMax, valid: longAtLeast(1),
		Doc: "longest a message stays uncompacted"},
	{Name: "max.message.bytes", Synonym: "message.max.bytes", Type: TypeInt, KafkaDefault: "1048588", valid: intAtLeast(0), Honoured: true,
		Cluster: func(c Cluster) string { return strconv.Itoa(c.MessageMaxBytes) },
		Doc:     "the largest record batch the topic accepts (MESSAGE_TOO_LARGE beyond)"},
	{Name: "message.timestamp.after.max.ms", Synonym: "log.message.timestamp.after.max.ms", Type: TypeLong, KafkaDefault: longMax, valid: longAtLeast(0),
		Doc: "how far ahead of the broker's clock a CreateTime timestamp may be"},
	{Name: "message.timestamp.before.max.ms", Synonym: "log.message.timestamp.before.max.ms", Type: TypeLong, KafkaDefault: longMax, valid: longAtLeast(0),
		Doc: "how far behind the broker's clock a CreateTime timestamp may be"},
	{Name: "message.timestamp.type", Synonym: "log.message.timestamp.type", Type: TypeString, KafkaDefault: "CreateTime", valid: oneOf("CreateTime", "LogAppendTime"), Honoured: true,
		Doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the leader's clock when appended"},
	{Name: "min.cleanable.dirty.ratio", Synonym: "log.cleaner.min.cleanable.ratio", Type: TypeDouble, KafkaDefault: "0.5", valid: doubleBetween(0, 1), Honoured: true,
		Doc: "the dirty share of a log that makes it eligible for compaction"},
	{Name: "min.compaction.lag.ms", Synonym: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, KafkaDefault: "0", valid: longAtLeast(0), Honoured: true,
		Doc: "shortest a message stays uncompacted"},
	{Name: "min.insync.replicas", Synonym: "min.insync.replicas", Type: TypeInt, KafkaDefault: "1", valid: intAtLeast(1), Honoured: true,
		Cluster: func(c Cluster) string { return strconv.Itoa(c.MinInsyncReplicas) },
		Doc:     "in-sync replicas an acks=all write needs (NOT_ENOUGH_REPLICAS with fewer)"},
	{Name: "preallocate", Synonym: "log.preallocate", Type: TypeBoolean, KafkaDefault: "false", valid: isBool,
		Doc: "preallocate segment files"},
	{Name: "remote.storage.enable", Synonym: "remote.log.storage.system.enable", Type: TypeBoolean, KafkaDefault: "false", valid: oneOf("false"),
		Doc: "tiered storage (not available: only false is valid)"},
	{Name: "retention.bytes", Synonym: "log.retention.bytes", Type: TypeLong, KafkaDefault: "-1", valid: longAtLeast(math.MinInt64), Honoured: true,
		Cluster: func(c Cluster) string { return strconv.FormatInt(c.LogRetentionBytes, 10) },
		Doc:     "the size a partition's log is cut back to, oldest segments first (negative: no limit)"},
	{Name: "retention.ms", Synonym: "log.retention.ms", Type: TypeLong, KafkaDefault: "604800000", valid: longAtLeast(-1), Honoured: true,
		Cluster: func(c Cluster) string { return strconv.FormatInt(c.LogRetention.Milliseconds(), 10) },
		Doc:     "how long a segment is kept after its newest record's timestamp (-1: forever)"},
	{Name: "segment.bytes", Synonym: "log.segment.bytes", Type: TypeInt, KafkaDefault: "1073741824", valid: intAtLeast(1024), Honoured: true,
		Cluster: func(c Cluster) string { return strconv.FormatInt(c.SegmentBytes, 10) },
		Doc:     "size at which the partition's active segment rolls (new segments follow a change)"},
	{Name: "segment.index.bytes", Synonym: "log.index.size.max.bytes", Type: TypeInt, KafkaDefault: "10485760", valid: intAtLeast(4),
		Doc: "size of a segment's offset index"},
	{Name: "segment.jitter.ms", Synonym: "log.roll.jitter.ms", Type: TypeLong, KafkaDefault: "0", valid: longAtLeast(0),
		Doc: "random jitter subtracted from segment.ms"},
	{Name: "segment.ms", Synonym: "log.roll.ms", Type: TypeLong, KafkaDefault: "604800000", valid: longAtLeast(1),
		Doc: "age at which the active segment rolls"},
	{Name: "unclean.leader.election.enable", Synonym: "unclean.leader.election.enable", Type: TypeBoolean, KafkaDefault: "false", valid: isBool, Honoured: true,
		Cluster: func(c Cluster) string { return strconv.FormatBool(c.UncleanLeaderElection) },
		Doc:     "let an out-of-sync replica lead when no in-sync one is live (acknowledged writes may be lost); turned on, the controller elects such leaders at once"},
}

// TopicConfigDefs lists every topic config, by name.
func TopicConfigDefs() []TopicConfigDef { return topicConfigs }

// LookupTopicConfig returns the named topic config.
func LookupTopicConfig(name string) (TopicConfigDef, bool) {
	i, ok := slices.BinarySearchFunc(topicConfigs, name, func(d TopicConfigDef, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return TopicConfigDef{}, false
	}
	return topicConfigs[i], true
}

// ValidateTopicConfig checks one override as Kafka's LogConfig.validate
// does: the name must be a topic config and the value of its type and
// range. The error says which and why (Kafka answers INVALID_CONFIG).
func ValidateTopicConfig(name, value string) error {
	d, ok := LookupTopicConfig(name)
	if !ok {
		return fmt.Errorf("unknown topic config name: %s", name)
	}
	if err := d.valid(strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("invalid value %s for configuration %s: %v", value, name, err)
	}
	return nil
}

// Default is the value the topic config has without an override: the
// cluster's setting of its synonym, else Kafka's default. static reports
// whether the cluster sets it to other than Kafka's default (DescribeConfigs'
// STATIC_BROKER_CONFIG, else DEFAULT_CONFIG).
func (d TopicConfigDef) Default(c Cluster) (value string, static bool) {
	if d.Cluster == nil {
		return d.KafkaDefault, false
	}
	v := d.Cluster(c)
	return v, v != d.KafkaDefault
}

// TopicSettings are the topic configs the cluster honours, as they apply to
// one topic: its overrides over the cluster's settings.
type TopicSettings struct {
	MinInsyncReplicas     int
	UncleanLeaderElection bool
	MaxMessageBytes       int
	LogAppendTime         bool // message.timestamp.type=LogAppendTime
	SegmentBytes          int64
	FlushMessages         int64 // 0: never (Kafka's Long.MAX_VALUE)
	RetentionMs           int64 // -1: forever
	RetentionBytes        int64 // negative: no limit
	CleanupDelete         bool  // cleanup.policy holds delete: retention applies
	CleanupCompact        bool  // cleanup.policy holds compact: the cleaner runs
	DeleteRetentionMs     int64 // delete.retention.ms
	MinCompactionLagMs    int64 // min.compaction.lag.ms
	MinCleanableRatio     float64
}

// Compacts reports whether a topic with these overrides is compacted: its
// cleanup.policy holds compact.
func Compacts(overrides map[string]string) bool {
	v, ok := overrides["cleanup.policy"]
	return ok && slices.Contains(strings.Split(strings.ReplaceAll(v, " ", ""), ","), "compact")
}

// Settings is the honoured configs of a topic with the given overrides
// (validated when written: a value that does not parse is a bug).
func (c Cluster) Settings(overrides map[string]string) TopicSettings {
	s := TopicSettings{
		MinInsyncReplicas:     c.MinInsyncReplicas,
		UncleanLeaderElection: c.UncleanLeaderElection,
		MaxMessageBytes:       c.MessageMaxBytes,
		SegmentBytes:          c.SegmentBytes,
		FlushMessages:         c.LogFlushIntervalMessages,
		RetentionMs:           c.LogRetention.Milliseconds(),
		RetentionBytes:        c.LogRetentionBytes,
		CleanupDelete:         true,
		DeleteRetentionMs:     86_400_000,
		MinCleanableRatio:     0.5,
	}
	if c.LogRetention < 0 {
		s.RetentionMs = -1
	}
	if len(overrides) == 0 {
		return s
	}
	num := func(name string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(overrides[name]), 10, 64)
		if err != nil {
			panic(fmt.Sprintf("config: override %s=%q does not parse: %v", name, overrides[name], err))
		}
		return n
	}
	if _, ok := overrides["min.insync.replicas"]; ok {
		s.MinInsyncReplicas = int(num("min.insync.replicas"))
	}
	if v, ok := overrides["unclean.leader.election.enable"]; ok {
		s.UncleanLeaderElection = strings.EqualFold(strings.TrimSpace(v), "true")
	}
	if _, ok := overrides["max.message.bytes"]; ok {
		s.MaxMessageBytes = int(num("max.message.bytes"))
	}
	if v, ok := overrides["message.timestamp.type"]; ok {
		s.LogAppendTime = strings.TrimSpace(v) == "LogAppendTime"
	}
	if _, ok := overrides["segment.bytes"]; ok {
		s.SegmentBytes = num("segment.bytes")
	}
	if v, ok := overrides["cleanup.policy"]; ok {
		s.CleanupDelete = slices.Contains(strings.Split(strings.ReplaceAll(v, " ", ""), ","), "delete")
		s.CleanupCompact = Compacts(overrides)
	}
	if _, ok := overrides["delete.retention.ms"]; ok {
		s.DeleteRetentionMs = num("delete.retention.ms")
	}
	if _, ok := overrides["min.compaction.lag.ms"]; ok {
		s.MinCompactionLagMs = num("min.compaction.lag.ms")
	}
	if v, ok := overrides["min.cleanable.dirty.ratio"]; ok {
		r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			panic(fmt.Sprintf("config: override min.cleanable.dirty.ratio=%q does not parse: %v", v, err))
		}
		s.MinCleanableRatio = r
	}
	if _, ok := overrides["retention.ms"]; ok {
		s.RetentionMs = num("retention.ms")
	}
	if _, ok := overrides["retention.bytes"]; ok {
		s.RetentionBytes = num("retention.bytes")
	}
	if _, ok := overrides["flush.messages"]; ok {
		if s.FlushMessages = num("flush.messages"); s.FlushMessages == math.MaxInt64 {
			s.FlushMessages = 0
		}
	}
	return s
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("string must be one of: %s", strings.Join(values, ", "))
	}
}

func oneOfList(values ...string) func(string) error {
	return func(v string) error {
		if v == "" {
			return fmt.Errorf("list must name at least one of: %s", strings.Join(values, ", "))
		}
		for _, item := range strings.Split(v, ",") {
			if !slices.Contains(values, strings.TrimSpace(item)) {
				return fmt.Errorf("%q is not one of: %s", strings.TrimSpace(item), strings.Join(values, ", "))
			}
		}
		return nil
	}
}

func isBool(v string) error {
	if strings.EqualFold(v, "true") || strings.EqualFold(v, "false") {
		return nil
	}
	return fmt.Errorf("expected value to be either true or false")
}

func longAtLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return fmt.Errorf("not a number of type LONG")
		case n < min:
			return fmt.Errorf("value must be at least %d", min)
		}
		return nil
	}
}

func intAtLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		switch {
		case err != nil:
			return fmt.Errorf("not a number of type INT")
		case n < min:
			return fmt.Errorf("value must be at least %d", min)
		}
		return nil
	}
}

func doubleBetween(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
			return fmt.Errorf("not a number of type DOUBLE")
		case f < lo || f > hi:
			return fmt.Errorf("value must be between %v and %v", lo, hi)
		}
		return nil
	}
}

// ConfigSource is where a config's value comes from, as DescribeConfigs
// reports it.
type ConfigSource int8

// Kafka's DescribeConfigsResponse ConfigSource codes.
const (
	SourceDynamicTopic ConfigSource = 1
	SourceStaticBroker ConfigSource = 4
	SourceDefault      ConfigSource = 5
)

// ConfigEntry is one config of a resource as described.
type ConfigEntry struct {
	Name, Value string
	Source      ConfigSource
	Type        ConfigType
	Doc         string
	// Synonyms are where the value could come from, the one in force first
	// (DescribeConfigs v1+ IncludeSynonyms).
	Synonyms []ConfigSynonym
}

// ConfigSynonym is one source of a config's value.
type ConfigSynonym struct {
	Name, Value string
	Source      ConfigSource
}

// DescribeTopic is every topic config of a topic with the given overrides,
// by name: the override where there is one, else the cluster's setting of
// its synonym, else Kafka's default.
func (c Cluster) DescribeTopic(overrides map[string]string) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(topicConfigs))
	for _, d := range topicConfigs {
		doc := d.Doc
		if !d.Honoured {
			doc += " (kafkasim: accepted and reported, no effect)"
		}
		e := ConfigEntry{Name: d.Name, Type: d.Type, Doc: doc}
		if v, ok := overrides[d.Name]; ok {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Name, Value: v, Source: SourceDynamicTopic})
		}
		def, static := d.Default(c)
		if static {
			e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Synonym, Value: def, Source: SourceStaticBroker})
		}
		e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: d.Synonym, Value: d.KafkaDefault, Source: SourceDefault})
		e.Value, e.Source = e.Synonyms[0].Value, e.Synonyms[0].Source
		out = append(out, e)
	}
	return out
}
