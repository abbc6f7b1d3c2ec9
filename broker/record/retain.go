package record

import (
	"encoding/binary"
	"math"
)

// The log cleaner's rewrites of a batch (Kafka's MemoryRecords.filterTo).

// DeleteHorizon returns the batch's delete horizon (KIP-534): with
// AttrDeleteHorizon set, the first-timestamp field holds the time after
// which the cleaner may remove the batch's tombstones, or the batch itself
// if it is a transaction marker whose transaction left no records.
func (b Batch) DeleteHorizon() (int64, bool) {
	if b.Attributes()&AttrDeleteHorizon == 0 {
		return 0, false
	}
	return b.FirstTimestamp(), true
}

// Retain rebuilds b holding only keep, records decoded from b in order, as
// Kafka's cleaner does (MemoryRecords.buildRetainedRecordsInto): the same
// base offset and last offset delta (so the producer's last sequence
// survives), producer id, epoch and base sequence, leader epoch, codec and
// flags; each record keeps its offset delta and its absolute timestamp.
// deleteHorizon ≥ 0 sets AttrDeleteHorizon with that horizon in the
// first-timestamp field; a batch that had one keeps it; otherwise the
// first timestamp is the first kept record's.
func Retain(b Batch, keep []Record, deleteHorizon int64) (Batch, error) {
	first := b.FirstTimestamp()
	h := b.Header()
	base := int64(0)
	switch {
	case deleteHorizon >= 0:
		base = deleteHorizon
		h.Attributes |= AttrDeleteHorizon
	case h.Attributes&AttrDeleteHorizon != 0:
		base = first
	case len(keep) > 0:
		base = first + keep[0].TimestampDelta
	default:
		base = first
	}
	recs := make([]Record, len(keep))
	maxTS := int64(math.MinInt64)
	for i, r := range keep {
		abs := first + r.TimestampDelta
		maxTS = max(maxTS, abs)
		r.TimestampDelta = abs - base
		recs[i] = r
	}
	body := make([]byte, 0, 16*len(recs))
	for i := range recs {
		body = appendRecord(body, &recs[i], recs[i].OffsetDelta)
	}
	if c := h.Attributes.Compression(); c != CompressionNone {
		var err error
		if body, err = compress(c, body); err != nil {
			return nil, err
		}
	}
	if !h.Attributes.LogAppendTime() {
		h.MaxTimestamp = maxTS
		if len(recs) == 0 {
			h.MaxTimestamp = base
		}
	}
	h.FirstTimestamp = base
	return writeBatch(h, int32(len(recs)), body), nil
}

// EmptyBatch is b's header without records, as Kafka's cleaner keeps the
// last batch of a producer (its sequence and epoch) or of a cleaning round
// (BatchRetention.RETAIN_EMPTY, DefaultRecordBatch.writeEmptyHeader): base
// and last offset, producer fields, leader epoch and flags kept, both
// timestamps the batch's max timestamp, no codec.
func EmptyBatch(b Batch) Batch {
	h := b.Header()
	h.Attributes &^= AttrCompressionMask | AttrDeleteHorizon
	h.FirstTimestamp = h.MaxTimestamp
	return writeBatch(h, 0, nil)
}

// writeBatch lays out a batch from h (base offset, leader epoch,
// attributes, last offset delta, timestamps, producer fields), a record
// count and an encoded (compressed) records section, and computes length
// and CRC.
func writeBatch(h BatchHeader, count int32, body []byte) Batch {
	size := BatchHeaderSize + len(body)
	b := make(Batch, BatchHeaderSize, size)
	be := binary.BigEndian
	be.PutUint64(b[offsetBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offsetLength:], uint32(size-LogOverhead))
	be.PutUint32(b[offsetLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offsetMagic] = byte(Magic)
	be.PutUint16(b[offsetAttributes:], uint16(h.Attributes))
	be.PutUint32(b[offsetLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offsetFirstTimestamp:], uint64(h.FirstTimestamp))
	be.PutUint64(b[offsetMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[offsetProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offsetProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offsetBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offsetRecordCount:], uint32(count))
	b = append(b, body...)
	be.PutUint32(b[offsetCRC:], b.ComputeCRC())
	return b
}
