package checkers

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/internal/prefetch"
	"github.com/kafkasim/kafkasim/model"
)

// intent is an input message's value, sent at least once.
type intent struct {
	msg      int32 // its message (in the resolution's Values): the first acknowledged, else the first sent
	acked    int32 // its first acknowledged send (in the resolution's Sends), -1 if none
	effects  int32
	firstOut int32 // position of the first final read holding an effect, -1 if none
}

// value is an intent's value id.
func (a *analysis) value(in *intent) int32 { return a.valueOf[in.msg] }

// inputOffset is where an intent was acknowledged, NoOffset if unknown.
func (a *analysis) inputOffset(in *intent) int64 {
	if in.acked < 0 {
		return history.NoOffset
	}
	s := &a.r.Sends[in.acked]
	if s.Offset < 0 {
		return history.NoOffset
	}
	return s.Offset + int64(in.msg-s.Value)
}

// effect is one output of the final state, in output order (kept only to
// judge key order).
type effect struct {
	intent int32 // index into intents, -1 if it derives from no sent message
	key    string
	store  string // "sink db" or the output topic-partition
	read   history.ID
}

// Delivery counts, for every intent, its effects in the final output
// (final reads marked Output): at-most-once allows at most one,
// at-least-once needs one for every acknowledged intent, and per-key order
// (when promised) needs each key's first effects in input-offset order.

// intend counts message v of send k (whose value has id id), sent in
// history order, toward its intent: the first send of an input message's
// value makes it one; the first acknowledged (its transaction, if any,
// committed) acknowledges it.
func (a *analysis) intend(k, v, id int32, ack bool) {
	if !a.r.Input[v] {
		return
	}
	i := a.intentOf[id]
	if i < 0 {
		i = int32(len(a.intents))
		a.intentOf[id] = i
		a.intents = append(a.intents, intent{msg: v, acked: -1, firstOut: -1})
	}
	if in := &a.intents[i]; in.acked < 0 && ack {
		in.msg, in.acked = v, k
	}
}

// intentAhead is how many records ahead checkDelivery asks for the intent
// a record of the final output counts for: the output is in offset order,
// the intents in history order.
const intentAhead = 8

// prefetchIntent asks for the intent of sent value v, if it has one.
func (a *analysis) prefetchIntent(v int32) {
	if v < 0 {
		return
	}
	if i := a.intentOf[a.valueOf[v]]; i >= 0 { // a sent value's id is its first copy's index
		prefetch.Line(unsafe.Pointer(&a.intents[i]))
	}
}

// checkDelivery judges the intents intend counted against the final
// output.
func (a *analysis) checkDelivery() (stats Stats, notes []string) {
	intents, intentOf := a.intents, a.intentOf
	stats.Intents = len(intents)
	for i := range intents {
		if intents[i].acked >= 0 {
			stats.Acknowledged++
		}
	}
	keyed := a.opts.Order.covers(KeyOrder)
	var effects []effect
	outputs, orphans := 0, 0
	count := func(id int32, key, store string, read int32) {
		stats.Outputs++
		i := int32(-1)
		if id >= 0 && int(id) < len(intentOf) {
			i = intentOf[id]
		}
		if keyed {
			effects = append(effects, effect{intent: i, key: key, store: store, read: a.h[read].ID})
		}
		if i < 0 {
			orphans++
			return
		}
		in := &intents[i]
		in.effects++
		if in.firstOut < 0 {
			in.firstOut = read
		}
	}
	for _, pos := range a.rare {
		op := &a.h[pos]
		if op.Kind != history.KindFinalRead || !op.FinalRead.Output {
			continue
		}
		outputs++
		f := op.FinalRead
		if f.Sink != "" {
			store := "sink " + f.Sink
			for _, m := range f.Items {
				count(a.values.lookup(m.Intent()), m.Key, store, pos)
			}
			continue
		}
		store := f.TP.String()
		first := a.readOf(pos)
		for j := range f.Records {
			if k := first + int32(j+intentAhead); int(k) < len(a.r.RecordValues) {
				a.prefetchIntent(a.r.RecordValues[k])
			}
			rec := &f.Records[j]
			id := int32(-1)
			if v := a.r.RecordValues[first+int32(j)]; rec.Source == "" && v >= 0 {
				id = a.valueOf[v]
			} else {
				id = a.values.lookup(rec.Intent())
			}
			count(id, rec.Key, store, pos)
		}
	}
	if outputs == 0 {
		return stats, []string{"no final read is marked as output: output-loss and output-dup not judged"}
	}
	if orphans > 0 {
		notes = append(notes, fmt.Sprintf("%d outputs derive from no sent message (their Source was never sent); not counted", orphans))
	}
	var dups []int32
	for i := range intents {
		in := &intents[i]
		switch {
		case in.effects > 1:
			dups = append(dups, int32(i))
		case in.effects == 0 && in.acked >= 0 && !a.superseded(in):
			ack := a.r.Sends[in.acked].Op
			a.rep.add("output-loss", Witness{
				Message: fmt.Sprintf("%q, acknowledged by op %d, has no effect in the final output", a.values.str(a.value(in)), ack),
				Ops:     a.ref(ack)})
		}
	}
	if len(dups) > 0 {
		a.reportDuplicateOutputs(dups, intents)
	}
	if keyed {
		a.keyOrder(effects, intents)
	}
	return stats, notes
}

