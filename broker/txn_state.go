package broker

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
)

// txnState is a transaction's state at its coordinator, Kafka's
// TransactionState. The numbers are Kafka's, as __transaction_state holds
// them.
type txnState int8

const (
	txnNone           txnState = -1 // no transition pending
	txnEmpty          txnState = 0
	txnOngoing        txnState = 1
	txnPrepareCommit  txnState = 2
	txnPrepareAbort   txnState = 3
	txnCompleteCommit txnState = 4
	txnCompleteAbort  txnState = 5
)

func (s txnState) String() string {
	switch s {
	case txnNone:
		return "None"
	case txnEmpty:
		return "Empty"
	case txnOngoing:
		return "Ongoing"
	case txnPrepareCommit:
		return "PrepareCommit"
	case txnPrepareAbort:
		return "PrepareAbort"
	case txnCompleteCommit:
		return "CompleteCommit"
	case txnCompleteAbort:
		return "CompleteAbort"
	}
	return fmt.Sprintf("TxnState(%d)", int8(s))
}

// prepared reports a decided transaction whose markers are being written.
func (s txnState) prepared() bool { return s == txnPrepareCommit || s == txnPrepareAbort }

// completed reports a state in which no transaction is open.
func (s txnState) completed() bool {
	return s == txnEmpty || s == txnCompleteCommit || s == txnCompleteAbort
}

// validTxnTransition is Kafka's table of legal transitions
// (TransactionState.validPreviousStates). A transition to the same state
// is legal where Kafka allows it (Empty → Empty on InitProducerId, Ongoing
// → Ongoing on AddPartitionsToTxn). PrepareAbort may also follow a
// completed state: KIP-890 part 2 lets a producer abort an empty
// transaction, which bumps its epoch.
func validTxnTransition(from, to txnState) bool {
	switch to {
	case txnEmpty:
		return from.completed()
	case txnOngoing:
		return from == txnOngoing || from.completed()
	case txnPrepareCommit:
		return from == txnOngoing
	case txnPrepareAbort:
		return from == txnOngoing || from.completed()
	case txnCompleteCommit:
		return from == txnPrepareCommit
	case txnCompleteAbort:
		return from == txnPrepareAbort
	}
	return false
}

// txnRecord is what __transaction_state keeps of one transactional id: the
// value of its latest record.
type txnRecord struct {
	ProducerID    int64
	ProducerEpoch int16
	// EndedEpoch is the epoch of the transaction the last bumping EndTxn
	// ended (KIP-890 part 2), so that a retry of that EndTxn is answered
	// rather than fenced; -1 when the last end did not bump.
	EndedEpoch int16
	// LastEpoch is the epoch before the last bump by InitProducerId or a
	// fence: a producer presenting it to InitProducerId (KIP-360, as
	// KIP-588 recovers from a transaction the coordinator timed out) may
	// bump again; -1 if none.
	LastEpoch int16
	// NextProducerID takes over when a bump exhausts the epoch (the
	// transaction ends with epoch MaxInt16 and the producer continues
	// under a new id at epoch 0); -1 otherwise.
	NextProducerID int64
	Timeout        time.Duration // transaction.timeout.ms the producer asked for
	State          txnState
	Partitions     []metadata.TopicPartition // sorted, no duplicates
	Started        env.Time                  // when the open transaction began
	Updated        env.Time
}

func (r txnRecord) clone() txnRecord {
	r.Partitions = slices.Clone(r.Partitions)
	return r
}

// maxProducerEpoch is the largest epoch; a bump past it takes a new
// producer id (Kafka: Short.MaxValue).
const maxProducerEpoch = math.MaxInt16

// The record formats: the key is Kafka's TransactionLogKey v0 (version,
// transactional id); the value is kafkasim's own (version 1 here, Kafka's
// is 0 or 1 with different fields): every field of txnRecord.

// addPartitions returns the sorted union of ps and more.
func addPartitions(ps, more []metadata.TopicPartition) []metadata.TopicPartition {
	out := slices.Clone(ps)
	for _, tp := range more {
		if !slices.Contains(out, tp) {
			out = append(out, tp)
		}
	}
	slices.SortFunc(out, func(a, b metadata.TopicPartition) int { return a.Compare(b) })
	return out
}
