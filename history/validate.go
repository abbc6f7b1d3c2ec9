package history

import (
	"fmt"
)

// Validate checks the history's contract (see the package documentation)
// and returns the first violation, naming the operation.
func (h History) Validate() error {
	v, err := h.Validation()
	if err != nil {
		return err
	}
	for i := range h {
		if err := v.Op(i); err != nil {
			return err
		}
	}
	return nil
}

// Validation validates a history one operation at a time, for a caller
// that walks the history anyway and would rather read each operation once:
// Validation checks the IDs (positive and unique), Op(i) then checks the
// i-th operation. Calling Op for every position in order is Validate: the
// errors are its errors, in its order.
type Validation struct {
	h History
	v validation
}

// Validation checks h's IDs, returning the first entry whose ID is not
// positive or repeats an earlier one's, and starts validating its
// operations.
func (h History) Validation() (*Validation, error) {
	seen := make(map[ID]int)
	for i := range h {
		op := &h[i]
		if op.ID <= 0 {
			return nil, fmt.Errorf("history: entry %d: id %d is not positive", i, op.ID)
		}
		if op.ID == ID(i+1) && len(seen) == 0 {
			continue // dense so far: no map needed
		}
		if len(seen) == 0 {
			for j := 0; j < i; j++ {
				seen[h[j].ID] = j
			}
		}
		if j, dup := seen[op.ID]; dup {
			return nil, fmt.Errorf("history: %s: duplicate id (entries %d and %d)", op, j, i)
		}
		seen[op.ID] = i
	}
	ids := Index{dense: true} // what h.Index() finds, without walking h again
	if len(seen) > 0 {
		ids = Index{m: seen}
	}
	return &Validation{h: h, v: validation{ids: ids}}, nil
}

// Index is the history's index (History.Index).
func (v *Validation) Index() Index { return v.v.ids }

// DeferContents leaves the contents of sends and polls out of Op: each
// message's value, and each polled record's offset and value. It is for a
// caller that reads every one of them later anyway and checks them then
// with ValidMessages and ValidRecords, so that each is read from memory
// once, not twice (in a history of a million operations those reads are
// cache misses, the most of what validating costs). Op's errors then no
// longer come in Validate's order: a caller that finds any violation
// reports Validate's.
func (v *Validation) DeferContents() { v.v.deferContents = true }

// ValidMessages reports whether a send's messages meet the contract Op
// checks: every value non-empty.
func ValidMessages(ms []Message) bool {
	for i := range ms {
		if ms[i].Value == "" {
			return false
		}
	}
	return true
}

// ValidRecords reports whether a fetch's records meet the contract Op
// checks: every offset non-negative, every value non-empty.
func ValidRecords(rs []Record) bool {
	for i := range rs {
		if rs[i].Offset < 0 || rs[i].Value == "" {
			return false
		}
	}
	return true
}

// Op checks the operation at position i, and returns the violation, naming
// the operation, or nil.
func (v *Validation) Op(i int) error {
	if err := v.h.validateOp(&v.h[i], &v.v); err != nil {
		return fmt.Errorf("history: %s: %w", &v.h[i], err)
	}
	return nil
}

// validation is what Validate carries from one operation to the next:
// the index, and how many batches of each replica array are known to be
// in order. Every sample of a replica's log that only grew is a view of
// the earlier sample's array (Replica.Batches, BatchArray), so checking
// each from its first batch cost the whole log at every sample; a batch's
// order depends only on the one before it, so a view resumes where an
// earlier view of its array was checked to.
type validation struct {
	ids           Index
	ordered       map[*ReplicaBatch]int
	deferContents bool // DeferContents
}

