package checkers_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

const (
	ok   = history.OK
	fail = history.Fail
	info = history.Info
	rc   = history.ReadCommitted
	ru   = history.ReadUncommitted
	none = history.NoOffset
)

// Jepsen lost-write-test "consistent": a read of c at offset 2 means a (0)
// and b (1), both acknowledged, should have been read too.
func TestAcknowledgedWritesBelowAReadOffsetThatNobodyReadAreLost(t *testing.T) {
	var b hb
	a := b.send("p0", 0, 1, ok, x, 0, "a")
	bb := b.send("p0", 2, 3, ok, x, 1, "b")
	b.send("p1", 4, 5, info, x, none, "c")
	r := b.poll("p0", 6, 7, ru, x, rs(2, "c"))
	v := b.check(t, checkers.Options{})
	lw := wantAnomaly(t, v, "lost-write", 2, a, r)
	if !strings.Contains(lw.Witnesses[1].Message, `"b"`) || lw.Witnesses[1].Ops[0].ID != bb {
		t.Fatalf("second lost write should be b:\n%s", v.Summary())
	}
	if v.Holds(checkers.AtLeastOnce) || !v.Holds(checkers.AtMostOnce) || v.Observed != checkers.AtMostOnce {
		t.Fatalf("lost writes break at-least-once only, got %s", v.Observed)
	}
	if len(v.Safety()) == 0 {
		t.Fatal("lost-write is a safety violation")
	}
}

// Jepsen lost-write-test "atomic": an indefinite transaction's write is
// only losable once another of its writes is read at read_committed.
func TestAWriteOfAnIndefiniteTransactionIsLostOnlyOnceTheTransactionIsSeenToCommit(t *testing.T) {
	build := func(readA bool) checkers.Verdict {
		var b hb
		tx := b.txn("p0", 0, 10, info)
		b.txnSend(tx, "p0", 1, 2, info, x, none, "a")
		b.txnSend(tx, "p0", 3, 4, ok, y, 0, "b")
		b.send("p1", 2, 3, info, y, none, "c")
		if readA {
			b.poll("p2", 11, 12, rc, x, rs(0, "a"))
		}
		b.poll("p3", 13, 14, rc, y, rs(1, "c"))
		return b.check(t, checkers.Options{})
	}
	wantNo(t, build(false), "lost-write")
	wantAnomaly(t, build(true), "lost-write", 1)
}

// Jepsen inconsistent-offsets-test "info conflicts": an indefinite send
// nobody read may simply not have happened, so its offset conflicts with
// nothing.
func TestAnUnreadIndefiniteSendConflictsWithNothing(t *testing.T) {
	var b hb
	b.send("p0", 0, 1, info, x, 0, "1")
	b.send("p1", 2, 3, ok, x, 0, "2")
	b.poll("p2", 4, 5, ru, x, rs(0, "2"))
	v := b.check(t, checkers.Options{})
	if len(v.Anomalies) > 0 {
		t.Fatalf("should be clean:\n%s", v.Summary())
	}
}

// Jepsen version-orders-test, "a real-world example": two acknowledged
// sends at offset 537.
func TestTwoSendsAcknowledgedAtOneOffsetAreInconsistentOffsets(t *testing.T) {
	var b hb
	s1 := b.send("p379", 280153467070, 280169754615, ok, x, 537, "641")
	s2 := b.send("p363", 283654729962, 287474569112, ok, x, 537, "645")
	v := b.check(t, checkers.Options{})
	wantAnomaly(t, v, "inconsistent-offsets", 1, s1, s2)
	nl := wantAnomaly(t, v, "nonlinearizable", 1, s1, s2)
	if !strings.Contains(nl.Witnesses[0].Message, "offset 537") {
		t.Fatalf("nonlinearizable witness should name the offset: %s", nl.Witnesses[0].Message)
	}
	if v.Holds(checkers.ExactlyOnce) || !v.Holds(checkers.AtLeastOnce) {
		t.Fatalf("got %s", v.Observed)
	}
}

// Jepsen g1a-test: a failed write that is read.
func TestReadingAFailedWriteIsAnAbortedRead(t *testing.T) {
	var b hb
	s := b.send("p0", 0, 1, fail, x, none, "2")
	r := b.poll("p1", 2, 3, ru, x, rs(0, "2"))
	wantAnomaly(t, b.check(t, checkers.Options{}), "G1a", 1, r, s)
}

