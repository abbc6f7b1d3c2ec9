package record

import (
	"encoding/binary"
	"hash/crc32"
)

// Layout of the batch header: field offsets in bytes.
const (
	offsetBaseOffset      = 0
	offsetLength          = 8
	offsetLeaderEpoch     = 12
	offsetMagic           = 16
	offsetCRC             = 17
	offsetAttributes      = 21
	offsetLastOffsetDelta = 23
	offsetFirstTimestamp  = 27
	offsetMaxTimestamp    = 35
	offsetProducerID      = 43
	offsetProducerEpoch   = 51
	offsetBaseSequence    = 53
	offsetRecordCount     = 57
	offsetRecords         = 61
)

const (
	// BatchHeaderSize is the size of a batch with no records.
	BatchHeaderSize = offsetRecords
	// LogOverhead is the part of a batch its length field does not count:
	// the base offset and the length field itself.
	LogOverhead = offsetLeaderEpoch
	// Magic is the only message format version this package speaks.
	Magic int8 = 2
	// NoProducerID, NoProducerEpoch and NoSequence mark a batch written
	// without idempotence.
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
	NoSequence      int32 = -1
	// NoPartitionLeaderEpoch is what producers put in the leader epoch field.
	NoPartitionLeaderEpoch int32 = -1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Attributes is the batch's attribute bits.
type Attributes int16

// Attribute bits, as Kafka numbers them.
const (
	AttrCompressionMask Attributes = 0x07
	AttrLogAppendTime   Attributes = 0x08
	AttrTransactional   Attributes = 0x10
	AttrControl         Attributes = 0x20
	AttrDeleteHorizon   Attributes = 0x40
)

// Compression returns the codec bits.
func (a Attributes) Compression() Compression { return Compression(a & AttrCompressionMask) }

// Transactional reports the transactional flag.
func (a Attributes) Transactional() bool { return a&AttrTransactional != 0 }

// Control reports the control flag: the batch holds a transaction marker.
func (a Attributes) Control() bool { return a&AttrControl != 0 }

// LogAppendTime reports whether timestamps were set by the broker.
func (a Attributes) LogAppendTime() bool { return a&AttrLogAppendTime != 0 }

// Batch is one encoded record batch. Methods read the header in place; see
// the package doc for when they are valid.
type Batch []byte

// BatchHeader is every header field of a batch, decoded.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           Attributes
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

func (b Batch) i16(off int) int16 { return int16(binary.BigEndian.Uint16(b[off:])) }
func (b Batch) i32(off int) int32 { return int32(binary.BigEndian.Uint32(b[off:])) }
func (b Batch) i64(off int) int64 { return int64(binary.BigEndian.Uint64(b[off:])) }

// BaseOffset is the offset of the first record.
func (b Batch) BaseOffset() int64 { return b.i64(offsetBaseOffset) }

// Length is the batch length field: the bytes after it.
func (b Batch) Length() int32 { return b.i32(offsetLength) }

// Size is the whole batch in bytes, LogOverhead included.
func (b Batch) Size() int { return LogOverhead + int(b.Length()) }

// PartitionLeaderEpoch is the epoch of the leader that appended the batch.
func (b Batch) PartitionLeaderEpoch() int32 { return b.i32(offsetLeaderEpoch) }

// Magic is the message format version byte.
func (b Batch) Magic() int8 { return int8(b[offsetMagic]) }

// CRC is the stored checksum.
func (b Batch) CRC() uint32 { return binary.BigEndian.Uint32(b[offsetCRC:]) }

// Attributes are the batch's attribute bits.
func (b Batch) Attributes() Attributes { return Attributes(b.i16(offsetAttributes)) }

// Compression is the codec of the records.
func (b Batch) Compression() Compression { return b.Attributes().Compression() }

// IsTransactional reports the transactional flag.
func (b Batch) IsTransactional() bool { return b.Attributes().Transactional() }

// IsControl reports the control flag.
func (b Batch) IsControl() bool { return b.Attributes().Control() }

// LastOffsetDelta is the offset of the last record relative to the base.
func (b Batch) LastOffsetDelta() int32 { return b.i32(offsetLastOffsetDelta) }

// LastOffset is the offset of the last record.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset after the last record.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// FirstTimestamp is the base of the records' timestamp deltas (ms).
func (b Batch) FirstTimestamp() int64 { return b.i64(offsetFirstTimestamp) }

// MaxTimestamp is the largest record timestamp (ms).
func (b Batch) MaxTimestamp() int64 { return b.i64(offsetMaxTimestamp) }

// ProducerID is the idempotent producer's id, or NoProducerID.
func (b Batch) ProducerID() int64 { return b.i64(offsetProducerID) }

// HasProducerID reports whether the batch was written by an idempotent or
// transactional producer.
func (b Batch) HasProducerID() bool { return b.ProducerID() >= 0 }

// ProducerEpoch is the producer's epoch, or NoProducerEpoch.
func (b Batch) ProducerEpoch() int16 { return b.i16(offsetProducerEpoch) }

// BaseSequence is the sequence number of the first record, or NoSequence.
func (b Batch) BaseSequence() int32 { return b.i32(offsetBaseSequence) }

// LastSequence is the sequence number of the last record, wrapping past
// MaxInt32 to 0 as Kafka's sequences do, or NoSequence.
func (b Batch) LastSequence() int32 {
	if b.BaseSequence() == NoSequence {
		return NoSequence
	}
	return IncrementSequence(b.BaseSequence(), b.LastOffsetDelta())
}

// RecordCount is the number of records the header claims.
func (b Batch) RecordCount() int32 { return b.i32(offsetRecordCount) }

// Header decodes every header field.
func (b Batch) Header() BatchHeader {
	return BatchHeader{
		BaseOffset:           b.BaseOffset(),
		Length:               b.Length(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Magic:                b.Magic(),
		CRC:                  b.CRC(),
		Attributes:           b.Attributes(),
		LastOffsetDelta:      b.LastOffsetDelta(),
		FirstTimestamp:       b.FirstTimestamp(),
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		RecordCount:          b.RecordCount(),
	}
}

// SetBaseOffset rewrites the base offset in place. The CRC does not cover it.
func (b Batch) SetBaseOffset(offset int64) {
	binary.BigEndian.PutUint64(b[offsetBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch rewrites the leader epoch in place. The CRC does
// not cover it.
func (b Batch) SetPartitionLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(b[offsetLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps the batch with the broker's append time in place,
// as Kafka's LogValidator does for a topic with
// message.timestamp.type=LogAppendTime: the timestamp-type attribute set,
// the max timestamp the append time (every record's timestamp reads as it),
// and the CRC recomputed. A batch whose CRC did not match is left as it is,
// so that the log still refuses it.
func (b Batch) SetLogAppendTime(ms int64) {
	if b.VerifyCRC() != nil {
		return
	}
	attrs := b.Attributes() | AttrLogAppendTime
	binary.BigEndian.PutUint16(b[offsetAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(b[offsetMaxTimestamp:], uint64(ms))
	binary.BigEndian.PutUint32(b[offsetCRC:], b.ComputeCRC())
}

// ComputeCRC returns the CRC-32C of attributes through the end.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[offsetAttributes:], castagnoli) }

// VerifyCRC returns ErrChecksum unless the stored CRC matches.
func (b Batch) VerifyCRC() error {
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return errorf(ErrChecksum, "batch at offset %d: stored crc %08x, computed %08x", b.BaseOffset(), want, got)
	}
	return nil
}

// Records is the raw (possibly compressed) records section.
func (b Batch) Records() []byte { return b[offsetRecords:] }

// Clone returns a copy that does not alias b.
func (b Batch) Clone() Batch { return append(Batch(nil), b...) }

// IncrementSequence adds n to a producer sequence number, wrapping past
// MaxInt32 to 0 (Kafka's DefaultRecordBatch.incrementSequence).
func IncrementSequence(seq, n int32) int32 {
	if seq > maxInt32-n {
		return n - (maxInt32 - seq) - 1
	}
	return seq + n
}

// DecrementSequence subtracts n from a producer sequence number, wrapping
// below 0 to MaxInt32.
func DecrementSequence(seq, n int32) int32 {
	if seq < n {
		return maxInt32 - (n - seq) + 1
	}
	return seq - n
}

const maxInt32 = 1<<31 - 1

// Next reads the first batch of a stream of concatenated batches (a Produce
// or Fetch payload, a log segment) and returns it and the rest. It checks
// the framing only — length, magic, offset range — not the CRC or records:
// see Batch.Validate. ErrTruncated means the stream ends inside the batch.
func Next(stream []byte) (batch Batch, rest []byte, err error) {
	if len(stream) < LogOverhead {
		return nil, stream, errorf(ErrTruncated, "%d bytes, need %d for offset and length", len(stream), LogOverhead)
	}
	length := int64(int32(binary.BigEndian.Uint32(stream[offsetLength:])))
	if length < BatchHeaderSize-LogOverhead {
		return nil, stream, errorf(ErrCorrupt, "batch length %d below the header's %d", length, BatchHeaderSize-LogOverhead)
	}
	if len(stream) > offsetMagic {
		if m := int8(stream[offsetMagic]); m != Magic {
			return nil, stream, errorf(ErrMagic, "magic %d", m)
		}
	}
	size := LogOverhead + length
	if int64(len(stream)) < size {
		return nil, stream, errorf(ErrTruncated, "batch of %d bytes, %d present", size, len(stream))
	}
	b := Batch(stream[:size:size])
	if d := b.LastOffsetDelta(); d < 0 {
		return nil, stream, errorf(ErrCorrupt, "negative last offset delta %d", d)
	}
	if n := b.RecordCount(); n < 0 {
		return nil, stream, errorf(ErrCorrupt, "negative record count %d", n)
	}
	return b, stream[size:], nil
}

// Parse returns buf as a single batch: Next must consume it whole.
func Parse(buf []byte) (Batch, error) {
	b, rest, err := Next(buf)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, errorf(ErrCorrupt, "%d bytes after the batch", len(rest))
	}
	return b, nil
}

// Split cuts a stream of concatenated batches into batches. On error it
// returns the whole batches before the bad one along with the error; a
// caller that accepts a partial trailing batch (a fetch response cut at its
// byte limit) checks errors.Is(err, ErrTruncated).
func Split(stream []byte) ([]Batch, error) {
	var batches []Batch
	for len(stream) > 0 {
		b, rest, err := Next(stream)
		if err != nil {
			return batches, err
		}
		batches = append(batches, b)
		stream = rest
	}
	return batches, nil
}
