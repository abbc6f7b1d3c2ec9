package history

import (
	"fmt"
	"sync"
)

// Result is what a completing operation learned. Only the fields of the
// operation's kind are used:
//
//	send:         Offset (base offset; NoOffset if unknown)
//	poll:         Fetched, Rebalanced
//	offset-fetch: Offsets (committed offsets read)
//	txn:          Offsets (sent to the transaction), EndCall
//	final-read:   Records (topic) or Items and Offsets (sink)
//
// Error, for any kind, says why an operation failed or is indefinite.
type Result struct {
	Offset     int64
	Fetched    []Fetch
	Rebalanced bool
	Offsets    []PartitionOffset
	EndCall    int64
	Records    []Record
	Items      []Message
	Error      string
}

// Recorder builds a history as a workload runs. The caller passes every
// time: a Recorder never reads a clock, so simulated runs stay deterministic.
// It is safe for concurrent use (real-mode workloads may block in several
// goroutines). Misuse — completing an unknown or completed operation, a
// return before the call — is a bug in the workload and panics.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Invoke records the invocation of op (op.Call, op.Process, op.Node,
// op.Kind and the kind's payload must be set) and returns its ID.
func (r *Recorder) Invoke(op Op) ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = ID(len(r.ops) + 1)
	op.Return = Never
	op.Outcome = Info
	if op.payloads() != 1 {
		panic(badInvoke(op))
	}
	r.ops = append(r.ops, op)
	return op.ID
}

// badInvoke is Invoke's panic message, apart so that op stays on Invoke's
// stack (taking its address there moved every op to the heap).
func badInvoke(op Op) string {
	return fmt.Sprintf("history: Invoke(%s): needs exactly one payload, has %d", &op, op.payloads())
}

// Complete records that operation id returned at time ret with outcome.
func (r *Recorder) Complete(id ID, ret int64, outcome Outcome, res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id <= 0 || int(id) > len(r.ops) {
		panic(fmt.Sprintf("history: Complete(op %d): no such operation", id))
	}
	op := &r.ops[id-1]
	if op.Return != Never {
		panic(fmt.Sprintf("history: Complete(%s): already completed at %d", op, op.Return))
	}
	if ret < op.Call {
		panic(fmt.Sprintf("history: Complete(%s): return %d before call %d", op, ret, op.Call))
	}
	if ret == Never {
		panic(fmt.Sprintf("history: Complete(%s): return time is Never; leave it pending instead", op))
	}
	op.Return, op.Outcome, op.Error = ret, outcome, res.Error
	switch op.Kind {
	case KindSend:
		s := *op.Send
		s.Offset = res.Offset
		op.Send = &s
	case KindPoll:
		p := *op.Poll
		p.Fetched, p.Rebalanced = res.Fetched, p.Rebalanced || res.Rebalanced
		op.Poll = &p
	case KindOffsetFetch:
		f := *op.OffsetFetch
		f.Offsets = res.Offsets
		op.OffsetFetch = &f
	case KindTxn:
		t := *op.Txn
		if res.Offsets != nil {
			t.Offsets = res.Offsets
		}
		t.EndCall = res.EndCall
		op.Txn = &t
	case KindFinalRead:
		f := *op.FinalRead
		f.Records, f.Items = res.Records, res.Items
		if res.Offsets != nil {
			f.Offsets = res.Offsets
		}
		op.FinalRead = &f
	}
}

// SetTxnOffsets records the consumer offsets a transaction sends
// (sendOffsetsToTransaction) before it completes: what it commits if it
// commits, also when it never returns.
func (r *Recorder) SetTxnOffsets(id ID, offsets []PartitionOffset) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id <= 0 || int(id) > len(r.ops) || r.ops[id-1].Kind != KindTxn {
		panic(fmt.Sprintf("history: SetTxnOffsets(op %d): no such transaction", id))
	}
	op := &r.ops[id-1]
	if op.Return != Never {
		panic(fmt.Sprintf("history: SetTxnOffsets(%s): already completed", op))
	}
	t := *op.Txn
	t.Offsets = offsets
	op.Txn = &t
}

// Nemesis records a fault event from start to end (end = start for an
// instant) on nodes.
func (r *Recorder) Nemesis(start, end int64, description string, nodes ...string) ID {
	if end < start {
		panic(fmt.Sprintf("history: Nemesis(%q): end %d before start %d", description, end, start))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := ID(len(r.ops) + 1)
	r.ops = append(r.ops, Op{ID: id, Process: "nemesis", Kind: KindNemesis, Call: start, Return: end,
		Outcome: OK, Nemesis: &Nemesis{Description: description, Nodes: nodes}})
	return id
}

// Replica records what a replica holds at time t (an instant: it was read
// off the disk).
func (r *Recorder) Replica(t int64, reader string, rep Replica) ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := ID(len(r.ops) + 1)
	r.ops = append(r.ops, Op{ID: id, Process: reader, Kind: KindReplica, Call: t, Return: t, Outcome: OK, Replica: &rep})
	return id
}

// History returns a copy of what was recorded. Operations still pending
// are indefinite: outcome info, never returned.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := make(History, len(r.ops))
	copy(h, r.ops)
	return h
}
