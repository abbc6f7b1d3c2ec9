package broker

import (
	"encoding/binary"

	"github.com/kafkasim/kafkasim/broker/metadata"
)

// The records of a share group (KIP-932) in __consumer_offsets, Kafka's
// (group-coordinator/src/main/resources/common/message/ShareGroup*.json)
// by key version, each value at version 0, encoded as
// consumer_group_records.go encodes the KIP-848 ones:
//
//	10 ShareGroupMemberMetadata (group, member) → rack, client id and host, subscribed topic names
//	11 ShareGroupMetadata (group) → group epoch
//	12 ShareGroupTargetAssignmentMetadata (group) → assignment epoch
//	13 ShareGroupTargetAssignmentMember (group, member) → target partitions by topic id
//	14 ShareGroupCurrentMemberAssignment (group, member) → member epoch, previous epoch,
//	   state (always 0, Stable), assigned partitions by topic id
//	15 ShareGroupStatePartitionMetadata (group) → initialized topics (id, name,
//	   partitions); deleting topics (always none here)
//
// A tombstone (null value) deletes what its key names.

const (
	shareMemberMetadataKeyVersion          = 10
	shareGroupMetadataKeyVersion           = 11
	shareTargetMetadataKeyVersion          = 12
	shareTargetMemberKeyVersion            = 13
	shareCurrentMemberAssignmentKeyVersion = 14
	shareStatePartitionMetadataKeyVersion  = 15
)

func encodeShareGroupKey(group string) []byte {
	return encodeConsumerKey(shareGroupMetadataKeyVersion, group)
}
func encodeShareMemberMetadataKey(group, member string) []byte {
	return encodeConsumerKey(shareMemberMetadataKeyVersion, group, member)
}
func encodeShareTargetMetadataKey(group string) []byte {
	return encodeConsumerKey(shareTargetMetadataKeyVersion, group)
}
func encodeShareTargetMemberKey(group, member string) []byte {
	return encodeConsumerKey(shareTargetMemberKeyVersion, group, member)
}
func encodeShareCurrentAssignmentKey(group, member string) []byte {
	return encodeConsumerKey(shareCurrentMemberAssignmentKeyVersion, group, member)
}
func encodeShareStatePartitionMetadataKey(group string) []byte {
	return encodeConsumerKey(shareStatePartitionMetadataKeyVersion, group)
}

// decodeShareKey reads a share group record's key.
func decodeShareKey(b []byte) (version uint16, group, member string, ok bool) {
	return decodeModernGroupKey(b, shareMemberMetadataKeyVersion, shareStatePartitionMetadataKeyVersion, func(v uint16) bool {
		return v == shareMemberMetadataKeyVersion || v == shareTargetMemberKeyVersion || v == shareCurrentMemberAssignmentKeyVersion
	})
}

func encodeShareGroupValue(epoch int32) []byte {
	return binary.BigEndian.AppendUint32(valueHeader(), uint32(epoch))
}

func encodeShareTargetMetadataValue(epoch int32) []byte {
	return binary.BigEndian.AppendUint32(valueHeader(), uint32(epoch))
}

func encodeShareMemberMetadataValue(m *shareMember) []byte {
	be := binary.BigEndian
	b := appendNullableString(valueHeader(), m.rackID)
	b = appendString(b, m.clientID)
	b = appendString(b, m.clientHost)
	b = be.AppendUint32(b, uint32(len(m.subscribedTopics)))
	for _, t := range m.subscribedTopics {
		b = appendString(b, t)
	}
	return b
}

func (c *groupCoordinator) encodeShareTargetMemberValue(s partitionSet) []byte {
	return c.appendTopicPartitions(valueHeader(), s, nil)
}

func (c *groupCoordinator) encodeShareCurrentAssignmentValue(m *shareMember) []byte {
	be := binary.BigEndian
	b := be.AppendUint32(valueHeader(), uint32(m.epoch))
	b = be.AppendUint32(b, uint32(m.previousEpoch))
	b = append(b, byte(memberStable))
	return c.appendTopicPartitions(b, m.assigned, nil)
}

