package model

import (
	"errors"
	"slices"
	"sort"

	"github.com/kafkasim/kafkasim/history"
)

// Resolution is a valid history resolved into partition logs as Logs
// resolves it, laid out flat: every send and every non-empty read in
// history order, each partition's appends in the order of its Log and in
// offset order, and its offsets numbered (Cells). The checkers read it as
// it is, without copying a value or hashing an offset; Logs builds
// porcupine's operations from it.
type Resolution struct {
	// Values are the values of every send's messages, failed sends' too,
	// in history order; Input[i] says Values[i] is an input message's (it
	// has no Source: it is its own intent).
	Values []string
	Input  []bool
	Sends  []Sent
	Polls  []Polled
	Reads  []Read
	// The reads' records, in order: RecordOffsets[i] is the offset of the
	// i-th, and RecordValues[i] its value as an index into Values — the one
	// the first append of its partition's log to put that value at that
	// offset wrote — or -1 if no append did (RecordValue then has it).
	RecordOffsets []int64
	RecordValues  []int32
	Partitions    []Partition
	// Index is the history's (h.Index()), which resolving needs anyway.
	Index     history.Index
	unwritten []unwritten // records not holding the first definite claim at their offset, in record order
}

// Sent is one send of the history, with what the checkers read of it.
type Sent struct {
	Op           history.ID
	Pos          int32 // its position in the history
	Part         int32 // its partition (in Partitions), -1 if that has no log: only failed sends went there
	Append       int32 // its append in that partition's Appends, -1 if it failed or was dropped
	Value        int32 // its messages' values are Values[Value : Value+Count]
	Count        int32
	Visibility   Visibility // of what it wrote (VisibilityOf)
	OK, Failed   bool       // its outcome is ok, or fail (neither: info)
	Call, Return int64
	Offset       int64 // as recorded: history.NoOffset if unknown
	Txn          history.ID
}

// definite: acknowledged with its offset.
func (s *Sent) definite() bool { return s.OK && s.Offset >= 0 }

// Polled is one poll of the history, with what the checkers read of it:
// its non-empty fetches are Reads[Read : Read+Count].
type Polled struct {
	Pos        int32 // its position in the history
	Read       int32
	Count      int32
	OK         bool // its outcome is ok
	Rebalanced bool // history.Poll.Rebalanced
	Grouped    bool // it polled for a group (history.Poll.Group is set)
}

// Read is one non-empty read: a poll's fetch of one partition, or a final
// read of a topic partition.
type Read struct {
	Op           history.ID
	Call, Return int64
	From         int64 // the consumer's position before it (history.NoOffset if not recorded)
	LastStable   int64 // the fetch's last stable offset, history.NoOffset if not recorded
	Pos          int32 // its position in the history (-1 from Flatten)
	Part         int32
	Record       int32 // its records are Record .. Record+Count-1 of RecordOffsets and RecordValues
	Count        int32
	Final        bool // a final read
	Committed    bool // read_committed
}

// Append is one append of a partition log: a definite send at its offset,
// or an indefinite one pinned where reads observed it.
type Append struct {
	Op           history.ID
	Call, Return int64 // Return is history.Never when it may take effect any time after Call
	Base         int64 // the offset of its first value
	Txn          history.ID
	After        int64 // the log end it must find (LogInput.After)
	Sent         int32 // its send (in Resolution.Sends; -1 from Flatten)
	Value, Count int32 // its values are Values[Value : Value+Count]
	Visibility   Visibility
	Definite     bool // acknowledged with its offset; false: pinned
}

// Partition is one partition's resolved log.
type Partition struct {
	TP history.TopicPartition
	// Appends are as Log.Ops holds them: the definite ones in history
	// order, then the pinned ones in invocation order. ByOffset sorts them
	// by base offset, then op ID: the order they linearize in.
	Appends  []Append
	ByOffset []int32
	Reads    []int32 // its reads (in Resolution.Reads), in history order
	// Cells number every offset its appends and records name.
	Cells Cells
	// FinalRead: a final read of it, if only an empty one, is in the history.
	FinalRead       bool
	Pinned, Dropped []history.ID
	// Compacted: its topic is compacted, and Removable says, per cell,
	// whether a log cleaner may have removed the record there (Compact);
	// nil otherwise.
	Compacted bool
	Removable []bool
}

type unwritten struct {
	record int32
	part   int32
	value  string
}

// RecordValue is the value of record i.
func (r *Resolution) RecordValue(i int32) string {
	if v := r.RecordValues[i]; v >= 0 {
		return r.Values[v]
	}
	k := sort.Search(len(r.unwritten), func(k int) bool { return r.unwritten[k].record >= i })
	return r.unwritten[k].value
}

