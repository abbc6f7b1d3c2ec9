package checkers

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/internal/prefetch"
	"github.com/kafkasim/kafkasim/model"
)

// pair is one (offset, value) of a partition's version order: the union of
// what sends were acknowledged at (or pinned to) and what reads returned.
// Sends and reads are named by their index in the resolution, transactions
// by their position in the history.
type pair struct {
	cell   int32 // its offset's (model.Cells; partition.offset)
	value  int32 // value id (analysis.values)
	writer int32 // the first send that wrote it here (in the resolution's Sends), -1 if none
	reader int32 // the first read that returned it (in the resolution's Reads), -1 if none
	readRC int32 // the earliest-returning read_committed read, -1 if none
	txn    int32 // the position of the writer's transaction, -1 if none
	// group is the pair holding the same value at its lowest offset in
	// this partition; valRead and valFinal say whether some read, or a
	// final read, returned the value at any of its offsets.
	group    int32
	vis      model.Visibility
	final    bool // a final read returned it
	valRead  bool
	valFinal bool
}

// partition is the version order of one topic-partition, laid out by
// cell (model.Cells): the pairs at a cell are chained in value order.
type partition struct {
	index int32 // in analysis.parts and the resolution's Partitions
	tp    history.TopicPartition
	m     *model.Partition
	pairs []pair
	head  []int32 // per cell: its first pair, -1 if none
	next  []int32 // per pair: the next pair at its cell, -1 if none
	// all and committed count, for each cell, the cells below it that hold
	// an offset a read_uncommitted (all) or read_committed reader sees: an
	// offset's rank among those, if the count rises past its cell.
	all, committed []int32
	// In a compacted partition needAll and needCommitted count, for each
	// cell, the cells below it a reader of each isolation level must not
	// skip: those all or committed counts that a log cleaner may not have
	// removed (model.Partition.Removable). nil otherwise.
	needAll, needCommitted []int32
	multi                  bool // some cell holds two pairs
	// bound is the highest offset at which a value some read returned
	// first appears (-1 if none), and boundRead that read (in the
	// resolution's Reads; its operation is looked up only to report it).
	bound     int64
	boundRead int32
	dups      [][]int32 // the pairs of each value held at two or more offsets, values sorted
	failed    map[int32]history.ID
}

// valueHome is where a value's pairs are: the first partition holding it
// and its group there (other partitions: analysis.away).
type valueHome struct{ part, group int32 }

// analysis is everything the anomaly and delivery checks share.
type analysis struct {
	h       history.History
	index   history.Index
	opts    Options
	rep     *report
	r       *model.Resolution
	parts   []*partition
	byTP    map[history.TopicPartition]*partition
	values  *values
	valueOf []int32 // the value id of each of the resolution's Values
	pairOf  []int32 // the pair each of the resolution's Values is in, -1 if no append wrote it
	// valRead and valFinal are those of each of the resolution's Values
	// an append wrote (its pair's).
	valRead, valFinal []bool
	intents           []intent
	intentOf          []int32 // by value id: its intent, -1 if none
	home              []valueHome
	away              map[[2]int32]int32 // (partition, value) → group, for values in more than one partition
	// committed: txn ops that committed (ok, or info with a write read at
	// read_committed), by position; undecided: those whose outcome is info.
	committed, undecided []bool
	txnEnds              []int64 // by rank among the rare operations (txnEnd)
	// rare are the positions of the operations that are neither sends nor
	// a consumer's (polls, assignments, seeks), in history order.
	rare []int32
	// procs are the processes, sorted by name; producers walks the
	// resolution's Sends, consumers the consumer operations (consumed).
	procs     []string
	producers walk
	consumers walk
	consumed  []consumerOp // in history order
}

