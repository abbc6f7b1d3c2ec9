package checkers_test

import (
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

var (
	x = history.TopicPartition{Topic: "x", Partition: 0}
	y = history.TopicPartition{Topic: "y", Partition: 0}
)

// hb builds hand-written histories in the shape of Jepsen's Kafka checker
// tests: times are the operation's index unless given.
type hb struct{ h history.History }

func (b *hb) add(op history.Op) history.ID {
	op.ID = history.ID(len(b.h) + 1)
	if op.Node == "" {
		op.Node = "n-" + op.Process
	}
	b.h = append(b.h, op)
	return op.ID
}

func msgs(values ...string) []history.Message {
	ms := make([]history.Message, len(values))
	for i, v := range values {
		ms[i] = history.Message{Value: v}
	}
	return ms
}

func (b *hb) send(proc string, call, ret int64, outcome history.Outcome, tp history.TopicPartition, offset int64, values ...string) history.ID {
	return b.add(history.Op{Process: proc, Kind: history.KindSend, Call: call, Return: ret, Outcome: outcome,
		Send: &history.Send{TP: tp, Messages: msgs(values...), Offset: offset}})
}

func (b *hb) txnSend(txn history.ID, proc string, call, ret int64, outcome history.Outcome, tp history.TopicPartition, offset int64, values ...string) history.ID {
	return b.add(history.Op{Process: proc, Kind: history.KindSend, Call: call, Return: ret, Outcome: outcome,
		Send: &history.Send{TP: tp, Messages: msgs(values...), Offset: offset, Txn: txn}})
}

func (b *hb) txn(proc string, call, ret int64, outcome history.Outcome) history.ID {
	return b.add(history.Op{Process: proc, Kind: history.KindTxn, Call: call, Return: ret, Outcome: outcome,
		Txn: &history.Txn{TransactionalID: "tx-" + proc}})
}

// rs builds records from alternating offsets and values: rs(1, "a", 2, "b").
func rs(kv ...any) []history.Record {
	var out []history.Record
	for i := 0; i < len(kv); i += 2 {
		out = append(out, history.Record{Offset: int64(kv[i].(int)), Message: history.Message{Value: kv[i+1].(string)}})
	}
	return out
}

func (b *hb) poll(proc string, call, ret int64, iso history.Isolation, tp history.TopicPartition, recs []history.Record) history.ID {
	return b.add(history.Op{Process: proc, Kind: history.KindPoll, Call: call, Return: ret, Outcome: history.OK,
		Poll: &history.Poll{Isolation: iso, Fetched: []history.Fetch{{TP: tp, From: history.NoOffset, Records: recs}}}})
}

func (b *hb) final(call int64, tp history.TopicPartition, recs []history.Record) history.ID {
	return b.add(history.Op{Process: "final", Kind: history.KindFinalRead, Call: call, Return: call + 1, Outcome: history.OK,
		FinalRead: &history.FinalRead{TP: tp, Isolation: history.ReadCommitted, Output: true, Records: recs}})
}

func (b *hb) check(t *testing.T, opts checkers.Options) checkers.Verdict {
	t.Helper()
	v, err := checkers.Check(b.h, opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantAnomaly asserts the verdict names the anomaly, count times, with
// its first witness involving the given operations.
func wantAnomaly(t *testing.T, v checkers.Verdict, name string, count int, ops ...history.ID) checkers.Anomaly {
	t.Helper()
	a, ok := v.Anomaly(name)
	if !ok {
		t.Fatalf("%s not reported:\n%s", name, v.Summary())
	}
	if a.Count != count {
		t.Fatalf("%s reported %d times, want %d:\n%s", name, a.Count, count, v.Summary())
	}
	got := map[history.ID]bool{}
	for _, r := range a.Witnesses[0].Ops {
		got[r.ID] = true
	}
	for _, id := range ops {
		if !got[id] {
			t.Fatalf("%s's first witness does not name op %d:\n%s", name, id, v.Summary())
		}
	}
	return a
}

func wantNo(t *testing.T, v checkers.Verdict, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := v.Anomaly(n); ok {
			t.Fatalf("%s reported but should not be:\n%s", n, v.Summary())
		}
	}
}
