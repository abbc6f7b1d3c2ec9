package checkers

import (
	"fmt"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/model"
)

// LogResult is the linearizability verdict on one partition log.
type LogResult struct {
	TP     history.TopicPartition
	Result porcupine.CheckResult // Ok, Illegal, or Unknown (porcupine timed out)
	// Violation is the first reason an Illegal log is illegal (nil from
	// porcupine, which does not say).
	Violation *LogViolation
}

// LogViolation says why a partition log is not linearizable.
type LogViolation struct {
	Anomaly string // the closest anomaly name: inconsistent-offsets, offset-order, ...
	Offset  int64
	Ops     []history.ID
	Message string
}

func (v *LogViolation) String() string { return v.Anomaly + ": " + v.Message }

type slot struct {
	offset int64
	value  string
	vis    model.Visibility
	app    int // position in the offset-sorted appends
	seen   bool
}

// CheckLog decides, in O(n log n), the question model.LogModel poses to
// porcupine, using the offsets the broker assigned.
//
// Appends must take effect in offset order (each goes at or after the log
// end), so their linearization order is given: sort by base offset, refuse
// two appends at one offset, and place each at the earliest moment allowed
// (the latest call among it and every lower append); it must not be after
// its own return. A read then only needs its records to be the log's
// entries at their offsets, the entries its isolation level requires in
// [From, last record] all present, and a moment between its call and return
// after the append of its last record — reads change nothing, so they never
// constrain appends. The differential test holds this to porcupine's
// verdicts.
func CheckLog(l model.Log) LogResult {
	res := LogResult{TP: l.TP, Result: porcupine.Ok}
	if v := checkLog(l); v != nil {
		res.Result, res.Violation = porcupine.Illegal, v
	}
	return res
}

