package checkers

import (
	"slices"
	"sort"
	"strings"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/model"
)

// pair is one (offset, value) of a partition's version order: the union of
// what sends were acknowledged at (or pinned to) and what reads returned.
type pair struct {
	offset   int64
	value    string
	writer   history.ID // first send that wrote it here, 0 if none
	definite bool       // the writer was acknowledged with this offset
	vis      model.Visibility
	reader   history.ID // first read that returned it, 0 if none
	readRC   history.ID // earliest-returning read_committed read, 0 if none
	readRet  int64      // that read's return
	final    bool       // a final read returned it
	seq      int32      // creation order, for a deterministic sort
	// Of the value, over all its offsets in this partition:
	valFirst int64 // lowest offset
	valRead  bool  // some read returned it
	valFinal bool  // some final read returned it
}

// partition is the version order of one topic-partition.
type partition struct {
	tp        history.TopicPartition
	log       model.Log
	pairs     []pair  // sorted by offset, value
	byValue   []int32 // pairs indices sorted by value, offset
	all       []int64 // distinct offsets, ascending
	committed []int64 // distinct offsets a read_committed reader may see
	finalRead bool    // some final read covered this partition
	failed    map[string]history.ID
}

// analysis is everything the anomaly and delivery checks share.
type analysis struct {
	h         history.History
	index     history.Index
	opts      Options
	rep       *report
	parts     []*partition
	byTP      map[history.TopicPartition]*partition
	committed map[history.ID]bool // txn ops that committed: ok, or info with a write read at read_committed
	txnEnds   map[history.ID]int64
}

func (a *analysis) op(id history.ID) *history.Op { return &a.h[a.index.Pos(id)] }

func (a *analysis) ref(ids ...history.ID) []OpRef {
	refs := make([]OpRef, 0, len(ids))
	for _, id := range ids {
		if id == 0 {
			continue
		}
		op := a.op(id)
		refs = append(refs, OpRef{ID: op.ID, Kind: op.Kind, Process: op.Process, Node: op.Node, Call: op.Call, Return: op.Return})
	}
	return refs
}

func newAnalysis(h history.History, logs []model.Log, opts Options, rep *report) *analysis {
	a := &analysis{h: h, index: h.Index(), opts: opts, rep: rep, byTP: map[history.TopicPartition]*partition{},
		committed: map[history.ID]bool{}}
	for i := range h {
		if op := &h[i]; op.Kind == history.KindTxn && op.Outcome == history.OK {
			a.committed[op.ID] = true
		}
	}
	for _, l := range logs {
		p := &partition{tp: l.TP, log: l}
		a.parts = append(a.parts, p)
		a.byTP[l.TP] = p
	}
	for i := range h {
		op := &h[i]
		switch {
		case op.Kind == history.KindFinalRead && op.FinalRead.Sink == "":
			if p := a.byTP[op.FinalRead.TP]; p != nil {
				p.finalRead = true
			}
		case op.Kind == history.KindSend && op.Outcome == history.Fail:
			if p := a.byTP[op.Send.TP]; p != nil {
				if p.failed == nil {
					p.failed = map[string]history.ID{}
				}
				for _, m := range op.Send.Messages {
					if _, dup := p.failed[m.Value]; !dup {
						p.failed[m.Value] = op.ID
					}
				}
			}
		}
	}
	for _, p := range a.parts {
		a.buildPairs(p)
	}
	// An indefinite transaction whose write a read_committed read returned
	// committed; its writes are then as visible as any committed write.
	for _, p := range a.parts {
		for i := range p.pairs {
			pr := &p.pairs[i]
			if pr.writer != 0 && pr.readRC != 0 {
				if t := a.op(pr.writer).Send.Txn; t != 0 && a.op(t).Outcome == history.Info {
					a.committed[t] = true
				}
			}
		}
	}
	for _, p := range a.parts {
		for i := range p.pairs {
			pr := &p.pairs[i]
			if pr.writer != 0 && pr.vis == model.Undecided && a.committed[a.op(pr.writer).Send.Txn] {
				pr.vis = model.Visible
			}
		}
		a.buildRanks(p)
	}
	return a
}

