package broker

import (
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
)

// The records of a KIP-848 consumer group in __consumer_offsets, Kafka's
// (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json)
// by key version, each value at version 0 but the current assignment's at
// 1, encoded as internal_records.go encodes the classic group's:
//
//	3 ConsumerGroupMetadata (group) → group epoch
//	4 ConsumerGroupPartitionMetadata (group) → the subscribed topics' id, name, partition count
//	5 ConsumerGroupMemberMetadata (group, member) → instance, rack, client id and host,
//	  subscribed topic names and regex, rebalance timeout, server assignor
//	6 ConsumerGroupTargetAssignmentMetadata (group) → assignment epoch
//	7 ConsumerGroupTargetAssignmentMember (group, member) → target partitions by topic id
//	8 ConsumerGroupCurrentMemberAssignment (group, member) → member epoch, previous
//	  epoch, state, assigned partitions and those pending revocation, by topic id;
//	  at value version 1 each topic's partitions are followed by their
//	  assignment epochs (KIP-1251, Kafka 4.3's AssignmentEpochs); a version 0
//	  value's partitions count as given at max(member epoch, 0), as Kafka
//	  reads an old record
//
// A tombstone (null value) deletes what its key names.

const (
	consumerGroupMetadataKeyVersion    = 3
	partitionMetadataKeyVersion        = 4
	memberMetadataKeyVersion           = 5
	targetMetadataKeyVersion           = 6
	targetMemberKeyVersion             = 7
	currentMemberAssignmentKeyVersion  = 8
	consumerGroupRecordValueVersion    = 0
	currentAssignmentValueVersion      = 1 // with assignment epochs
	consumerGroupRecordValueHeaderSize = 2
)

func encodeConsumerKey(version uint16, group string, member ...string) []byte {
	b := appendString(binary.BigEndian.AppendUint16(nil, version), group)
	for _, m := range member {
		b = appendString(b, m)
	}
	return b
}

func encodeConsumerGroupKey(group string) []byte {
	return encodeConsumerKey(consumerGroupMetadataKeyVersion, group)
}
func encodePartitionMetadataKey(group string) []byte {
	return encodeConsumerKey(partitionMetadataKeyVersion, group)
}
func encodeMemberMetadataKey(group, member string) []byte {
	return encodeConsumerKey(memberMetadataKeyVersion, group, member)
}
func encodeTargetMetadataKey(group string) []byte {
	return encodeConsumerKey(targetMetadataKeyVersion, group)
}
func encodeTargetMemberKey(group, member string) []byte {
	return encodeConsumerKey(targetMemberKeyVersion, group, member)
}
func encodeCurrentAssignmentKey(group, member string) []byte {
	return encodeConsumerKey(currentMemberAssignmentKeyVersion, group, member)
}

// decodeConsumerKey reads a consumer group record's key: its version, the
// group and, for member records, the member.
func decodeConsumerKey(b []byte) (version uint16, group, member string, ok bool) {
	return decodeModernGroupKey(b, consumerGroupMetadataKeyVersion, currentMemberAssignmentKeyVersion, func(v uint16) bool {
		return v == memberMetadataKeyVersion || v == targetMemberKeyVersion || v == currentMemberAssignmentKeyVersion
	})
}

// decodeModernGroupKey reads a group record's key of a version in [lo, hi]: the
// group and, when hasMember says the version is a member record's, the
// member. Consumer (KIP-848) and share (KIP-932) group keys share it.
func decodeModernGroupKey(b []byte, lo, hi uint16, hasMember func(uint16) bool) (version uint16, group, member string, ok bool) {
	if len(b) < 2 {
		return 0, "", "", false
	}
	version = binary.BigEndian.Uint16(b)
	if version < lo || version > hi {
		return 0, "", "", false
	}
	group, b, ok = readString(b[2:])
	if !ok {
		return 0, "", "", false
	}
	if hasMember(version) {
		member, b, ok = readString(b)
	}
	return version, group, member, ok && len(b) == 0
}

func valueHeader() []byte {
	return binary.BigEndian.AppendUint16(nil, consumerGroupRecordValueVersion)
}

func encodeConsumerGroupValue(epoch int32) []byte {
	return binary.BigEndian.AppendUint32(valueHeader(), uint32(epoch))
}

func encodeTargetMetadataValue(epoch int32) []byte {
	return binary.BigEndian.AppendUint32(valueHeader(), uint32(epoch))
}

func (c *groupCoordinator) encodePartitionMetadataValue(topics map[string]int32) []byte {
	be := binary.BigEndian
	b := be.AppendUint32(valueHeader(), uint32(len(topics)))
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		var id [16]byte
		if t := c.b.image.Topics[name]; t != nil {
			id = t.ID
		}
		b = append(b, id[:]...)
		b = appendString(b, name)
		b = be.AppendUint32(b, uint32(topics[name]))
	}
	return b
}

