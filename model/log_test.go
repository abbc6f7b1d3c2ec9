package model_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
	"github.com/kafkasim/kafkasim/model"
)

var tp0 = history.TopicPartition{Topic: "t", Partition: 0}

func send(id history.ID, proc string, call, ret int64, outcome history.Outcome, offset int64, values ...string) history.Op {
	var ms []history.Message
	for _, v := range values {
		ms = append(ms, history.Message{Value: v})
	}
	return history.Op{ID: id, Process: proc, Kind: history.KindSend, Call: call, Return: ret, Outcome: outcome,
		Send: &history.Send{TP: tp0, Messages: ms, Offset: offset}}
}

func poll(id history.ID, proc string, call, ret int64, iso history.Isolation, from int64, recs ...history.Record) history.Op {
	return history.Op{ID: id, Process: proc, Kind: history.KindPoll, Call: call, Return: ret, Outcome: history.OK,
		Poll: &history.Poll{Isolation: iso, Fetched: []history.Fetch{{TP: tp0, From: from, Records: recs}}}}
}

func rec(offset int64, v string) history.Record {
	return history.Record{Offset: offset, Message: history.Message{Value: v}}
}

func checkOne(t *testing.T, h history.History) porcupine.CheckResult {
	t.Helper()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := model.Logs(h)
	res := porcupine.Ok
	for _, l := range logs {
		if r := model.CheckLog(l, 5*time.Second); r != porcupine.Ok {
			res = r
		}
	}
	return res
}

func TestSequentialAppendsAndAReadOfThemAreLinearizable(t *testing.T) {
	h := history.History{
		send(1, "a", 0, 10, history.OK, 0, "x"),
		send(2, "a", 11, 20, history.OK, 1, "y", "z"),
		poll(3, "b", 21, 30, history.ReadUncommitted, 0, rec(0, "x"), rec(1, "y"), rec(2, "z")),
	}
	if r := checkOne(t, h); r != porcupine.Ok {
		t.Fatalf("got %s", r)
	}
}

func TestAReadSkippingAnAcknowledgedEntryIsIllegal(t *testing.T) {
	h := history.History{
		send(1, "a", 0, 10, history.OK, 0, "x"),
		send(2, "a", 11, 20, history.OK, 1, "y"),
		poll(3, "b", 21, 30, history.ReadUncommitted, history.NoOffset, rec(0, "x"), rec(2, "z")),
		send(4, "c", 0, 40, history.Info, history.NoOffset, "z"),
	}
	if r := checkOne(t, h); r != porcupine.Illegal {
		t.Fatalf("got %s", r)
	}
}

func TestAnIndefiniteSendThatWasReadIsPinnedAndLegal(t *testing.T) {
	h := history.History{
		send(1, "a", 0, history.Never, history.Info, history.NoOffset, "x"),
		send(2, "b", 5, 10, history.OK, 1, "y"),
		poll(3, "c", 11, 20, history.ReadUncommitted, 0, rec(0, "x"), rec(1, "y")),
	}
	if r := checkOne(t, h); r != porcupine.Ok {
		t.Fatalf("got %s", r)
	}
	logs := model.Logs(h)
	if len(logs[0].Pinned) != 1 || logs[0].Pinned[0] != 1 {
		t.Fatalf("pinned %v, want [1]", logs[0].Pinned)
	}
}

func TestAnUnobservedIndefiniteSendIsDropped(t *testing.T) {
	h := history.History{
		send(1, "a", 0, 3, history.Info, history.NoOffset, "x"),
		send(2, "b", 5, 10, history.OK, 0, "y"),
		poll(3, "c", 11, 20, history.ReadUncommitted, 0, rec(0, "y")),
	}
	if r := checkOne(t, h); r != porcupine.Ok {
		t.Fatalf("got %s", r)
	}
	if d := model.Logs(h)[0].Dropped; len(d) != 1 || d[0] != 1 {
		t.Fatalf("dropped %v, want [1]", d)
	}
}