func (a *analysis) buildPairs(p *partition) {
	// Every (offset, value) written or read, merged as it arrives: appends
	// come first in a model.Log, so a pair's writer is its first append and
	// its reader its first read.
	var ps []pair
	lo, hi, n := int64(1<<62), int64(-1), 0
	for _, op := range p.log.Ops {
		if !op.Input.Read {
			lo, hi = min(lo, op.Output.Offset), max(hi, op.Output.Offset+int64(len(op.Input.Values))-1)
			n += len(op.Input.Values)
			continue
		}
		for _, e := range op.Output.Records {
			lo, hi = min(lo, e.Offset), max(hi, e.Offset)
		}
	}
	if hi < lo {
		p.pairs, p.byValue = nil, nil
		return
	}
	ps = make([]pair, 0, n+n/8+16)
	dense := hi-lo <= 4*int64(n)+1024
	var head []int32 // dense: first pair at each offset, chained by next
	var next []int32
	var at map[int64]int32 // sparse offsets: the same, hashed
	if dense {
		head = make([]int32, hi-lo+1)
		for i := range head {
			head[i] = -1
		}
	} else {
		at = map[int64]int32{}
	}
	merge := func(pr pair) *pair {
		first := int32(-1)
		if dense {
			first = head[pr.offset-lo]
		} else if f, ok := at[pr.offset]; ok {
			first = f
		}
		for k := first; k >= 0; k = next[k] {
			if ps[k].value == pr.value {
				return &ps[k]
			}
		}
		pr.seq = int32(len(ps))
		ps = append(ps, pr)
		next = append(next, first)
		if dense {
			head[pr.offset-lo] = pr.seq
		} else {
			at[pr.offset] = pr.seq
		}
		return nil
	}
	for _, op := range p.log.Ops {
		if !op.Input.Read {
			definite := op.Return != history.Never && a.op(op.Op).Send.Offset >= 0
			for k, v := range op.Input.Values {
				pr := pair{offset: op.Output.Offset + int64(k), value: v, writer: op.Op, definite: definite, vis: op.Input.Visibility}
				if m := merge(pr); m != nil && m.writer == 0 {
					m.writer, m.definite, m.vis = pr.writer, pr.definite, pr.vis
				}
			}
			continue
		}
		final := a.op(op.Op).Kind == history.KindFinalRead
		for _, e := range op.Output.Records {
			pr := pair{offset: e.Offset, value: e.Value, reader: op.Op, final: final, vis: model.Undecided}
			if op.Input.Committed {
				pr.readRC, pr.readRet = op.Op, op.Return
			}
			if m := merge(pr); m != nil {
				if m.reader == 0 {
					m.reader = pr.reader
				}
				if pr.readRC != 0 && (m.readRC == 0 || pr.readRet < m.readRet) {
					m.readRC, m.readRet = pr.readRC, pr.readRet
				}
				m.final = m.final || pr.final
			}
		}
	}
	// Lay the pairs out in (offset, value) order.
	out := make([]pair, 0, len(ps))
	emit := func(first int32) {
		start := len(out)
		for k := first; k >= 0; k = next[k] {
			out = append(out, ps[k])
		}
		if group := out[start:]; len(group) > 1 {
			slices.SortFunc(group, func(x, y pair) int { return comparePairs(&x, &y) })
		}
	}
	if dense {
		for _, first := range head {
			emit(first)
		}
	} else {
		offs := make([]int64, 0, len(at))
		for off := range at {
			offs = append(offs, off)
		}
		slices.Sort(offs)
		for _, off := range offs {
			emit(at[off])
		}
	}
	p.pairs = out
	p.byValue = make([]int32, len(out))
	for i := range out {
		p.byValue[i] = int32(i)
	}
	slices.SortFunc(p.byValue, func(x, y int32) int {
		if c := strings.Compare(out[x].value, out[y].value); c != 0 {
			return c
		}
		return cmp64(out[x].offset, out[y].offset)
	})
	for i := 0; i < len(p.byValue); {
		j := i + 1
		v := out[p.byValue[i]].value
		read, final := out[p.byValue[i]].reader != 0, out[p.byValue[i]].final
		for j < len(p.byValue) && out[p.byValue[j]].value == v {
			read = read || out[p.byValue[j]].reader != 0
			final = final || out[p.byValue[j]].final
			j++
		}
		first := out[p.byValue[i]].offset
		for _, k := range p.byValue[i:j] {
			out[k].valFirst, out[k].valRead, out[k].valFinal = first, read, final
		}
		i = j
	}
}