// partitionBuild gathers one topic-partition while Resolve walks the history.
type partitionBuild struct {
	tp        history.TopicPartition
	id        int32 // creation order; Partitions index once sorted
	logged    bool  // a send that did not fail, or a non-empty read: it has a log
	finalRead bool
	// definite claims: offsets lo..hi, count values; at holds the first
	// value claimed at each cell of cells.
	lo, hi     int64
	count      int
	cells      Cells
	at         []int32
	twice      bool // some offset is claimed by two definite values
	indefinite int  // values of indefinite sends
	// sends acknowledged with their offsets, and the others that did not fail
	definiteSends, indefiniteSends int
	rlo, rhi                       int64 // the records' offsets
	// Its values and records: how many, and where its next value goes.
	values, records int
	nextValue       int32
}

// partitionTable finds a topic-partition's build without hashing in the
// usual case: by topic (the last one asked for is remembered), then by
// partition number.
type partitionTable struct {
	topics    map[string]*[]*partitionBuild
	lastTopic string
	last      *[]*partitionBuild
	far       map[history.TopicPartition]*partitionBuild // partition numbers too large to index
	builds    []*partitionBuild
}

func (t *partitionTable) get(tp history.TopicPartition) *partitionBuild {
	if tp.Partition >= 1<<12 {
		if b := t.far[tp]; b != nil {
			return b
		}
		if t.far == nil {
			t.far = map[history.TopicPartition]*partitionBuild{}
		}
		b := t.create(tp)
		t.far[tp] = b
		return b
	}
	if t.last == nil || tp.Topic != t.lastTopic {
		if t.topics == nil {
			t.topics = map[string]*[]*partitionBuild{}
		}
		by := t.topics[tp.Topic]
		if by == nil {
			by = new([]*partitionBuild)
			t.topics[tp.Topic] = by
		}
		t.lastTopic, t.last = tp.Topic, by
	}
	by := t.last
	if int(tp.Partition) >= len(*by) {
		*by = append(*by, make([]*partitionBuild, int(tp.Partition)+1-len(*by))...)
	}
	b := (*by)[tp.Partition]
	if b == nil {
		b = t.create(tp)
		(*by)[tp.Partition] = b
	}
	return b
}

func (t *partitionTable) create(tp history.TopicPartition) *partitionBuild {
	b := &partitionBuild{tp: tp, id: int32(len(t.builds)), lo: 1<<63 - 1, hi: -1, rlo: 1<<63 - 1, rhi: -1}
	t.builds = append(t.builds, b)
	return b
}

// Resolve resolves a valid history into partition logs, sorted by
// topic-partition (see Logs). It walks the history three times: to size
// its arrays, for the sends, then for the reads — each record compared once
// with the value claimed at its offset. Each partition's values lie
// together, in history order: the checks that walk one partition's appends
// read memory in order. The records lie in history order, as the reads do:
// the checks walk the reads in history order (laid out by partition, they
// cost the 64-partition benchmark some 0.05 CPU-s more).
func Resolve(h history.History) *Resolution {
	r, _ := resolve(h, nil, h.Index())
	return r
}

// ValidateAndResolve is h.Validate, then Resolve(h), in one walk less: it
// validates each operation (history.Validation) as its first walk reaches
// it, while the operation is in the cache, instead of walking the history
// once more beforehand. The error is Validate's; the resolution is nil
// with it.
func ValidateAndResolve(h history.History) (*Resolution, error) {
	v, err := h.Validation()
	if err != nil {
		return nil, err
	}
	v.DeferContents() // checked as resolve reads them
	r, err := resolve(h, v, v.Index())
	if err != nil {
		return nil, h.Validate() // the first violation, as Validate names it
	}
	return r, nil
}

// errInvalid is what resolve returns when it finds a violation;
// ValidateAndResolve names it.
var errInvalid = errors.New("model: invalid history")