func (h History) validateOp(op *Op, v *validation) error {
	ids := v.ids
	if op.Process == "" {
		return fmt.Errorf("no process")
	}
	if op.Call < 0 {
		return fmt.Errorf("call time %d is negative", op.Call)
	}
	if op.Return != Never && op.Return < op.Call {
		return fmt.Errorf("return %d before call %d", op.Return, op.Call)
	}
	switch op.Outcome {
	case OK, Fail, Info:
	default:
		return fmt.Errorf("outcome %q is not ok, fail or info", op.Outcome)
	}
	if op.Return == Never && op.Outcome != Info && op.Kind != KindNemesis {
		return fmt.Errorf("never completed, so its outcome must be info, not %s", op.Outcome)
	}
	if n := op.payloads(); n != 1 {
		return fmt.Errorf("has %d payloads; a %s needs exactly its own", n, op.Kind)
	}
	switch op.Kind {
	case KindSend:
		s := op.Send
		if s == nil {
			return errPayload(op.Kind)
		}
		if len(s.Messages) == 0 {
			return fmt.Errorf("sends no messages")
		}
		if !v.deferContents && !ValidMessages(s.Messages) {
			return fmt.Errorf("sends an empty value")
		}
		if s.Offset < NoOffset {
			return fmt.Errorf("offset %d is negative", s.Offset)
		}
		if s.Txn != 0 {
			j := ids.Pos(s.Txn)
			if j < 0 || h[j].Kind != KindTxn {
				return fmt.Errorf("belongs to txn %d, which is not a txn operation", s.Txn)
			}
		}
		return checkTP(s.TP)
	case KindPoll:
		p := op.Poll
		if p == nil {
			return errPayload(op.Kind)
		}
		if err := checkIsolation(p.Isolation); err != nil {
			return err
		}
		for _, f := range p.Fetched {
			if err := checkTP(f.TP); err != nil {
				return err
			}
			if f.From < NoOffset {
				return fmt.Errorf("fetch of %s from negative offset %d", f.TP, f.From)
			}
			if v.deferContents {
				continue
			}
			if err := checkRecords(f.TP, f.Records); err != nil {
				return err
			}
		}
	case KindAssign:
		if op.Assign == nil {
			return errPayload(op.Kind)
		}
	case KindSubscribe:
		if op.Subscribe == nil {
			return errPayload(op.Kind)
		}
	case KindRebalance:
		if op.Rebalance == nil {
			return errPayload(op.Kind)
		}
	case KindSeek:
		if op.Seek == nil {
			return errPayload(op.Kind)
		}
		return checkOffsets(op.Seek.Offsets, false)
	case KindCommit:
		c := op.Commit
		if c == nil {
			return errPayload(op.Kind)
		}
		if c.Group == "" {
			return fmt.Errorf("commits for no group")
		}
		return checkOffsets(c.Offsets, false)
	case KindOffsetFetch:
		f := op.OffsetFetch
		if f == nil {
			return errPayload(op.Kind)
		}
		if f.Group == "" {
			return fmt.Errorf("fetches offsets of no group")
		}
		return checkOffsets(f.Offsets, true)
	case KindTxn:
		t := op.Txn
		if t == nil {
			return errPayload(op.Kind)
		}
		if len(t.Offsets) > 0 && t.Group == "" {
			return fmt.Errorf("sends offsets to the transaction for no group")
		}
		return checkOffsets(t.Offsets, false)
	case KindSinkWrite:
		s := op.SinkWrite
		if s == nil {
			return errPayload(op.Kind)
		}
		if s.Sink == "" {
			return fmt.Errorf("writes to no sink")
		}
		return checkOffsets(s.Offsets, false)
	case KindFinalRead:
		f := op.FinalRead
		if f == nil {
			return errPayload(op.Kind)
		}
		if f.Sink != "" {
			if len(f.Records) > 0 {
				return fmt.Errorf("final read of sink %s has topic records; use items", f.Sink)
			}
			return checkOffsets(f.Offsets, false)
		}
		if len(f.Items) > 0 {
			return fmt.Errorf("final read of %s has sink items; use records", f.TP)
		}
		if err := checkTP(f.TP); err != nil {
			return err
		}
		if err := checkIsolation(f.Isolation); err != nil {
			return err
		}
		if f.From < 0 {
			return fmt.Errorf("final read of %s from offset %d; it must start at a known offset", f.TP, f.From)
		}
		return checkRecords(f.TP, f.Records)
	case KindNemesis:
		if op.Nemesis == nil {
			return errPayload(op.Kind)
		}
	case KindReplica:
		r := op.Replica
		if r == nil {
			return errPayload(op.Kind)
		}
		if err := checkTP(r.TP); err != nil {
			return err
		}
		if r.Broker == "" {
			return fmt.Errorf("replica of %s names no broker", r.TP)
		}
		if len(r.Batches) == 0 {
			break
		}
		array := BatchArray(r.Batches)
		if v.ordered == nil {
			v.ordered = map[*ReplicaBatch]int{}
		}
		from := min(v.ordered[array], len(r.Batches))
		next := int64(0)
		if from > 0 {
			next = r.Batches[from-1].Last + 1
		}
		for _, b := range r.Batches[from:] {
			if b.Base < next || b.Last < b.Base {
				return fmt.Errorf("replica of %s on %s: batch [%d..%d] out of order", r.TP, r.Broker, b.Base, b.Last)
			}
			next = b.Last + 1
		}
		v.ordered[array] = max(v.ordered[array], len(r.Batches))
	default:
		return fmt.Errorf("unknown kind %q", op.Kind)
	}
	return nil
}

func (op *Op) payloads() int {
	n := 0
	count := func(set bool) {
		if set {
			n++
		}
	}
	count(op.Send != nil)
	count(op.Poll != nil)
	count(op.Assign != nil)
	count(op.Subscribe != nil)
	count(op.Rebalance != nil)
	count(op.Seek != nil)
	count(op.Commit != nil)
	count(op.OffsetFetch != nil)
	count(op.Txn != nil)
	count(op.SinkWrite != nil)
	count(op.FinalRead != nil)
	count(op.Nemesis != nil)
	count(op.Replica != nil)
	return n
}

func errPayload(k Kind) error { return fmt.Errorf("a %s without its %s payload", k, k) }

func checkTP(tp TopicPartition) error {
	if tp.Topic == "" {
		return fmt.Errorf("names no topic")
	}
	if tp.Partition < 0 {
		return fmt.Errorf("names negative partition %d of %s", tp.Partition, tp.Topic)
	}
	return nil
}

func checkIsolation(i Isolation) error {
	if i != ReadCommitted && i != ReadUncommitted {
		return fmt.Errorf("isolation %q is not read_committed or read_uncommitted", i)
	}
	return nil
}

func checkRecords(tp TopicPartition, rs []Record) error {
	for _, r := range rs {
		if r.Offset < 0 {
			return fmt.Errorf("record %q of %s at negative offset %d", r.Value, tp, r.Offset)
		}
		if r.Value == "" {
			return fmt.Errorf("record of %s at offset %d has an empty value", tp, r.Offset)
		}
	}
	return nil
}

func checkOffsets(pos []PartitionOffset, noneAllowed bool) error {
	for _, p := range pos {
		if err := checkTP(p.TP); err != nil {
			return err
		}
		if p.Offset < 0 && !(noneAllowed && p.Offset == NoOffset) {
			return fmt.Errorf("offset %d of %s is negative", p.Offset, p.TP)
		}
	}
	return nil
}
