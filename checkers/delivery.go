package checkers

import (
	"fmt"
	"strings"

	"github.com/kafkasim/kafkasim/history"
)

type intent struct {
	value    string
	key      string
	send     history.ID // first send of it
	acked    history.ID // first acknowledged send, 0 if none
	tp       history.TopicPartition
	offset   int64 // input offset where acknowledged, NoOffset if unknown
	effects  int
	firstOut history.ID // first final read holding an effect
}

// effect is one output of the final state, in output order.
type effect struct {
	intent string
	key    string
	store  string // "sink db" or the output topic-partition
	read   history.ID
}

// checkDelivery counts, for every intent, its effects in the final output
// (final reads marked Output): at-most-once allows at most one,
// at-least-once needs one for every acknowledged intent, and per-key order
// (when promised) needs each key's first effects in input-offset order.
func (a *analysis) checkDelivery() (stats Stats, notes []string) {
	n := 0
	for i := range a.h {
		if op := &a.h[i]; op.Kind == history.KindSend {
			n += len(op.Send.Messages)
		}
	}
	intents := make(map[string]*intent, n)
	all := make([]intent, 0, n)
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindSend {
			continue
		}
		for k, m := range op.Send.Messages {
			if m.Source != "" {
				continue
			}
			in := intents[m.Value]
			if in == nil {
				all = append(all, intent{value: m.Value, key: m.Key, send: op.ID, tp: op.Send.TP, offset: history.NoOffset})
				in = &all[len(all)-1]
				intents[m.Value] = in
			}
			if in.acked == 0 && op.Outcome == history.OK && (op.Send.Txn == 0 || a.op(op.Send.Txn).Outcome == history.OK) {
				in.acked = op.ID
				in.tp = op.Send.TP
				if op.Send.Offset >= 0 {
					in.offset = op.Send.Offset + int64(k)
				}
			}
		}
	}
	var effects []effect
	outputs, n := 0, 0
	for i := range a.h {
		if op := &a.h[i]; op.Kind == history.KindFinalRead && op.FinalRead.Output {
			n += len(op.FinalRead.Items) + len(op.FinalRead.Records)
		}
	}
	effects = make([]effect, 0, n)
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindFinalRead || !op.FinalRead.Output {
			continue
		}
		outputs++
		f := op.FinalRead
		if f.Sink != "" {
			store := "sink " + f.Sink
			for _, m := range f.Items {
				effects = append(effects, effect{intent: m.Intent(), key: m.Key, store: store, read: op.ID})
			}
		} else {
			store := f.TP.String()
			for _, r := range f.Records {
				effects = append(effects, effect{intent: r.Intent(), key: r.Key, store: store, read: op.ID})
			}
		}
	}
	stats.Intents, stats.Outputs = len(intents), len(effects)
	for i := range all {
		if all[i].acked != 0 {
			stats.Acknowledged++
		}
	}
	if outputs == 0 {
		return stats, []string{"no final read is marked as output: output-loss and output-dup not judged"}
	}
	orphans := 0
	for _, e := range effects {
		in := intents[e.intent]
		if in == nil {
			orphans++
			continue
		}
		in.effects++
		if in.firstOut == 0 {
			in.firstOut = e.read
		}
	}
	if orphans > 0 {
		notes = append(notes, fmt.Sprintf("%d outputs derive from no sent message (their Source was never sent); not counted", orphans))
	}
	var dups []string
	for i := range all {
		in := &all[i]
		v := in.value
		switch {
		case in.effects > 1:
			dups = append(dups, v)
		case in.effects == 0 && in.acked != 0:
			a.rep.add("output-loss", Witness{
				Message: fmt.Sprintf("%q, acknowledged by op %d, has no effect in the final output", v, in.acked),
				Ops:     a.ref(in.acked)})
		}
	}
	if len(dups) > 0 {
		a.reportDuplicateOutputs(dups, intents)
	}
	if a.opts.Order.covers(KeyOrder) {
		a.keyOrder(effects, intents)
	}
	return stats, notes
}

// reportDuplicateOutputs names, for each duplicated intent, the operations
// that wrote its copies (sink writes, output sends) and the final read.
func (a *analysis) reportDuplicateOutputs(dups []string, intents map[string]*intent) {
	writers := map[string][]history.ID{}
	want := map[string]bool{}
	for _, v := range dups[:min(len(dups), a.rep.witnessesMax)] {
		want[v] = true
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
	for _, v := range dups {
		in := intents[v]
		ids := append([]history.ID{in.firstOut}, writers[v]...)
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
func (a *analysis) keyOrder(effects []effect, intents map[string]*intent) {
	type pos struct {
		tp     history.TopicPartition
		offset int64
		value  string
	}
	last := map[string]pos{} // store + key → last input position
	seen := map[string]bool{}
	for _, e := range effects {
		in := intents[e.intent]
		k := e.store + "\x00" + e.key
		if in == nil || in.offset < 0 || seen[e.store+"\x00"+e.intent] {
			continue
		}
		seen[e.store+"\x00"+e.intent] = true
		if l, ok := last[k]; ok && l.tp == in.tp && in.offset < l.offset {
			a.rep.add("key-order", Witness{
				Message: fmt.Sprintf("%s: key %q holds %q (input %s offset %d) after %q (input offset %d)", e.store, e.key, in.value, in.tp, in.offset, l.value, l.offset),
				Ops:     a.ref(e.read, in.acked, intents[l.value].acked)})
		}
		last[k] = pos{in.tp, in.offset, in.value}
	}
}
