package checkers

import (
	"fmt"
	"math"
	"slices"

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

// CheckLog decides, in O(n log n), the question model.LogModel poses to
// porcupine, using the offsets the broker assigned.
//
// Appends must take effect in offset order (each goes at or after the log
// end), so their linearization order is given: sort by base offset, refuse
// two appends at one offset, and place each at the earliest moment allowed
// (the latest call among it and every lower append); it must not be after
// its own return. A read then only needs its records to be the log's
// entries at their offsets, the entries its isolation level requires in
// [From, last record] all present (in a compacted partition, all but those
// a log cleaner may have removed), and a moment between its call and return
// after the append of its last record — reads change nothing, so they never
// constrain appends. The differential test holds this to porcupine's
// verdicts.
func CheckLog(l model.Log) LogResult {
	return checkLogs(model.Flatten(l))[0]
}

// checkLogs is CheckLog on every partition of a resolution, in linear
// time: the resolution has each partition's appends sorted by offset and
// each record matched with the value written at its offset. It walks the
// reads once, in history order, each partition's checked until its first
// violation.
func checkLogs(r *model.Resolution) []LogResult {
	res := make([]LogResult, len(r.Partitions))
	checks := make([]logCheck, len(r.Partitions))
	for i := range r.Partitions {
		p := &r.Partitions[i]
		res[i] = LogResult{TP: p.TP, Result: porcupine.Ok}
		checks[i] = logCheck{r: r, p: p}
		checks[i].violation = checks[i].appends()
	}
	for ri := range r.Reads {
		rd := &r.Reads[ri]
		if c := &checks[rd.Part]; c.violation == nil {
			c.violation = c.read(rd)
		}
	}
	for i := range checks {
		if v := checks[i].violation; v != nil {
			res[i].Result, res[i].Violation = porcupine.Illegal, v
		}
	}
	return res
}

// logCheck is one partition log being checked. Its slots are the appends'
// values in offset order, one per offset once no two appends overlap.
type logCheck struct {
	r         *model.Resolution
	p         *model.Partition
	violation *LogViolation  // the first found
	apps      []model.Append // p.Appends
	order     []int32        // p.ByOffset
	lin       []int64        // per append in offset order: its earliest linearization point
	// before[c] is how many slots lie in cells below c; slot s holds value
	// slotValue[s] (an index into the resolution's Values) of visibility
	// slotVis[s], written by apps[order[slotApp[s]]]; visible[s] is how
	// many slots below s a read_committed reader must see. In a compacted
	// partition removable[s] says a log cleaner may have removed slot s,
	// need[s] is how many slots below s a read_uncommitted reader must see
	// (those it may not have removed), and visible counts only those too.
	before    []int32
	slotValue []int32
	slotVis   []model.Visibility
	slotApp   []int32
	visible   []int32
	removable []bool
	need      []int32
	seen      []bool // per slot: some read returned it (computed when a read skipped one)
}

// app is the append that wrote slot s.
func (c *logCheck) app(s int32) *model.Append { return &c.apps[c.order[c.slotApp[s]]] }

// slot is the slot at an offset, or -1 if no append wrote there.
func (c *logCheck) slot(off int64) int32 {
	cell := c.p.Cells.Of(off)
	if cell < 0 || c.before[cell+1] == c.before[cell] {
		return -1
	}
	return c.before[cell]
}

// offset is slot s's offset.
func (c *logCheck) offset(s int32) int64 {
	a := c.app(s)
	return a.Base + int64(c.slotValue[s]-a.Value)
}

// appends checks the appends alone — no two at one offset, each placed
// before its return — and lays out the slots the reads are checked
// against.
func (c *logCheck) appends() *LogViolation {
	p := c.p
	c.apps, c.order = p.Appends, p.ByOffset
	apps, order := c.apps, c.order
	end, nslots := int64(math.MinInt64), 0
	for _, i := range order {
		a := &apps[i]
		if a.Count == 0 {
			continue
		}
		if a.Base < end {
			return c.overlap()
		}
		end = a.Base + int64(a.Count)
		nslots += int(a.Count)
	}
	c.lin = make([]int64, len(order))
	cur, curOp := int64(math.MinInt64), -1
	for i, ai := range order {
		a := &apps[ai]
		if a.Call > cur {
			cur, curOp = a.Call, i
		}
		c.lin[i] = cur
		if cur > a.Return {
			b := &apps[order[curOp]]
			return &LogViolation{Anomaly: "offset-order", Offset: a.Base, Ops: []history.ID{a.Op, b.Op},
				Message: fmt.Sprintf("%s: op %d returned offset %d at %d, but op %d, invoked later at %d, got the lower offset %d",
					p.TP, a.Op, a.Base, a.Return, b.Op, b.Call, b.Base)}
		}
	}
	c.before = make([]int32, p.Cells.Len()+1)
	c.slotValue, c.slotVis, c.slotApp = make([]int32, 0, nslots), make([]model.Visibility, 0, nslots), make([]int32, 0, nslots)
	c.visible = make([]int32, 1, nslots+1)
	if p.Removable != nil {
		c.removable, c.need = make([]bool, 0, nslots), make([]int32, 1, nslots+1)
	}
	for oi, ai := range order {
		a := &apps[ai]
		for k := int64(0); k < int64(a.Count); k++ {
			cell := p.Cells.Of(a.Base + k)
			c.before[cell+1] = 1
			c.slotValue, c.slotVis = append(c.slotValue, a.Value+int32(k)), append(c.slotVis, a.Visibility)
			c.slotApp = append(c.slotApp, int32(oi))
			n := c.visible[len(c.visible)-1]
			removable := p.Removable != nil && p.Removable[cell]
			if a.Visibility == model.Visible && !removable {
				n++
			}
			c.visible = append(c.visible, n)
			if c.need != nil {
				n := c.need[len(c.need)-1]
				if !removable {
					n++
				}
				c.removable, c.need = append(c.removable, removable), append(c.need, n)
			}
		}
	}
	for cell := 1; cell < len(c.before); cell++ {
		c.before[cell] += c.before[cell-1]
	}
	return nil
}

// read checks one read against the slots.
func (c *logCheck) read(rd *model.Read) *LogViolation {
	r, p, apps, order := c.r, c.p, c.apps, c.order
	offs := r.RecordOffsets[rd.Record : rd.Record+rd.Count]
	vals := r.RecordValues[rd.Record : rd.Record+rd.Count]
	for i := 1; i < len(offs); i++ {
		if offs[i] <= offs[i-1] {
			return &LogViolation{Anomaly: "nonmonotonic-poll", Offset: offs[i], Ops: []history.ID{rd.Op},
				Message: fmt.Sprintf("%s: op %d returned offset %d after offset %d", p.TP, rd.Op, offs[i], offs[i-1])}
		}
	}
	lo, hi := rd.From, offs[len(offs)-1]
	if lo < 0 {
		lo = offs[0]
	}
	if offs[0] < lo {
		return &LogViolation{Anomaly: "nonmonotonic-poll", Offset: offs[0], Ops: []history.ID{rd.Op},
			Message: fmt.Sprintf("%s: op %d fetched from %d but returned offset %d", p.TP, rd.Op, lo, offs[0])}
	}
	required := int32(0)
	for j, off := range offs {
		s := c.slot(off)
		if s < 0 {
			return c.unwritten(rd, rd.Record+int32(j))
		}
		if sv := c.slotValue[s]; vals[j] != sv {
			a := c.app(s)
			return &LogViolation{Anomaly: "inconsistent-offsets", Offset: off, Ops: []history.ID{rd.Op, a.Op},
				Message: fmt.Sprintf("%s: op %d read %q at offset %d, where op %d wrote %q", p.TP, rd.Op, r.RecordValue(rd.Record+int32(j)), off, a.Op, r.Values[sv])}
		}
		vis := c.slotVis[s]
		if rd.Committed && vis == model.Aborted {
			a := c.app(s)
			return &LogViolation{Anomaly: "G1a", Offset: off, Ops: []history.ID{rd.Op, a.Op},
				Message: fmt.Sprintf("%s: read_committed op %d read %q at offset %d, written by aborted transaction of op %d", p.TP, rd.Op, r.Values[vals[j]], off, a.Op)}
		}
		if (!rd.Committed || vis == model.Visible) && !c.removed(s) {
			required++
		}
	}
	first := c.before[p.Cells.AtOrAfter(lo)]
	last := c.slot(hi)
	want := last + 1 - first
	if rd.Committed {
		want = c.visible[last+1] - c.visible[first]
	} else if c.need != nil {
		want = c.need[last+1] - c.need[first]
	}
	if required != want {
		return c.skipped(rd, lo, hi, first, last)
	}
	if a := c.slotApp[last]; c.lin[a] > rd.Return {
		late := &apps[order[a]]
		for j := a; j >= 0; j-- {
			if apps[order[j]].Call == c.lin[a] {
				late = &apps[order[j]]
				break
			}
		}
		return &LogViolation{Anomaly: "future-read", Offset: hi, Ops: []history.ID{rd.Op, late.Op},
			Message: fmt.Sprintf("%s: op %d returned at %d having read up to offset %d, but op %d, at offset %d, was only invoked at %d", p.TP, rd.Op, rd.Return, hi, late.Op, late.Base, late.Call)}
	}
	return nil
}

// overlap names the lowest offset two appends wrote and the first two
// appends (in offset order) that wrote it.
func (c *logCheck) overlap() *LogViolation {
	type slot struct {
		offset int64
		value  string
		app    int // position in the offset-sorted appends
	}
	var slots []slot
	for i, ai := range c.order {
		a := &c.apps[ai]
		for k := int32(0); k < a.Count; k++ {
			slots = append(slots, slot{offset: a.Base + int64(k), value: c.r.Values[a.Value+k], app: i})
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
			x, y := &c.apps[c.order[a.app]], &c.apps[c.order[b.app]]
			return &LogViolation{Anomaly: "inconsistent-offsets", Offset: a.offset, Ops: []history.ID{x.Op, y.Op},
				Message: fmt.Sprintf("%s: op %d wrote %q and op %d wrote %q at offset %d", c.p.TP, x.Op, a.value, y.Op, b.value, a.offset)}
		}
	}
	panic(fmt.Sprintf("checkers: CheckLog: %s: appends overlap but no offset holds two values", c.p.TP))
}

// unwritten names a record at an offset no append wrote: a duplicate if
// some append wrote its value elsewhere (the first in offset order), else
// garbage.
func (c *logCheck) unwritten(rd *model.Read, rec int32) *LogViolation {
	r, p := c.r, c.p
	v, off := r.RecordValue(rec), r.RecordOffsets[rec]
	for s := range int32(len(c.slotValue)) {
		if r.Values[c.slotValue[s]] == v {
			w := c.app(s).Op
			at := c.offset(s)
			return &LogViolation{Anomaly: "duplicate", Offset: off, Ops: []history.ID{rd.Op, w},
				Message: fmt.Sprintf("%s: op %d read %q at offset %d, but op %d wrote it at offset %d", p.TP, rd.Op, v, off, w, at)}
		}
	}
	return &LogViolation{Anomaly: "garbage-read", Offset: off, Ops: []history.ID{rd.Op},
		Message: fmt.Sprintf("%s: op %d read %q at offset %d, which no send that may have happened wrote", p.TP, rd.Op, v, off)}
}

// skipped names the first entry in slots first..last that read rd had to
// return and did not: a poll-skip if another read returned it, else a
// lost-write.
func (c *logCheck) skipped(rd *model.Read, lo, hi int64, first, last int32) *LogViolation {
	r, p := c.r, c.p
	got := map[int64]bool{}
	for _, off := range r.RecordOffsets[rd.Record : rd.Record+rd.Count] {
		got[off] = true
	}
	for s := first; s <= last; s++ {
		a := c.app(s)
		off := c.offset(s)
		if got[off] || (rd.Committed && a.Visibility != model.Visible) || c.removed(s) {
			continue
		}
		name, how := "lost-write", "which no read ever returned"
		if c.seenSlot(s) {
			name, how = "poll-skip", "which other reads returned"
		}
		return &LogViolation{Anomaly: name, Offset: off, Ops: []history.ID{rd.Op, a.Op},
			Message: fmt.Sprintf("%s: op %d read %d..%d but skipped %q at offset %d written by op %d, %s", p.TP, rd.Op, lo, hi, r.Values[c.slotValue[s]], off, a.Op, how)}
	}
	panic(fmt.Sprintf("checkers: CheckLog: %s op %d: a read skipped a required entry but none is missing", p.TP, rd.Op))
}

// removed: a log cleaner may have removed slot s (a compacted partition's:
// model.Resolution.Compact).
func (c *logCheck) removed(s int32) bool { return c.removable != nil && c.removable[s] }

// seenSlot reports whether some read returned slot s.
func (c *logCheck) seenSlot(s int32) bool {
	if c.seen == nil {
		c.seen = make([]bool, len(c.slotValue))
		for _, ri := range c.p.Reads {
			rd := &c.r.Reads[ri]
			for rec := rd.Record; rec < rd.Record+rd.Count; rec++ {
				if t := c.slot(c.r.RecordOffsets[rec]); t >= 0 && c.r.RecordValues[rec] == c.slotValue[t] {
					c.seen[t] = true
				}
			}
		}
	}
	return c.seen[s]
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
