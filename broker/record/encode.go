package record

import (
	"math"
)

// Encode builds a batch from a header and records. Records get offset
// deltas 0, 1, 2, ... whatever their OffsetDelta says. From h it takes
// BaseOffset, PartitionLeaderEpoch, Attributes (codec and flags),
// FirstTimestamp, ProducerID, ProducerEpoch and BaseSequence; it computes
// Length, Magic, CRC, LastOffsetDelta and RecordCount, and MaxTimestamp as
// FirstTimestamp plus the largest TimestampDelta (unless the batch carries
// AttrLogAppendTime, where h.MaxTimestamp is kept as the broker set it).
// It fails only for a codec this package cannot write or a batch past 2 GiB.
func Encode(h BatchHeader, records []Record) (Batch, error) {
	body := make([]byte, 0, 16*len(records))
	maxDelta := int64(math.MinInt64)
	for i := range records {
		body = appendRecord(body, &records[i], int32(i))
		maxDelta = max(maxDelta, records[i].TimestampDelta)
	}
	if c := h.Attributes.Compression(); c != CompressionNone {
		var err error
		if body, err = compress(c, body); err != nil {
			return nil, err
		}
	}
	size := BatchHeaderSize + len(body)
	if size > math.MaxInt32 {
		return nil, errorf(ErrInvalid, "batch of %d bytes", size)
	}
	maxTimestamp := h.FirstTimestamp
	if h.Attributes.LogAppendTime() {
		maxTimestamp = h.MaxTimestamp
	} else if len(records) > 0 {
		maxTimestamp = h.FirstTimestamp + maxDelta
	}
	h.LastOffsetDelta = int32(max(len(records)-1, 0))
	h.MaxTimestamp = maxTimestamp
	return writeBatch(h, int32(len(records)), body), nil
}

// NewHeader returns a header for a batch from a producer without
// idempotence: no producer id, epoch or sequence, no leader epoch.
func NewHeader() BatchHeader {
	return BatchHeader{
		PartitionLeaderEpoch: NoPartitionLeaderEpoch,
		ProducerID:           NoProducerID,
		ProducerEpoch:        NoProducerEpoch,
		BaseSequence:         NoSequence,
	}
}

// Values builds an uncompressed, non-idempotent batch of records with the
// given values and null keys, all stamped with timestamp (ms). Tests and
// simple producers use it.
func Values(timestamp int64, values ...[]byte) Batch {
	h := NewHeader()
	h.FirstTimestamp = timestamp
	recs := make([]Record, len(values))
	for i, v := range values {
		recs[i].Value = v
	}
	b, err := Encode(h, recs)
	if err != nil {
		panic("record.Values: " + err.Error()) // uncompressed: cannot fail
	}
	return b
}
