package broker

import (
	"encoding/binary"
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