func checkLog(l model.Log) *LogViolation {
	var apps []*model.LogOp
	var reads []*model.LogOp
	for i := range l.Ops {
		if l.Ops[i].Input.Read {
			reads = append(reads, &l.Ops[i])
		} else {
			apps = append(apps, &l.Ops[i])
		}
	}
	slices.SortFunc(apps, func(a, b *model.LogOp) int {
		if a.Output.Offset != b.Output.Offset {
			return cmp64(a.Output.Offset, b.Output.Offset)
		}
		return int(a.Op - b.Op)
	})
	n := 0
	for _, a := range apps {
		n += len(a.Input.Values)
	}
	slots := make([]slot, 0, n)
	for i, a := range apps {
		for k, v := range a.Input.Values {
			slots = append(slots, slot{offset: a.Output.Offset + int64(k), value: v, vis: a.Input.Visibility, app: i})
		}
	}
	slices.SortFunc(slots, func(a, b slot) int {
		if c := cmp64(a.offset, b.offset); c != 0 {
			return c
		}
		return a.app - b.app
	})
	for i := 1; i < len(slots); i++ {
		if a, b := slots[i-1], slots[i]; a.offset == b.offset {
			x, y := apps[a.app], apps[b.app]
			return &LogViolation{Anomaly: "inconsistent-offsets", Offset: a.offset, Ops: []history.ID{x.Op, y.Op},
				Message: fmt.Sprintf("%s: op %d wrote %q and op %d wrote %q at offset %d", l.TP, x.Op, a.value, y.Op, b.value, a.offset)}
		}
	}
	// Earliest linearization point of each append, in offset order.
	lin := make([]int64, len(apps))
	cur, curOp := int64(-1<<63), -1
	for i, a := range apps {
		if a.Call > cur {
			cur, curOp = a.Call, i
		}
		lin[i] = cur
		if cur > a.Return {
			b := apps[curOp]
			return &LogViolation{Anomaly: "offset-order", Offset: a.Output.Offset, Ops: []history.ID{a.Op, b.Op},
				Message: fmt.Sprintf("%s: op %d returned offset %d at %d, but op %d, invoked later at %d, got the lower offset %d",
					l.TP, a.Op, a.Output.Offset, a.Return, b.Op, b.Call, b.Output.Offset)}
		}
	}
	offsets := make([]int64, len(slots))
	visiblePrefix := make([]int, len(slots)+1)
	for i, s := range slots {
		offsets[i] = s.offset
		visiblePrefix[i+1] = visiblePrefix[i]
		if s.vis == model.Visible {
			visiblePrefix[i+1]++
		}
	}
	find := func(off int64) int {
		i := sort.Search(len(offsets), func(i int) bool { return offsets[i] >= off })
		if i < len(offsets) && offsets[i] == off {
			return i
		}
		return -1
	}
	// First pass: mark entries some read returned, to tell a skip from a loss.
	for _, r := range reads {
		for _, e := range r.Output.Records {
			if i := find(e.Offset); i >= 0 && slots[i].value == e.Value {
				slots[i].seen = true
			}
		}
	}
	var writer map[string]int64
	for _, r := range reads {
		recs := r.Output.Records
		for i := 1; i < len(recs); i++ {
			if recs[i].Offset <= recs[i-1].Offset {
				return &LogViolation{Anomaly: "nonmonotonic-poll", Offset: recs[i].Offset, Ops: []history.ID{r.Op},
					Message: fmt.Sprintf("%s: op %d returned offset %d after offset %d", l.TP, r.Op, recs[i].Offset, recs[i-1].Offset)}
			}
		}
		lo, hi := r.Input.From, recs[len(recs)-1].Offset
		if lo < 0 {
			lo = recs[0].Offset
		}
		if recs[0].Offset < lo {
			return &LogViolation{Anomaly: "nonmonotonic-poll", Offset: recs[0].Offset, Ops: []history.ID{r.Op},
				Message: fmt.Sprintf("%s: op %d fetched from %d but returned offset %d", l.TP, r.Op, lo, recs[0].Offset)}
		}
		required := 0
		for _, e := range recs {
			i := find(e.Offset)
			if i < 0 {
				if writer == nil {
					writer = make(map[string]int64, len(slots))
					for _, s := range slots {
						if _, dup := writer[s.value]; !dup {
							writer[s.value] = s.offset
						}
					}
				}
				if at, ok := writer[e.Value]; ok {
					return &LogViolation{Anomaly: "duplicate", Offset: e.Offset, Ops: []history.ID{r.Op, apps[slots[find(at)].app].Op},
						Message: fmt.Sprintf("%s: op %d read %q at offset %d, but op %d wrote it at offset %d", l.TP, r.Op, e.Value, e.Offset, apps[slots[find(at)].app].Op, at)}
				}
				return &LogViolation{Anomaly: "garbage-read", Offset: e.Offset, Ops: []history.ID{r.Op},
					Message: fmt.Sprintf("%s: op %d read %q at offset %d, which no send that may have happened wrote", l.TP, r.Op, e.Value, e.Offset)}
			}
			s := slots[i]
			if s.value != e.Value {
				return &LogViolation{Anomaly: "inconsistent-offsets", Offset: e.Offset, Ops: []history.ID{r.Op, apps[s.app].Op},
					Message: fmt.Sprintf("%s: op %d read %q at offset %d, where op %d wrote %q", l.TP, r.Op, e.Value, e.Offset, apps[s.app].Op, s.value)}
			}
			if r.Input.Committed && s.vis == model.Aborted {
				return &LogViolation{Anomaly: "G1a", Offset: e.Offset, Ops: []history.ID{r.Op, apps[s.app].Op},
					Message: fmt.Sprintf("%s: read_committed op %d read %q at offset %d, written by aborted transaction of op %d", l.TP, r.Op, e.Value, e.Offset, apps[s.app].Op)}
			}
			if !r.Input.Committed || s.vis == model.Visible {
				required++
			}
		}
		first := sort.Search(len(offsets), func(i int) bool { return offsets[i] >= lo })
		last := find(hi)
		want := last + 1 - first
		if r.Input.Committed {
			want = visiblePrefix[last+1] - visiblePrefix[first]
		}
		if required != want {
			got := map[int64]bool{}
			for _, e := range recs {
				got[e.Offset] = true
			}
			for i := first; i <= last; i++ {
				s := slots[i]
				if got[s.offset] || (r.Input.Committed && s.vis != model.Visible) {
					continue
				}
				name, how := "lost-write", "which no read ever returned"
				if s.seen {
					name, how = "poll-skip", "which other reads returned"
				}
				return &LogViolation{Anomaly: name, Offset: s.offset, Ops: []history.ID{r.Op, apps[s.app].Op},
					Message: fmt.Sprintf("%s: op %d read %d..%d but skipped %q at offset %d written by op %d, %s", l.TP, r.Op, lo, hi, s.value, s.offset, apps[s.app].Op, how)}
			}
			panic(fmt.Sprintf("checkers: CheckLog: %s op %d: required count %d != %d but no skipped entry found", l.TP, r.Op, required, want))
		}
		if a := slots[last].app; lin[a] > r.Return {
			late := apps[a]
			for j := a; j >= 0; j-- {
				if apps[j].Call == lin[a] {
					late = apps[j]
					break
				}
			}
			return &LogViolation{Anomaly: "future-read", Offset: hi, Ops: []history.ID{r.Op, late.Op},
				Message: fmt.Sprintf("%s: op %d returned at %d having read up to offset %d, but op %d, at offset %d, was only invoked at %d", l.TP, r.Op, r.Return, hi, late.Op, late.Output.Offset, late.Call)}
		}
	}
	return nil
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
