package checkers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/model"
)

// checkAnomalies runs every Jepsen-named check over the version orders.
func (a *analysis) checkAnomalies() {
	lost := map[history.ID]bool{}
	for _, p := range a.parts {
		a.inconsistentOffsets(p)
		a.duplicates(p)
		a.abortedReads(p)
		a.lostWrites(p, lost)
	}
	a.unseen(lost)
	a.readsPastStable()
	a.tornTransactions()
	a.pollOrder()
	a.sendOrder()
	a.offsetRegressions()
	a.lostCommits()
	a.stuckFinalReads()
	a.replicaAgreement()
}

// stuckFinalReads reports every final read that did not finish (outcome
// info: it ran out of budget, or the store kept failing it): what it read
// is still judged, and what it could not read is the system's failure to
// deliver after heal and drain.
func (a *analysis) stuckFinalReads() {
	for i := range a.h {
		op := &a.h[i]
		if op.Kind == history.KindFinalRead && op.Outcome != history.OK {
			msg := op.Error
			if msg == "" {
				msg = fmt.Sprintf("final read of %s did not finish", op.FinalRead.TP)
			}
			a.rep.add("final-read-stuck", Witness{Message: msg, Ops: a.ref(op.ID)})
		}
	}
}

func (a *analysis) inconsistentOffsets(p *partition) {
	for i := 0; i < len(p.pairs); {
		j := i + 1
		for j < len(p.pairs) && p.pairs[j].offset == p.pairs[i].offset {
			j++
		}
		if j-i > 1 {
			var desc []string
			var ids []history.ID
			for _, pr := range p.pairs[i:j] {
				by := pr.writer
				verb := "written by"
				if by == 0 {
					by, verb = pr.reader, "read by"
				}
				desc = append(desc, fmt.Sprintf("%q (%s op %d)", pr.value, verb, by))
				ids = append(ids, by)
			}
			a.rep.add("inconsistent-offsets", Witness{
				Message: fmt.Sprintf("%s offset %d holds %s", p.tp, p.pairs[i].offset, strings.Join(desc, " and ")),
				Ops:     a.ref(ids...)})
		}
		i = j
	}
}

func (a *analysis) duplicates(p *partition) {
	for i := 0; i < len(p.byValue); {
		j := i + 1
		v := p.pairs[p.byValue[i]].value
		for j < len(p.byValue) && p.pairs[p.byValue[j]].value == v {
			j++
		}
		if j-i > 1 {
			var offs []string
			var ids []history.ID
			for _, k := range p.byValue[i:j] {
				pr := p.pairs[k]
				offs = append(offs, fmt.Sprint(pr.offset))
				if pr.writer != 0 {
					ids = append(ids, pr.writer)
				} else {
					ids = append(ids, pr.reader)
				}
			}
			a.rep.add("duplicate", Witness{
				Message: fmt.Sprintf("%s holds %q at offsets %s", p.tp, v, strings.Join(offs, ", ")),
				Ops:     a.ref(ids...)})
		}
		i = j
	}
}

// txnEnd is the earliest a transaction can have committed: when commit was
// requested, or else after its last send was invoked.
func (a *analysis) txnEnd(txn history.ID) int64 {
	if a.txnEnds == nil {
		a.txnEnds = map[history.ID]int64{}
		for i := range a.h {
			switch op := &a.h[i]; op.Kind {
			case history.KindTxn:
				a.txnEnds[op.ID] = max(a.txnEnds[op.ID], op.Txn.EndCall)
			case history.KindSend:
				if t := op.Send.Txn; t != 0 {
					a.txnEnds[t] = max(a.txnEnds[t], op.Call)
				}
			}
		}
	}
	return a.txnEnds[txn]
}

func (a *analysis) abortedReads(p *partition) {
	for _, pr := range p.pairs {
		if pr.reader == 0 {
			continue
		}
		if pr.writer == 0 {
			if w, ok := p.failed[pr.value]; ok {
				a.rep.add("G1a", Witness{
					Message: fmt.Sprintf("op %d read %q at %s offset %d, but its send op %d failed definitely", pr.reader, pr.value, p.tp, pr.offset, w),
					Ops:     a.ref(pr.reader, w)})
			}
			continue
		}
		if pr.readRC == 0 {
			continue
		}
		if pr.vis == model.Aborted {
			t := a.op(pr.writer).Send.Txn
			a.rep.add("G1a", Witness{
				Message: fmt.Sprintf("read_committed op %d read %q at %s offset %d, written by op %d in aborted transaction op %d", pr.readRC, pr.value, p.tp, pr.offset, pr.writer, t),
				Ops:     a.ref(pr.readRC, pr.writer, t)})
			continue
		}
		if t := a.op(pr.writer).Send.Txn; t != 0 {
			if end := a.txnEnd(t); pr.readRet < end {
				a.rep.add("precommitted-read", Witness{
					Message: fmt.Sprintf("read_committed op %d returned %q (%s offset %d) at %d, before transaction op %d asked to commit at %d", pr.readRC, pr.value, p.tp, pr.offset, pr.readRet, t, a.txnEnd(t)),
					Ops:     a.ref(pr.readRC, pr.writer, t)})
			}
		}
	}
}