func (c *groupCoordinator) encodeShareStatePartitionMetadataValue(s partitionSet) []byte {
	be := binary.BigEndian
	ts := c.byTopicID(s)
	b := be.AppendUint32(valueHeader(), uint32(len(ts)))
	for _, t := range ts {
		b = append(b, t.id[:]...)
		b = appendString(b, t.name)
		b = be.AppendUint32(b, uint32(len(t.partitions)))
		for _, p := range t.partitions {
			b = be.AppendUint32(b, uint32(p))
		}
	}
	return be.AppendUint32(b, 0) // deleting topics
}

// applyShareGroupRecord folds a share group record, found while loading
// an offsets partition, into the cache; false if key is not one.
func (c *groupCoordinator) applyShareGroupRecord(key, value []byte) bool {
	version, gid, mid, ok := decodeShareKey(key)
	if !ok {
		return false
	}
	g := c.group(gid)
	if value == nil && g.share == nil {
		return true
	}
	if g.share == nil {
		g.share = newShareGroup()
	}
	sg := g.share
	member := func() *shareMember {
		m := sg.members[mid]
		if m == nil {
			m = &shareMember{id: mid, assigned: partitionSet{}}
			sg.members[mid] = m
		}
		return m
	}
	if value == nil {
		switch version {
		case shareGroupMetadataKeyVersion:
			g.share = nil
		case shareMemberMetadataKeyVersion:
			delete(sg.members, mid)
		case shareTargetMetadataKeyVersion:
			sg.assignmentEpoch = 0
		case shareTargetMemberKeyVersion:
			delete(sg.target, mid)
		case shareCurrentMemberAssignmentKeyVersion:
			if m := sg.members[mid]; m != nil {
				m.epoch, m.previousEpoch, m.assigned = 0, 0, partitionSet{}
			}
		case shareStatePartitionMetadataKeyVersion:
			sg.initialized = partitionSet{}
		}
		return true
	}
	if len(value) < consumerGroupRecordValueHeaderSize || binary.BigEndian.Uint16(value) != consumerGroupRecordValueVersion {
		return true
	}
	r := &recordReader{b: value[consumerGroupRecordValueHeaderSize:]}
	names := c.topicNamesByID()
	switch version {
	case shareGroupMetadataKeyVersion:
		if e := int32(r.u32()); !r.bad {
			sg.epoch = e
		}
	case shareMemberMetadataKeyVersion:
		rack, client, host := r.str(true), r.str(false), r.str(false)
		var topics []string
		k := int(r.u32())
		for i := 0; i < k && !r.bad; i++ {
			topics = append(topics, r.str(false))
		}
		if r.bad {
			return true
		}
		m := member()
		m.rackID, m.clientID, m.clientHost, m.subscribedTopics = rack, client, host, topics
	case shareTargetMetadataKeyVersion:
		if e := int32(r.u32()); !r.bad {
			sg.assignmentEpoch = e
		}
	case shareTargetMemberKeyVersion:
		if s := r.partitions(names); !r.bad {
			sg.target[mid] = s
		}
	case shareCurrentMemberAssignmentKeyVersion:
		epoch, prev := int32(r.u32()), int32(r.u32())
		if len(r.b) < 1 {
			return true
		}
		r.b = r.b[1:] // state: always Stable
		assigned := r.partitions(names)
		if r.bad {
			return true
		}
		m := member()
		m.epoch, m.previousEpoch, m.assigned = epoch, prev, assigned
	case shareStatePartitionMetadataKeyVersion:
		s := partitionSet{}
		n := int(r.u32())
		for i := 0; i < n && !r.bad; i++ {
			id := r.uuid()
			r.str(false)
			k := int(r.u32())
			for j := 0; j < k && !r.bad; j++ {
				p := int32(r.u32())
				if name, ok := names[id]; ok {
					s[metadata.TopicPartition{Topic: name, Partition: p}] = true
				}
			}
		}
		if !r.bad {
			sg.initialized = s
		}
	}
	return true
}

// shareGroupTombstoneKeys are the keys whose tombstones delete an empty
// share group (Kafka's ShareGroup.createGroupTombstoneRecords).
func shareGroupTombstoneKeys(id string) [][]byte {
	return [][]byte{encodeShareStatePartitionMetadataKey(id), encodeShareTargetMetadataKey(id), encodeShareGroupKey(id)}
}
