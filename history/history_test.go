package history_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
)

var tp = history.TopicPartition{Topic: "t", Partition: 0}

func TestAHistoryRoundTripsThroughJSONLines(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		h := historytest.Log(historytest.DefaultLogConfig(300, 3, 8), rand.New(rand.NewPCG(seed, 0)))
		h = append(h, historytest.Pipeline(historytest.PipelineConfig{Partitions: 2, Producers: 2, Messages: 20, LatencyMax: 50}, rand.New(rand.NewPCG(seed, 1)))...)
		for i := range h {
			h[i].ID = history.ID(i + 1)
		}
		var buf bytes.Buffer
		if err := h.Write(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := history.Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h, back) {
			for i := range h {
				if !reflect.DeepEqual(h[i], back[i]) {
					t.Fatalf("seed %d: op %d differs after a round trip:\n%+v\n%+v", seed, i, h[i], back[i])
				}
			}
			t.Fatalf("seed %d: lengths %d vs %d", seed, len(h), len(back))
		}
	}
}

func TestAnOperationThatNeverReturnedHasNoReturnField(t *testing.T) {
	h := history.History{{ID: 1, Process: "p", Kind: history.KindSend, Call: 5, Return: history.Never, Outcome: history.Info,
		Send: &history.Send{TP: tp, Messages: []history.Message{{Value: "a"}}, Offset: history.NoOffset}}}
	var buf bytes.Buffer
	if err := h.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"return"`) {
		t.Fatalf("never-returned op written with a return: %s", buf.String())
	}
	back, err := history.Read(&buf)
	if err != nil || back[0].Return != history.Never || back[0].Completed() {
		t.Fatalf("read back %+v, %v", back, err)
	}
}

func TestReadingRefusesAMisspeltFieldNamingTheLine(t *testing.T) {
	in := `{"id":1,"process":"p","kind":"nemesis","call":0,"return":1,"outcome":"ok","nemesis":{"description":"x"}}

{"id":2,"process":"p","kind":"nemesis","call":0,"retrun":1,"outcome":"ok","nemesis":{"description":"x"}}
`
	_, err := history.Read(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "retrun") {
		t.Fatalf("got %v, want an error naming line 3 and the field", err)
	}
}

func sendOp(id history.ID, call, ret int64, outcome history.Outcome) history.Op {
	return history.Op{ID: id, Process: "p1", Node: "n1", Kind: history.KindSend, Call: call, Return: ret, Outcome: outcome,
		Send: &history.Send{TP: tp, Messages: []history.Message{{Value: "v"}}, Offset: 0}}
}

func TestValidationNamesTheOperationThatBreaksTheContract(t *testing.T) {
	txnless := sendOp(2, 0, 1, history.OK)
	txnless.Send = &history.Send{TP: tp, Messages: []history.Message{{Value: "v"}}, Txn: 1}
	twoPayloads := sendOp(1, 0, 1, history.OK)
	twoPayloads.Poll = &history.Poll{Isolation: history.ReadCommitted}
	badIso := history.Op{ID: 1, Process: "c", Kind: history.KindPoll, Call: 0, Return: 1, Outcome: history.OK, Poll: &history.Poll{Isolation: "dirty"}}
	for _, tc := range []struct {
		name string
		h    history.History
		want string
	}{
		{"return before call", history.History{sendOp(1, 10, 5, history.OK)}, "op 1 (send by p1 on n1): return 5 before call 10"},
		{"duplicate id", history.History{sendOp(1, 0, 1, history.OK), sendOp(1, 2, 3, history.OK)}, "duplicate id"},
		{"non-positive id", history.History{sendOp(0, 0, 1, history.OK)}, "id 0 is not positive"},
		{"never returned but ok", history.History{sendOp(1, 0, history.Never, history.OK)}, "outcome must be info"},
		{"unknown outcome", history.History{sendOp(1, 0, 1, "maybe")}, `outcome "maybe"`},
		{"txn that is not a txn", history.History{sendOp(1, 0, 1, history.OK), txnless}, "belongs to txn 1, which is not a txn operation"},
		{"two payloads", history.History{twoPayloads}, "has 2 payloads"},
		{"bad isolation", history.History{badIso}, `isolation "dirty"`},
		{"no process", history.History{{ID: 1, Kind: history.KindSeek, Outcome: history.OK, Seek: &history.Seek{}}}, "no process"},
		{"unknown kind", history.History{{ID: 1, Process: "p", Kind: "produce", Outcome: history.OK, Seek: &history.Seek{}}}, `unknown kind "produce"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.h.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIDsNeedNotBeDenseOrOrdered(t *testing.T) {
	h := history.History{sendOp(7, 0, 1, history.OK), sendOp(3, 0, 1, history.OK)}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	x := h.Index()
	if x.Pos(3) != 1 || x.Pos(7) != 0 || x.Pos(1) != -1 {
		t.Fatalf("index wrong: %d %d %d", x.Pos(3), x.Pos(7), x.Pos(1))
	}
}

func TestTheRecorderLeavesUnfinishedOperationsIndefinite(t *testing.T) {
	r := history.NewRecorder()
	a := r.Invoke(history.Op{Process: "p", Node: "n", Kind: history.KindSend, Call: 10,
		Send: &history.Send{TP: tp, Messages: []history.Message{{Value: "a"}}}})
	b := r.Invoke(history.Op{Process: "p", Node: "n", Kind: history.KindSend, Call: 11,
		Send: &history.Send{TP: tp, Messages: []history.Message{{Value: "b"}}}})
	r.Complete(a, 20, history.OK, history.Result{Offset: 4})
	r.Nemesis(15, 30, "partition leader", "b1")
	h := r.History()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	if h[0].Send.Offset != 4 || h[0].Outcome != history.OK || h[0].Return != 20 {
		t.Fatalf("completed op recorded as %+v", h[0])
	}
	if h[1].ID != b || h[1].Outcome != history.Info || h[1].Completed() {
		t.Fatalf("pending op recorded as %+v", h[1])
	}
	if h[2].Kind != history.KindNemesis || h[2].Nemesis.Nodes[0] != "b1" {
		t.Fatalf("nemesis recorded as %+v", h[2])
	}
	// Completing later does not change a history already taken.
	r.Complete(b, 40, history.Fail, history.Result{Offset: history.NoOffset, Error: "NOT_ENOUGH_REPLICAS"})
	if h[1].Outcome != history.Info || r.History()[1].Outcome != history.Fail {
		t.Fatal("a history snapshot changed after the fact")
	}
}

func TestTheRecorderRefusesToCompleteTwiceOrBeforeTheCall(t *testing.T) {
	mustPanic := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), want) {
				t.Fatalf("%s: panic %v, want one containing %q", name, r, want)
			}
		}()
		f()
	}
	r := history.NewRecorder()
	id := r.Invoke(history.Op{Process: "p", Kind: history.KindCommit, Call: 10, Commit: &history.Commit{Group: "g"}})
	mustPanic("before call", "return 5 before call 10", func() { r.Complete(id, 5, history.OK, history.Result{}) })
	r.Complete(id, 12, history.OK, history.Result{})
	mustPanic("twice", "already completed at 12", func() { r.Complete(id, 13, history.OK, history.Result{}) })
	mustPanic("unknown", "Complete(op 9): no such operation", func() { r.Complete(9, 13, history.OK, history.Result{}) })
	mustPanic("no payload", "needs exactly one payload", func() { r.Invoke(history.Op{Process: "p", Kind: history.KindPoll}) })
}

