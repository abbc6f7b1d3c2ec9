package log

import (
	"fmt"
	"slices"
	"sort"

	"github.com/kafkasim/kafkasim/broker/record"
)

// batchesRetained is how many recent batches per producer the log keeps for
// duplicate detection: Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// matching the producer's max.in.flight.requests.per.connection limit of 5.
const batchesRetained = 5

// batchMeta is what duplicate detection remembers of one batch.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// producerEntry is Kafka's ProducerStateEntry for one producer id.
type producerEntry struct {
	epoch            int16
	batches          []batchMeta // oldest first, at most batchesRetained
	coordinatorEpoch int32
	txnFirstOffset   int64 // first offset of the open transaction, or -1
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return record.NoSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// maybeUpdateEpoch adopts a new epoch, forgetting the old epoch's batches.
func (e *producerEntry) maybeUpdateEpoch(epoch int16) {
	if e.epoch != epoch {
		e.batches = e.batches[:0]
		e.epoch = epoch
	}
}

func (e *producerEntry) addBatch(m batchMeta) {
	if len(e.batches) == batchesRetained {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:batchesRetained-1]
	}
	e.batches = append(e.batches, m)
}

func (e *producerEntry) findDuplicate(firstSeq, lastSeq int32) (batchMeta, bool) {
	for _, m := range e.batches {
		if m.firstSeq == firstSeq && m.lastSeq == lastSeq {
			return m, true
		}
	}
	return batchMeta{}, false
}

// ongoingTxn is an open transaction: a producer with transactional data in
// the log and no marker yet.
type ongoingTxn struct {
	producerID  int64
	firstOffset int64
}

// AbortedTxn is an entry of the aborted-transaction index: the producer's
// transaction spanning FirstOffset to LastOffset (the abort marker) was
// aborted. LastStableOffset is the partition's last stable offset right
// after the abort (Kafka keeps it in the .txnindex too).
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// producerState is Kafka's ProducerStateManager plus the aborted index.
type producerState struct {
	producers map[int64]*producerEntry
	ongoing   []ongoingTxn // in order of first offset
	aborted   []AbortedTxn // in order of last offset (the marker)
}

func newProducerState() producerState {
	return producerState{producers: map[int64]*producerEntry{}}
}

// clone is a copy of s that shares nothing with it.
func (s *producerState) clone() producerState {
	c := producerState{producers: make(map[int64]*producerEntry, len(s.producers)), ongoing: slices.Clone(s.ongoing), aborted: slices.Clone(s.aborted)}
	for id, p := range s.producers {
		q := *p
		q.batches = slices.Clone(p.batches)
		c.producers[id] = &q
	}
	return c
}

// firstUnstableOffset is the first offset of the earliest open transaction.
func (s *producerState) firstUnstableOffset() (int64, bool) {
	if len(s.ongoing) == 0 {
		return 0, false
	}
	return s.ongoing[0].firstOffset, true
}

// originLeader selects the checks of a leader append from a client.
type validation struct {
	kip360 bool
	// The planted defects (package defect) of this check.
	gapsAccepted, retriesAppended bool
}

// validate is ProducerAppendInfo's check of a client's data batch on the
// leader. A duplicate of one of the last batchesRetained batches of the same
// epoch returns that batch's metadata and dup true.
func (s *producerState) validate(b record.Batch, v validation) (dup batchMeta, isDup bool, err error) {
	pid, epoch := b.ProducerID(), b.ProducerEpoch()
	firstSeq, lastSeq := b.BaseSequence(), b.LastSequence()
	e := s.producers[pid]
	if e != nil && e.epoch == epoch && !v.retriesAppended {
		if m, ok := e.findDuplicate(firstSeq, lastSeq); ok {
			return m, true, nil
		}
	}
	currentEpoch := record.NoProducerEpoch
	if e != nil {
		currentEpoch = e.epoch
	}
	if e != nil && epoch < e.epoch {
		return batchMeta{}, false, fmt.Errorf("producer %d epoch %d is older than %d: %w", pid, epoch, e.epoch, ErrInvalidProducerEpoch)
	}
	if epoch != currentEpoch {
		if firstSeq != 0 {
			if currentEpoch != record.NoProducerEpoch {
				return batchMeta{}, false, fmt.Errorf("producer %d new epoch %d must start at sequence 0, not %d: %w", pid, epoch, firstSeq, ErrOutOfOrderSequence)
			}
			if !v.kip360 {
				return batchMeta{}, false, fmt.Errorf("no state for producer %d writing at sequence %d: %w", pid, firstSeq, ErrUnknownProducerID)
			}
		}
	} else if last := e.lastSeq(); !inSequence(last, firstSeq) &&
		!(v.gapsAccepted && firstSeq > last) && !(v.retriesAppended && firstSeq <= last) {
		return batchMeta{}, false, fmt.Errorf("producer %d epoch %d: sequence %d after %d: %w", pid, epoch, firstSeq, last, ErrOutOfOrderSequence)
	}
	if e != nil && e.txnFirstOffset >= 0 && !b.IsTransactional() {
		return batchMeta{}, false, fmt.Errorf("producer %d has a transaction open at offset %d and sent a non-transactional batch: %w", pid, e.txnFirstOffset, ErrInvalidTxnState)
	}
	return batchMeta{}, false, nil
}

