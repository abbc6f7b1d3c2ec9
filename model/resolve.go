package model

import (
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
)

// LogOp is one operation on one partition log, ready for a checker: the
// porcupine operation's fields plus the history operation it came from.
type LogOp struct {
	Op     history.ID
	Node   string
	Client int
	Call   int64
	Return int64 // history.Never: may take effect any time after Call
	Input  LogInput
	Output LogOutput
}

// Log is the history of one partition, resolved for linearizability
// checking: definite appends (ok sends with an offset), indefinite appends
// pinned to the offset where a read observed them, and non-empty reads.
type Log struct {
	TP  history.TopicPartition
	Ops []LogOp
	// Pinned are indefinite sends (info, or ok without an offset) that
	// reads observed, placed at that offset. Dropped are those nobody
	// observed: leaving them out is always at least as legal as any
	// placement, because an unobserved append can only make reads skip it.
	Pinned, Dropped []history.ID
}

// Operations converts the log to porcupine operations.
func (l Log) Operations() []porcupine.Operation {
	ops := make([]porcupine.Operation, len(l.Ops))
	for i, op := range l.Ops {
		ops[i] = porcupine.Operation{ClientId: op.Client, Input: op.Input, Call: op.Call,
			Output: op.Output, Return: op.Return, Metadata: Meta{Op: op.Op, Node: op.Node}}
	}
	return ops
}

