package historytest

import (
	"slices"

	"github.com/kafkasim/kafkasim/history"
)

// A Defect turns a correct history into one with a single known fault. It
// returns the new history (h is not modified), the anomaly a checker must
// name, and false if h offers no place for this defect.
type Defect func(h history.History, c Choices) (history.History, string, bool)

// Defects are the injectable faults by name.
var Defects = map[string]Defect{
	"drop-acked-write":    DropAckedWrite,
	"duplicate-value":     DuplicateValue,
	"swap-offsets":        SwapOffsets,
	"read-aborted":        ReadAborted,
	"read-failed-write":   ReadFailedWrite,
	"drop-output":         DropOutput,
	"duplicate-output":    DuplicateOutput,
	"acked-as-indefinite": AckedAsIndefinite,
}

// DefectNames lists Defects in a fixed order.
func DefectNames() []string {
	names := make([]string, 0, len(Defects))
	for n := range Defects {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type observed struct {
	maxOffset map[history.TopicPartition]int64
	seen      map[history.TopicPartition]map[int64]string
}

func observe(h history.History) observed {
	o := observed{maxOffset: map[history.TopicPartition]int64{}, seen: map[history.TopicPartition]map[int64]string{}}
	note := func(tp history.TopicPartition, rs []history.Record) {
		for _, r := range rs {
			if o.seen[tp] == nil {
				o.seen[tp] = map[int64]string{}
				o.maxOffset[tp] = -1
			}
			o.seen[tp][r.Offset] = r.Value
			o.maxOffset[tp] = max(o.maxOffset[tp], r.Offset)
		}
	}
	for i := range h {
		switch op := &h[i]; op.Kind {
		case history.KindPoll:
			for _, f := range op.Poll.Fetched {
				note(f.TP, f.Records)
			}
		case history.KindFinalRead:
			if op.FinalRead.Sink == "" {
				note(op.FinalRead.TP, op.FinalRead.Records)
			}
		}
	}
	return o
}

func pick[T any](c Choices, xs []T) T { return xs[c.IntN(len(xs))] }

// cloneReads deep-copies every read in h so records can be edited.
func cloneReads(h history.History) history.History {
	out := slices.Clone(h)
	for i := range out {
		op := &out[i]
		switch op.Kind {
		case history.KindPoll:
			p := *op.Poll
			p.Fetched = slices.Clone(p.Fetched)
			for j := range p.Fetched {
				p.Fetched[j].Records = slices.Clone(p.Fetched[j].Records)
			}
			op.Poll = &p
		case history.KindFinalRead:
			f := *op.FinalRead
			f.Records = slices.Clone(f.Records)
			f.Items = slices.Clone(f.Items)
			op.FinalRead = &f
		}
	}
	return out
}

func visibleAck(h history.History, index history.Index, op *history.Op) bool {
	if op.Kind != history.KindSend || op.Outcome != history.OK || op.Send.Offset < 0 {
		return false
	}
	return op.Send.Txn == 0 || h[index.Pos(op.Send.Txn)].Outcome == history.OK
}

// DropAckedWrite removes an acknowledged, visible write from every read,
// choosing one below the highest offset read: a lost write.
func DropAckedWrite(h history.History, c Choices) (history.History, string, bool) {
	o := observe(h)
	index := h.Index()
	var cands []int
	for i := range h {
		op := &h[i]
		if visibleAck(h, index, op) && len(op.Send.Messages) == 1 && op.Send.Offset < o.maxOffset[op.Send.TP] &&
			o.seen[op.Send.TP][op.Send.Offset] == op.Send.Messages[0].Value {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return h, "", false
	}
	v := &h[pick(c, cands)]
	out := cloneReads(h)
	drop := func(rs []history.Record) []history.Record {
		return slices.DeleteFunc(rs, func(r history.Record) bool { return r.Offset == v.Send.Offset && r.Value == v.Send.Messages[0].Value })
	}
	for i := range out {
		switch op := &out[i]; op.Kind {
		case history.KindPoll:
			for j := range op.Poll.Fetched {
				if op.Poll.Fetched[j].TP == v.Send.TP {
					op.Poll.Fetched[j].Records = drop(op.Poll.Fetched[j].Records)
				}
			}
		case history.KindFinalRead:
			if op.FinalRead.TP == v.Send.TP {
				op.FinalRead.Records = drop(op.FinalRead.Records)
			}
		}
	}
	return out, "lost-write", true
}

// DuplicateValue makes a final read return an acknowledged value a second
// time, at a new offset past the end of the partition: a duplicate.
func DuplicateValue(h history.History, c Choices) (history.History, string, bool) {
	index := h.Index()
	var finals []int
	for i := range h {
		if op := &h[i]; op.Kind == history.KindFinalRead && op.FinalRead.Sink == "" && len(op.FinalRead.Records) > 0 {
			finals = append(finals, i)
		}
	}
	if len(finals) == 0 {
		return h, "", false
	}
	fi := pick(c, finals)
	tp := h[fi].FinalRead.TP
	var vals []string
	maxOff := int64(-1)
	for i := range h {
		if op := &h[i]; visibleAck(h, index, op) && op.Send.TP == tp {
			vals = append(vals, op.Send.Messages[0].Value)
			maxOff = max(maxOff, op.Send.Offset+int64(len(op.Send.Messages))-1)
		}
	}
	if len(vals) == 0 {
		return h, "", false
	}
	out := cloneReads(h)
	f := out[fi].FinalRead
	maxOff = max(maxOff, f.Records[len(f.Records)-1].Offset)
	f.Records = append(f.Records, history.Record{Offset: maxOff + 1 + int64(c.IntN(3)), Message: history.Message{Value: pick(c, vals)}})
	return out, "duplicate", true
}

// SwapOffsets exchanges the acknowledged offsets of two observed sends to
// one partition: the sends now disagree with the reads at both offsets.
func SwapOffsets(h history.History, c Choices) (history.History, string, bool) {
	o := observe(h)
	index := h.Index()
	byTP := map[history.TopicPartition][]int{}
	var tps []history.TopicPartition
	for i := range h {
		op := &h[i]
		if op.Kind == history.KindSend && op.Outcome == history.OK && op.Send.Offset >= 0 && len(op.Send.Messages) == 1 &&
			o.seen[op.Send.TP][op.Send.Offset] == op.Send.Messages[0].Value && visibleAck(h, index, op) {
			if byTP[op.Send.TP] == nil {
				tps = append(tps, op.Send.TP)
			}
			byTP[op.Send.TP] = append(byTP[op.Send.TP], i)
		}
	}
	tps = slices.DeleteFunc(tps, func(tp history.TopicPartition) bool { return len(byTP[tp]) < 2 })
	if len(tps) == 0 {
		return h, "", false
	}
	cands := byTP[pick(c, tps)]
	a := c.IntN(len(cands))
	b := (a + 1 + c.IntN(len(cands)-1)) % len(cands)
	out := slices.Clone(h)
	sa, sb := *out[cands[a]].Send, *out[cands[b]].Send
	sa.Offset, sb.Offset = sb.Offset, sa.Offset
	out[cands[a]].Send, out[cands[b]].Send = &sa, &sb
	return out, "inconsistent-offsets", true
}

// ReadAborted marks as aborted a committed transaction whose write a
// read_committed read returned: an aborted read (G1a).
func ReadAborted(h history.History, c Choices) (history.History, string, bool) {
	o := observe(h)
	var cands []history.ID
	seen := map[history.ID]bool{}
	index := h.Index()
	for i := range h {
		op := &h[i]
		if op.Kind != history.KindSend || op.Send.Txn == 0 || op.Outcome != history.OK || seen[op.Send.Txn] {
			continue
		}
		if h[index.Pos(op.Send.Txn)].Outcome == history.OK && o.seen[op.Send.TP][op.Send.Offset] == op.Send.Messages[0].Value {
			cands = append(cands, op.Send.Txn)
			seen[op.Send.Txn] = true
		}
	}
	if len(cands) == 0 {
		return h, "", false
	}
	out := slices.Clone(h)
	t := &out[index.Pos(pick(c, cands))]
	t.Outcome, t.Error = history.Fail, "aborted (injected)"
	return out, "G1a", true
}

// ReadFailedWrite marks an observed, non-transactional send as a definite
// failure: its value is then read although it never happened (G1a).
func ReadFailedWrite(h history.History, c Choices) (history.History, string, bool) {
	o := observe(h)
	var cands []int
	for i := range h {
		op := &h[i]
		if op.Kind == history.KindSend && op.Send.Txn == 0 && op.Outcome == history.OK && op.Send.Offset >= 0 &&
			o.seen[op.Send.TP][op.Send.Offset] == op.Send.Messages[0].Value {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return h, "", false
	}
	out := slices.Clone(h)
	op := &out[pick(c, cands)]
	s := *op.Send
	s.Offset = history.NoOffset
	op.Send, op.Outcome, op.Error = &s, history.Fail, "NOT_ENOUGH_REPLICAS (injected)"
	return out, "G1a", true
}

// AckedAsIndefinite turns some acknowledged sends into indefinite ones
// (info, offset unknown, sometimes never returning). A correct history stays
// correct: the name returned is empty, meaning "nothing may be reported".
func AckedAsIndefinite(h history.History, c Choices) (history.History, string, bool) {
	out := slices.Clone(h)
	changed := false
	for i := range out {
		op := &out[i]
		if op.Kind == history.KindSend && op.Outcome == history.OK && c.IntN(3) == 0 {
			s := *op.Send
			s.Offset = history.NoOffset
			op.Send, op.Outcome, op.Error = &s, history.Info, "timeout (injected)"
			if c.IntN(2) == 0 {
				op.Return = history.Never
			}
			changed = true
		}
	}
	return out, "", changed
}

// DropOutput removes one acknowledged intent's effect from the output
// final reads: output-loss.
func DropOutput(h history.History, c Choices) (history.History, string, bool) {
	type loc struct{ op, rec int }
	var cands []loc
	acked := ackedIntents(h)
	for i := range h {
		if op := &h[i]; op.Kind == history.KindFinalRead && op.FinalRead.Output {
			for j, r := range op.FinalRead.Records {
				if acked[r.Intent()] {
					cands = append(cands, loc{i, j})
				}
			}
			for j, m := range op.FinalRead.Items {
				if acked[m.Intent()] {
					cands = append(cands, loc{i, j})
				}
			}
		}
	}
	if len(cands) == 0 {
		return h, "", false
	}
	l := pick(c, cands)
	out := cloneReads(h)
	f := out[l.op].FinalRead
	var intent string
	if f.Sink == "" {
		intent = f.Records[l.rec].Intent()
		f.Records = slices.DeleteFunc(f.Records, func(r history.Record) bool { return r.Intent() == intent })
	} else {
		intent = f.Items[l.rec].Intent()
		f.Items = slices.DeleteFunc(f.Items, func(m history.Message) bool { return m.Intent() == intent })
	}
	// Take it out of every read, so the loss is in the output, not a read skip.
	for i := range out {
		if op := &out[i]; op.Kind == history.KindPoll {
			for j := range op.Poll.Fetched {
				op.Poll.Fetched[j].Records = slices.DeleteFunc(op.Poll.Fetched[j].Records, func(r history.Record) bool { return r.Intent() == intent })
			}
		}
	}
	return out, "output-loss", true
}

// DuplicateOutput repeats one effect in a sink's final read: output-dup.
func DuplicateOutput(h history.History, c Choices) (history.History, string, bool) {
	var cands []int
	for i := range h {
		if op := &h[i]; op.Kind == history.KindFinalRead && op.FinalRead.Output && op.FinalRead.Sink != "" && len(op.FinalRead.Items) > 0 {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return h, "", false
	}
	out := cloneReads(h)
	f := out[pick(c, cands)].FinalRead
	f.Items = append(f.Items, pick(c, f.Items))
	return out, "output-dup", true
}

func ackedIntents(h history.History) map[string]bool {
	index := h.Index()
	acked := map[string]bool{}
	for i := range h {
		if op := &h[i]; visibleAck(h, index, op) {
			for _, m := range op.Send.Messages {
				if m.Source == "" {
					acked[m.Value] = true
				}
			}
		}
	}
	return acked
}