// readsPastStable: a read_committed fetch is served up to the partition's
// last stable offset (KIP-98: the first offset of a transaction still
// open, else the high watermark), and says so in the response; a record
// at or past it was served from an open transaction, or the broker's LSO
// and its own read bound disagree.
func (a *analysis) readsPastStable() {
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindPoll || op.Poll.Isolation != history.ReadCommitted {
			continue
		}
		for _, f := range op.Poll.Fetched {
			if f.LastStable == nil || *f.LastStable < 0 {
				continue
			}
			for _, r := range f.Records {
				if r.Offset >= *f.LastStable {
					a.rep.add("read-past-lso", Witness{
						Message: fmt.Sprintf("read_committed op %d returned %q at %s offset %d from a fetch response whose last stable offset was %d", op.ID, r.Value, f.TP, r.Offset, *f.LastStable),
						Ops:     a.ref(op.ID)})
					break
				}
			}
		}
	}
}

// mustHaveCommitted: the send was acknowledged and is visible to every
// reader (outside a transaction, or in one that committed).
func (a *analysis) mustHaveCommitted(send *history.Op) bool {
	if send.Outcome != history.OK {
		return false
	}
	return send.Send.Txn == 0 || a.committed[send.Send.Txn]
}

// lostWrites follows Jepsen: take the highest offset at which some read
// value first appears; every acknowledged value written at or below it must
// have been read by someone.
func (a *analysis) lostWrites(p *partition, lost map[history.ID]bool) {
	bound := int64(-1)
	var boundReader history.ID
	for _, pr := range p.pairs {
		if pr.reader == 0 {
			continue
		}
		if first := pr.valFirst; first > bound {
			bound, boundReader = first, pr.reader
		}
	}
	for _, pr := range p.pairs {
		if pr.offset > bound {
			break
		}
		if pr.writer == 0 || !pr.definite || pr.reader != 0 {
			continue
		}
		w := a.op(pr.writer)
		if pr.valRead || !a.mustHaveCommitted(w) {
			continue
		}
		lost[pr.writer] = true
		a.rep.add("lost-write", Witness{
			Message: fmt.Sprintf("%q, acknowledged at %s offset %d by op %d, was never read, though op %d read up to offset %d", pr.value, p.tp, pr.offset, pr.writer, boundReader, bound),
			Ops:     a.ref(pr.writer, boundReader)})
	}
}

// unseen: acknowledged writes to a drained partition (one with a final
// read) that no read ever returned, and that lostWrites did not already
// name.
func (a *analysis) unseen(lost map[history.ID]bool) {
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindSend || lost[op.ID] || !a.mustHaveCommitted(op) {
			continue
		}
		p := a.byTP[op.Send.TP]
		if p == nil || !p.finalRead {
			continue
		}
		for k, m := range op.Send.Messages {
			if !p.valueRead(offsetOf(op.Send, k), m.Value) {
				a.rep.add("unseen", Witness{
					Message: fmt.Sprintf("%q, acknowledged by op %d to %s, was never read, not even by the final read", m.Value, op.ID, op.Send.TP),
					Ops:     a.ref(op.ID)})
				break
			}
		}
	}
}

