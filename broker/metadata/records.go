package metadata

import (
	"encoding/json"
	"fmt"
)

// The metadata log is the quorum's (broker/quorum): one entry per
// decision, its data the decision's records as a JSON array, so that what
// one decision changes — a broker fenced and the leaderships it held —
// commits, or is lost, as one (as a KRaft controller writes an operation's
// records in one atomic batch).

// Record is one change to the metadata; exactly one field is set. They
// stand for KRaft's RegisterBrokerRecord, FenceBrokerRecord and
// UnfenceBrokerRecord, TopicRecord with its PartitionRecords,
// PartitionChangeRecord, a PartitionRecord adding a partition to a topic
// (CreatePartitions), RemoveTopicRecord, ProducerIdsRecord and
// ConfigRecord.
type Record struct {
	Broker       *BrokerRecord      `json:"broker,omitempty"`
	Fence        *FenceRecord       `json:"fence,omitempty"`
	Topic        *Topic             `json:"topic,omitempty"`
	Partition    *Partition         `json:"partition,omitempty"`
	NewPartition *Partition         `json:"newPartition,omitempty"`
	RemoveTopic  *RemoveTopicRecord `json:"removeTopic,omitempty"`
	ProducerIDs  int64              `json:"producerIds,omitempty"` // next unallocated producer id
	Config       *ConfigRecord      `json:"config,omitempty"`
}

// RemoveTopicRecord deletes a topic, its partitions and its config
// overrides, as Kafka's RemoveTopicRecord does by topic id. Brokers delete
// their replicas' logs when they see it.
type RemoveTopicRecord struct {
	Name string   `json:"name"`
	ID   [16]byte `json:"id"`
}

// ConfigRecord sets (or, with a nil Value, removes) one config override of
// a topic, as Kafka's ConfigRecord does for a TOPIC resource. The
// controller writes one per override in the batch that creates the topic or
// alters its configs, after validating it. With Group set (and Topic
// empty) it is a GROUP resource's config (KIP-848, KIP-932 group configs).
type ConfigRecord struct {
	Topic string  `json:"topic"`
	Group string  `json:"group,omitempty"`
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// BrokerRecord registers a broker incarnation. Its epoch is the offset of
// the entry that registers it, as in KRaft; a broker registers fenced.
type BrokerRecord struct {
	ID          int32      `json:"id"`
	Endpoints   []Endpoint `json:"endpoints"`
	Epoch       int64      `json:"epoch"`
	Incarnation [16]byte   `json:"incarnation"`
}

// FenceRecord fences or unfences the registered broker id.
type FenceRecord struct {
	ID     int32 `json:"id"`
	Fenced bool  `json:"fenced"`
}

// EncodeRecords is one entry's data: one decision's records.
func EncodeRecords(rs []Record) []byte {
	data, err := json.Marshal(rs)
	if err != nil {
		panic(fmt.Sprintf("metadata: records do not encode: %v", err))
	}
	return data
}

// DecodeRecords reads an entry's records. The quorum checks every entry's
// CRC, so one that does not decode was written by something else: the
// reader halts rather than apply a part of a decision.
func DecodeRecords(data []byte) ([]Record, error) {
	if rs, ok := decodeRecords(data); ok {
		return rs, nil
	}
	var rs []Record
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("metadata entry does not decode: %w", err)
	}
	return rs, nil
}