func TestReadCommittedMustNotReadAnAbortedTransactionButReadUncommittedMay(t *testing.T) {
	build := func(iso history.Isolation) (checkers.Verdict, history.ID, history.ID) {
		var b hb
		tx := b.txn("p0", 0, 10, fail)
		s := b.txnSend(tx, "p0", 1, 2, ok, x, 0, "a")
		r := b.poll("p1", 11, 12, iso, x, rs(0, "a"))
		return b.check(t, checkers.Options{}), r, s
	}
	v, r, s := build(rc)
	wantAnomaly(t, v, "G1a", 1, r, s)
	v, _, _ = build(ru)
	if len(v.Anomalies) > 0 {
		t.Fatalf("read_uncommitted reading an aborted write is fine:\n%s", v.Summary())
	}
}

func TestReadCommittedSeeingATransactionBeforeItAskedToCommitIsAPrecommittedRead(t *testing.T) {
	var b hb
	tx := b.add(history.Op{Process: "p0", Kind: history.KindTxn, Call: 0, Return: 100, Outcome: ok,
		Txn: &history.Txn{TransactionalID: "t", EndCall: 50}})
	s := b.txnSend(tx, "p0", 1, 2, ok, x, 0, "a")
	early := b.poll("p1", 10, 20, rc, x, rs(0, "a"))
	b.poll("p2", 60, 70, rc, x, rs(0, "a"))
	v := b.check(t, checkers.Options{})
	wantAnomaly(t, v, "precommitted-read", 1, early, s, tx)
}

// A read_committed fetch is served up to the last stable offset it
// reports: a record at or past it came from an open transaction, or from
// a broker whose read bound and LSO disagree.
func TestReadCommittedReturningARecordAtItsResponsesLastStableOffsetIsAReadPastTheLSO(t *testing.T) {
	build := func(iso history.Isolation, lso int64) (checkers.Verdict, history.ID) {
		var b hb
		b.send("p0", 0, 1, ok, x, 0, "a", "b", "c")
		p := b.add(history.Op{Process: "p1", Kind: history.KindPoll, Call: 2, Return: 3, Outcome: ok,
			Poll: &history.Poll{Isolation: iso, Fetched: []history.Fetch{{TP: x, From: 0, Records: rs(0, "a", 1, "b", 2, "c"), LastStable: &lso}}}})
		return b.check(t, checkers.Options{}), p
	}
	v, p := build(rc, 2)
	a := wantAnomaly(t, v, "read-past-lso", 1, p)
	if !strings.Contains(a.Witnesses[0].Message, `"c" at x-0 offset 2 from a fetch response whose last stable offset was 2`) {
		t.Fatalf("the witness names the record and the LSO:\n%s", v.Summary())
	}
	if v.Holds(checkers.ExactlyOnce) {
		t.Fatal("a read past the LSO breaks exactly-once")
	}
	v, _ = build(rc, 3)
	wantNo(t, v, "read-past-lso")
	v, _ = build(ru, 2)
	wantNo(t, v, "read-past-lso")
}

// Jepsen poll-skip-test: process 0 reads 1 2, then 4, then 7, but 3 and 6
// are known to exist (5 may be a gap in the log).
func pollSkipHistory(between func(b *hb)) *hb {
	var b hb
	b.poll("p0", 0, 1, ru, x, rs(1, "a", 2, "b"))
	b.poll("p1", 2, 3, ru, x, rs(3, "c"))
	if between != nil {
		between(&b)
	}
	b.poll("p0", 6, 7, ru, x, rs(4, "d"))
	b.send("p2", 10, 11, ok, x, 6, "f")
	b.poll("p0", 12, 13, ru, x, rs(7, "g"))
	for i, v := range []string{"a", "b", "c", "d", "g"} {
		b.send("p3", 14+int64(i), 30, info, x, none, v)
	}
	return &b
}