// tornTransactions: a transaction commits its writes and its consumer
// offsets together (KIP-98, KIP-447), so in the final state it is wholly
// in or wholly out:
//
//   - a committed transaction's writes all in the final reads of their
//     partitions, or none of them;
//   - a transaction whose writes are in the final output committed its
//     offsets: the group's final committed offset (the harness's final
//     offset fetch) is not below what it committed;
//   - a transaction whose offsets are the group's final committed offsets,
//     and that is the only one (or commit) that committed them, has its
//     writes in the final output — and did not abort.
func (a *analysis) tornTransactions() {
	type tally struct {
		in, out     int
		inOp, outOp history.ID
		outValue    string
	}
	var order []history.ID
	tallies := map[history.ID]*tally{}
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindSend || op.Send.Txn == 0 {
			continue
		}
		p := a.byTP[op.Send.TP]
		if p == nil || !p.finalRead {
			continue
		}
		t := tallies[op.Send.Txn]
		if t == nil {
			t = &tally{}
			tallies[op.Send.Txn] = t
			order = append(order, op.Send.Txn)
		}
		for k, m := range op.Send.Messages {
			if op.Outcome != history.Fail && p.valueFinal(offsetOf(op.Send, k), m.Value) {
				t.in++
				t.inOp = op.ID
			} else {
				t.out++
				t.outOp, t.outValue = op.ID, m.Value
			}
		}
	}
	slices.Sort(order)
	for _, id := range order {
		if t := tallies[id]; a.committed[id] && t.in > 0 && t.out > 0 {
			a.rep.add("torn-transaction", Witness{
				Message: fmt.Sprintf("committed transaction op %d has %d writes in the final output and %d missing, e.g. %q of op %d", id, t.in, t.out, t.outValue, t.outOp),
				Ops:     a.ref(id, t.inOp, t.outOp)})
		}
	}

	// The offsets half, against the final offset fetch.
	type key struct {
		group string
		tp    history.TopicPartition
	}
	final := map[key]int64{}
	var finalOp history.ID
	owners := map[key]map[int64][]history.ID{} // who may have committed each offset: commits and transactions not aborted
	own := func(op *history.Op, group string, pos []history.PartitionOffset) {
		for _, po := range pos {
			k := key{group, po.TP}
			if owners[k] == nil {
				owners[k] = map[int64][]history.ID{}
			}
			owners[k][po.Offset] = append(owners[k][po.Offset], op.ID)
		}
	}
	for i := range a.h {
		switch op := &a.h[i]; {
		case op.Kind == history.KindOffsetFetch && op.OffsetFetch.Final && op.Outcome == history.OK:
			finalOp = op.ID
			for _, po := range op.OffsetFetch.Offsets {
				final[key{op.OffsetFetch.Group, po.TP}] = po.Offset
			}
		case op.Kind == history.KindCommit && op.Outcome != history.Fail:
			own(op, op.Commit.Group, op.Commit.Offsets)
		case op.Kind == history.KindTxn && op.Outcome != history.Fail:
			own(op, op.Txn.Group, op.Txn.Offsets)
		}
	}
	if finalOp == 0 {
		return
	}
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindTxn || op.Txn.Group == "" {
			continue
		}
		t := tallies[op.ID]
		if t == nil {
			t = &tally{}
		}
		for _, po := range op.Txn.Offsets {
			f, ok := final[key{op.Txn.Group, po.TP}]
			if !ok {
				continue
			}
			switch {
			case a.committed[op.ID] && t.in > 0 && f < po.Offset:
				a.rep.add("torn-transaction", Witness{
					Message: fmt.Sprintf("transaction op %d's writes are in the final output, but the offset it committed for %s, %d, is not: group %s's final committed offset is %d",
						op.ID, po.TP, po.Offset, op.Txn.Group, f),
					Ops: a.ref(op.ID, t.inOp, finalOp)})
			case f == po.Offset && t.in == 0 && t.out > 0:
				others := slices.DeleteFunc(slices.Clone(owners[key{op.Txn.Group, po.TP}][f]), func(id history.ID) bool { return id == op.ID })
				if len(others) > 0 {
					continue // another commit may be the one that stands
				}
				what := "none of its writes is in the final output"
				if op.Outcome == history.Fail {
					what = "it aborted"
				}
				a.rep.add("torn-transaction", Witness{
					Message: fmt.Sprintf("transaction op %d alone committed offset %d for %s, group %s's final committed offset, but %s (e.g. %q of op %d)",
						op.ID, f, po.TP, op.Txn.Group, what, t.outValue, t.outOp),
					Ops: a.ref(op.ID, t.outOp, finalOp)})
			}
		}
	}
}

// processOps lists each process's operations of the given kinds in
// invocation order, processes sorted by name.
func (a *analysis) processOps(kinds ...history.Kind) ([]string, map[string][]*history.Op) {
	by := map[string][]*history.Op{}
	for i := range a.h {
		op := &a.h[i]
		if slices.Contains(kinds, op.Kind) {
			by[op.Process] = append(by[op.Process], op)
		}
	}
	names := make([]string, 0, len(by))
	for n, ops := range by {
		names = append(names, n)
		slices.SortFunc(ops, func(x, y *history.Op) int {
			if x.Call != y.Call {
				return cmp64(x.Call, y.Call)
			}
			return int(x.ID - y.ID)
		})
	}
	slices.Sort(names)
	return names, by
}