// resolve is Resolve, validating each operation with v first if v is not
// nil, and the contents v defers (DeferContents) as it reads them; index
// is h's. It returns errInvalid or v's error at the first violation it
// finds, which need not be the first in history order.
func resolve(h history.History, v *history.Validation, index history.Index) (*Resolution, error) {
	var parts partitionTable
	var sends, values, polls, reads, records int
	for i := range h {
		prefetchPayload(h, i+payloadAhead, "")
		prefetchFetches(h, i+arrayAhead)
		if v != nil {
			if err := v.Op(i); err != nil {
				return nil, err
			}
		}
		switch op := &h[i]; op.Kind {
		case history.KindSend:
			sends++
			values += len(op.Send.Messages)
			parts.get(op.Send.TP).values += len(op.Send.Messages)
		case history.KindPoll:
			polls++
			for k := range op.Poll.Fetched {
				if f := &op.Poll.Fetched[k]; len(f.Records) > 0 {
					reads++
					records += len(f.Records)
					parts.get(f.TP).records += len(f.Records)
				}
			}
		case history.KindFinalRead:
			if f := op.FinalRead; f.Sink == "" && len(f.Records) > 0 {
				reads++
				records += len(f.Records)
				parts.get(f.TP).records += len(f.Records)
			}
		}
	}
	r := &Resolution{Values: make([]string, values), Input: make([]bool, values), Sends: make([]Sent, 0, sends),
		Polls: make([]Polled, 0, polls), Reads: make([]Read, 0, reads), RecordOffsets: make([]int64, records), RecordValues: make([]int32, records)}
	values = 0
	for _, b := range parts.builds {
		b.nextValue = int32(values)
		values += b.values
	}
	r.Index = index
	for i := range h {
		prefetchPayload(h, i+payloadAhead, history.KindSend)
		prefetchMessages(h, i+arrayAhead)
		op := &h[i]
		if op.Kind != history.KindSend {
			continue
		}
		s := op.Send
		if v != nil && !history.ValidMessages(s.Messages) {
			return nil, errInvalid
		}
		b := parts.get(s.TP)
		sent := Sent{Op: op.ID, Pos: int32(i), Part: b.id, Append: -1, Value: b.nextValue, Count: int32(len(s.Messages)),
			Call: op.Call, Return: op.Return, OK: op.Outcome == history.OK, Failed: op.Outcome == history.Fail,
			Offset: s.Offset, Txn: s.Txn, Visibility: Visible}
		for k := range s.Messages {
			r.Values[b.nextValue] = s.Messages[k].Value
			r.Input[b.nextValue] = s.Messages[k].Source == ""
			b.nextValue++
		}
		if op.Outcome != history.Fail {
			b.logged = true
			sent.Visibility = VisibilityOf(h, index, s)
			if sent.definite() {
				b.lo, b.hi = min(b.lo, s.Offset), max(b.hi, s.Offset+int64(len(s.Messages))-1)
				b.count += len(s.Messages)
				b.definiteSends++
			} else {
				b.indefinite += len(s.Messages)
				b.indefiniteSends++
			}
		}
		r.Sends = append(r.Sends, sent)
	}
	r.claim(parts.builds)
	for i := range h {
		prefetchPayload(h, i+payloadAhead, history.KindPoll)
		prefetchFetches(h, i+arrayAhead)
		prefetchRecords(h, i+recordsAhead)
		op := &h[i]
		switch op.Kind {
		case history.KindPoll:
			p := op.Poll
			first := int32(len(r.Reads))
			for k := range p.Fetched {
				if f := &p.Fetched[k]; len(f.Records) > 0 {
					if v != nil && !history.ValidRecords(f.Records) {
						return nil, errInvalid
					}
					r.read(parts.get(f.TP), op, i, false, f.From, p.Isolation == history.ReadCommitted, f.LastStable, f.Records)
				}
			}
			r.Polls = append(r.Polls, Polled{Pos: int32(i), Read: first, Count: int32(len(r.Reads)) - first,
				OK: op.Outcome == history.OK, Rebalanced: p.Rebalanced, Grouped: p.Group != ""})
		case history.KindFinalRead:
			f := op.FinalRead
			if f.Sink != "" {
				continue
			}
			b := parts.get(f.TP)
			b.finalRead = true
			if len(f.Records) > 0 {
				r.read(b, op, i, true, f.From, f.Isolation == history.ReadCommitted, nil, f.Records)
			}
		}
	}
	r.partition(parts.builds)
	return r, nil
}

// claim fills each build's definite claims: the first value an
// acknowledged send put at each offset.
func (r *Resolution) claim(builds []*partitionBuild) {
	for _, b := range builds {
		if b.count == 0 {
			continue
		}
		b.cells = newCells(b.lo, b.hi, b.count, func(yield func(int64)) {
			for k := range r.Sends {
				if s := &r.Sends[k]; s.Part == b.id && s.definite() {
					for j := int64(0); j < int64(s.Count); j++ {
						yield(s.Offset + j)
					}
				}
			}
		})
		b.at = make([]int32, b.cells.Len())
		for k := range b.at {
			b.at[k] = -1
		}
	}
	for k := range r.Sends {
		s := &r.Sends[k]
		if !s.definite() {
			continue
		}
		b := builds[s.Part]
		for j := int32(0); j < s.Count; j++ {
			c := b.cells.Of(s.Offset + int64(j))
			if b.at[c] < 0 {
				b.at[c] = s.Value + j
			} else {
				b.twice = true
			}
		}
	}
}

