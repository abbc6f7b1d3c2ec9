package model_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
	"github.com/kafkasim/kafkasim/model"
)

func resolve(t *testing.T, h history.History) *model.Resolution {
	t.Helper()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	return model.Resolve(h)
}

func TestARecordOfAnAcknowledgedSendIsMatchedWithTheValueByItsOffset(t *testing.T) {
	r := resolve(t, history.History{
		send(1, "a", 0, 10, history.OK, 0, "x", "y"),
		poll(2, "b", 11, 20, history.ReadUncommitted, 0, rec(0, "x"), rec(1, "y")),
	})
	if got := r.RecordValues; !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("record values %v, want [0 1] (the send's values)", got)
	}
	if r.RecordValue(1) != "y" {
		t.Fatalf("record 1 holds %q", r.RecordValue(1))
	}
}

func TestARecordNoAppendWroteKeepsItsOwnValue(t *testing.T) {
	r := resolve(t, history.History{
		send(1, "a", 0, 10, history.OK, 0, "x"),
		poll(2, "b", 11, 20, history.ReadUncommitted, 0, rec(0, "z"), rec(1, "x")),
	})
	if got := r.RecordValues; !slices.Equal(got, []int32{-1, -1}) {
		t.Fatalf("record values %v: no append wrote z at 0 nor x at 1", got)
	}
	if r.RecordValue(0) != "z" || r.RecordValue(1) != "x" {
		t.Fatalf("records hold %q and %q", r.RecordValue(0), r.RecordValue(1))
	}
}

func TestARecordOfAPinnedSendIsMatchedWithThePinnedValue(t *testing.T) {
	r := resolve(t, history.History{
		send(1, "a", 0, history.Never, history.Info, history.NoOffset, "x"),
		send(2, "b", 5, 10, history.OK, 1, "y"),
		poll(3, "c", 11, 20, history.ReadUncommitted, 0, rec(0, "x"), rec(1, "y")),
	})
	p := r.Partitions[0]
	if len(p.Pinned) != 1 || r.Sends[0].Append < 0 || p.Appends[r.Sends[0].Append].Base != 0 {
		t.Fatalf("the indefinite send is not pinned at 0: %+v", p)
	}
	if got := r.RecordValues; !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("record values %v, want [0 1]", got)
	}
}

func TestARecordOfTheSecondSendAcknowledgedAtAnOffsetIsMatchedWithIt(t *testing.T) {
	r := resolve(t, history.History{
		send(1, "a", 0, 10, history.OK, 0, "x"),
		send(2, "b", 0, 10, history.OK, 0, "y"),
		poll(3, "c", 11, 20, history.ReadUncommitted, 0, rec(0, "y")),
	})
	if got := r.RecordValues; !slices.Equal(got, []int32{1}) {
		t.Fatalf("record values %v, want [1]: y was written at 0, if second", got)
	}
}

func TestAppendsAreOrderedByOffsetThenID(t *testing.T) {
	r := resolve(t, history.History{
		send(3, "a", 0, 10, history.OK, 4, "x"),
		send(1, "b", 0, 10, history.OK, 4, "y"),
		send(2, "c", 0, 10, history.OK, 0, "z"),
	})
	p := r.Partitions[0]
	var ids []history.ID
	for _, i := range p.ByOffset {
		ids = append(ids, p.Appends[i].Op)
	}
	if !slices.Equal(ids, []history.ID{2, 1, 3}) {
		t.Fatalf("appends in offset order: %v, want [2 1 3]", ids)
	}
}

func TestOffsetsCloseTogetherGetACellEachGapIncluded(t *testing.T) {
	r := resolve(t, history.History{
		send(1, "a", 0, 10, history.OK, 10, "x"),
		send(2, "a", 11, 20, history.OK, 13, "y"),
	})
	c := r.Partitions[0].Cells
	if c.Len() != 4 || c.Of(10) != 0 || c.Of(12) != 2 || c.Of(13) != 3 || c.Of(9) != -1 || c.Of(14) != -1 {
		t.Fatalf("dense cells: len %d, of 10, 12, 13, 9, 14: %d %d %d %d %d", c.Len(), c.Of(10), c.Of(12), c.Of(13), c.Of(9), c.Of(14))
	}
	if c.Offset(2) != 12 || c.AtOrAfter(0) != 0 || c.AtOrAfter(12) != 2 || c.AtOrAfter(99) != 4 {
		t.Fatalf("dense cells: offset of 2 %d, at or after 0, 12, 99: %d %d %d", c.Offset(2), c.AtOrAfter(0), c.AtOrAfter(12), c.AtOrAfter(99))
	}
}