func TestAConsumerThatSkipsKnownOffsetsWithoutARebalanceIsAPollSkip(t *testing.T) {
	b := pollSkipHistory(nil)
	v := b.check(t, checkers.Options{})
	ps := wantAnomaly(t, v, "poll-skip", 2, 1, 3)
	if !strings.Contains(ps.Witnesses[0].Message, "skipping 1 known entry (c)") ||
		!strings.Contains(ps.Witnesses[1].Message, "(f)") {
		t.Fatalf("poll-skip witnesses should name c and f:\n%s", v.Summary())
	}
	// An assignment without x in between forgives the first skip...
	b = pollSkipHistory(func(b *hb) {
		b.add(history.Op{Process: "p0", Kind: history.KindAssign, Call: 4, Return: 5, Outcome: ok,
			Assign: &history.Assign{Partitions: []history.TopicPartition{y}}})
	})
	wantAnomaly(t, b.check(t, checkers.Options{}), "poll-skip", 1)
	// ...one that still covers x does not.
	b = pollSkipHistory(func(b *hb) {
		b.add(history.Op{Process: "p0", Kind: history.KindSubscribe, Call: 4, Return: 5, Outcome: ok,
			Subscribe: &history.Subscribe{Group: "g", Topics: []string{"x", "y"}}})
	})
	wantAnomaly(t, b.check(t, checkers.Options{}), "poll-skip", 2)
}

// Jepsen nonmonotonic-poll-test: process 0 polls 1 2 3, then 2 3 4.
func TestAConsumerGoingBackWithoutARebalanceOrSeekIsANonmonotonicPoll(t *testing.T) {
	build := func(between func(b *hb), rebalanced bool) checkers.Verdict {
		var b hb
		b.send("p9", 0, 1, ok, x, 1, "a", "b", "c", "d")
		b.poll("p0", 2, 3, ru, x, rs(1, "a", 2, "b", 3, "c"))
		if between != nil {
			between(&b)
		}
		second := b.poll("p0", 6, 7, ru, x, rs(2, "b", 3, "c", 4, "d"))
		b.h[second-1].Poll.Rebalanced = rebalanced
		return b.check(t, checkers.Options{})
	}
	wantAnomaly(t, build(nil, false), "nonmonotonic-poll", 1, 2, 3)
	wantNo(t, build(nil, true), "nonmonotonic-poll")
	wantNo(t, build(func(b *hb) {
		b.add(history.Op{Process: "p0", Kind: history.KindSeek, Call: 4, Return: 5, Outcome: ok,
			Seek: &history.Seek{Offsets: []history.PartitionOffset{{TP: x, Offset: 2}}}})
	}, false), "nonmonotonic-poll")
	wantNo(t, build(func(b *hb) {
		b.add(history.Op{Process: "p0", Kind: history.KindRebalance, Call: 4, Return: 5, Outcome: ok,
			Rebalance: &history.Rebalance{Group: "g", Assigned: []history.TopicPartition{y}}})
	}, false), "nonmonotonic-poll")
}

// Jepsen nonmonotonic-send-test: process 0 sends at offsets 3 4, then 1 2.
func TestAProducerWhoseLaterSendGetsALowerOffsetIsANonmonotonicSend(t *testing.T) {
	var b hb
	a := b.send("p0", 0, 1, ok, x, 3, "c", "d")
	c := b.send("p0", 10, 11, ok, x, 1, "a", "b")
	v := b.check(t, checkers.Options{Order: checkers.KeyOrder})
	wantAnomaly(t, v, "nonmonotonic-send", 1, a, c)
	if v.OrderHeld {
		t.Fatal("a reordered producer breaks promised order")
	}
	var other hb
	other.send("p0", 0, 1, ok, x, 3, "c", "d")
	other.send("p1", 10, 11, ok, x, 1, "a", "b")
	wantNo(t, other.check(t, checkers.Options{}), "nonmonotonic-send")
}

// Jepsen duplicate-test "basic": a sent at 1, read at 3.
func TestOneValueAtTwoOffsetsIsADuplicate(t *testing.T) {
	var b hb
	s := b.send("p0", 0, 1, ok, x, 1, "a")
	b.send("p1", 2, 3, info, x, none, "b")
	r := b.poll("p2", 4, 5, ru, x, rs(2, "b", 3, "a"))
	v := b.check(t, checkers.Options{})
	d := wantAnomaly(t, v, "duplicate", 1, s, r)
	if !strings.Contains(d.Witnesses[0].Message, "offsets 1, 3") {
		t.Fatalf("duplicate should name both offsets: %s", d.Witnesses[0].Message)
	}
	if v.Holds(checkers.AtMostOnce) || !v.Holds(checkers.AtLeastOnce) || v.Observed != checkers.AtLeastOnce {
		t.Fatalf("a duplicate breaks at-most-once only, got %s", v.Observed)
	}
}