// read records one non-empty read, matching each record with the first
// definite claim at its offset.
func (r *Resolution) read(b *partitionBuild, op *history.Op, pos int, final bool, from int64, committed bool, lastStable *int64, recs []history.Record) {
	b.logged = true
	ls := history.NoOffset
	if lastStable != nil {
		ls = *lastStable
	}
	next := int32(0) // records lie in history order: this read's follow the last one's
	if n := len(r.Reads); n > 0 {
		next = r.Reads[n-1].Record + r.Reads[n-1].Count
	}
	r.Reads = append(r.Reads, Read{Op: op.ID, Pos: int32(pos), Part: b.id, Final: final, Committed: committed,
		Call: op.Call, Return: op.Return, From: from, LastStable: ls, Record: next, Count: int32(len(recs))})
	for k := range recs {
		e := &recs[k]
		b.rlo, b.rhi = min(b.rlo, e.Offset), max(b.rhi, e.Offset)
		v := int32(-1)
		if c := b.cells.Of(e.Offset); c >= 0 {
			if w := b.at[c]; w >= 0 && r.Values[w] == e.Value {
				v = w
			}
		}
		if v < 0 {
			r.unwritten = append(r.unwritten, unwritten{record: next, part: b.id, value: e.Value})
		}
		r.RecordOffsets[next] = e.Offset
		r.RecordValues[next] = v
		next++
	}
}

// partition sorts the builds that have a log by topic-partition and
// resolves each.
func (r *Resolution) partition(builds []*partitionBuild) {
	logged := make([]*partitionBuild, 0, len(builds))
	for _, b := range builds {
		if b.logged {
			logged = append(logged, b)
		}
	}
	slices.SortFunc(logged, func(x, y *partitionBuild) int { return x.tp.Compare(y.tp) })
	renumber := make([]int32, len(builds))
	for i := range renumber {
		renumber[i] = -1
	}
	for i, b := range logged {
		renumber[b.id] = int32(i)
	}
	// Each partition's definite appends and indefinite sends, and its reads,
	// in history order, in one walk over each.
	apps, indefinite := make([][]Append, len(logged)), make([][]int32, len(logged))
	readsOf := make([][]int32, len(logged))
	nreads := make([]int, len(logged))
	for k := range r.Sends {
		s := &r.Sends[k]
		s.Part = renumber[s.Part]
	}
	for k := range r.Reads {
		rd := &r.Reads[k]
		rd.Part = renumber[rd.Part]
		nreads[rd.Part]++
	}
	for k := range r.unwritten {
		r.unwritten[k].part = renumber[r.unwritten[k].part]
	}
	for i, b := range logged {
		apps[i] = make([]Append, 0, b.definiteSends+b.indefiniteSends)
		readsOf[i] = make([]int32, 0, nreads[i])
	}
	for k := range r.Sends {
		s := &r.Sends[k]
		switch {
		case s.Part < 0 || s.Failed:
		case s.definite():
			s.Append = int32(len(apps[s.Part]))
			apps[s.Part] = append(apps[s.Part], Append{Op: s.Op, Sent: int32(k), Call: s.Call, Return: s.Return, Base: s.Offset,
				Value: s.Value, Count: s.Count, Visibility: s.Visibility, Txn: s.Txn, After: history.NoOffset, Definite: true})
		default:
			indefinite[s.Part] = append(indefinite[s.Part], int32(k))
		}
	}
	for k := range r.Reads {
		readsOf[r.Reads[k].Part] = append(readsOf[r.Reads[k].Part], int32(k))
	}
	r.Partitions = make([]Partition, len(logged))
	byPart := unwrittenByPartition(r.unwritten, len(logged))
	for i, b := range logged {
		r.Partitions[i] = r.resolve(b, apps[i], indefinite[i], readsOf[i], byPart[i])
	}
}

// unwrittenByPartition groups the unwritten records, which are in record
// order (the reads' records lie in history order, and are read so), by
// partition, each partition's still in record order, in linear time; us
// itself stays in record order, for RecordValue.
func unwrittenByPartition(us []unwritten, parts int) [][]unwritten {
	start := make([]int, parts+1)
	for _, u := range us {
		start[u.part+1]++
	}
	for p := 1; p <= parts; p++ {
		start[p] += start[p-1]
	}
	grouped := make([]unwritten, len(us))
	next := slices.Clone(start[:parts])
	for _, u := range us {
		grouped[next[u.part]] = u
		next[u.part]++
	}
	by := make([][]unwritten, parts)
	for p := range by {
		if start[p+1] > start[p] {
			by[p] = grouped[start[p]:start[p+1]]
		}
	}
	return by
}
