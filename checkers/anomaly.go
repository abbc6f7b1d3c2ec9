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
	lost := map[int32]bool{}
	for _, p := range a.parts {
		a.judgePairs(p, lost)
		a.duplicates(p)
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
	for _, i := range a.rare {
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

func (a *analysis) duplicates(p *partition) {
	for _, group := range p.dups {
		var offs []string
		var ids []history.ID
		for _, q := range group {
			pr := &p.pairs[q]
			offs = append(offs, fmt.Sprint(p.offset(pr)))
			if pr.writer >= 0 {
				ids = append(ids, a.sent(pr.writer))
			} else {
				ids = append(ids, a.read(pr.reader))
			}
		}
		a.rep.add("duplicate", Witness{
			Message: fmt.Sprintf("%s holds %q at offsets %s", p.tp, a.values.str(p.pairs[group[0]].value), strings.Join(offs, ", ")),
			Ops:     a.ref(ids...)})
	}
}

// txnEnd is the earliest the transaction at a position can have committed:
// when commit was requested, or else after its last send was invoked.
func (a *analysis) txnEnd(txn int32) int64 {
	if a.txnEnds == nil {
		a.txnEnds = make([]int64, len(a.rare))
		for k, i := range a.rare {
			if op := &a.h[i]; op.Kind == history.KindTxn {
				a.txnEnds[k] = op.Txn.EndCall
			}
		}
		for k := range a.r.Sends {
			if s := &a.r.Sends[k]; s.Txn != 0 {
				t := a.rank(a.pos(s.Txn))
				a.txnEnds[t] = max(a.txnEnds[t], s.Call)
			}
		}
	}
	return a.txnEnds[a.rank(txn)]
}

// judgePairs walks a partition's version order once for what each pair
// (or offset) says alone:
//
//   - inconsistent-offsets: two values at one offset;
//   - G1a: a read of a value whose send failed definitely, or a
//     read_committed read of an aborted transaction's write;
//   - precommitted-read: a read_committed read of a transaction's write
//     before the transaction asked to commit;
//   - lost-write, after Jepsen: take the highest offset at which some read
//     value first appears (the bound); every acknowledged value written at
//     or below it must have been read by someone.
func (a *analysis) judgePairs(p *partition, lost map[int32]bool) {
	for _, first := range p.head {
		if first < 0 {
			continue
		}
		if p.next[first] >= 0 {
			a.inconsistentOffset(p, first)
		}
		for q := first; q >= 0; q = p.next[q] {
			pr := &p.pairs[q]
			if pr.reader >= 0 {
				a.abortedRead(p, pr)
			} else if p.offset(pr) <= p.bound {
				a.lostWrite(p, pr, lost)
			}
		}
	}
}

func (a *analysis) inconsistentOffset(p *partition, first int32) {
	var desc []string
	var ids []history.ID
	for q := first; q >= 0; q = p.next[q] {
		pr := &p.pairs[q]
		by, verb := a.sent(pr.writer), "written by"
		if by == 0 {
			by, verb = a.read(pr.reader), "read by"
		}
		desc = append(desc, fmt.Sprintf("%q (%s op %d)", a.values.str(pr.value), verb, by))
		ids = append(ids, by)
	}
	a.rep.add("inconsistent-offsets", Witness{
		Message: fmt.Sprintf("%s offset %d holds %s", p.tp, p.offset(&p.pairs[first]), strings.Join(desc, " and ")),
		Ops:     a.ref(ids...)})
}

// abortedRead judges a pair some read returned.
func (a *analysis) abortedRead(p *partition, pr *pair) {
	if pr.writer < 0 {
		if w, ok := a.failedSend(p, pr.value); ok {
			reader := a.read(pr.reader)
			a.rep.add("G1a", Witness{
				Message: fmt.Sprintf("op %d read %q at %s offset %d, but its send op %d failed definitely", reader, a.values.str(pr.value), p.tp, p.offset(pr), w),
				Ops:     a.ref(reader, w)})
		}
		return
	}
	if pr.readRC < 0 {
		return
	}
	if pr.vis == model.Aborted {
		writer, readRC, t := a.sent(pr.writer), a.read(pr.readRC), a.id(pr.txn)
		a.rep.add("G1a", Witness{
			Message: fmt.Sprintf("read_committed op %d read %q at %s offset %d, written by op %d in aborted transaction op %d", readRC, a.values.str(pr.value), p.tp, p.offset(pr), writer, t),
			Ops:     a.ref(readRC, writer, t)})
		return
	}
	if pr.txn >= 0 {
		if ret, end := a.r.Reads[pr.readRC].Return, a.txnEnd(pr.txn); ret < end {
			writer, readRC, t := a.sent(pr.writer), a.read(pr.readRC), a.id(pr.txn)
			a.rep.add("precommitted-read", Witness{
				Message: fmt.Sprintf("read_committed op %d returned %q (%s offset %d) at %d, before transaction op %d asked to commit at %d", readRC, a.values.str(pr.value), p.tp, p.offset(pr), ret, t, end),
				Ops:     a.ref(readRC, writer, t)})
		}
	}
}

// lostWrite judges a pair no read returned, at or below the bound.
func (a *analysis) lostWrite(p *partition, pr *pair, lost map[int32]bool) {
	// A definite writer was acknowledged; it must also be visible.
	if pr.valRead || !a.definite(p, pr) || (pr.txn >= 0 && !a.committed[pr.txn]) || p.removable(pr) {
		return
	}
	lost[pr.writer] = true
	a.rep.add("lost-write", Witness{
		Message: fmt.Sprintf("%q, acknowledged at %s offset %d by op %d, was never read, though op %d read up to offset %d", a.values.str(pr.value), p.tp, p.offset(pr), a.sent(pr.writer), a.read(p.boundRead), p.bound),
		Ops:     a.ref(a.sent(pr.writer), a.read(p.boundRead))})
}

// failedSend is the first send of a value to p that failed definitely.
func (a *analysis) failedSend(p *partition, value int32) (history.ID, bool) {
	if p.failed == nil {
		p.failed = map[int32]history.ID{}
		for k := range a.r.Sends {
			s := &a.r.Sends[k]
			if s.Part != p.index || !s.Failed {
				continue
			}
			for v := s.Value; v < s.Value+s.Count; v++ {
				if _, dup := p.failed[a.valueOf[v]]; !dup {
					p.failed[a.valueOf[v]] = s.Op
				}
			}
		}
	}
	w, ok := p.failed[value]
	return w, ok
}

// readsPastStable: a read_committed fetch is served up to the partition's
// last stable offset (KIP-98: the first offset of a transaction still
// open, else the high watermark), and says so in the response; a record
// at or past it was served from an open transaction, or the broker's LSO
// and its own read bound disagree.
func (a *analysis) readsPastStable() {
	for k := range a.r.Reads {
		rd := &a.r.Reads[k]
		if rd.Final || !rd.Committed || rd.LastStable < 0 {
			continue
		}
		for rec := rd.Record; rec < rd.Record+rd.Count; rec++ {
			if off := a.r.RecordOffsets[rec]; off >= rd.LastStable {
				a.rep.add("read-past-lso", Witness{
					Message: fmt.Sprintf("read_committed op %d returned %q at %s offset %d from a fetch response whose last stable offset was %d", rd.Op, a.r.RecordValue(rec), a.parts[rd.Part].tp, off, rd.LastStable),
					Ops:     a.ref(rd.Op)})
				break
			}
		}
	}
}

// mustHaveCommitted: the send was acknowledged and is visible to every
// reader (outside a transaction, or in one that committed).
func (a *analysis) mustHaveCommitted(s *model.Sent) bool {
	if !s.OK {
		return false
	}
	return s.Txn == 0 || a.committed[a.pos(s.Txn)]
}

// unseen: acknowledged writes to a drained partition (one with a final
// read) that no read ever returned, and that lostWrites did not already
// name.
func (a *analysis) unseen(lost map[int32]bool) {
	for k := range a.r.Sends {
		s := &a.r.Sends[k]
		if s.Part < 0 || lost[int32(k)] || !a.mustHaveCommitted(s) {
			continue
		}
		p := a.parts[s.Part]
		if !p.m.FinalRead {
			continue
		}
		for v := s.Value; v < s.Value+s.Count; v++ {
			if !a.valueRead(p, v) && !a.removableValue(p, s, v) {
				a.rep.add("unseen", Witness{
					Message: fmt.Sprintf("%q, acknowledged by op %d to %s, was never read, not even by the final read", a.r.Values[v], s.Op, p.tp),
					Ops:     a.ref(s.Op)})
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
	tallies := make([]tally, len(a.rare)) // by rank of the transaction
	tallied := make([]bool, len(a.rare))
	for k := range a.r.Sends {
		s := &a.r.Sends[k]
		if s.Txn == 0 || s.Part < 0 {
			continue
		}
		p := a.parts[s.Part]
		if !p.m.FinalRead {
			continue
		}
		i := a.rank(a.pos(s.Txn))
		t := &tallies[i]
		if !tallied[i] {
			tallied[i] = true
			order = append(order, s.Txn)
		}
		for v := s.Value; v < s.Value+s.Count; v++ {
			if !s.Failed && a.valueFinal(p, v) {
				t.in++
				t.inOp = s.Op
			} else if !a.removableValue(p, s, v) {
				t.out++
				t.outOp, t.outValue = s.Op, a.r.Values[v]
			}
		}
	}
	slices.Sort(order)
	for _, id := range order {
		if t := &tallies[a.rank(a.pos(id))]; a.committed[a.pos(id)] && t.in > 0 && t.out > 0 {
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
	for _, i := range a.rare {
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
	for k, i := range a.rare {
		op := &a.h[i]
		if op.Kind != history.KindTxn || op.Txn.Group == "" {
			continue
		}
		t := &tallies[k]
		for _, po := range op.Txn.Offsets {
			f, ok := final[key{op.Txn.Group, po.TP}]
			if !ok {
				continue
			}
			switch {
			case a.committed[i] && t.in > 0 && f < po.Offset:
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

type lastRead struct {
	offset int64
	op     history.ID
}

// pollOrder finds poll-skip and nonmonotonic-poll: per consumer, between
// polls with no assignment change, rebalance or seek in between, and within
// one poll, consecutive offsets read must be consecutive in the version
// order its isolation level sees. Per consumer, it holds the last read of
// each partition read since its assignment last changed.
func (a *analysis) pollOrder() {
	consumers := make([]held[lastRead], len(a.procs))
	var found findings
	a.consumers.each(func(i int32) {
		proc := a.consumers.proc[i]
		c := &consumers[proc]
		co := &a.consumed[i]
		if co.poll >= 0 {
			a.poll(c, &a.r.Polls[co.poll], proc, &found)
			return
		}
		keep := func(ok func(history.TopicPartition) bool) {
			c.keep(func(part int32) bool { return ok(a.parts[part].tp) })
		}
		switch op := &a.h[co.pos]; op.Kind {
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
				keep(func(tp history.TopicPartition) bool { return tp != po.TP })
			}
		}
	})
	found.report(a.rep)
}

// poll judges one poll of consumer c's: its reads, in order, each against
// the last read of its partition (if held) and within itself.
func (a *analysis) poll(c *held[lastRead], pl *model.Polled, proc int32, found *findings) {
	if pl.Rebalanced || (a.opts.Rebalancing && pl.Grouped) {
		c.keep(func(int32) bool { return false })
	}
	for k := pl.Read; k < pl.Read+pl.Count; k++ {
		rd := &a.r.Reads[k]
		p := a.parts[rd.Part]
		ranks, need := p.all, p.needAll
		if rd.Committed {
			ranks, need = p.committed, p.needCommitted
		}
		offs := a.r.RecordOffsets[rd.Record : rd.Record+rd.Count]
		if l := c.get(p.index); l != nil {
			a.pollStep(p, ranks, need, l.offset, offs[0], l.op, rd.Op, proc, found)
		}
		for i := 1; i < len(offs); i++ {
			a.pollStep(p, ranks, need, offs[i-1], offs[i], rd.Op, rd.Op, proc, found)
		}
		if pl.OK {
			*c.put(p.index, len(a.parts)) = lastRead{offset: offs[len(offs)-1], op: rd.Op}
		}
	}
}

// pollStep judges one step of a consumer's reads of a partition, from
// offset from to offset to: to must be the next offset its isolation level
// sees (ranks), or, in a compacted partition, no offset it must see (need)
// may lie between.
func (a *analysis) pollStep(p *partition, ranks, need []int32, from, to int64, fromOp, toOp history.ID, proc int32, found *findings) {
	i, j := p.rank(ranks, from), p.rank(ranks, to)
	if i < 0 || j < 0 {
		return
	}
	skipped, between := j-i-1, func() []string { return a.valuesBetween(p, ranks, i, j, 5) }
	if need != nil && j > i {
		cf, ct := p.m.Cells.Of(from), p.m.Cells.Of(to)
		skipped = int(need[ct] - need[cf+1])
		between = func() []string { return a.neededBetween(p, need, cf, ct, 5) }
	}
	switch {
	case skipped > 0:
		found.add(proc, "poll-skip", Witness{
			Message: fmt.Sprintf("%s: op %d read offset %d, then op %d read offset %d, skipping %s (%s)", p.tp, fromOp, from, toOp, to, entries(skipped),
				strings.Join(between(), ", ")),
			Ops: a.ref(dedup(fromOp, toOp)...)})
	case j <= i:
		found.add(proc, "nonmonotonic-poll", Witness{
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
	type lastSend struct {
		offset int64
		op     history.ID
	}
	producers := make([]held[lastSend], len(a.procs))
	var found findings
	a.producers.each(func(k int32) {
		s := &a.r.Sends[k]
		if !s.OK || s.Offset < 0 {
			return
		}
		proc := a.producers.proc[k]
		l := producers[proc].get(s.Part)
		if l != nil && s.Offset <= l.offset {
			found.add(proc, "nonmonotonic-send", Witness{
				Message: fmt.Sprintf("%s: %s's op %d got offset %d, then its later op %d got offset %d", a.parts[s.Part].tp, a.procs[proc], l.op, l.offset, s.Op, s.Offset),
				Ops:     a.ref(l.op, s.Op)})
		}
		if l == nil {
			l = producers[proc].put(s.Part, len(a.parts))
		}
		*l = lastSend{offset: s.Offset + int64(s.Count) - 1, op: s.Op}
	})
	found.report(a.rep)
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
	for _, i := range a.rare {
		if op := &a.h[i]; op.Kind == history.KindOffsetFetch && op.OffsetFetch.Final && op.Outcome == history.OK {
			final = op
		}
	}
	if final == nil {
		return
	}
	best := map[key]*history.Op{}
	at := map[key]int64{}
	for _, i := range a.rare {
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
	for _, i := range a.rare {
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

func entries(n int) string {
	if n == 1 {
		return "1 known entry"
	}
	return fmt.Sprintf("%d known entries", n)
}