func encodeMemberMetadataValue(m *consumerMember) []byte {
	be := binary.BigEndian
	b := appendNullableString(valueHeader(), m.instanceID)
	b = appendNullableString(b, m.rackID)
	b = appendString(b, m.clientID)
	b = appendString(b, m.clientHost)
	b = be.AppendUint32(b, uint32(len(m.subscribedTopics)))
	for _, t := range m.subscribedTopics {
		b = appendString(b, t)
	}
	b = appendNullableString(b, m.subscribedRegex)
	b = be.AppendUint32(b, uint32(m.rebalanceTimeout.Milliseconds()))
	return appendNullableString(b, m.serverAssignor)
}

// appendTopicPartitions writes s as Kafka's []TopicPartitions: topic id,
// partitions, and with epochs non-nil each partition's assignment epoch.
func (c *groupCoordinator) appendTopicPartitions(b []byte, s partitionSet, epochs map[metadata.TopicPartition]int32) []byte {
	be := binary.BigEndian
	ts := c.byTopicID(s)
	b = be.AppendUint32(b, uint32(len(ts)))
	for _, t := range ts {
		b = append(b, t.id[:]...)
		b = be.AppendUint32(b, uint32(len(t.partitions)))
		for _, p := range t.partitions {
			b = be.AppendUint32(b, uint32(p))
		}
		if epochs != nil {
			for _, p := range t.partitions {
				b = be.AppendUint32(b, uint32(epochs[metadata.TopicPartition{Topic: t.name, Partition: p}]))
			}
		}
	}
	return b
}

func (c *groupCoordinator) encodeTargetMemberValue(s partitionSet) []byte {
	return c.appendTopicPartitions(valueHeader(), s, nil)
}

func (c *groupCoordinator) encodeCurrentAssignmentValue(m *consumerMember) []byte {
	be := binary.BigEndian
	epochs := m.assignmentEpochs
	if epochs == nil {
		epochs = map[metadata.TopicPartition]int32{}
	}
	b := be.AppendUint16(nil, currentAssignmentValueVersion)
	b = be.AppendUint32(b, uint32(m.epoch))
	b = be.AppendUint32(b, uint32(m.previousEpoch))
	b = append(b, byte(m.state))
	b = c.appendTopicPartitions(b, m.assigned, epochs)
	return c.appendTopicPartitions(b, m.pendingRevocation, epochs)
}

// recordReader reads a record value; a short or malformed one sets bad.
type recordReader struct {
	b   []byte
	bad bool
}

