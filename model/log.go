package model

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
)

// Visibility says whether an entry of a partition log is visible to a
// read_committed consumer. read_uncommitted consumers see every entry.
type Visibility uint8

const (
	// Visible: written outside a transaction, or by a committed one.
	Visible Visibility = iota
	// Aborted: written by an aborted transaction; read_committed never
	// returns it.
	Aborted
	// Undecided: written by a transaction whose outcome is unknown; a
	// read_committed read may or may not return it.
	Undecided
)

func (v Visibility) String() string {
	switch v {
	case Visible:
		return "visible"
	case Aborted:
		return "aborted"
	case Undecided:
		return "undecided"
	}
	return fmt.Sprintf("Visibility(%d)", uint8(v))
}

// Entry is a value at an offset of a partition log.
type Entry struct {
	Offset int64
	Value  string
}

// LogInput is the input of one partition-log operation: an append of a
// batch (Read false) or a read from an offset (Read true).
type LogInput struct {
	TP   history.TopicPartition
	Read bool
	// Append: the batch's values and their visibility. After, if not
	// NoOffset, is the log end the append must find: the end of the append
	// before it in offset order. Logs fills it in: in any linearization
	// appends take effect in offset order, so this only tells porcupine
	// what it would otherwise learn by backtracking (which, with offset
	// gaps, is exponential).
	Values     []string
	Visibility Visibility
	After      int64
	// Read: the fetch position (NoOffset if unknown: the first record's
	// offset is used) and whether the reader is read_committed.
	From      int64
	Committed bool
}

// LogOutput is the result: an append's base offset, or a read's records in
// the order returned.
type LogOutput struct {
	Offset  int64
	Records []Entry
}

// Meta identifies the history operation behind a porcupine operation.
type Meta struct {
	Op   history.ID
	Node string
}

func (m Meta) String() string {
	if m.Node == "" {
		return fmt.Sprintf("op %d", m.Op)
	}
	return fmt.Sprintf("op %d on %s", m.Op, m.Node)
}

// logState is a persistent list of log entries, newest first: appending
// shares the whole older log, and Equal and Hash are O(1) because every node
// carries the entry count and two running hashes of the log up to it.
type logState struct {
	prev   *logState
	offset int64
	value  string
	vis    Visibility
	count  int
	h1, h2 uint64
}

func (s *logState) end() int64 {
	if s == nil {
		return 0
	}
	return s.offset + 1
}

func (s *logState) push(offset int64, value string, vis Visibility) *logState {
	var count int
	var h1, h2 uint64 = 14695981039346656037, 1099511628211
	if s != nil {
		count, h1, h2 = s.count, s.h1, s.h2
	}
	e := uint64(offset)*0x9E3779B97F4A7C15 ^ uint64(vis)<<56
	v1, v2 := e, e^0xC2B2AE3D27D4EB4F
	for i := 0; i < len(value); i++ {
		v1 = (v1 ^ uint64(value[i])) * 1099511628211
		v2 = (v2 ^ uint64(value[i])) * 0x100000001B3 * 31
	}
	h1 = (h1 ^ v1) * 0xFF51AFD7ED558CCD
	h2 = (h2+v2)*0xC4CEB9FE1A85EC53 ^ h2>>29
	return &logState{prev: s, offset: offset, value: value, vis: vis, count: count + 1, h1: h1, h2: h2}
}

func logEqual(a, b *logState) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.count == b.count && a.offset == b.offset && a.h1 == b.h1 && a.h2 == b.h2
}

// LogStep is the sequential specification of a partition log: an append
// goes at or after the log end (offsets of transaction markers leave gaps);
// a read from an offset returns exactly the entries from there up to its
// last record that its isolation level requires, in order, and nothing that
// is not in the log. A read may stop early or return nothing.
func LogStep(state, input, output any) (bool, any) {
	s, _ := state.(*logState)
	in := input.(LogInput)
	out := output.(LogOutput)
	if !in.Read {
		if out.Offset < s.end() || (in.After >= 0 && in.After != s.end()) {
			return false, s
		}
		for i, v := range in.Values {
			s = s.push(out.Offset+int64(i), v, in.Visibility)
		}
		return true, s
	}
	return readLegal(s, in, out.Records), s
}

func readLegal(s *logState, in LogInput, recs []Entry) bool {
	if len(recs) == 0 {
		return true
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Offset <= recs[i-1].Offset {
			return false
		}
	}
	lo, hi := in.From, recs[len(recs)-1].Offset
	if lo < 0 {
		lo = recs[0].Offset
	}
	if hi >= s.end() || recs[0].Offset < lo {
		return false
	}
	// Walk back from the newest entry to lo, matching records from the end.
	j := len(recs) - 1
	for e := s; e != nil && e.offset >= lo; e = e.prev {
		if e.offset > hi {
			continue
		}
		if j >= 0 && recs[j].Offset > e.offset {
			return false // a record at an offset the log has no entry for
		}
		if j >= 0 && recs[j].Offset == e.offset {
			if recs[j].Value != e.value || (in.Committed && e.vis == Aborted) {
				return false
			}
			j--
			continue
		}
		if !in.Committed || e.vis == Visible {
			return false // a required entry skipped
		}
	}
	return j < 0
}

// LogModel is the porcupine model of partition logs, partitioned by
// topic-partition. Apply it to the operations of Log.Operations (one
// partition) or to any mix of partitions.
func LogModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			return partitionBy(ops, func(op porcupine.Operation) string { return op.Input.(LogInput).TP.String() })
		},
		Init: func() any { return (*logState)(nil) },
		Step: LogStep,
		Equal: func(a, b any) bool {
			return logEqual(a.(*logState), b.(*logState))
		},
		Hash: func(s any) uint64 {
			if st := s.(*logState); st != nil {
				return st.h1
			}
			return 0
		},
		DescribeOperation: func(input, output any) string {
			return describeLogOp(input.(LogInput), output.(LogOutput))
		},
		DescribeState: func(s any) string {
			st := s.(*logState)
			if st == nil {
				return "empty log"
			}
			return fmt.Sprintf("%d entries, end %d, last %d:%s", st.count, st.end(), st.offset, st.value)
		},
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return m.(Meta).String()
		},
	}
}

const describeRecordsMax = 8

func describeLogOp(in LogInput, out LogOutput) string {
	var b strings.Builder
	if !in.Read {
		fmt.Fprintf(&b, "send %s", strings.Join(in.Values, ","))
		if in.Visibility != Visible {
			fmt.Fprintf(&b, " (%s)", in.Visibility)
		}
		fmt.Fprintf(&b, " → @%d", out.Offset)
		return b.String()
	}
	if in.From >= 0 {
		fmt.Fprintf(&b, "poll from %d", in.From)
	} else {
		b.WriteString("poll")
	}
	if in.Committed {
		b.WriteString(" (read_committed)")
	}
	b.WriteString(" →")
	for i, r := range out.Records {
		if i == describeRecordsMax {
			fmt.Fprintf(&b, " … %d more", len(out.Records)-i)
			break
		}
		fmt.Fprintf(&b, " %d:%s", r.Offset, r.Value)
	}
	return b.String()
}

func partitionBy(ops []porcupine.Operation, key func(porcupine.Operation) string) [][]porcupine.Operation {
	index := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		k := key(op)
		i, ok := index[k]
		if !ok {
			i = len(parts)
			index[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}
