package checkers

import "slices"

// walk is the order in which the checks visit one kind of operation of
// every process (sends, or consumer operations): each process's in
// invocation order, one process's state apart from another's. When each
// process's operations are in invocation order in the history — the usual
// case — the walk is history order, in which the resolution lies in
// memory; otherwise it is each process in turn.
type walk struct {
	proc  []int32 // by item: its process (rank by name)
	order []int32 // the items in walking order; nil: all, in history order
}

// arrange ranks the processes (proc holds their first-seen numbers) and
// decides the order; byCall compares two items of one process.
func (w *walk) arrange(rank []int32, byCall func(x, y int32) int) {
	last := make([]int32, len(rank)) // per process: its latest item so far, -1 if none
	for i := range last {
		last[i] = -1
	}
	inOrder := true
	for i, p := range w.proc {
		p = rank[p]
		w.proc[i] = p
		if l := last[p]; l >= 0 && byCall(l, int32(i)) > 0 {
			inOrder = false
		}
		last[p] = int32(i)
	}
	if inOrder {
		return
	}
	start := make([]int32, len(rank)+1)
	for _, p := range w.proc {
		start[p+1]++
	}
	for p := 1; p < len(start); p++ {
		start[p] += start[p-1]
	}
	w.order = make([]int32, len(w.proc))
	next := slices.Clone(start)
	for i, p := range w.proc {
		w.order[next[p]] = int32(i)
		next[p]++
	}
	for p := range rank {
		slices.SortStableFunc(w.order[start[p]:start[p+1]], byCall)
	}
}

// each calls f with every item in walking order.
func (w *walk) each(f func(i int32)) {
	if w.order == nil {
		for i := range w.proc {
			f(int32(i))
		}
		return
	}
	for _, i := range w.order {
		f(i)
	}
}

// findings are witnesses found in walking order, reported by process (in
// name order), each process's in the order found: as if each process had
// been walked in turn.
type findings []finding

type finding struct {
	proc int32
	name string
	w    Witness
}

func (f *findings) add(proc int32, name string, w Witness) {
	*f = append(*f, finding{proc, name, w})
}

func (f findings) report(rep *report) {
	slices.SortStableFunc(f, func(x, y finding) int { return int(x.proc - y.proc) })
	for _, x := range f {
		rep.add(x.name, x.w)
	}
}

// held maps the partitions one process holds to what it knows of each:
// a list while short, indexed by partition once long.
type held[T any] struct {
	parts []int32
	vals  []T
	index []int32 // by partition: 1 + its place in parts, 0 if absent; nil while short
}

const heldScanMax = 16

// get is what the process knows of a partition, nil if it holds none.
func (m *held[T]) get(part int32) *T {
	if m.index != nil {
		if i := m.index[part]; i > 0 {
			return &m.vals[i-1]
		}
		return nil
	}
	for i, q := range m.parts {
		if q == part {
			return &m.vals[i]
		}
	}
	return nil
}

// put is the place for a partition, added if absent; parts is how many
// partitions there are.
func (m *held[T]) put(part int32, parts int) *T {
	if v := m.get(part); v != nil {
		return v
	}
	m.parts = append(m.parts, part)
	var zero T
	m.vals = append(m.vals, zero)
	if m.index != nil {
		m.index[part] = int32(len(m.parts))
	} else if len(m.parts) > heldScanMax {
		m.index = make([]int32, parts)
		for i, q := range m.parts {
			m.index[q] = int32(i + 1)
		}
	}
	return &m.vals[len(m.vals)-1]
}

// keep forgets the partitions ok refuses.
func (m *held[T]) keep(ok func(part int32) bool) {
	n := 0
	for i, q := range m.parts {
		if m.index != nil {
			m.index[q] = 0
		}
		if !ok(q) {
			continue
		}
		m.parts[n], m.vals[n] = q, m.vals[i]
		n++
		if m.index != nil {
			m.index[q] = int32(n)
		}
	}
	m.parts, m.vals = m.parts[:n], m.vals[:n]
}