func (r *recordReader) u32() uint32 {
	if len(r.b) < 4 {
		r.bad = true
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *recordReader) str(nullable bool) string {
	read := readString
	if nullable {
		read = readNullableString
	}
	s, rest, ok := read(r.b)
	if !ok {
		r.bad = true
		return ""
	}
	r.b = rest
	return s
}

func (r *recordReader) uuid() [16]byte {
	var id [16]byte
	if len(r.b) < 16 {
		r.bad = true
		return id
	}
	copy(id[:], r.b)
	r.b = r.b[16:]
	return id
}

// partitions reads []TopicPartitions; topics the metadata no longer has
// are dropped.
func (r *recordReader) partitions(names map[[16]byte]string) partitionSet {
	return r.partitionsWithEpochs(names, nil)
}

// partitionsWithEpochs reads []TopicPartitions whose topics carry each
// partition's assignment epoch after its partitions, into epochs (nil: the
// value carries none).
func (r *recordReader) partitionsWithEpochs(names map[[16]byte]string, epochs map[metadata.TopicPartition]int32) partitionSet {
	out := partitionSet{}
	n := int(r.u32())
	for i := 0; i < n && !r.bad; i++ {
		id := r.uuid()
		k := int(r.u32())
		ps := make([]int32, 0, min(k, len(r.b)/4))
		for j := 0; j < k && !r.bad; j++ {
			ps = append(ps, int32(r.u32()))
		}
		name, ok := names[id]
		for _, p := range ps {
			tp := metadata.TopicPartition{Topic: name, Partition: p}
			if ok {
				out[tp] = true
			}
			if epochs != nil {
				if e := int32(r.u32()); ok {
					epochs[tp] = e
				}
			}
		}
	}
	return out
}

// applyConsumerGroupRecord folds a consumer group record, found while
// loading an offsets partition, into the cache; false if key is not one.
// The owners index is rebuilt once the partition is loaded
// (resumeGroups).
func (c *groupCoordinator) applyConsumerGroupRecord(key, value []byte) bool {
	version, gid, mid, ok := decodeConsumerKey(key)
	if !ok {
		return false
	}
	g := c.group(gid)
	if value == nil && g.consumer == nil {
		return true
	}
	if g.consumer == nil {
		g.consumer = newConsumerGroup()
	}
	cg := g.consumer
	member := func() *consumerMember {
		m := cg.members[mid]
		if m == nil {
			m = &consumerMember{id: mid, assigned: partitionSet{}, pendingRevocation: partitionSet{}}
			cg.members[mid] = m
		}
		return m
	}
	if value == nil {
		switch version {
		case consumerGroupMetadataKeyVersion:
			g.consumer = nil
		case partitionMetadataKeyVersion:
			cg.topics = map[string]int32{}
		case memberMetadataKeyVersion:
			if m := cg.members[mid]; m != nil && m.instanceID != "" && cg.staticMembers[m.instanceID] == mid {
				delete(cg.staticMembers, m.instanceID)
			}
			delete(cg.members, mid)
		case targetMetadataKeyVersion:
			cg.assignmentEpoch = 0
		case targetMemberKeyVersion:
			delete(cg.target, mid)
		case currentMemberAssignmentKeyVersion:
			if m := cg.members[mid]; m != nil {
				m.epoch, m.previousEpoch, m.state = 0, 0, memberStable
				m.assigned, m.pendingRevocation = partitionSet{}, partitionSet{}
				m.assignmentEpochs = map[metadata.TopicPartition]int32{}
			}
		}
		return true
	}
	if len(value) < consumerGroupRecordValueHeaderSize {
		return true
	}
	valueVersion := binary.BigEndian.Uint16(value)
	if valueVersion != consumerGroupRecordValueVersion && (version != currentMemberAssignmentKeyVersion || valueVersion != currentAssignmentValueVersion) {
		return true
	}
	r := &recordReader{b: value[consumerGroupRecordValueHeaderSize:]}
	names := c.topicNamesByID()
	switch version {
	case consumerGroupMetadataKeyVersion:
		if e := int32(r.u32()); !r.bad {
			cg.epoch = e
		}
	case partitionMetadataKeyVersion:
		topics := map[string]int32{}
		n := int(r.u32())
		for i := 0; i < n && !r.bad; i++ {
			r.uuid()
			name := r.str(false)
			topics[name] = int32(r.u32())
		}
		if !r.bad {
			cg.topics = topics
		}
	case memberMetadataKeyVersion:
		var n consumerMember
		n.instanceID, n.rackID = r.str(true), r.str(true)
		n.clientID, n.clientHost = r.str(false), r.str(false)
		k := int(r.u32())
		for i := 0; i < k && !r.bad; i++ {
			n.subscribedTopics = append(n.subscribedTopics, r.str(false))
		}
		n.subscribedRegex = r.str(true)
		n.rebalanceTimeout = time.Duration(r.u32()) * time.Millisecond
		n.serverAssignor = r.str(true)
		if r.bad {
			return true
		}
		m := member()
		m.instanceID, m.rackID, m.clientID, m.clientHost = n.instanceID, n.rackID, n.clientID, n.clientHost
		m.subscribedTopics = n.subscribedTopics
		m.setRegex(n.subscribedRegex)
		m.rebalanceTimeout, m.serverAssignor = n.rebalanceTimeout, n.serverAssignor
		if m.instanceID != "" {
			cg.staticMembers[m.instanceID] = mid
		}
	case targetMetadataKeyVersion:
		if e := int32(r.u32()); !r.bad {
			cg.assignmentEpoch = e
		}
	case targetMemberKeyVersion:
		if s := r.partitions(names); !r.bad {
			cg.target[mid] = s
		}
	case currentMemberAssignmentKeyVersion:
		epoch, prev := int32(r.u32()), int32(r.u32())
		if len(r.b) < 1 {
			return true
		}
		state := memberState(r.b[0])
		r.b = r.b[1:]
		var epochs map[metadata.TopicPartition]int32
		if valueVersion >= currentAssignmentValueVersion {
			epochs = map[metadata.TopicPartition]int32{}
		}
		assigned, pending := r.partitionsWithEpochs(names, epochs), r.partitionsWithEpochs(names, epochs)
		if r.bad {
			return true
		}
		if epochs == nil { // an old record: Kafka counts its partitions as given at the member's epoch
			epochs = map[metadata.TopicPartition]int32{}
			for _, s := range []partitionSet{assigned, pending} {
				for tp := range s {
					epochs[tp] = max(epoch, 0)
				}
			}
		}
		m := member()
		m.epoch, m.previousEpoch, m.state, m.assigned, m.pendingRevocation = epoch, prev, state, assigned, pending
		m.assignmentEpochs = epochs
	}
	return true
}

// rebuildOwners recomputes a loaded consumer group's owners index from
// its members' assignments.
func (cg *consumerGroup) rebuildOwners() {
	cg.owners = map[metadata.TopicPartition]string{}
	for _, m := range cg.sortedMembers() {
		for _, s := range []partitionSet{m.assigned, m.pendingRevocation} {
			for tp := range s {
				cg.owners[tp] = m.id
			}
		}
	}
}

// consumerGroupTombstoneKeys are the keys whose tombstones delete an
// empty consumer group, in Kafka's order
// (ConsumerGroup.createGroupTombstoneRecords).
func consumerGroupTombstoneKeys(id string) [][]byte {
	return [][]byte{encodeTargetMetadataKey(id), encodePartitionMetadataKey(id), encodeConsumerGroupKey(id)}
}