// superseded: an intent acknowledged in a compacted partition where a log
// cleaner may have removed it (a later record of its key superseded it):
// its absence from the output is no loss. An output topic's compaction is
// not modelled: the catalogue compacts only input topics.
func (a *analysis) superseded(in *intent) bool {
	s := &a.r.Sends[in.acked]
	return s.Part >= 0 && a.removableValue(a.parts[s.Part], s, in.msg)
}

// readOf is the first record of the final read at a position: its read
// (the resolution's Reads are in history order), or the end if it read
// nothing.
func (a *analysis) readOf(pos int32) int32 {
	k, found := slices.BinarySearchFunc(a.r.Reads, pos, func(rd model.Read, pos int32) int { return int(rd.Pos - pos) })
	if !found {
		return int32(len(a.r.RecordValues))
	}
	return a.r.Reads[k].Record
}

// reportDuplicateOutputs names, for each duplicated intent, the operations
// that wrote its copies (sink writes, output sends) and the final read.
func (a *analysis) reportDuplicateOutputs(dups []int32, intents []intent) {
	writers := map[string][]history.ID{}
	want := map[string]bool{}
	for _, i := range dups[:min(len(dups), a.rep.witnessesMax)] {
		want[a.values.str(a.value(&intents[i]))] = true
	}
	for i := range a.h {
		op := &a.h[i]
		var ms []history.Message
		switch {
		case op.Kind == history.KindSinkWrite && op.Outcome != history.Fail:
			ms = op.SinkWrite.Outputs
		case op.Kind == history.KindSend && op.Outcome != history.Fail:
			ms = op.Send.Messages
		}
		for _, m := range ms {
			if want[m.Intent()] {
				writers[m.Intent()] = append(writers[m.Intent()], op.ID)
			}
		}
	}
	for _, i := range dups {
		in := &intents[i]
		v := a.values.str(a.value(in))
		ids := append([]history.ID{a.id(in.firstOut)}, writers[v]...)
		a.rep.add("output-dup", Witness{
			Message: fmt.Sprintf("%q has %d effects in the final output (written by %s)", v, in.effects, describeIDs(writers[v])),
			Ops:     a.ref(ids...)})
	}
}

func describeIDs(ids []history.ID) string {
	if len(ids) == 0 {
		return "no recorded operation"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprintf("op %d", id)
	}
	return strings.Join(s, ", ")
}

// keyOrder: within each output store, the first effects of one key's
// intents must follow their input offsets (in one input partition).
func (a *analysis) keyOrder(effects []effect, intents []intent) {
	type pos struct {
		part   int32
		offset int64
		intent int32
	}
	last := map[string]pos{} // store + key → last input position
	seen := map[string]bool{}
	for _, e := range effects {
		if e.intent < 0 {
			continue
		}
		in := &intents[e.intent]
		v := a.values.str(a.value(in))
		k := e.store + "\x00" + e.key
		offset := a.inputOffset(in)
		if offset < 0 || seen[e.store+"\x00"+v] {
			continue
		}
		seen[e.store+"\x00"+v] = true
		part := a.r.Sends[in.acked].Part
		if l, ok := last[k]; ok && l.part == part && offset < l.offset {
			prev := &intents[l.intent]
			a.rep.add("key-order", Witness{
				Message: fmt.Sprintf("%s: key %q holds %q (input %s offset %d) after %q (input offset %d)", e.store, e.key, v, a.parts[part].tp, offset, a.values.str(a.value(prev)), l.offset),
				Ops:     a.ref(e.read, a.r.Sends[in.acked].Op, a.r.Sends[prev.acked].Op)})
		}
		last[k] = pos{part, offset, e.intent}
	}
}