func TestALaterSendGettingALowerOffsetIsIllegal(t *testing.T) {
	h := history.History{
		send(1, "a", 0, 10, history.OK, 5, "x"),
		send(2, "b", 11, 20, history.OK, 3, "y"),
	}
	if r := checkOne(t, h); r != porcupine.Illegal {
		t.Fatalf("got %s", r)
	}
}

func TestReadCommittedSkipsAbortedEntriesButMustNotReturnThem(t *testing.T) {
	txn := history.Op{ID: 1, Process: "a", Kind: history.KindTxn, Call: 0, Return: 30, Outcome: history.Fail, Txn: &history.Txn{TransactionalID: "t"}}
	s := send(2, "a", 1, 10, history.OK, 0, "x")
	s.Send.Txn = 1
	ok := send(3, "b", 31, 40, history.OK, 2, "y")
	skip := poll(4, "c", 41, 50, history.ReadCommitted, 0, rec(2, "y"))
	if r := checkOne(t, history.History{txn, s, ok, skip}); r != porcupine.Ok {
		t.Fatalf("read_committed skipping an aborted entry: got %s", r)
	}
	dirty := poll(4, "c", 41, 50, history.ReadCommitted, 0, rec(0, "x"), rec(2, "y"))
	if r := checkOne(t, history.History{txn, s, ok, dirty}); r != porcupine.Illegal {
		t.Fatalf("read_committed returning an aborted entry: got %s", r)
	}
	uncommitted := poll(4, "c", 41, 50, history.ReadUncommitted, 0, rec(2, "y"))
	if r := checkOne(t, history.History{txn, s, ok, uncommitted}); r != porcupine.Illegal {
		t.Fatalf("read_uncommitted skipping an aborted entry: got %s", r)
	}
}

func TestGeneratedCorrectHistoriesAreLinearizable(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		h := historytest.Log(historytest.DefaultLogConfig(60, 1+int(seed%3), 1+int(seed%6)), r)
		if res := checkOne(t, h); res != porcupine.Ok {
			t.Fatalf("seed %d: %s", seed, res)
		}
	}
}

func TestCommittedOffsetsAreARegister(t *testing.T) {
	c := func(id history.ID, call, ret int64, outcome history.Outcome, off int64) history.Op {
		return history.Op{ID: id, Process: "p", Kind: history.KindCommit, Call: call, Return: ret, Outcome: outcome,
			Commit: &history.Commit{Group: "g", Offsets: []history.PartitionOffset{{TP: tp0, Offset: off}}}}
	}
	f := func(id history.ID, call, ret int64, off int64) history.Op {
		return history.Op{ID: id, Process: "q", Kind: history.KindOffsetFetch, Call: call, Return: ret, Outcome: history.OK,
			OffsetFetch: &history.OffsetFetch{Group: "g", Offsets: []history.PartitionOffset{{TP: tp0, Offset: off}}}}
	}
	check := func(h history.History) porcupine.CheckResult {
		if err := h.Validate(); err != nil {
			t.Fatal(err)
		}
		regs := model.OffsetRegisters(h)
		if len(regs) != 1 {
			t.Fatalf("%d registers", len(regs))
		}
		return model.CheckOffsets(regs[0], time.Second)
	}
	if r := check(history.History{f(1, 0, 1, history.NoOffset), c(2, 2, 3, history.OK, 5), f(3, 4, 5, 5)}); r != porcupine.Ok {
		t.Fatalf("fresh commit read back: %s", r)
	}
	if r := check(history.History{c(1, 2, 3, history.OK, 5), f(2, 4, 5, history.NoOffset)}); r != porcupine.Illegal {
		t.Fatalf("stale fetch after a commit: %s", r)
	}
	if r := check(history.History{c(1, 2, 3, history.Info, 7), f(2, 4, 5, 7), f(3, 6, 7, 7)}); r != porcupine.Ok {
		t.Fatalf("indefinite commit observed: %s", r)
	}
	if r := check(history.History{c(1, 2, 3, history.Fail, 7), f(2, 4, 5, 7)}); r != porcupine.Illegal {
		t.Fatalf("failed commit observed: %s", r)
	}
}

func TestCheckWithoutATimeoutPanicsWithItsName(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("no panic")
		}
	}()
	model.CheckLog(model.Log{}, 0)
}