type lastRead struct {
	offset int64
	op     history.ID
}

// pollOrder finds poll-skip and nonmonotonic-poll: per consumer, between
// polls with no assignment change, rebalance or seek in between, and within
// one poll, consecutive offsets read must be consecutive in the version
// order its isolation level sees.
func (a *analysis) pollOrder() {
	names, by := a.processOps(history.KindPoll, history.KindAssign, history.KindSubscribe, history.KindRebalance, history.KindSeek)
	for _, proc := range names {
		last := map[history.TopicPartition]lastRead{}
		keep := func(ok func(history.TopicPartition) bool) {
			for tp := range last {
				if !ok(tp) {
					delete(last, tp)
				}
			}
		}
		for _, op := range by[proc] {
			switch op.Kind {
			case history.KindAssign:
				if op.Outcome != history.Fail {
					keep(func(tp history.TopicPartition) bool { return slices.Contains(op.Assign.Partitions, tp) })
				}
			case history.KindSubscribe:
				if op.Outcome != history.Fail {
					keep(func(tp history.TopicPartition) bool { return slices.Contains(op.Subscribe.Topics, tp.Topic) })
				}
			case history.KindRebalance:
				keep(func(tp history.TopicPartition) bool { return slices.Contains(op.Rebalance.Assigned, tp) })
			case history.KindSeek:
				for _, po := range op.Seek.Offsets {
					delete(last, po.TP)
				}
			case history.KindPoll:
				if op.Poll.Rebalanced || (a.opts.Rebalancing && op.Poll.Group != "") {
					clear(last)
				}
				for _, f := range op.Poll.Fetched {
					if len(f.Records) == 0 {
						continue
					}
					p := a.byTP[f.TP]
					offs := p.ranks(op.Poll.Isolation)
					if l, ok := last[f.TP]; ok {
						a.pollStep(p, offs, l.offset, f.Records[0].Offset, l.op, op.ID)
					}
					for i := 1; i < len(f.Records); i++ {
						a.pollStep(p, offs, f.Records[i-1].Offset, f.Records[i].Offset, op.ID, op.ID)
					}
					if op.Outcome == history.OK {
						last[f.TP] = lastRead{offset: f.Records[len(f.Records)-1].Offset, op: op.ID}
					}
				}
			}
		}
	}
}

func (a *analysis) pollStep(p *partition, offs []int64, from, to int64, fromOp, toOp history.ID) {
	i, j := rank(offs, from), rank(offs, to)
	if i < 0 || j < 0 {
		return
	}
	switch delta := j - i; {
	case delta > 1:
		a.rep.add("poll-skip", Witness{
			Message: fmt.Sprintf("%s: op %d read offset %d, then op %d read offset %d, skipping %s (%s)", p.tp, fromOp, from, toOp, to, entries(delta-1),
				strings.Join(p.valuesBetween(offs, i, j, 5), ", ")),
			Ops: a.ref(dedup(fromOp, toOp)...)})
	case delta < 1:
		a.rep.add("nonmonotonic-poll", Witness{
			Message: fmt.Sprintf("%s: op %d read offset %d, then op %d read offset %d", p.tp, fromOp, from, toOp, to),
			Ops:     a.ref(dedup(fromOp, toOp)...)})
	}
}

func dedup(a, b history.ID) []history.ID {
	if a == b {
		return []history.ID{a}
	}
	return []history.ID{a, b}
}

// sendOrder finds nonmonotonic-send: a producer's acknowledged sends to a
// partition, in invocation order, must get increasing offsets.
func (a *analysis) sendOrder() {
	names, by := a.processOps(history.KindSend)
	for _, proc := range names {
		type lastSend struct {
			offset int64
			op     history.ID
		}
		last := map[history.TopicPartition]lastSend{}
		for _, op := range by[proc] {
			s := op.Send
			if op.Outcome != history.OK || s.Offset < 0 {
				continue
			}
			if l, ok := last[s.TP]; ok && s.Offset <= l.offset {
				a.rep.add("nonmonotonic-send", Witness{
					Message: fmt.Sprintf("%s: %s's op %d got offset %d, then its later op %d got offset %d", s.TP, proc, l.op, l.offset, op.ID, s.Offset),
					Ops:     a.ref(l.op, op.ID)})
			}
			last[s.TP] = lastSend{offset: s.Offset + int64(len(s.Messages)) - 1, op: op.ID}
		}
	}
}