func TestOffsetsFarApartGetACellEachAndNoMore(t *testing.T) {
	r := resolve(t, history.History{
		send(1, "a", 0, 10, history.OK, 0, "x"),
		send(2, "a", 11, 20, history.OK, 1<<40, "y"),
		poll(3, "b", 21, 30, history.ReadUncommitted, history.NoOffset, rec(1<<41, "z")),
	})
	c := r.Partitions[0].Cells
	if c.Len() != 3 || c.Of(0) != 0 || c.Of(1<<40) != 1 || c.Of(1<<41) != 2 || c.Of(1) != -1 {
		t.Fatalf("sparse cells: len %d, of 0, 2^40, 2^41, 1: %d %d %d %d", c.Len(), c.Of(0), c.Of(1<<40), c.Of(1<<41), c.Of(1))
	}
	if c.Offset(1) != 1<<40 || c.AtOrAfter(1) != 1 || c.AtOrAfter(1<<41+1) != 3 {
		t.Fatalf("sparse cells: offset of 1 %d, at or after 1, 2^41+1: %d %d", c.Offset(1), c.AtOrAfter(1), c.AtOrAfter(1<<41+1))
	}
}

func TestAFailedSendHasNoAppendAndAPartitionOnlyItWentToHasNoLog(t *testing.T) {
	other := send(2, "a", 0, 10, history.Fail, history.NoOffset, "y")
	other.Send.TP.Partition = 1
	r := resolve(t, history.History{send(1, "a", 0, 10, history.Fail, history.NoOffset, "x"), other,
		send(3, "a", 11, 20, history.OK, 0, "z")})
	if len(r.Partitions) != 1 || r.Sends[0].Append != -1 || r.Sends[0].Part != 0 || r.Sends[1].Part != -1 {
		t.Fatalf("partitions %d, sends %+v", len(r.Partitions), r.Sends)
	}
}

// Logs and Flatten are inverse layouts: a flattened log matches its records
// as the history's resolution does.
func TestAFlattenedLogMatchesItsRecordsAsTheResolutionDoes(t *testing.T) {
	h := history.History{
		send(1, "a", 0, history.Never, history.Info, history.NoOffset, "x"),
		send(2, "b", 5, 10, history.OK, 1, "y"),
		poll(3, "c", 11, 20, history.ReadUncommitted, 0, rec(0, "x"), rec(1, "y"), rec(2, "q")),
	}
	r := resolve(t, h)
	f := model.Flatten(model.Logs(h)[0])
	for i := range r.RecordValues {
		rv, fv := r.RecordValues[i], f.RecordValues[i]
		if (rv < 0) != (fv < 0) || r.RecordValue(int32(i)) != f.RecordValue(int32(i)) {
			t.Fatalf("record %d: resolution %d %q, flattened %d %q", i, rv, r.RecordValue(int32(i)), fv, f.RecordValue(int32(i)))
		}
	}
}

// TestValidatingWhileResolvingIsValidateThenResolve: ValidateAndResolve
// gives Validate's error, the first in the history, and otherwise what
// Resolve gives.
func TestValidatingWhileResolvingIsValidateThenResolve(t *testing.T) {
	h := historytest.Log(historytest.DefaultLogConfig(2000, 3, 4), rand.New(rand.NewPCG(7, 0)))
	r, err := model.ValidateAndResolve(h)
	if err != nil {
		t.Fatal(err)
	}
	if want := model.Resolve(h); !reflect.DeepEqual(r, want) {
		t.Fatal("ValidateAndResolve resolved a valid history differently from Resolve")
	}
	broken := func(f func(h history.History)) history.History {
		c := slices.Clone(h)
		f(c)
		return c
	}
	sendAt := func(h history.History, from int) int {
		for i := from; ; i++ {
			if h[i].Kind == history.KindSend {
				return i
			}
		}
	}
	for name, b := range map[string]history.History{
		"an empty value late": broken(func(h history.History) {
			i := sendAt(h, 1500)
			s := *h[i].Send
			s.Messages = []history.Message{{}}
			h[i].Send = &s
		}),
		// Message values and polled records are checked as they are
		// resolved, after every operation's other fields: an early bad
		// value is still the error named before a later bad field.
		"an empty value early, a bad op late": broken(func(h history.History) {
			i := sendAt(h, 100)
			s := *h[i].Send
			s.Messages = []history.Message{{}}
			h[i].Send = &s
			h[1900].Process = ""
		}),
		"a record at a negative offset early, a bad op late": broken(func(h history.History) {
			for i := 50; ; i++ {
				if p := h[i].Poll; p != nil && len(p.Fetched) > 0 && len(p.Fetched[0].Records) > 0 {
					c := *p
					c.Fetched = slices.Clone(p.Fetched)
					c.Fetched[0].Records = slices.Clone(c.Fetched[0].Records)
					c.Fetched[0].Records[0].Offset = -3
					h[i].Poll = &c
					break
				}
			}
			h[1900].Process = ""
		}),
		"two bad ops": broken(func(h history.History) {
			h[900].Process = ""
			h[sendAt(h, 100)].Call = -1
		}),
		"a duplicate id after a bad op": broken(func(h history.History) {
			h[10].Process = ""
			h[1999].ID = h[5].ID
		}),
		"a sparse history with a bad op": broken(func(h history.History) {
			for i := range h {
				h[i].ID *= 2
			}
			h[1200].Process = ""
		}),
	} {
		want := b.Validate()
		r, err := model.ValidateAndResolve(b)
		if want == nil || err == nil || err.Error() != want.Error() || r != nil {
			t.Errorf("%s: got %v (resolution %v), want %v", name, err, r != nil, want)
		}
	}
}
