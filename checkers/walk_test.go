package checkers_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

// twoSkippingConsumers: consumers b and a each skip offset 1, b first in
// the history.
func twoSkippingConsumers() *hb {
	var b hb
	b.send("p", 0, 1, ok, x, 0, "v0")
	b.send("p", 2, 3, ok, x, 1, "v1")
	b.send("p", 4, 5, ok, x, 2, "v2")
	b.poll("b", 6, 7, ru, x, rs(0, "v0"))
	b.poll("a", 8, 9, ru, x, rs(0, "v0"))
	b.poll("b", 10, 11, ru, x, rs(2, "v2"))
	b.poll("a", 12, 13, ru, x, rs(2, "v2"))
	return &b
}

func TestConsumersFindingsAreReportedByProcessNameWhateverTheHistoryOrder(t *testing.T) {
	b := twoSkippingConsumers()
	ps := wantAnomaly(t, b.check(t, checkers.Options{}), "poll-skip", 2)
	if p := ps.Witnesses[0].Ops[0].Process; p != "a" {
		t.Fatalf("first poll-skip witness is %s's, want a's (processes in name order):\n%v", p, ps.Witnesses)
	}
}

// A history out of invocation order (here reversed) is walked each process
// in turn, each in invocation order: the same findings, in the same order.
func TestAHistoryOutOfInvocationOrderIsJudgedProcessByProcessInInvocationOrder(t *testing.T) {
	b := twoSkippingConsumers()
	b.send("q", 14, 15, ok, y, 3, "w3")
	b.send("q", 16, 17, ok, y, 1, "w1")
	want := b.check(t, checkers.Options{})
	reversed := slices.Clone(b.h)
	slices.Reverse(reversed)
	got, err := checkers.Check(reversed, checkers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"poll-skip", "nonmonotonic-send"} {
		w, _ := want.Anomaly(name)
		g, _ := got.Anomaly(name)
		if w.Count == 0 || !slices.EqualFunc(w.Witnesses, g.Witnesses, func(x, y checkers.Witness) bool { return x.Message == y.Message }) {
			t.Fatalf("%s: in order %v, reversed %v", name, w.Witnesses, g.Witnesses)
		}
	}
	if ns, _ := got.Anomaly("nonmonotonic-send"); !strings.Contains(ns.Witnesses[0].Message, "got offset 3, then its later op") {
		t.Fatalf("nonmonotonic-send judged out of invocation order: %v", ns.Witnesses)
	}
}

// A consumer holding more partitions than it scans for in a list indexes
// them by partition; what it knows of each stays its own.
func TestAConsumerHoldingManyPartitionsKeepsEachOnesLastRead(t *testing.T) {
	var b hb
	var tps []history.TopicPartition
	for p := int32(0); p < 40; p++ {
		tp := history.TopicPartition{Topic: "x", Partition: p}
		tps = append(tps, tp)
		b.send("p", 0, 1, ok, tp, 0, "a"+tp.String())
		b.send("p", 0, 1, ok, tp, 1, "b"+tp.String())
		b.send("p", 0, 1, ok, tp, 2, "c"+tp.String())
	}
	for _, tp := range tps {
		b.poll("c", 2, 3, ru, tp, rs(0, "a"+tp.String()))
	}
	for i, tp := range tps {
		next := rs(1, "b"+tp.String())
		if i == 33 {
			next = rs(2, "c"+tp.String()) // skips b
		}
		b.poll("c", 4, 5, ru, tp, next)
	}
	ps := wantAnomaly(t, b.check(t, checkers.Options{}), "poll-skip", 1)
	if !strings.HasPrefix(ps.Witnesses[0].Message, "x-33:") {
		t.Fatalf("poll-skip on the wrong partition: %v", ps.Witnesses)
	}
}