// consumerOp is one operation of a consumer: a poll (in the resolution's
// Polls), or an assignment, subscription, rebalance or seek (poll -1).
type consumerOp struct {
	call int64
	id   history.ID
	pos  int32
	poll int32
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

// rank is the index in rare of the rare operation at a position.
func (a *analysis) rank(pos int32) int {
	i, _ := slices.BinarySearch(a.rare, pos)
	return i
}

// id is the ID of the operation at a position, 0 for none (-1).
func (a *analysis) id(pos int32) history.ID {
	if pos < 0 {
		return 0
	}
	return a.h[pos].ID
}

// sent is the ID of a send (in the resolution's Sends), 0 for none (-1).
func (a *analysis) sent(k int32) history.ID {
	if k < 0 {
		return 0
	}
	return a.r.Sends[k].Op
}

// read is the ID of a read (in the resolution's Reads), 0 for none (-1).
func (a *analysis) read(k int32) history.ID {
	if k < 0 {
		return 0
	}
	return a.r.Reads[k].Op
}

// offset is a pair's offset.
func (p *partition) offset(pr *pair) int64 { return p.m.Cells.Offset(pr.cell) }

// definite: a pair's writer was acknowledged with its offset.
func (a *analysis) definite(p *partition, pr *pair) bool {
	return pr.writer >= 0 && p.m.Appends[a.r.Sends[pr.writer].Append].Definite
}

// pos is the position of an operation, -1 for none (0).
func (a *analysis) pos(id history.ID) int32 {
	if id == 0 {
		return -1
	}
	return int32(a.index.Pos(id))
}

func newAnalysis(h history.History, r *model.Resolution, opts Options, rep *report) *analysis {
	a := &analysis{h: h, index: r.Index, opts: opts, rep: rep, r: r, byTP: make(map[history.TopicPartition]*partition, len(r.Partitions)),
		committed: make([]bool, len(h)), undecided: make([]bool, len(h))}
	a.survey()
	a.intern()
	a.pairOf = make([]int32, len(r.Values))
	for i := range a.pairOf {
		a.pairOf[i] = -1
	}
	a.parts = make([]*partition, len(r.Partitions))
	for i := range r.Partitions {
		m := &r.Partitions[i]
		p := &partition{index: int32(i), tp: m.TP, m: m}
		a.parts[i] = p
		a.byTP[m.TP] = p
		a.writePairs(p)
	}
	a.readPairs()
	a.settle()
	a.home = make([]valueHome, a.values.len())
	for i := range a.home {
		a.home[i] = valueHome{-1, -1}
	}
	a.valRead, a.valFinal = make([]bool, len(r.Values)), make([]bool, len(r.Values))
	for _, p := range a.parts {
		a.orderValues(p)
		for _, ap := range p.m.Appends {
			for v := ap.Value; v < ap.Value+ap.Count; v++ {
				pr := &p.pairs[a.pairOf[v]]
				a.valRead[v], a.valFinal[v] = pr.valRead, pr.valFinal
			}
		}
	}
	return a
}

// intern gives every sent value its id, then counts the intents (in
// history order, before settle: a transaction acknowledges its messages
// if it is ok).
func (a *analysis) intern() {
	r := a.r
	a.values = newValues(r.Values, len(r.Values))
	a.valueOf = a.values.internBase(func(visit func(int32)) {
		for k := range r.Sends { // in history order: the order the values lie in memory, as a rule
			s := &r.Sends[k]
			for v := s.Value; v < s.Value+s.Count; v++ {
				visit(v)
			}
		}
	})
	a.intentOf = make([]int32, len(r.Values))
	for i := range a.intentOf {
		a.intentOf[i] = -1
	}
	a.intents = make([]intent, 0, len(r.Values))
	for k := range r.Sends {
		s := &r.Sends[k]
		ack := s.OK && (s.Txn == 0 || a.committed[a.pos(s.Txn)])
		for v := s.Value; v < s.Value+s.Count; v++ {
			a.intend(int32(k), v, a.valueOf[v], ack)
		}
	}
}

// settle decides the transactions whose outcome is info: one whose write a
// read_committed read returned committed, and its writes are then as
// visible as any committed write.
func (a *analysis) settle() {
	for _, p := range a.parts {
		for i := range p.pairs {
			if pr := &p.pairs[i]; pr.writer >= 0 && pr.readRC >= 0 && pr.txn >= 0 && a.undecided[pr.txn] {
				a.committed[pr.txn] = true
			}
		}
	}
	for _, p := range a.parts {
		for i := range p.pairs {
			if pr := &p.pairs[i]; pr.vis == model.Undecided && pr.writer >= 0 && pr.txn >= 0 && a.committed[pr.txn] {
				pr.vis = model.Visible
			}
		}
	}
}

// nameAhead is how many operations ahead survey asks for an operation's
// process name, which it reads (names.id): a history may hold a copy of
// the name per operation (the history decoder interns them; a recorder or
// a generator need not).
const nameAhead = 16

// survey walks the history once for what the resolution does not hold:
// the transactions that committed, the rare operations, and each
// process's operations in invocation order.
func (a *analysis) survey() {
	procs := newValues(nil, 64)
	names := newNames(procs)
	a.producers.proc = make([]int32, 0, len(a.r.Sends))
	a.consumed = make([]consumerOp, 0, len(a.h)-len(a.r.Sends))
	a.consumers.proc = make([]int32, 0, len(a.h)-len(a.r.Sends))
	polls := int32(0) // in the resolution's Polls, which are in history order
	for i := range a.h {
		if j := i + nameAhead; j < len(a.h) && len(a.h[j].Process) > 0 {
			prefetch.Line(unsafe.Pointer(unsafe.StringData(a.h[j].Process))) // the names are read
		}
		op := &a.h[i]
		switch op.Kind {
		case history.KindSend:
			a.producers.proc = append(a.producers.proc, names.id(op.Process))
		case history.KindPoll:
			a.consumed = append(a.consumed, consumerOp{call: op.Call, id: op.ID, pos: int32(i), poll: polls})
			a.consumers.proc = append(a.consumers.proc, names.id(op.Process))
			polls++
		case history.KindAssign, history.KindSubscribe, history.KindRebalance, history.KindSeek:
			a.consumed = append(a.consumed, consumerOp{call: op.Call, id: op.ID, pos: int32(i), poll: -1})
			a.consumers.proc = append(a.consumers.proc, names.id(op.Process))
		case history.KindNemesis:
		default:
			if op.Kind == history.KindTxn {
				a.committed[i], a.undecided[i] = op.Outcome == history.OK, op.Outcome == history.Info
			}
			a.rare = append(a.rare, int32(i))
		}
	}
	seen := procs.extra // ids from 0, len(base) being 0
	// Number the processes by name.
	sorted := slices.Clone(seen)
	slices.Sort(sorted)
	rank := make([]int32, len(seen))
	for i, n := range sorted {
		rank[procs.lookup(n)] = int32(i)
	}
	a.procs = sorted
	sends := a.r.Sends
	a.producers.arrange(rank, func(x, y int32) int {
		if c := cmp64(sends[x].Call, sends[y].Call); c != 0 {
			return c
		}
		return int(sends[x].Op - sends[y].Op)
	})
	a.consumers.arrange(rank, func(x, y int32) int {
		if c := cmp64(a.consumed[x].call, a.consumed[y].call); c != 0 {
			return c
		}
		return int(a.consumed[x].id - a.consumed[y].id)
	})
}

// writePairs starts a partition's version order with every (offset,
// value) its log's appends wrote, in the log's order: a pair's writer is
// its first append. readPairs then adds what the reads returned.
func (a *analysis) writePairs(p *partition) {
	m := p.m
	n := 0
	for _, ap := range m.Appends {
		n += int(ap.Count)
	}
	p.pairs = make([]pair, 0, n+16)
	p.next = make([]int32, 0, cap(p.pairs))
	p.head = make([]int32, m.Cells.Len())
	for i := range p.head {
		p.head[i] = -1
	}
	for _, ap := range m.Appends {
		txn := a.pos(ap.Txn)
		for k := int32(0); k < ap.Count; k++ {
			v := ap.Value + k
			cell, value := m.Cells.Of(ap.Base+int64(k)), a.valueOf[v]
			q := p.at(cell, value)
			if q < 0 {
				q = p.add(cell, pair{cell: cell, value: value, writer: ap.Sent, reader: -1, readRC: -1, txn: txn, vis: ap.Visibility})
			}
			a.pairOf[v] = q
		}
	}
}

// readPairs adds to every partition's version order what its reads
// returned, in history order (a pair's reader is its first read), walking
// the reads once, then orders each cell's pairs by value.
func (a *analysis) readPairs() {
	r := a.r
	for ri := range r.Reads {
		rd := &r.Reads[ri]
		p := a.parts[rd.Part]
		for rec := rd.Record; rec < rd.Record+rd.Count; rec++ {
			var q int32
			if v := r.RecordValues[rec]; v >= 0 {
				q = a.pairOf[v]
			} else {
				cell, value := p.m.Cells.Of(r.RecordOffsets[rec]), a.values.id(r.RecordValue(rec))
				if q = p.at(cell, value); q < 0 {
					q = p.add(cell, pair{cell: cell, value: value, writer: -1, reader: -1, readRC: -1, txn: -1, vis: model.Undecided})
				}
			}
			pr := &p.pairs[q]
			if pr.reader < 0 {
				pr.reader = int32(ri)
			}
			if rd.Committed && (pr.readRC < 0 || rd.Return < r.Reads[pr.readRC].Return) {
				pr.readRC = int32(ri)
			}
			pr.final = pr.final || rd.Final
		}
	}
	for _, p := range a.parts {
		if p.multi {
			a.sortCells(p)
		}
	}
}

// at is the pair holding a value at a cell, -1 if none.
func (p *partition) at(cell, value int32) int32 {
	for q := p.head[cell]; q >= 0; q = p.next[q] {
		if p.pairs[q].value == value {
			return q
		}
	}
	return -1
}

// add puts a new pair at a cell.
func (p *partition) add(cell int32, pr pair) int32 {
	p.multi = p.multi || p.head[cell] >= 0
	q := int32(len(p.pairs))
	p.pairs = append(p.pairs, pr)
	p.next = append(p.next, p.head[cell])
	p.head[cell] = q
	return q
}

// sortCells orders the pairs of every cell holding two or more by value.
func (a *analysis) sortCells(p *partition) {
	var chain []int32
	for cell, first := range p.head {
		if first < 0 || p.next[first] < 0 {
			continue
		}
		chain = chain[:0]
		for q := first; q >= 0; q = p.next[q] {
			chain = append(chain, q)
		}
		slices.SortFunc(chain, func(x, y int32) int {
			return strings.Compare(a.values.str(p.pairs[x].value), a.values.str(p.pairs[y].value))
		})
		p.head[cell] = chain[0]
		for i, q := range chain {
			p.next[q] = -1
			if i+1 < len(chain) {
				p.next[q] = chain[i+1]
			}
		}
	}
}

// orderValues walks a partition's version order once: it finds, for every
// pair, the pairs holding its value at other offsets (duplicates) and what
// reads returned of it; ranks the offsets each isolation level sees; and
// finds the lost-write bound (judgePairs).
func (a *analysis) orderValues(p *partition) {
	var members map[int32][]int32 // group → its pairs, for values at two or more offsets
	var groups []int32
	p.bound, p.boundRead = -1, -1
	n := len(p.head)
	p.all, p.committed = make([]int32, n+1), make([]int32, n+1)
	removable := p.m.Removable
	if removable != nil {
		p.needAll, p.needCommitted = make([]int32, n+1), make([]int32, n+1)
	}
	for cell, first := range p.head {
		all, committed := int32(0), int32(0)
		for q := first; q >= 0; q = p.next[q] {
			pr := &p.pairs[q]
			all = 1
			if (pr.writer >= 0 && pr.vis == model.Visible) || pr.readRC >= 0 {
				committed = 1
			}
			if g := a.group(p, pr.value); g >= 0 {
				pr.group = g
				if members == nil {
					members = map[int32][]int32{}
				}
				if members[g] == nil {
					members[g] = []int32{g}
					groups = append(groups, g)
				}
				members[g] = append(members[g], q)
			} else {
				if h := &a.home[pr.value]; h.part < 0 {
					h.part, h.group = p.index, q
				} else {
					if a.away == nil {
						a.away = map[[2]int32]int32{}
					}
					a.away[[2]int32{p.index, pr.value}] = q
				}
				pr.group, pr.valRead, pr.valFinal = q, pr.reader >= 0, pr.final
			}
			if pr.reader >= 0 {
				if first := p.offset(&p.pairs[pr.group]); first > p.bound {
					p.bound, p.boundRead = first, pr.reader
				}
			}
		}
		p.all[cell+1] = p.all[cell] + all
		p.committed[cell+1] = p.committed[cell] + committed
		if removable != nil {
			if removable[cell] {
				all, committed = 0, 0
			}
			p.needAll[cell+1] = p.needAll[cell] + all
			p.needCommitted[cell+1] = p.needCommitted[cell] + committed
		}
	}
	if len(groups) == 0 {
		return
	}
	slices.SortFunc(groups, func(x, y int32) int {
		return strings.Compare(a.values.str(p.pairs[x].value), a.values.str(p.pairs[y].value))
	})
	for _, g := range groups {
		ms := members[g]
		read, final := false, false
		for _, q := range ms {
			read = read || p.pairs[q].reader >= 0
			final = final || p.pairs[q].final
		}
		for _, q := range ms {
			p.pairs[q].valRead, p.pairs[q].valFinal = read, final
		}
		p.dups = append(p.dups, ms)
	}
}

// group is the pair of partition p holding a value at its lowest offset,
// -1 if p holds it nowhere.
func (a *analysis) group(p *partition, value int32) int32 {
	if value < 0 || int(value) >= len(a.home) {
		return -1
	}
	if h := a.home[value]; h.part == p.index {
		return h.group
	} else if h.part < 0 {
		return -1
	}
	if g, ok := a.away[[2]int32{p.index, value}]; ok {
		return g
	}
	return -1
}

// valueRead and valueFinal report whether any read, or a final read,
// returned value v — the resolution's Values[v], sent to p — anywhere in
// partition p.
func (a *analysis) valueRead(p *partition, v int32) bool {
	if a.pairOf[v] >= 0 {
		return a.valRead[v]
	}
	g := a.group(p, a.valueOf[v])
	return g >= 0 && p.pairs[g].valRead
}

func (a *analysis) valueFinal(p *partition, v int32) bool {
	if a.pairOf[v] >= 0 {
		return a.valFinal[v]
	}
	g := a.group(p, a.valueOf[v])
	return g >= 0 && p.pairs[g].valFinal
}

// rank is an offset's position among the offsets a reader with these ranks
// can see, or -1 if it is not among them.
func (p *partition) rank(ranks []int32, off int64) int {
	cell := p.m.Cells.Of(off)
	if cell < 0 || ranks[cell+1] == ranks[cell] {
		return -1
	}
	return int(ranks[cell])
}

// removable: a log cleaner may have removed what pair pr holds.
func (p *partition) removable(pr *pair) bool { return p.m.Removable != nil && p.m.Removable[pr.cell] }

// removableValue: a log cleaner may have removed message v of send s (in
// the resolution's Sends), which went to p.
func (a *analysis) removableValue(p *partition, s *model.Sent, v int32) bool {
	if p.m.Removable == nil || s.Append < 0 {
		return false
	}
	app := &p.m.Appends[s.Append]
	return p.m.RemovableAt(app.Base + int64(v-app.Value))
}

// valuesBetween lists the values at the offsets ranked from+1 .. to-1, at
// most max: at each, the first in value order.
func (a *analysis) valuesBetween(p *partition, ranks []int32, from, to, max int) []string {
	var vs []string
	for r := from + 1; r < to && len(vs) < max; r++ {
		cell, _ := slices.BinarySearch(ranks, int32(r+1)) // the first cell with r+1 below it: past the one ranked r
		vs = append(vs, a.values.str(p.pairs[p.head[cell-1]].value))
	}
	return vs
}

// neededBetween lists the values at the cells strictly between cells from
// and to that need counts (a compacted partition's cells a reader must
// see), at most max: at each, the first in value order.
func (a *analysis) neededBetween(p *partition, need []int32, from, to int32, max int) []string {
	var vs []string
	for c := from + 1; c < to && len(vs) < max; c++ {
		if need[c+1] > need[c] {
			vs = append(vs, a.values.str(p.pairs[p.head[c]].value))
		}
	}
	return vs
}