// TestSamplesOfAGrowingLogAreCheckedInFullThoughTheyShareAnArray: the
// sampler hands each sample of a log that only grew a view of one array,
// and validation checks only what a view adds; a batch out of order that
// a later view adds is still found, and a view of another array is
// checked from its start.
func TestSamplesOfAGrowingLogAreCheckedInFullThoughTheyShareAnArray(t *testing.T) {
	arr := make([]history.ReplicaBatch, 0, 8)
	arr = append(arr, history.ReplicaBatch{Base: 0, Last: 1}, history.ReplicaBatch{Base: 2, Last: 3})
	sample := func(b []history.ReplicaBatch) history.Op {
		return history.Op{Process: "reader", Kind: history.KindReplica, Outcome: history.OK,
			Replica: &history.Replica{TP: tp, Broker: "broker-0", Batches: b}}
	}
	first := sample(arr)
	grown := append(arr, history.ReplicaBatch{Base: 4, Last: 4})
	bad := append(grown, history.ReplicaBatch{Base: 3, Last: 5}) // overlaps [2..3]'s successor
	h := history.History{first, sample(grown), sample(bad)}
	for i := range h {
		h[i].ID = history.ID(i + 1)
	}
	if err := h[:2].Validate(); err != nil {
		t.Fatalf("in order, yet: %v", err)
	}
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "batch [3..5] out of order") {
		t.Fatalf("got %v, want batch [3..5] out of order", err)
	}
	h[2] = sample([]history.ReplicaBatch{{Base: 0, Last: 1}, {Base: 1, Last: 1}})
	h[2].ID = 3
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "batch [1..1] out of order") {
		t.Fatalf("got %v, want batch [1..1] out of order", err)
	}
}
