package log

import "github.com/kafkasim/kafkasim/env"

// A scanMemo is what recoverSegment verified of one segment file: the
// entries of its first size bytes, every batch of which passed every check
// (offsets, CRC, markers, header checksums), the batch after them due at
// offset next. It is kept beside the segment and beside its header
// checksum file (env.Memos), so the next Open after a crash verifies only
// what was appended since. It also keeps the producer state the log's
// batches gave up to its segment's first afterN batches (after), so the
// next Open replays only the batches after those, as Kafka's
// ProducerStateManager starts from its latest snapshot file.
//
// The checks are a function of the two files' bytes, the segment's base
// and whether offsets may skip, so a memo whose files the disk vouches
// unchanged (they may have grown) says what a scan from the first byte
// would say of the bytes it covers. The same pointer on both files is the
// proof that the header checksums are those it was verified against: a
// header file that was rewritten, cut or replaced no longer carries it.
type scanMemo struct {
	base int64
	gaps bool
	size int
	next int64
	// batches are the segment's own (segment.batches), shared: the log
	// appends past them, and writes in place only what it derives
	// (indexProducerState), or after a cut that leaves the memo behind
	// (the file's version changed). Only the process the log belongs to
	// writes to them, and it is gone before the next Open recalls them.
	batches []batchEntry
	// after is the producer state after every batch of the segments below
	// and the first afterN of this one, or nil. It was derived on top of
	// the previous segment's after as it was then (prevAfter; nil for the
	// first segment): the pointers match only while what lies below is
	// what it was derived from. A state is never changed once kept.
	after     *producerState
	afterN    int
	prevAfter *producerState
}

// recallScan returns the memo of the segment at base whose size is now
// size, or nil if the disk keeps none or its files changed.
func (l *Log) recallScan(base int64, size int) *scanMemo {
	ms, ok := l.disk.(env.Memos)
	if !ok {
		return nil
	}
	v, ok := ms.Memo(logName(l.dir, base))
	m, _ := v.(*scanMemo)
	if !ok || m == nil || m.base != base || m.gaps != l.gapsAllowed() || m.size > size {
		return nil
	}
	if h, ok := ms.Memo(hdrName(l.dir, base)); !ok || h != any(m) {
		return nil
	}
	return m
}

// rememberScan keeps what recoverSegment verified of seg, whose files now
// hold exactly the verified batches: it extends the memo it resumed from,
// if any, with the batches verified since.
func (l *Log) rememberScan(seg *segment, resumed *scanMemo) {
	ms, ok := l.disk.(env.Memos)
	if !ok || len(seg.batches) == 0 {
		return
	}
	m := resumed
	if m == nil {
		m = &scanMemo{base: seg.base, gaps: l.gapsAllowed()}
	}
	m.batches, m.size, m.next = seg.batches, int(seg.size), seg.nextOffset()
	ms.SetMemo(logName(l.dir, seg.base), m)
	ms.SetMemo(hdrName(l.dir, seg.base), m)
	seg.memo = m
}

// recallProducerState is rebuildProducerState at Open: where the memos
// recalled for the first segments hold the state their batches give, on
// top of what lies below them still, it starts from that state and
// replays only the batches after it. It then keeps in each segment's memo
// the state after its batches, for the next Open. The entries of markers
// a recalled state covers already carry what indexProducerState derived
// for them (the closed transaction's first offset): the memo shares them.
func (l *Log) recallProducerState() {
	l.producers = newProducerState()
	var below *producerState // the previous segment's memo's state: the state now
	for i, s := range l.segments {
		m := s.memo
		from, recalled := 0, m != nil && m.after != nil && m.afterN <= len(s.batches) && m.prevAfter == below && (i == 0) == (below == nil)
		if recalled {
			l.producers = m.after.clone()
			from = m.afterN
		}
		for j := from; j < len(s.batches); j++ {
			l.indexProducerState(&s.batches[j])
		}
		if m == nil || (i > 0 && below == nil) {
			below = nil // what lies above cannot be vouched for
			if m != nil {
				m.after = nil
			}
			continue
		}
		if !recalled || from != len(s.batches) {
			state := l.producers.clone()
			m.after, m.afterN, m.prevAfter = &state, len(s.batches), below
		}
		below = m.after
	}
}