func TestACommittedTransactionHalfInTheOutputIsTorn(t *testing.T) {
	build := func(yRecords []history.Record, outcome history.Outcome) checkers.Verdict {
		var b hb
		tx := b.txn("p0", 0, 10, outcome)
		b.txnSend(tx, "p0", 1, 2, ok, x, 0, "a")
		b.txnSend(tx, "p0", 3, 4, ok, y, 0, "b")
		b.final(20, x, rs(0, "a"))
		b.final(22, y, yRecords)
		return b.check(t, checkers.Options{})
	}
	wantAnomaly(t, build(nil, ok), "torn-transaction", 1, 1, 2, 3)
	wantNo(t, build(rs(0, "b"), ok), "torn-transaction")
	// An indefinite transaction seen in part has committed: torn too.
	wantAnomaly(t, build(nil, info), "torn-transaction", 1)
}

// offsetsTxn is a transaction of p0's that wrote value to x and committed
// offset (for input partition y of group g) with it.
func (b *hb) offsetsTxn(outcome history.Outcome, call int64, value string, at int64, offset int64) (history.ID, history.ID) {
	tx := b.add(history.Op{Process: "p0", Kind: history.KindTxn, Call: call, Return: call + 10, Outcome: outcome,
		Txn: &history.Txn{TransactionalID: "t", Group: "g", Offsets: []history.PartitionOffset{{TP: y, Offset: offset}}, EndCall: call + 5}})
	s := b.txnSend(tx, "p0", call+1, call+2, ok, x, at, value)
	return tx, s
}

func (b *hb) finalOffsets(call int64, offset int64) history.ID {
	return b.add(history.Op{Process: "final-reader", Kind: history.KindOffsetFetch, Call: call, Return: call + 1, Outcome: ok,
		OffsetFetch: &history.OffsetFetch{Group: "g", Offsets: []history.PartitionOffset{{TP: y, Offset: offset}}, Final: true}})
}

// The offsets half of a transaction: its writes in the final output but
// the group's final committed offset below what it committed — the
// consumer would process its input again.
func TestATransactionWhoseWritesCommittedButWhoseOffsetsDidNotIsTorn(t *testing.T) {
	var b hb
	tx, s := b.offsetsTxn(ok, 0, "a", 0, 5)
	b.final(20, x, rs(0, "a"))
	f := b.finalOffsets(30, 3)
	v := b.check(t, checkers.Options{})
	a := wantAnomaly(t, v, "torn-transaction", 1, tx, s, f)
	if !strings.Contains(a.Witnesses[0].Message, "the offset it committed for y-0, 5, is not: group g's final committed offset is 3") {
		t.Fatalf("the witness names both halves:\n%s", v.Summary())
	}
	var fine hb
	fine.offsetsTxn(ok, 0, "a", 0, 5)
	fine.final(20, x, rs(0, "a"))
	fine.finalOffsets(30, 5)
	wantNo(t, fine.check(t, checkers.Options{}), "torn-transaction")
}

// The reverse: the group resumes from offsets only an aborted transaction
// committed — its writes are gone, its input is never processed again.
func TestAnAbortedTransactionWhoseOffsetsStandIsTorn(t *testing.T) {
	var b hb
	tx, s := b.offsetsTxn(fail, 0, "a", 0, 5)
	b.final(20, x, nil)
	f := b.finalOffsets(30, 5)
	v := b.check(t, checkers.Options{})
	a := wantAnomaly(t, v, "torn-transaction", 1, tx, s, f)
	if !strings.Contains(a.Witnesses[0].Message, "alone committed offset 5 for y-0, group g's final committed offset, but it aborted") {
		t.Fatalf("the witness says the aborted transaction's offsets stand:\n%s", v.Summary())
	}
	// Rewound and done again by a transaction that committed: no tear.
	var redo hb
	redo.offsetsTxn(fail, 0, "a", 0, 5)
	redo.offsetsTxn(ok, 20, "a", 2, 5)
	redo.final(40, x, rs(2, "a"))
	redo.finalOffsets(50, 5)
	wantNo(t, redo.check(t, checkers.Options{}), "torn-transaction")
}

