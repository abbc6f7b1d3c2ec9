package checkers_test

import (
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

// A compacted topic keeps the latest value of each key (Kafka's log
// cleaner): these stories hold the checkers to what a cleaner may remove
// and what it must keep.

// keyedSend sends one keyed message: key and value.
func (b *hb) keyedSend(proc string, call, ret int64, outcome history.Outcome, tp history.TopicPartition, offset int64, key, value string) history.ID {
	return b.add(history.Op{Process: proc, Kind: history.KindSend, Call: call, Return: ret, Outcome: outcome,
		Send: &history.Send{TP: tp, Offset: offset, Messages: []history.Message{{Key: key, Value: value}}}})
}

var compactedX = checkers.Options{Compacted: []string{"x"}}

func TestAFinalReadOfACompactedTopicMaySkipARecordALaterOneOfItsKeySuperseded(t *testing.T) {
	var b hb
	b.keyedSend("p0", 0, 1, ok, x, 0, "k1", "a")
	b.keyedSend("p0", 2, 3, ok, x, 1, "k2", "b")
	b.keyedSend("p0", 4, 5, ok, x, 2, "k1", "c")
	b.final(10, x, rs(1, "b", 2, "c"))
	v := b.check(t, compactedX)
	wantNo(t, v, "lost-write", "unseen", "output-loss", "nonlinearizable")
	if v.Observed != checkers.ExactlyOnce {
		t.Fatalf("the latest value of every key is there: exactly-once, got %s:\n%s", v.Observed, v.Summary())
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "x-0 is compacted: a log cleaner may have removed the records at 1 of its offsets") {
		t.Fatalf("the verdict should say what compaction excused: %q", v.Notes)
	}
	// The same history of a topic that does not compact lost "a".
	wantAnomaly(t, b.check(t, checkers.Options{}), "nonlinearizable", 1)
}

func TestACompactedTopicThatLosesTheLatestValueOfAKeyLosesAWrite(t *testing.T) {
	var b hb
	b.keyedSend("p0", 0, 1, ok, x, 0, "k1", "a")
	lost := b.keyedSend("p0", 2, 3, ok, x, 1, "k1", "b")
	b.keyedSend("p0", 4, 5, ok, x, 2, "k2", "c")
	r := b.final(10, x, rs(2, "c"))
	v := b.check(t, compactedX)
	wantAnomaly(t, v, "nonlinearizable", 1, r, lost)
	wantAnomaly(t, v, "lost-write", 1, lost, r)
	wantAnomaly(t, v, "output-loss", 1, lost)
	if v.Holds(checkers.AtLeastOnce) {
		t.Fatalf("the latest value of k1 is gone: at-least-once broken:\n%s", v.Summary())
	}
}

// The cleaner's offset map skips aborted batches: a record of an aborted
// transaction supersedes nothing, and is itself removable.
func TestARecordOfAnAbortedTransactionSupersedesNothingInACompactedTopic(t *testing.T) {
	var b hb
	kept := b.keyedSend("p0", 0, 1, ok, x, 0, "k1", "a")
	tx := b.txn("p1", 2, 8, fail)
	b.add(history.Op{Process: "p1", Kind: history.KindSend, Call: 3, Return: 4, Outcome: ok,
		Send: &history.Send{TP: x, Offset: 1, Txn: tx, Messages: []history.Message{{Key: "k1", Value: "b"}}}})
	b.keyedSend("p0", 9, 10, ok, x, 3, "k2", "c")
	r := b.poll("c0", 11, 12, ru, x, rs(3, "c"))
	b.final(20, x, rs(3, "c"))
	v := b.check(t, compactedX)
	wantAnomaly(t, v, "lost-write", 1, kept, r)
	if a, _ := v.Anomaly("lost-write"); !strings.Contains(a.Witnesses[0].Message, `"a"`) {
		t.Fatalf("a, the latest committed value of k1, is the one lost:\n%s", v.Summary())
	}
}

// A consumer of a compacted topic may jump over what the cleaner removed,
// never over the latest record of a key.
func TestAConsumerOfACompactedTopicMayJumpOnlyOverSupersededRecords(t *testing.T) {
	build := func(skipped string) checkers.Verdict {
		var b hb
		b.keyedSend("p0", 0, 1, ok, x, 0, "k0", "z")
		b.keyedSend("p0", 0, 1, ok, x, 1, "k1", "a")
		b.keyedSend("p0", 2, 3, ok, x, 2, "k2", "b")
		b.keyedSend("p0", 4, 5, ok, x, 3, skipped, "c")
		b.keyedSend("p0", 6, 7, ok, x, 4, "k3", "d")
		b.poll("c0", 8, 9, ru, x, rs(0, "z"))
		b.poll("c0", 10, 11, ru, x, rs(2, "b", 4, "d"))
		b.final(20, x, rs(0, "z", 1, "a", 2, "b", 3, "c", 4, "d"))
		return b.check(t, compactedX)
	}
	// a (k1 at 1) superseded by c (k1 at 3): the first jump is allowed,
	// the second skips c, the latest of k1.
	v := build("k1")
	wantAnomaly(t, v, "poll-skip", 1)
	if a, _ := v.Anomaly("poll-skip"); !strings.Contains(a.Witnesses[0].Message, `skipping 1 known entry (c)`) {
		t.Fatalf("the skip should name c alone:\n%s", v.Summary())
	}
	// c of k2 supersedes b, which the consumer read before the cleaner
	// ran: then a, the latest of k1, and c, the latest of k2, were
	// skipped.
	v = build("k2")
	wantAnomaly(t, v, "poll-skip", 2)
	if a, _ := v.Anomaly("poll-skip"); !strings.Contains(a.Witnesses[0].Message, `(a)`) {
		t.Fatalf("the first skip should name a:\n%s", v.Summary())
	}
}

// Each replica cleans its own log: the same batch may hold other records
// on two replicas, and a batch one cleaner removed may remain on another;
// batches that overlap at different bases still diverge.
func TestReplicasOfACompactedTopicMayHoldBatchesCleanedDifferently(t *testing.T) {
	var b hb
	b.replica("b0", true, true, 6, batch(0, 1, 0, 0xa), batch(2, 3, 0, 0xb), batch(4, 5, 0, 0xc))
	b.replica("b1", false, true, 6, batch(0, 1, 0, 0x1a), batch(4, 5, 0, 0xc))
	wantNo(t, b.check(t, compactedX), "replica-divergence")
	wantAnomaly(t, b.check(t, checkers.Options{}), "replica-divergence", 1)

	var d hb
	d.replica("b0", true, true, 6, batch(0, 1, 0, 0xa), batch(2, 3, 0, 0xb))
	d.replica("b1", false, true, 6, batch(0, 2, 0, 0xa), batch(3, 3, 1, 0xb))
	wantAnomaly(t, d.check(t, compactedX), "replica-divergence", 1)
	var e hb
	e.replica("b0", true, true, 6, batch(0, 1, 0, 0xa))
	e.replica("b1", false, true, 6, batch(0, 1, 1, 0xa))
	wantAnomaly(t, e.check(t, compactedX), "replica-divergence", 1)
}
