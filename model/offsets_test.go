package model_test

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/model"
	"pgregory.net/rapid"
)

// A commit whose outcome is unknown and whose offset nobody read cannot
// decide a register, so CheckOffsets leaves it out of porcupine's search.
// This property holds it to porcupine's verdict on the whole register, over
// small registers where that search is cheap: offsets from a small set (so
// values repeat and come back, A-B-A), commits ok or unknown, fetches
// overlapping them.
func TestPropertyUnreadUnknownCommitsDecideNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "ops")
		var h history.History
		for i := range n {
			id := history.ID(i + 1)
			call := rapid.Int64Range(0, 40).Draw(t, "call")
			ret := call + rapid.Int64Range(0, 10).Draw(t, "length")
			off := rapid.Int64Range(-1, 3).Draw(t, "offset") // -1: NoOffset
			proc := string(rune('a' + i))                    // one process an operation: any overlap
			if rapid.Bool().Draw(t, "fetch") {
				h = append(h, history.Op{ID: id, Process: proc, Kind: history.KindOffsetFetch, Call: call, Return: ret, Outcome: history.OK,
					OffsetFetch: &history.OffsetFetch{Group: "g", Offsets: []history.PartitionOffset{{TP: tp0, Offset: off}}}})
				continue
			}
			outcome := history.OK
			if rapid.Bool().Draw(t, "unknown") {
				outcome, ret = history.Info, history.Never
			}
			if off < 0 {
				off = 0
			}
			h = append(h, history.Op{ID: id, Process: proc, Kind: history.KindCommit, Call: call, Return: ret, Outcome: outcome,
				Commit: &history.Commit{Group: "g", Offsets: []history.PartitionOffset{{TP: tp0, Offset: off}}}})
		}
		if err := h.Validate(); err != nil {
			t.Skip(err)
		}
		for _, reg := range model.OffsetRegisters(h) {
			m := model.OffsetModel()
			m.Partition = nil
			whole := porcupine.CheckOperationsTimeout(m, reg.Ops, 10*time.Second)
			if got := model.CheckOffsets(reg, 10*time.Second); got != whole {
				t.Fatalf("%d operations, %d observed: CheckOffsets says %s, porcupine on the whole register %s",
					len(reg.Ops), len(reg.Observed()), got, whole)
			}
		}
	})
}

func TestObservedLeavesOutOnlyUnreadUnknownCommits(t *testing.T) {
	commit := func(id history.ID, call, ret int64, outcome history.Outcome, off int64) history.Op {
		return history.Op{ID: id, Process: "p", Kind: history.KindCommit, Call: call, Return: ret, Outcome: outcome,
			Commit: &history.Commit{Group: "g", Offsets: []history.PartitionOffset{{TP: tp0, Offset: off}}}}
	}
	h := history.History{
		commit(1, 0, history.Never, history.Info, 4), // unknown, read: kept
		commit(2, 1, history.Never, history.Info, 5), // unknown, unread: left out
		commit(3, 2, 3, history.OK, 6),               // definite, unread: kept
		{ID: 4, Process: "q", Kind: history.KindOffsetFetch, Call: 4, Return: 5, Outcome: history.OK,
			OffsetFetch: &history.OffsetFetch{Group: "g", Offsets: []history.PartitionOffset{{TP: tp0, Offset: 4}}}},
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	var kept []history.ID
	for _, op := range model.OffsetRegisters(h)[0].Observed() {
		kept = append(kept, op.Metadata.(model.Meta).Op)
	}
	if len(kept) != 3 || kept[0] != 1 || kept[1] != 3 || kept[2] != 4 {
		t.Fatalf("observed operations %v, want [1 3 4]", kept)
	}
}
