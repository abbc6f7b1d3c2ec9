package log

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/record"
)

// TimestampOffset is a record found by timestamp (Kafka's
// TimestampAndOffset): its timestamp, offset and its batch's leader epoch
// (-1 when the batch has none).
type TimestampOffset struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// OffsetForTimestamp finds the first record whose timestamp is at or after
// ts, as Kafka's UnifiedLog.fetchOffsetByTimestamp does for a target
// timestamp: the first batch whose max timestamp reaches ts, then the first
// record in it that does (with LogAppendTime every record has the batch's).
// Control batches count, as in Kafka. ok is false when no record is that
// late. Kafka narrows the search with each segment's time index; the
// batch index here holds every batch's max timestamp instead, so only the
// batch found is read.
func (l *Log) OffsetForTimestamp(ts int64) (TimestampOffset, bool, error) {
	for _, seg := range l.segments {
		for i := range seg.batches {
			e := &seg.batches[i]
			if e.last < l.logStart || e.maxTimestamp < ts {
				continue
			}
			found, ok, err := l.recordAt(e, func(b record.Batch, recs []record.Record) (int, bool) {
				for j, r := range recs {
					if stamp(b, r) >= ts && b.BaseOffset()+int64(r.OffsetDelta) >= l.logStart {
						return j, true
					}
				}
				return 0, false
			})
			if ok || err != nil {
				return found, ok, err
			}
		}
	}
	return TimestampOffset{}, false, nil
}

// MaxTimestamp finds the record with the largest timestamp (KIP-734), the
// first to reach it, as Kafka's fetchOffsetByTimestamp does for
// MAX_TIMESTAMP; ok is false for an empty log.
func (l *Log) MaxTimestamp() (TimestampOffset, bool, error) {
	var best *batchEntry
	for _, seg := range l.segments {
		for i := range seg.batches {
			if e := &seg.batches[i]; e.last >= l.logStart && (best == nil || e.maxTimestamp > best.maxTimestamp) {
				best = e
			}
		}
	}
	if best == nil {
		return TimestampOffset{}, false, nil
	}
	return l.recordAt(best, func(b record.Batch, recs []record.Record) (int, bool) {
		for j, r := range recs {
			if stamp(b, r) == b.MaxTimestamp() {
				return j, true
			}
		}
		return 0, false
	})
}

// stamp is a record's timestamp: the batch's max with LogAppendTime, else
// the first timestamp plus the record's delta.
func stamp(b record.Batch, r record.Record) int64 {
	if b.Attributes().LogAppendTime() {
		return b.MaxTimestamp()
	}
	return b.FirstTimestamp() + r.TimestampDelta
}

// recordAt reads the batch e indexes and returns the record pick chooses.
func (l *Log) recordAt(e *batchEntry, pick func(record.Batch, []record.Record) (int, bool)) (TimestampOffset, bool, error) {
	raw, err := l.Read(max(e.base, l.logStart), 1, e.last+1)
	if err != nil {
		return TimestampOffset{}, false, err
	}
	batches, err := record.Split(raw)
	if err != nil || len(batches) == 0 {
		return TimestampOffset{}, false, fmt.Errorf("log %s: batch at %d does not read back: %v", l.name, e.base, err)
	}
	b := batches[0]
	recs, err := b.DecodeRecords()
	if err != nil {
		return TimestampOffset{}, false, fmt.Errorf("log %s: batch at %d: %w", l.name, e.base, err)
	}
	j, ok := pick(b, recs)
	if !ok {
		return TimestampOffset{}, false, nil
	}
	epoch := b.PartitionLeaderEpoch()
	if epoch < 0 {
		epoch = -1
	}
	return TimestampOffset{Timestamp: stamp(b, recs[j]), Offset: b.BaseOffset() + int64(recs[j].OffsetDelta), LeaderEpoch: epoch}, true, nil
}

// EarliestEpoch is the epoch of the log start offset if the epoch cache
// covers it (Kafka's answer to ListOffsets EARLIEST), else -1.
func (l *Log) EarliestEpoch() int32 {
	if len(l.epochs.entries) > 0 && l.epochs.entries[0].StartOffset <= l.logStart {
		return l.epochs.entries[0].Epoch
	}
	return -1
}

// EpochStart is where the latest epoch began, or -1 with no epoch.
func (l *Log) EpochStart() int64 {
	if e, ok := l.epochs.latest(); ok {
		return e.StartOffset
	}
	return -1
}
