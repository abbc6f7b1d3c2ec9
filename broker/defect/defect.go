// Package defect is the checkers' self-test: a catalogue of realistic
// broker bugs — the kind Kafka's JIRA is full of — each of which can be
// planted in every broker and the controller of a run (config.Cluster
// Defects) to see whether the matrix's scenarios catch it (`kafkasim
// selftest`). A checker that lets a planted bug through is the checker's
// bug.
//
// A defect is one deliberate deviation at one place in the code, named
// here and tested where it is planted (`cfg.Defects.Has(defect.X)`). No
// scenario sets one; only the self-test does.
//
// Left out because the matrix's three-replica clusters never reach them:
// KAFKA-7128's follower let into the ISR short of the leader's epoch start
// (a new leader's high watermark lags only while another ISR member does,
// and the replica that rejoins then is the old leader, which truncates to
// the epoch start by itself), and KIP-279's follower truncating to the
// leader's end of an epoch it does not share (it needs a leader deposed
// between appending in its epoch and any follower fetching it).
package defect

import (
	"fmt"
	"strings"
)

// Defect is one planted bug.
type Defect uint8

// The catalogue. Each comment says what the bug does and which Kafka
// mechanism (KIP, JIRA) it breaks.
const (
	_ Defect = iota
	// HighWatermarkIgnoresFollowers: the leader moves its high watermark
	// to its own log end on append, so acks=all answers before any
	// follower has the records (Partition.maybeIncrementLeaderHW).
	HighWatermarkIgnoresFollowers
	// HighWatermarkIgnoresPendingISR: the high watermark waits for the
	// committed ISR only, not for a member a pending AlterPartition adds
	// (KIP-497's "maximal ISR").
	HighWatermarkIgnoresPendingISR
	// ISRExpansionIgnoresHighWatermark: a follower joins the ISR once it
	// reaches the start of the leader's epoch, short of the high watermark
	// (Partition.isFollowerInSync compares its log end with the HW). Not
	// KAFKA-7128's own case (in the ISR short of the epoch start): with
	// three replicas a new leader's high watermark lags only while another
	// ISR member does, and the replica rejoining then is the old leader,
	// which truncates to the epoch start itself.
	ISRExpansionIgnoresHighWatermark
	// FollowerTruncatesToHighWatermark: a new follower cuts its log to its
	// high watermark whatever the leader's epochs say (the pre-KIP-101
	// rule, back as a regression).
	FollowerTruncatesToHighWatermark
	// FetchServesPastHighWatermark: consumers are served up to the log
	// end, not the high watermark: they read what a failover may
	// truncate.
	FetchServesPastHighWatermark
	// SequenceGapAccepted: the leader accepts an idempotent batch whose
	// first sequence skips past the next expected one instead of refusing
	// it with OUT_OF_ORDER_SEQUENCE_NUMBER (ProducerAppendInfo.checkSequence).
	SequenceGapAccepted
	// RetriedBatchAppendedAgain: the duplicate check misses a retried
	// batch (the last five per producer, KIP-98) and appends it again.
	RetriedBatchAppendedAgain
	// LastStableOffsetIgnoresOpenTransactions: the LSO is the high
	// watermark even with a transaction open below it (KIP-98).
	LastStableOffsetIgnoresOpenTransactions
	// AbortedTransactionsNotListed: read_committed fetch responses omit
	// the aborted transactions they cover, so consumers keep aborted
	// records (KIP-98's AbortedTransactions).
	AbortedTransactionsNotListed
	// TxnStateAdoptedBeforeReplication: the transaction coordinator acts
	// on a state record (sends a Prepare*'s markers) once appended, before
	// __transaction_state commits it.
	TxnStateAdoptedBeforeReplication
	// TxnOffsetsCommittedOnAbort: an abort marker on __consumer_offsets
	// makes the transaction's pending offsets committed, as a commit
	// marker would (KIP-447).
	TxnOffsetsCommittedOnAbort
	// OffsetCommitAckedBeforeReplication: the group coordinator answers
	// offset commits (plain and transactional) once appended, before
	// __consumer_offsets commits them (offsets.commit.required.acks -1).
	OffsetCommitAckedBeforeReplication
	// OffsetFetchIgnoresPendingTransactions: an OffsetFetch with
	// require_stable answers with the committed offset although a
	// transaction holds a newer one pending, instead of
	// UNSTABLE_OFFSET_COMMIT (KIP-447): a member taking over a partition
	// starts before what the previous owner is committing.
	OffsetFetchIgnoresPendingTransactions
	// ElectionIgnoresISR: the controller elects the first live replica of
	// a leaderless partition, in the ISR or not (an unclean election
	// though unclean.leader.election.enable is off).
	ElectionIgnoresISR
	// CleanerPastHighWatermark: the log cleaner of a compacted topic
	// cleans up to the log end instead of the last stable offset (Kafka's
	// LogCleanerManager.cleanableOffsets bounds the dirty section by it,
	// and so by the high watermark): a record is removed for a later one of
	// its key that a failover then truncates, and the key's latest
	// acknowledged value is gone from that replica.
	CleanerPastHighWatermark
	count
)

var names = [...]string{
	HighWatermarkIgnoresFollowers:           "high-watermark-ignores-followers",
	HighWatermarkIgnoresPendingISR:          "high-watermark-ignores-pending-isr",
	ISRExpansionIgnoresHighWatermark:        "isr-expansion-ignores-high-watermark",
	FollowerTruncatesToHighWatermark:        "follower-truncates-to-high-watermark",
	FetchServesPastHighWatermark:            "fetch-serves-past-high-watermark",
	SequenceGapAccepted:                     "sequence-gap-accepted",
	RetriedBatchAppendedAgain:               "retried-batch-appended-again",
	LastStableOffsetIgnoresOpenTransactions: "last-stable-offset-ignores-open-transactions",
	AbortedTransactionsNotListed:            "aborted-transactions-not-listed",
	TxnStateAdoptedBeforeReplication:        "txn-state-adopted-before-replication",
	TxnOffsetsCommittedOnAbort:              "txn-offsets-committed-on-abort",
	OffsetCommitAckedBeforeReplication:      "offset-commit-acked-before-replication",
	OffsetFetchIgnoresPendingTransactions:   "offset-fetch-ignores-pending-transactions",
	ElectionIgnoresISR:                      "election-ignores-isr",
	CleanerPastHighWatermark:                "cleaner-past-high-watermark",
}

func (d Defect) String() string {
	if d > 0 && d < count {
		return names[d]
	}
	return fmt.Sprintf("defect(%d)", uint8(d))
}

// All lists every defect, in catalogue order.
func All() []Defect {
	out := make([]Defect, 0, count-1)
	for d := Defect(1); d < count; d++ {
		out = append(out, d)
	}
	return out
}

// Parse reads a defect's name.
func Parse(name string) (Defect, error) {
	for d := Defect(1); d < count; d++ {
		if names[d] == name {
			return d, nil
		}
	}
	var known []string
	for _, d := range All() {
		known = append(known, d.String())
	}
	return 0, fmt.Errorf("defect: unknown defect %q (known: %s)", name, strings.Join(known, ", "))
}

// Set is the defects planted in a run; the zero Set plants none.
type Set uint64

// Of returns the set of ds.
func Of(ds ...Defect) Set {
	var s Set
	for _, d := range ds {
		s |= 1 << d
	}
	return s
}

// Has reports whether d is planted.
func (s Set) Has(d Defect) bool { return s&(1<<d) != 0 }