// lostCommits: an acknowledged offset commit is durable (Kafka writes it
// with acks=-1 to __consumer_offsets and answers once it is committed), and
// no later commit may go lower (offset-regression), so the group's final
// committed offset — the harness's final offset fetch — is at least every
// acknowledged commit. Below one, a consumer resuming from it processes
// again records whose offsets were committed past: at-most-once is broken
// in what the pipeline would do next. A committed transaction's offsets
// are judged with its writes (torn-transaction).
func (a *analysis) lostCommits() {
	type key struct {
		group string
		tp    history.TopicPartition
	}
	var final *history.Op
	for i := range a.h {
		if op := &a.h[i]; op.Kind == history.KindOffsetFetch && op.OffsetFetch.Final && op.Outcome == history.OK {
			final = op
		}
	}
	if final == nil {
		return
	}
	best := map[key]*history.Op{}
	at := map[key]int64{}
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindCommit || op.Outcome != history.OK || op.Commit.Group != final.OffsetFetch.Group {
			continue
		}
		for _, po := range op.Commit.Offsets {
			k := key{op.Commit.Group, po.TP}
			if best[k] == nil || po.Offset > at[k] {
				best[k], at[k] = op, po.Offset
			}
		}
	}
	for _, po := range final.OffsetFetch.Offsets {
		k := key{final.OffsetFetch.Group, po.TP}
		if c := best[k]; c != nil && po.Offset < at[k] {
			a.rep.add("offset-commit-lost", Witness{
				Message: fmt.Sprintf("group %s %s: op %d's commit of offset %d was acknowledged, but the final committed offset is %d", k.group, po.TP, c.ID, at[k], po.Offset),
				Ops:     a.ref(c.ID, final.ID)})
		}
	}
}

// offsetRegressions: of two successful commits of one group's offset for a
// partition, the one invoked after the other returned must not be lower.
// Offsets stored in a sink count as the sink's "group".
func (a *analysis) offsetRegressions() {
	type write struct {
		call, ret, offset int64
		op                history.ID
	}
	type key struct {
		group string
		tp    history.TopicPartition
	}
	writes := map[key][]write{}
	var keys []key
	add := func(op *history.Op, group string, pos []history.PartitionOffset) {
		if op.Outcome != history.OK {
			return
		}
		for _, po := range pos {
			k := key{group, po.TP}
			if _, ok := writes[k]; !ok {
				keys = append(keys, k)
			}
			writes[k] = append(writes[k], write{op.Call, op.Return, po.Offset, op.ID})
		}
	}
	for i := range a.h {
		switch op := &a.h[i]; op.Kind {
		case history.KindCommit:
			add(op, op.Commit.Group, op.Commit.Offsets)
		case history.KindTxn:
			add(op, op.Txn.Group, op.Txn.Offsets)
		case history.KindSinkWrite:
			add(op, "sink "+op.SinkWrite.Sink, op.SinkWrite.Offsets)
		}
	}
	slices.SortFunc(keys, func(x, y key) int {
		if x.group != y.group {
			return strings.Compare(x.group, y.group)
		}
		return x.tp.Compare(y.tp)
	})
	for _, k := range keys {
		ws := writes[k]
		byCall := slices.Clone(ws)
		slices.SortFunc(byCall, func(x, y write) int {
			if c := cmp64(x.call, y.call); c != 0 {
				return c
			}
			return int(x.op - y.op)
		})
		byRet := ws
		slices.SortFunc(byRet, func(x, y write) int {
			if c := cmp64(x.ret, y.ret); c != 0 {
				return c
			}
			return int(x.op - y.op)
		})
		j := 0
		best := write{offset: -1}
		for _, w := range byCall {
			for j < len(byRet) && byRet[j].ret < w.call {
				if byRet[j].offset > best.offset {
					best = byRet[j]
				}
				j++
			}
			if w.offset < best.offset {
				a.rep.add("offset-regression", Witness{
					Message: fmt.Sprintf("%s %s: op %d committed %d, then op %d, invoked after, committed %d", k.group, k.tp, best.op, best.offset, w.op, w.offset),
					Ops:     a.ref(best.op, w.op)})
			}
		}
	}
}

// offsetOf is where the k-th message of a send was acknowledged, or
// NoOffset.
func offsetOf(s *history.Send, k int) int64 {
	if s.Offset < 0 {
		return history.NoOffset
	}
	return s.Offset + int64(k)
}

func entries(n int) string {
	if n == 1 {
		return "1 known entry"
	}
	return fmt.Sprintf("%d known entries", n)
}
