package model

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
)

// OffsetInput is one operation on a group's committed offset for one
// partition: a write (commit, or a committed transaction's offsets) or a
// read (offset fetch).
type OffsetInput struct {
	Group  string
	TP     history.TopicPartition
	Write  bool
	Offset int64 // the offset written
}

// OffsetOutput is a read's result: the committed offset, or NoOffset.
type OffsetOutput struct {
	Offset int64
}

// OffsetRegister is the history of one group's committed offset for one
// partition.
type OffsetRegister struct {
	Group string
	TP    history.TopicPartition
	Ops   []porcupine.Operation
}

// OffsetStep is the sequential specification of a committed offset: a
// register starting at NoOffset. Commits need not move forward here;
// offset-regression is an anomaly the checkers name separately.
func OffsetStep(state, input, output any) (bool, any) {
	in := input.(OffsetInput)
	if in.Write {
		return true, in.Offset
	}
	return output.(OffsetOutput).Offset == state.(int64), state
}

// OffsetModel is the porcupine model of committed consumer offsets,
// partitioned by group and topic-partition.
func OffsetModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			return partitionBy(ops, func(op porcupine.Operation) string {
				in := op.Input.(OffsetInput)
				return in.Group + "\x00" + in.TP.String()
			})
		},
		Init:  func() any { return history.NoOffset },
		Step:  OffsetStep,
		Equal: func(a, b any) bool { return a.(int64) == b.(int64) },
		Hash:  func(s any) uint64 { return uint64(s.(int64)) },
		DescribeOperation: func(input, output any) string {
			in := input.(OffsetInput)
			if in.Write {
				return fmt.Sprintf("commit %s %s = %d", in.Group, in.TP, in.Offset)
			}
			return fmt.Sprintf("fetch %s %s → %d", in.Group, in.TP, output.(OffsetOutput).Offset)
		},
		DescribeState: func(s any) string { return fmt.Sprintf("committed %d", s.(int64)) },
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return m.(Meta).String()
		},
	}
}

// Observed is the register's operations without the writes that may not
// have taken effect (a commit whose outcome is unknown: it never returns)
// and whose offset no read returned. Leaving those out changes no verdict:
// a linearization without such a write is one of the whole register (a
// write that never returns may take effect last, after every read), and a
// linearization with it stays one when it is taken out, because no read
// sits between it and the next write (that read would have returned its
// offset). What it saves is the search: porcupine otherwise tries every
// subset of the unknown commits, and a consumer that loses its coordinator
// leaves dozens (pipeline-auto-commit seed 4: 31 of 56 commits).
func (r OffsetRegister) Observed() []porcupine.Operation {
	read := map[int64]bool{}
	for _, op := range r.Ops {
		if !op.Input.(OffsetInput).Write {
			read[op.Output.(OffsetOutput).Offset] = true
		}
	}
	var ops []porcupine.Operation // allocated at the first one left out
	for i, op := range r.Ops {
		if in := op.Input.(OffsetInput); in.Write && op.Return == history.Never && !read[in.Offset] {
			if ops == nil {
				ops = append(make([]porcupine.Operation, 0, len(r.Ops)-1), r.Ops[:i]...)
			}
			continue
		}
		if ops != nil {
			ops = append(ops, op)
		}
	}
	if ops == nil {
		return r.Ops
	}
	return ops
}

// OffsetRegisters splits a valid history into committed-offset registers,
// sorted by group then topic-partition. Writes come from commits and from
// transactions' offsets (ok: definite; info: may take effect any time after
// the call; fail: left out); reads from ok offset fetches.
func OffsetRegisters(h history.History) []OffsetRegister {
	return offsetRegisters(h, func(yield func(int32)) {
		for i := range h {
			yield(int32(i))
		}
	})
}

// OffsetRegistersOf is OffsetRegisters over the operations at the given
// positions of h, in history order, for a caller that already walked the
// history: the commits, transactions and offset fetches among them are
// all the registers hold.
func OffsetRegistersOf(h history.History, positions []int32) []OffsetRegister {
	return offsetRegisters(h, func(yield func(int32)) {
		for _, i := range positions {
			yield(i)
		}
	})
}

func offsetRegisters(h history.History, ops func(yield func(int32))) []OffsetRegister {
	var clients map[string]int // only if there is a register: numbering the processes walks the history
	type key struct {
		group string
		tp    history.TopicPartition
	}
	regs := map[key]*OffsetRegister{}
	add := func(op *history.Op, group string, po history.PartitionOffset, write bool) {
		k := key{group, po.TP}
		r := regs[k]
		if r == nil {
			r = &OffsetRegister{Group: group, TP: po.TP}
			regs[k] = r
		}
		if clients == nil {
			clients = Clients(h)
		}
		ret := op.Return
		if op.Outcome == history.Info {
			ret = history.Never
		}
		in := OffsetInput{Group: group, TP: po.TP, Write: write}
		out := OffsetOutput{Offset: history.NoOffset}
		if write {
			in.Offset = po.Offset
		} else {
			out.Offset = po.Offset
		}
		r.Ops = append(r.Ops, porcupine.Operation{ClientId: clients[op.Process], Input: in, Call: op.Call,
			Output: out, Return: ret, Metadata: Meta{Op: op.ID, Node: op.Node}})
	}
	ops(func(i int32) {
		op := &h[i]
		if op.Outcome == history.Fail {
			return
		}
		switch op.Kind {
		case history.KindCommit:
			for _, po := range op.Commit.Offsets {
				add(op, op.Commit.Group, po, true)
			}
		case history.KindTxn:
			for _, po := range op.Txn.Offsets {
				add(op, op.Txn.Group, po, true)
			}
		case history.KindOffsetFetch:
			if op.Outcome == history.OK {
				for _, po := range op.OffsetFetch.Offsets {
					add(op, op.OffsetFetch.Group, po, false)
				}
			}
		}
	})
	out := make([]OffsetRegister, 0, len(regs))
	for _, r := range regs {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b OffsetRegister) int {
		if a.Group != b.Group {
			if a.Group < b.Group {
				return -1
			}
			return 1
		}
		return a.TP.Compare(b.TP)
	})
	return out
}