// An acknowledged commit is durable: a final committed offset below it
// means a resumed consumer processes again what was committed past.
func TestAFinalCommittedOffsetBelowAnAcknowledgedCommitIsALostCommit(t *testing.T) {
	build := func(final int64) (checkers.Verdict, history.ID, history.ID) {
		var b hb
		c := b.add(history.Op{Process: "c0", Kind: history.KindCommit, Call: 0, Return: 1, Outcome: ok,
			Commit: &history.Commit{Group: "g", Offsets: []history.PartitionOffset{{TP: y, Offset: 7}}}})
		f := b.finalOffsets(10, final)
		return b.check(t, checkers.Options{}), c, f
	}
	v, c, f := build(4)
	a := wantAnomaly(t, v, "offset-commit-lost", 1, c, f)
	if !strings.Contains(a.Witnesses[0].Message, "commit of offset 7 was acknowledged, but the final committed offset is 4") {
		t.Fatalf("the witness names both offsets:\n%s", v.Summary())
	}
	if v.Holds(checkers.AtMostOnce) {
		t.Fatal("a lost commit breaks at-most-once")
	}
	v, _, _ = build(7)
	wantNo(t, v, "offset-commit-lost")
}

func TestReadingOneValueAtOneOffsetManyTimesIsNoDuplicate(t *testing.T) {
	var b hb
	b.send("p0", 0, 1, ok, x, 0, "a")
	b.poll("p1", 2, 3, ru, x, rs(0, "a"))
	b.poll("p2", 2, 3, rc, x, rs(0, "a"))
	b.final(10, x, rs(0, "a"))
	v := b.check(t, checkers.Options{})
	if len(v.Anomalies) > 0 || v.Observed != checkers.ExactlyOnce {
		t.Fatalf("should be clean:\n%s", v.Summary())
	}
}

func TestAnAcknowledgedWriteNeverReadByTheEndIsUnseenALivenessViolation(t *testing.T) {
	var b hb
	s := b.send("p0", 0, 1, ok, x, 0, "a")
	b.send("p0", 2, 3, info, x, none, "b")
	b.final(10, x, nil)
	v := b.check(t, checkers.Options{})
	wantAnomaly(t, v, "unseen", 1, s)
	wantAnomaly(t, v, "output-loss", 1, s)
	wantNo(t, v, "lost-write")
	if len(v.Liveness()) != 2 || len(v.Safety()) != 0 || v.Holds(checkers.AtLeastOnce) || len(v.Breaking(checkers.AtLeastOnce)) != 2 {
		t.Fatalf("unseen and output-loss are liveness violations of at-least-once:\n%s", v.Summary())
	}
	if len(v.Breaking(checkers.AtMostOnce)) != 0 || !reflect.DeepEqual(v.Held, []checkers.Guarantee{checkers.AtMostOnce, checkers.None}) {
		t.Fatalf("at-most-once held: %v", v.Held)
	}
}

func commit(b *hb, proc string, call, ret int64, outcome history.Outcome, off int64) history.ID {
	return b.add(history.Op{Process: proc, Kind: history.KindCommit, Call: call, Return: ret, Outcome: outcome,
		Commit: &history.Commit{Group: "g", Offsets: []history.PartitionOffset{{TP: x, Offset: off}}}})
}

func TestACommittedOffsetMovingBackwardsIsARegression(t *testing.T) {
	var b hb
	a := commit(&b, "c0", 0, 1, ok, 10)
	z := commit(&b, "c1", 2, 3, ok, 5) // a zombie, unfenced
	wantAnomaly(t, b.check(t, checkers.Options{}), "offset-regression", 1, a, z)
	var c hb
	commit(&c, "c0", 0, 3, ok, 10)
	commit(&c, "c1", 2, 4, ok, 5) // concurrent: either order is fine
	wantNo(t, c.check(t, checkers.Options{}), "offset-regression")
}

func TestAnOffsetFetchMissingAnEarlierCommitIsStale(t *testing.T) {
	var b hb
	commit(&b, "c0", 0, 1, ok, 10)
	b.add(history.Op{Process: "c1", Kind: history.KindOffsetFetch, Call: 2, Return: 3, Outcome: ok,
		OffsetFetch: &history.OffsetFetch{Group: "g", Offsets: []history.PartitionOffset{{TP: x, Offset: none}}}})
	wantAnomaly(t, b.check(t, checkers.Options{}), "stale-offset-fetch", 1)
}