// validateMarker is the check of a coordinator's marker on the leader.
func (s *producerState) validateMarker(pid int64, epoch int16, m record.EndTxnMarker) error {
	e := s.producers[pid]
	if e == nil {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("marker for producer %d epoch %d is older than %d: %w", pid, epoch, e.epoch, ErrInvalidProducerEpoch)
	}
	if m.CoordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("marker for producer %d from coordinator epoch %d, last was %d: %w", pid, m.CoordinatorEpoch, e.coordinatorEpoch, ErrTransactionCoordinatorFenced)
	}
	return nil
}

// inSequence is Kafka's rule: next follows last, wrapping at MaxInt32; a
// producer without batches in its epoch starts at 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == 1<<31-1)
}

// apply updates the state with a batch that is now in the log, without
// checks (they were made on the leader; a follower or recovery replays).
// For a marker closing a non-empty transaction it returns the transaction
// and whether it was aborted.
func (s *producerState) apply(e *batchEntry) (closed ongoingTxn, aborted bool, ok bool) {
	if e.producerID < 0 {
		return ongoingTxn{}, false, false
	}
	p := s.producers[e.producerID]
	if p == nil {
		p = &producerEntry{epoch: record.NoProducerEpoch, coordinatorEpoch: -1, txnFirstOffset: -1}
		s.producers[e.producerID] = p
	}
	if e.control() {
		p.maybeUpdateEpoch(e.producerEpoch)
		p.coordinatorEpoch = e.coordinatorEpoch
		if p.txnFirstOffset < 0 {
			return ongoingTxn{}, false, false
		}
		closed = ongoingTxn{producerID: e.producerID, firstOffset: p.txnFirstOffset}
		p.txnFirstOffset = -1
		for i, t := range s.ongoing {
			if t.producerID == e.producerID {
				s.ongoing = append(s.ongoing[:i], s.ongoing[i+1:]...)
				break
			}
		}
		return closed, !e.commit(), true
	}
	p.maybeUpdateEpoch(e.producerEpoch)
	p.addBatch(batchMeta{firstSeq: e.baseSequence, lastSeq: e.lastSequence, firstOffset: e.base, lastOffset: e.last})
	if e.transactional() && p.txnFirstOffset < 0 {
		p.txnFirstOffset = e.base
		s.ongoing = append(s.ongoing, ongoingTxn{producerID: e.producerID, firstOffset: e.base})
	}
	return ongoingTxn{}, false, false
}

// ProducerSnapshot is what the log knows of one producer id.
type ProducerSnapshot struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // record.NoSequence if no batch in this epoch
	CoordinatorEpoch int32 // -1 before any marker
	// TxnFirstOffset is the first offset of the producer's open
	// transaction in this partition, or -1.
	TxnFirstOffset int64
}

func (s *producerState) snapshot(pid int64) (ProducerSnapshot, bool) {
	p := s.producers[pid]
	if p == nil {
		return ProducerSnapshot{}, false
	}
	return ProducerSnapshot{
		ProducerID:       pid,
		ProducerEpoch:    p.epoch,
		LastSequence:     p.lastSeq(),
		CoordinatorEpoch: p.coordinatorEpoch,
		TxnFirstOffset:   p.txnFirstOffset,
	}, true
}

func (s *producerState) ids() []int64 {
	ids := make([]int64, 0, len(s.producers))
	for id := range s.producers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