// find returns the pair holding v at offset off, or -1.
func (p *partition) find(off int64, v string) int {
	i := sort.Search(len(p.pairs), func(i int) bool { return p.pairs[i].offset >= off })
	for ; i < len(p.pairs) && p.pairs[i].offset == off; i++ {
		if p.pairs[i].value == v {
			return i
		}
	}
	return -1
}

// valueRead and valueFinal report whether any read, or a final read,
// returned v anywhere in this partition; off is where v was written, if
// known, to find it fast.
func (p *partition) valueRead(off int64, v string) bool {
	if i := p.find(off, v); i >= 0 {
		return p.pairs[i].valRead
	}
	vp := p.valuePairs(v)
	return len(vp) > 0 && p.pairs[vp[0]].valRead
}

func (p *partition) valueFinal(off int64, v string) bool {
	if i := p.find(off, v); i >= 0 {
		return p.pairs[i].valFinal
	}
	vp := p.valuePairs(v)
	return len(vp) > 0 && p.pairs[vp[0]].valFinal
}

func (a *analysis) buildRanks(p *partition) {
	for i, pr := range p.pairs {
		if i > 0 && p.pairs[i-1].offset == pr.offset {
			if pr.vis == model.Visible || pr.readRC != 0 {
				if k := len(p.committed); k == 0 || p.committed[k-1] != pr.offset {
					p.committed = append(p.committed, pr.offset)
				}
			}
			continue
		}
		p.all = append(p.all, pr.offset)
		if (pr.writer != 0 && pr.vis == model.Visible) || pr.readRC != 0 {
			p.committed = append(p.committed, pr.offset)
		}
	}
}

// valuePairs returns the pairs holding value v, in offset order.
func (p *partition) valuePairs(v string) []int32 {
	lo := sort.Search(len(p.byValue), func(i int) bool { return p.pairs[p.byValue[i]].value >= v })
	hi := lo
	for hi < len(p.byValue) && p.pairs[p.byValue[hi]].value == v {
		hi++
	}
	return p.byValue[lo:hi]
}

// rank is an offset's position among the offsets a reader at the given
// isolation can see, or -1 if it is not among them.
func rank(offsets []int64, off int64) int {
	i := sort.Search(len(offsets), func(i int) bool { return offsets[i] >= off })
	if i < len(offsets) && offsets[i] == off {
		return i
	}
	return -1
}

func (p *partition) ranks(iso history.Isolation) []int64 {
	if iso == history.ReadCommitted {
		return p.committed
	}
	return p.all
}

// valuesAt lists the values at offsets[from+1 .. to-1], at most max.
func (p *partition) valuesBetween(offsets []int64, from, to, max int) []string {
	var vs []string
	for r := from + 1; r < to && len(vs) < max; r++ {
		i := sort.Search(len(p.pairs), func(i int) bool { return p.pairs[i].offset >= offsets[r] })
		vs = append(vs, p.pairs[i].value)
	}
	return vs
}

func comparePairs(x, y *pair) int {
	if x.offset != y.offset {
		return cmp64(x.offset, y.offset)
	}
	if x.value != y.value {
		return strings.Compare(x.value, y.value)
	}
	return int(x.seq - y.seq) // a total order: the result is deterministic
}