// A consume-process-sink pipeline whose sink holds a twice and c never.
func TestASinkHoldingAnInputTwiceAndAnotherNeverBreaksBothGuarantees(t *testing.T) {
	var b hb
	a := b.send("prod", 0, 1, ok, x, 0, "a")
	b.send("prod", 2, 3, ok, x, 1, "b")
	c := b.send("prod", 4, 5, ok, x, 2, "c")
	w1 := b.add(history.Op{Process: "proc", Kind: history.KindSinkWrite, Call: 6, Return: 7, Outcome: ok,
		SinkWrite: &history.SinkWrite{Sink: "db", Outputs: []history.Message{{Value: "A", Source: "a"}, {Value: "B", Source: "b"}}}})
	w2 := b.add(history.Op{Process: "proc2", Kind: history.KindSinkWrite, Call: 8, Return: 9, Outcome: info,
		SinkWrite: &history.SinkWrite{Sink: "db", Outputs: []history.Message{{Value: "A", Source: "a"}}}})
	f := b.add(history.Op{Process: "final", Kind: history.KindFinalRead, Call: 20, Return: 21, Outcome: ok,
		FinalRead: &history.FinalRead{Sink: "db", Output: true, Items: []history.Message{{Value: "A", Source: "a"}, {Value: "B", Source: "b"}, {Value: "A", Source: "a"}}}})
	v := b.check(t, checkers.Options{})
	wantAnomaly(t, v, "output-dup", 1, f, w1, w2)
	wantAnomaly(t, v, "output-loss", 1, c)
	if v.Observed != checkers.None {
		t.Fatalf("got %s", v.Observed)
	}
	_ = a
}

func TestAnOutputOutOfInputOrderForOneKeyBreaksPromisedOrder(t *testing.T) {
	build := func(promised checkers.Order) checkers.Verdict {
		var b hb
		b.add(history.Op{Process: "prod", Kind: history.KindSend, Call: 0, Return: 1, Outcome: ok,
			Send: &history.Send{TP: x, Messages: []history.Message{{Key: "k", Value: "a"}, {Key: "k", Value: "b"}}, Offset: 0}})
		b.add(history.Op{Process: "final", Kind: history.KindFinalRead, Call: 20, Return: 21, Outcome: ok,
			FinalRead: &history.FinalRead{Sink: "db", Output: true, Items: []history.Message{{Key: "k", Value: "B", Source: "b"}, {Key: "k", Value: "A", Source: "a"}}}})
		return b.check(t, checkers.Options{Order: promised})
	}
	v := build(checkers.KeyOrder)
	wantAnomaly(t, v, "key-order", 1)
	if v.OrderHeld || !v.Holds(checkers.ExactlyOnce) {
		t.Fatalf("key order is its own promise, apart from delivery:\n%s", v.Summary())
	}
	v = build(checkers.PartitionOrder)
	wantNo(t, v, "key-order")
	if !v.OrderHeld {
		t.Fatal("key order not promised, so the order promised holds")
	}
}

func TestWithoutAnOutputFinalReadDeliveryIsNotJudgedAndSaysSo(t *testing.T) {
	var b hb
	b.send("p", 0, 1, ok, x, 0, "a")
	v := b.check(t, checkers.Options{})
	if len(v.Notes) == 0 || !strings.Contains(v.Summary(), "not judged") {
		t.Fatalf("expected a note:\n%s", v.Summary())
	}
}

func TestAnInvalidHistoryIsRefusedNamingTheOperation(t *testing.T) {
	var b hb
	b.send("p0", 10, 5, ok, x, 0, "a")
	_, err := checkers.Check(b.h, checkers.Options{})
	if err == nil || !strings.Contains(err.Error(), "op 1 (send by p0") {
		t.Fatalf("got %v", err)
	}
}