// Clients numbers a history's processes for porcupine (sorted by name, from
// 0), so every partition's visualization uses the same rows.
func Clients(h history.History) map[string]int {
	names := map[string]bool{}
	for i := range h {
		names[h[i].Process] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	ids := make(map[string]int, len(sorted))
	for i, n := range sorted {
		ids[n] = i
	}
	return ids
}

// VisibilityOf is the read_committed visibility of what a send wrote: set by
// the outcome of its transaction.
func VisibilityOf(h history.History, index history.Index, s *history.Send) Visibility {
	if s.Txn == 0 {
		return Visible
	}
	switch h[index.Pos(s.Txn)].Outcome {
	case history.OK:
		return Visible
	case history.Fail:
		return Aborted
	}
	return Undecided
}

type pendingAppend struct {
	op  *history.Op
	vis Visibility
}

type pendingRead struct {
	op        *history.Op
	from      int64
	committed bool
	recs      []history.Record
}

type partitionBuild struct {
	tp         history.TopicPartition
	definite   []pendingAppend
	indefinite []pendingAppend
	reads      []pendingRead
	nRecords   int
}

// Logs splits a valid history into resolved partition logs, sorted by
// topic-partition. Failed sends are left out (they did not happen); so are
// empty reads (always legal).
func Logs(h history.History) []Log {
	index := h.Index()
	clients := Clients(h)
	byTP := map[history.TopicPartition]*partitionBuild{}
	get := func(tp history.TopicPartition) *partitionBuild {
		b := byTP[tp]
		if b == nil {
			b = &partitionBuild{tp: tp}
			byTP[tp] = b
		}
		return b
	}
	addRead := func(op *history.Op, tp history.TopicPartition, from int64, committed bool, recs []history.Record) {
		if len(recs) == 0 {
			return
		}
		b := get(tp)
		b.reads = append(b.reads, pendingRead{op: op, from: from, committed: committed, recs: recs})
		b.nRecords += len(recs)
	}
	for i := range h {
		op := &h[i]
		switch op.Kind {
		case history.KindSend:
			s := op.Send
			if op.Outcome == history.Fail {
				continue
			}
			pa := pendingAppend{op: op, vis: VisibilityOf(h, index, s)}
			b := get(s.TP)
			if op.Outcome == history.OK && s.Offset >= 0 {
				b.definite = append(b.definite, pa)
			} else {
				b.indefinite = append(b.indefinite, pa)
			}
		case history.KindPoll:
			for _, f := range op.Poll.Fetched {
				addRead(op, f.TP, f.From, op.Poll.Isolation == history.ReadCommitted, f.Records)
			}
		case history.KindFinalRead:
			if f := op.FinalRead; f.Sink == "" {
				addRead(op, f.TP, f.From, f.Isolation == history.ReadCommitted, f.Records)
			}
		}
	}
	builds := make([]*partitionBuild, 0, len(byTP))
	for _, b := range byTP {
		builds = append(builds, b)
	}
	slices.SortFunc(builds, func(a, b *partitionBuild) int { return a.tp.Compare(b.tp) })
	logs := make([]Log, len(builds))
	for i, b := range builds {
		logs[i] = b.resolve(clients)
	}
	return logs
}

// resolve pins each indefinite send to where reads observed it. An
// observation (value v at offset o) is explained if some append already
// claims v at o; an indefinite send is placed at the base offset that
// explains most of its unexplained observations (ties: the lowest), in
// invocation order, or dropped if it explains none.
func (b *partitionBuild) resolve(clients map[string]int) Log {
	l := Log{TP: b.tp, Ops: make([]LogOp, 0, len(b.definite)+len(b.indefinite)+len(b.reads))}
	vals := make([]string, 0, len(b.definite)+len(b.indefinite))
	appendOp := func(pa pendingAppend, clients map[string]int, base, ret int64) LogOp {
		op := pa.op
		start := len(vals)
		for _, m := range op.Send.Messages {
			vals = append(vals, m.Value)
		}
		return LogOp{Op: op.ID, Node: op.Node, Client: clients[op.Process], Call: op.Call, Return: ret,
			Input:  LogInput{TP: op.Send.TP, Values: vals[start:len(vals):len(vals)], Visibility: pa.vis, After: history.NoOffset},
			Output: LogOutput{Offset: base}}
	}
	var cl claims
	for _, pa := range b.definite {
		l.Ops = append(l.Ops, appendOp(pa, clients, pa.op.Send.Offset, pa.op.Return))
	}
	if len(b.indefinite) > 0 {
		for _, pa := range b.definite {
			for i, m := range pa.op.Send.Messages {
				cl.sorted = append(cl.sorted, claim{offset: pa.op.Send.Offset + int64(i), value: m.Value, seq: len(cl.sorted)})
			}
		}
		slices.SortFunc(cl.sorted, func(x, y claim) int { // ties by seq: the first claim wins
			switch {
			case x.offset < y.offset:
				return -1
			case x.offset > y.offset:
				return 1
			}
			return x.seq - y.seq
		})
		cl.extra = map[int64]string{}
		wanted := map[string][]int64{}
		for _, pa := range b.indefinite {
			for _, m := range pa.op.Send.Messages {
				wanted[m.Value] = nil
			}
		}
		for _, r := range b.reads {
			for _, e := range r.recs {
				if obs, ok := wanted[e.Value]; ok && !slices.Contains(obs, e.Offset) {
					wanted[e.Value] = append(obs, e.Offset)
				}
			}
		}
		ind := slices.Clone(b.indefinite)
		slices.SortFunc(ind, func(x, y pendingAppend) int {
			if x.op.Call != y.op.Call {
				if x.op.Call < y.op.Call {
					return -1
				}
				return 1
			}
			return int(x.op.ID - y.op.ID)
		})
		for _, pa := range ind {
			msgs := pa.op.Send.Messages
			best, bestScore := int64(-1), 0
			for i, m := range msgs {
				for _, o := range wanted[m.Value] {
					base := o - int64(i)
					if v, taken := cl.at(o); base < 0 || (taken && v == m.Value) {
						continue
					}
					score := 0
					for k, mk := range msgs {
						if at := base + int64(k); slices.Contains(wanted[mk.Value], at) {
							if v, taken := cl.at(at); !taken || v != mk.Value {
								score++
							}
						}
					}
					if score > bestScore || (score == bestScore && score > 0 && base < best) {
						best, bestScore = base, score
					}
				}
			}
			if bestScore == 0 {
				l.Dropped = append(l.Dropped, pa.op.ID)
				continue
			}
			ret := history.Never
			if pa.op.Outcome == history.OK {
				ret = pa.op.Return // acknowledged, offset unknown: it happened before it returned
			}
			l.Ops = append(l.Ops, appendOp(pa, clients, best, ret))
			l.Pinned = append(l.Pinned, pa.op.ID)
			for k, mk := range msgs {
				if _, taken := cl.at(best + int64(k)); !taken {
					cl.extra[best+int64(k)] = mk.Value
				}
			}
		}
	}
	// Chain the appends in offset order (see LogInput.After).
	apps := make([]int, 0, len(l.Ops))
	for i := range l.Ops {
		apps = append(apps, i)
	}
	slices.SortFunc(apps, func(x, y int) int {
		bx, by := l.Ops[x].Output.Offset, l.Ops[y].Output.Offset
		switch {
		case bx < by:
			return -1
		case bx > by:
			return 1
		}
		return int(l.Ops[x].Op - l.Ops[y].Op)
	})
	end := int64(0)
	for _, i := range apps {
		l.Ops[i].Input.After = end
		end = l.Ops[i].Output.Offset + int64(len(l.Ops[i].Input.Values))
	}
	entries := make([]Entry, b.nRecords)
	for _, r := range b.reads {
		es := entries[:len(r.recs):len(r.recs)]
		entries = entries[len(r.recs):]
		for i, rec := range r.recs {
			es[i] = Entry{Offset: rec.Offset, Value: rec.Value}
		}
		op := r.op
		l.Ops = append(l.Ops, LogOp{Op: op.ID, Node: op.Node, Client: clients[op.Process],
			Call: op.Call, Return: op.Return,
			Input:  LogInput{TP: b.tp, Read: true, From: r.from, Committed: r.committed, After: history.NoOffset},
			Output: LogOutput{Offset: history.NoOffset, Records: es}})
	}
	return l
}

// Unchained returns a copy of l whose appends do not name the log end they
// must find (LogInput.After = NoOffset): porcupine then searches the order
// of appends itself. Tests use it to hold the chaining to the plain model.
func (l Log) Unchained() Log {
	c := l
	c.Ops = slices.Clone(l.Ops)
	for i := range c.Ops {
		c.Ops[i].Input.After = history.NoOffset
	}
	return c
}

// claims are the values appends put at offsets: the definite ones sorted
// by offset (first claim wins), the pinned ones in a map.
type claims struct {
	sorted []claim
	extra  map[int64]string
}

type claim struct {
	offset int64
	value  string
	seq    int
}

func (c *claims) at(off int64) (string, bool) {
	i := sort.Search(len(c.sorted), func(i int) bool { return c.sorted[i].offset >= off })
	if i < len(c.sorted) && c.sorted[i].offset == off {
		return c.sorted[i].value, true
	}
	v, ok := c.extra[off]
	return v, ok
}
