package broker

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
)

// The records of the internal topics, in Kafka's formats: in
// __consumer_offsets, offset commits (OffsetKey version 1, OffsetValue
// version 3) and group metadata (GroupMetadataKey version 2,
// GroupMetadataValue version 3); in __transaction_state, transaction
// metadata (TransactionLogKey, TransactionLogValue). The coordinators
// write and replay them; nothing else reads them.

func encodeOffsetKey(group string, tp metadata.TopicPartition) []byte {
	b := binary.BigEndian.AppendUint16(nil, 1)
	b = appendString(b, group)
	b = appendString(b, tp.Topic)
	return binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
}

func decodeOffsetKey(b []byte) (string, metadata.TopicPartition, bool) {
	if len(b) < 2 || binary.BigEndian.Uint16(b) > 1 {
		return "", metadata.TopicPartition{}, false
	}
	g, b, ok1 := readString(b[2:])
	t, b, ok2 := readString(b)
	if !ok1 || !ok2 || len(b) != 4 {
		return "", metadata.TopicPartition{}, false
	}
	return g, metadata.TopicPartition{Topic: t, Partition: int32(binary.BigEndian.Uint32(b))}, true
}

func encodeOffsetValue(o committedOffset, now env.Time) []byte {
	b := binary.BigEndian.AppendUint16(nil, 3)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
	b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
	b = appendString(b, o.Metadata)
	return binary.BigEndian.AppendUint64(b, uint64(now.UnixMilli()))
}

func decodeOffsetValue(b []byte) (committedOffset, bool) {
	if len(b) < 14 || binary.BigEndian.Uint16(b) != 3 {
		return committedOffset{}, false
	}
	o := committedOffset{Offset: int64(binary.BigEndian.Uint64(b[2:])), LeaderEpoch: int32(binary.BigEndian.Uint32(b[10:]))}
	m, rest, ok := readString(b[14:])
	if !ok || len(rest) != 8 {
		return committedOffset{}, false
	}
	o.Metadata = m
	return o, true
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func readString(b []byte) (string, []byte, bool) {
	if len(b) < 2 {
		return "", b, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > len(b)-2 {
		return "", b, false
	}
	return string(b[2 : 2+n]), b[2+n:], true
}

func encodeGroupKey(id string) []byte {
	return appendString(binary.BigEndian.AppendUint16(nil, 2), id)
}

func decodeGroupKey(b []byte) (string, bool) {
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 2 {
		return "", false
	}
	id, rest, ok := readString(b[2:])
	return id, ok && len(rest) == 0
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return binary.BigEndian.AppendUint16(b, 0xffff)
	}
	return appendString(b, s)
}

func readNullableString(b []byte) (string, []byte, bool) {
	if len(b) >= 2 && binary.BigEndian.Uint16(b) == 0xffff {
		return "", b[2:], true
	}
	return readString(b)
}

func appendBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func readBytes(b []byte) ([]byte, []byte, bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	n := int(int32(binary.BigEndian.Uint32(b)))
	if n < 0 {
		return nil, b[4:], true
	}
	if n > len(b)-4 {
		return nil, b, false
	}
	return slices.Clone(b[4 : 4+n]), b[4+n:], true
}

func encodeGroupValue(g *group, now env.Time) []byte {
	be := binary.BigEndian
	b := be.AppendUint16(nil, 3)
	b = appendString(b, g.protocolType)
	b = be.AppendUint32(b, uint32(g.generation))
	b = appendNullableString(b, g.protocol)
	b = appendNullableString(b, g.leader)
	b = be.AppendUint64(b, uint64(now.UnixMilli()))
	ms := g.sortedMembers()
	b = be.AppendUint32(b, uint32(len(ms)))
	for _, m := range ms {
		b = appendString(b, m.id)
		b = appendNullableString(b, m.instanceID) // group.instance.id, null for a dynamic member
		b = appendString(b, m.clientID)
		b = appendString(b, m.clientHost)
		b = be.AppendUint32(b, uint32(m.rebalanceTimeout.Milliseconds()))
		b = be.AppendUint32(b, uint32(m.sessionTimeout.Milliseconds()))
		b = appendBytes(b, m.metadata(g.protocol))
		b = appendBytes(b, m.assignment)
	}
	return b
}

func encodeTxnKey(id string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	return appendString(b, id)
}

func decodeTxnKey(b []byte) (string, bool) {
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 0 {
		return "", false
	}
	id, rest, ok := readString(b[2:])
	return id, ok && len(rest) == 0
}

const txnValueVersion = 1

func encodeTxnValue(r txnRecord) []byte {
	be := binary.BigEndian
	b := be.AppendUint16(nil, txnValueVersion)
	b = be.AppendUint64(b, uint64(r.ProducerID))
	b = be.AppendUint16(b, uint16(r.ProducerEpoch))
	b = be.AppendUint16(b, uint16(r.EndedEpoch))
	b = be.AppendUint16(b, uint16(r.LastEpoch))
	b = be.AppendUint64(b, uint64(r.NextProducerID))
	b = be.AppendUint32(b, uint32(r.Timeout.Milliseconds()))
	b = append(b, byte(r.State))
	b = be.AppendUint32(b, uint32(len(r.Partitions)))
	for _, tp := range r.Partitions {
		b = appendString(b, tp.Topic)
		b = be.AppendUint32(b, uint32(tp.Partition))
	}
	b = be.AppendUint64(b, uint64(r.Started))
	return be.AppendUint64(b, uint64(r.Updated))
}

func decodeTxnValue(b []byte) (txnRecord, bool) {
	be := binary.BigEndian
	var r txnRecord
	const fixed = 2 + 8 + 2 + 2 + 2 + 8 + 4 + 1 + 4
	if len(b) < fixed || be.Uint16(b) != txnValueVersion {
		return r, false
	}
	r.ProducerID = int64(be.Uint64(b[2:]))
	r.ProducerEpoch = int16(be.Uint16(b[10:]))
	r.EndedEpoch = int16(be.Uint16(b[12:]))
	r.LastEpoch = int16(be.Uint16(b[14:]))
	r.NextProducerID = int64(be.Uint64(b[16:]))
	r.Timeout = time.Duration(be.Uint32(b[24:])) * time.Millisecond
	r.State = txnState(b[28])
	n := int(be.Uint32(b[29:]))
	b = b[fixed:]
	if n > len(b)/6 {
		return r, false
	}
	for range n {
		topic, rest, ok := readString(b)
		if !ok || len(rest) < 4 {
			return r, false
		}
		r.Partitions = append(r.Partitions, metadata.TopicPartition{Topic: topic, Partition: int32(be.Uint32(rest))})
		b = rest[4:]
	}
	if len(b) != 16 || r.State < txnEmpty || r.State > txnCompleteAbort {
		return r, false
	}
	r.Started = env.Time(be.Uint64(b))
	r.Updated = env.Time(be.Uint64(b[8:]))
	return r, true
}