func TestAnIllegalPartitionIsVisualizedWithFaultsAnnotated(t *testing.T) {
	var b hb
	b.send("p0", 0, 10, ok, x, 0, "a")
	b.send("p1", 5, 15, ok, x, 1, "b")
	b.add(history.Op{Process: "nemesis", Kind: history.KindNemesis, Call: 12, Return: 30, Outcome: ok,
		Nemesis: &history.Nemesis{Description: "crash leader", Nodes: []string{"broker-1"}}})
	b.poll("p2", 20, 25, ru, x, rs(1, "b"))
	b.poll("p2", 26, 27, ru, x, rs(0, "z", 1, "b"))
	path := filepath.Join(t.TempDir(), "x.html")
	v, err := checkers.Check(b.h, checkers.Options{HTML: path})
	if err != nil {
		t.Fatal(err)
	}
	wantAnomaly(t, v, "nonlinearizable", 1)
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"crash leader", "broker-1", "poll"} {
		if !strings.Contains(string(html), want) {
			t.Fatalf("visualization lacks %q", want)
		}
	}
}

func TestEveryModeOfLinearizabilityCheckingGivesTheSameVerdict(t *testing.T) {
	b := pollSkipHistory(nil)
	b.send("p4", 40, 41, ok, x, 7, "h") // h at 7, where g was read
	var verdicts []string
	for _, mode := range []checkers.Linearizability{checkers.Fast, checkers.Porcupine, checkers.Both} {
		v := b.check(t, checkers.Options{Linearizability: mode})
		var names []string
		for _, a := range v.Anomalies {
			names = append(names, a.Name)
		}
		verdicts = append(verdicts, string(v.Observed)+" "+strings.Join(names, ","))
	}
	if verdicts[0] != verdicts[1] || verdicts[1] != verdicts[2] {
		t.Fatalf("modes disagree: %q", verdicts)
	}
}

func TestAnOutputDerivedFromNothingSentIsNotedNotCounted(t *testing.T) {
	var b hb
	b.send("prod", 0, 1, ok, x, 0, "a")
	b.add(history.Op{Process: "final", Kind: history.KindFinalRead, Call: 20, Return: 21, Outcome: ok,
		FinalRead: &history.FinalRead{Sink: "db", Output: true, Items: []history.Message{{Value: "A", Source: "a"}, {Value: "Z", Source: "z"}}}})
	v := b.check(t, checkers.Options{})
	if len(v.Anomalies) > 0 || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "1 outputs derive from no sent message") {
		t.Fatalf("got notes %q:\n%s", v.Notes, v.Summary())
	}
}

func TestAnEmptyHistoryHoldsEverythingButSaysDeliveryWasNotJudged(t *testing.T) {
	var b hb
	b.add(history.Op{Process: "nemesis", Kind: history.KindNemesis, Call: 0, Return: history.Never, Outcome: ok,
		Nemesis: &history.Nemesis{Description: "kill -9 everything"}})
	for _, h := range []history.History{nil, b.h} {
		v, err := checkers.Check(h, checkers.Options{})
		if err != nil || v.Observed != checkers.ExactlyOnce || len(v.Notes) != 1 {
			t.Fatalf("got %v %v:\n%s", err, v.Observed, v.Summary())
		}
	}
}

// A final read that could not finish is recorded as far as it got
// (outcome info): what it could not read is a liveness failure —
// final-read-stuck, and the messages behind it unseen — while at-most-once
// is still judged on what was read.
func TestAFinalReadStuckHalfwayIsALivenessFailureNotADuplicate(t *testing.T) {
	var b hb
	b.send("p0", 0, 1, ok, x, 0, "a")
	b.send("p0", 2, 3, ok, x, 1, "b")
	f := b.final(4, x, rs(0, "a"))
	b.h[f-1].Outcome, b.h[f-1].Error = info, "final read of x/0 stuck at offset 1 (end 2) after 30s"
	v := b.check(t, checkers.Options{})
	stuck := wantAnomaly(t, v, "final-read-stuck", 1, f)
	if stuck.Class != checkers.Liveness || !strings.Contains(stuck.Witnesses[0].Message, "stuck at offset 1") {
		t.Fatalf("final-read-stuck is liveness and says where it stopped:\n%s", v.Summary())
	}
	if _, ok := v.Anomaly("unseen"); !ok {
		t.Fatalf("b was never read:\n%s", v.Summary())
	}
	if v.Holds(checkers.AtLeastOnce) || !v.Holds(checkers.AtMostOnce) {
		t.Fatalf("a stuck read breaks at-least-once, not at-most-once: observed %s\n%s", v.Observed, v.Summary())
	}
}
