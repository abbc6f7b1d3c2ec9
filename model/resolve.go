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

// Logs splits a valid history into resolved partition logs, sorted by
// topic-partition. Failed sends are left out (they did not happen); so are
// empty reads (always legal). Each indefinite send is pinned where reads
// observed it: an observation (value v at offset o) is explained if some
// append already claims v at o; an indefinite send is placed at the base
// offset that explains most of its unexplained observations (ties: the
// lowest), in invocation order, or dropped if it explains none.
func Logs(h history.History) []Log {
	r := Resolve(h)
	clients := Clients(h)
	logs := make([]Log, len(r.Partitions))
	for i := range logs {
		logs[i] = r.Log(h, clients, i)
	}
	return logs
}

// Log builds partition i's porcupine operations: its appends, then its
// reads. clients numbers h's processes (Clients).
func (r *Resolution) Log(h history.History, clients map[string]int, i int) Log {
	p := &r.Partitions[i]
	l := Log{TP: p.TP, Ops: make([]LogOp, 0, len(p.Appends)+len(p.Reads)), Pinned: p.Pinned, Dropped: p.Dropped}
	for _, a := range p.Appends {
		op := &h[r.Sends[a.Sent].Pos]
		end := a.Value + a.Count
		l.Ops = append(l.Ops, LogOp{Op: a.Op, Node: op.Node, Client: clients[op.Process], Call: a.Call, Return: a.Return,
			Input:  LogInput{TP: p.TP, Values: r.Values[a.Value:end:end], Visibility: a.Visibility, After: a.After},
			Output: LogOutput{Offset: a.Base}})
	}
	n := 0
	for _, k := range p.Reads {
		n += int(r.Reads[k].Count)
	}
	entries := make([]Entry, n)
	for _, k := range p.Reads {
		rd := &r.Reads[k]
		es := entries[:rd.Count:rd.Count]
		entries = entries[rd.Count:]
		for j := range es {
			es[j] = Entry{Offset: r.RecordOffsets[rd.Record+int32(j)], Value: r.RecordValue(rd.Record + int32(j))}
		}
		op := &h[rd.Pos]
		l.Ops = append(l.Ops, LogOp{Op: rd.Op, Node: op.Node, Client: clients[op.Process], Call: rd.Call, Return: rd.Return,
			Input:  LogInput{TP: p.TP, Read: true, From: rd.From, Committed: rd.Committed, After: history.NoOffset},
			Output: LogOutput{Offset: history.NoOffset, Records: es}})
	}
	return l
}

// Flatten lays one partition log out as Resolve lays out a history, so
// that a checker of Resolutions judges it: its appends and reads in the
// order of l.Ops (with no history behind them: no Sends, Pos -1, Txn 0,
// Definite false, and no last stable offsets).
func Flatten(l Log) *Resolution {
	var apps, values, reads, records int
	for i := range l.Ops {
		if in := &l.Ops[i].Input; in.Read {
			reads++
			records += len(l.Ops[i].Output.Records)
		} else {
			apps++
			values += len(in.Values)
		}
	}
	r := &Resolution{Values: make([]string, 0, values), Reads: make([]Read, 0, reads),
		RecordOffsets: make([]int64, 0, records), RecordValues: make([]int32, 0, records)}
	p := Partition{TP: l.TP, Pinned: l.Pinned, Dropped: l.Dropped, Appends: make([]Append, 0, apps), Reads: make([]int32, 0, reads)}
	lo, hi := int64(1<<63-1), int64(-1)
	readOps := make([]int, 0, reads) // each read's place in l.Ops
	for i := range l.Ops {
		op := &l.Ops[i]
		if op.Input.Read {
			readOps = append(readOps, i)
			p.Reads = append(p.Reads, int32(len(r.Reads)))
			r.Reads = append(r.Reads, Read{Op: op.Op, Pos: -1, Committed: op.Input.Committed, Call: op.Call, Return: op.Return,
				From: op.Input.From, LastStable: history.NoOffset, Record: int32(len(r.RecordOffsets)), Count: int32(len(op.Output.Records))})
			for _, e := range op.Output.Records {
				lo, hi = min(lo, e.Offset), max(hi, e.Offset)
				r.RecordOffsets = append(r.RecordOffsets, e.Offset)
			}
			continue
		}
		a := Append{Op: op.Op, Sent: -1, Call: op.Call, Return: op.Return, Base: op.Output.Offset, Value: int32(len(r.Values)),
			Count: int32(len(op.Input.Values)), Visibility: op.Input.Visibility, After: op.Input.After}
		r.Values = append(r.Values, op.Input.Values...)
		lo, hi = min(lo, a.Base), max(hi, a.Base+max(int64(a.Count), 1)-1)
		p.Appends = append(p.Appends, a)
	}
	p.Cells = newCells(lo, hi, values+records, func(yield func(int64)) {
		for _, a := range p.Appends {
			for j := int64(0); j < max(int64(a.Count), 1); j++ {
				yield(a.Base + j)
			}
		}
		for _, off := range r.RecordOffsets {
			yield(off)
		}
	})
	// Each record holds the first value an append (in l.Ops' order) wrote
	// at its offset, or another one that did, or none.
	first := make([]int32, p.Cells.Len())
	for c := range first {
		first[c] = -1
	}
	var others map[int64][]int32 // offsets written twice: the values after the first
	for _, a := range p.Appends {
		for j := int32(0); j < a.Count; j++ {
			if c := p.Cells.Of(a.Base + int64(j)); first[c] < 0 {
				first[c] = a.Value + j
			} else {
				if others == nil {
					others = map[int64][]int32{}
				}
				others[a.Base+int64(j)] = append(others[a.Base+int64(j)], a.Value+j)
			}
		}
	}
	for _, k := range p.Reads {
		rd := &r.Reads[k]
		recs := l.Ops[readOps[k]].Output.Records
		for j := range recs {
			e := &recs[j]
			v := first[p.Cells.Of(e.Offset)]
			if v >= 0 && r.Values[v] != e.Value {
				v = -1
				for _, w := range others[e.Offset] {
					if r.Values[w] == e.Value {
						v = w
						break
					}
				}
			}
			if v < 0 {
				r.unwritten = append(r.unwritten, unwritten{record: rd.Record + int32(j), value: e.Value})
			}
			r.RecordValues = append(r.RecordValues, v)
		}
	}
	p.ByOffset = byOffset(p.Appends, p.Cells)
	r.Partitions = []Partition{p}
	return r
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
