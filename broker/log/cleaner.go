package log

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
)

// The log cleaner of a compacted topic (cleanup.policy=compact), as Kafka's
// LogCleaner and LogCleanerManager run it on each replica by itself:
//
//   - The dirty section runs from the cleaner checkpoint (the end of the
//     last round; the log start at first) to the first uncleanable offset:
//     the smallest of the last stable offset (so only committed data, below
//     the high watermark, is ever cleaned), the active segment's base, and
//     the base of the first segment whose newest record is younger than
//     min.compaction.lag.ms — rounded down to a segment base, since whole
//     segments are cleaned (cleanableOffsets, calculateCleanableBytes).
//   - A round runs when the dirty bytes are at least min.cleanable.dirty.ratio
//     of the bytes below the first uncleanable offset.
//   - It maps every key of the dirty section to its latest offset (records
//     of aborted transactions are not mapped), then rewrites every segment
//     below the first uncleanable offset, grouped up to segment.bytes:
//     a record stays if it is the latest of its key, or past the dirty
//     section's end; a record without a key goes; a tombstone (null value)
//     stays until its batch's delete horizon (KIP-534: set to now +
//     delete.retention.ms the first time a round keeps it) has passed.
//     Batches of aborted transactions go; an abort marker stays while the
//     round still saw batches of its transaction, a commit marker while it
//     saw any, and then, given a delete horizon of its own, until that
//     passes. A producer's last data batch (or, if its last entry is a
//     marker, that marker) is kept as an empty batch so that its epoch and
//     sequence survive, and so is the round's last batch (Cleaner.cleanInto,
//     CleanedTransactionMetadata, MemoryRecords.filterTo).
//   - Kept batches keep their base and last offsets: a batch's offsets
//     never move, the log gets gaps where whole batches went. The log start
//     does not move.
//
// Replacing segments survives a crash at any point: the cleaned segment is
// written beside the old ones ("<base>.log.cleaned", "<base>.hdrcrc.cleaned")
// and synced; then a manifest "<base>.swap" naming the replaced segments is
// written atomically — the commit point; then the replaced segments are
// removed and the cleaned files renamed into place, and the manifest
// removed. Open finishes a swap whose manifest exists and removes cleaned
// files without one (Kafka's .cleaned and .swap files, LogLoader).
//
// Not modelled: the dedupe buffer's size (log.cleaner.dedupe.buffer.size:
// the map here holds every key), max.compaction.lag.ms, cleaner I/O
// throttling, and producer-state snapshots — the cleaner keeps the
// in-memory producer state as it is, as Kafka does, but a reopened log
// rebuilds it from the batches the cleaner left.

// requireKeys is LogValidator.validateKey: a compacted topic refuses a
// record without a key (INVALID_RECORD).
func requireKeys(b record.Batch) error {
	recs, err := b.DecodeRecords()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Key == nil {
			return fmt.Errorf("compacted topic cannot accept a record without a key (offset delta %d): %w", r.OffsetDelta, ErrInvalidRecord)
		}
	}
	return nil
}

// CleanerConfig is a compacted topic's cleaning knobs.
type CleanerConfig struct {
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone (and
	// a marker whose transaction left no records) stays after a round
	// first keeps it.
	DeleteRetentionMs int64
	// MinCompactionLagMs is min.compaction.lag.ms: a segment holding a
	// record younger than this is not cleaned yet.
	MinCompactionLagMs int64
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio.
	MinCleanableDirtyRatio float64
}

// CleanResult is what one round did.
type CleanResult struct {
	Cleaned bool // false: nothing cleanable, or below the dirty ratio
	// FirstDirty and End are the dirty section [FirstDirty, End) the round
	// mapped; End is the new cleaner checkpoint.
	FirstDirty, End       int64
	Segments              int // segments rewritten
	BatchesRemoved        int // whole batches dropped
	RecordsRemoved        int // data records dropped (superseded, tombstones, keyless, aborted)
	TombstonesRemoved     int
	MarkersRemoved        int
	AbortedBatchesRemoved int // data batches of aborted transactions emptied
}

const cleanerCheckpointFile = "cleaner-offset-checkpoint"

func (l *Log) cleanerCheckpointName() string { return l.dir + "/" + cleanerCheckpointFile }

// firstDirtyOffset reads the cleaner checkpoint, clamped as Kafka's
// cleanableOffsets does: below the log start or past the log end it is the
// log start.
func (l *Log) firstDirtyOffset() (int64, error) {
	lines, ok, err := readCheckpoint(l.disk, l.cleanerCheckpointName())
	switch {
	case errors.Is(err, env.ErrIO):
		return 0, l.storageErr("read cleaner checkpoint", err)
	case err != nil:
		ok = false // damaged: clean from the log start, as Kafka does with a bad checkpoint
	}
	off := l.logStart
	if ok && len(lines) == 1 {
		if v, perr := strconv.ParseInt(lines[0], 10, 64); perr == nil {
			off = v
		}
	}
	if off < l.logStart || off > l.logEnd {
		off = l.logStart
	}
	return off, nil
}

// CleanerCheckpoint is where the next round's dirty section starts.
func (l *Log) CleanerCheckpoint() int64 {
	off, err := l.firstDirtyOffset()
	if err != nil {
		return l.logStart
	}
	return off
}

// Clean runs one cleaning round at wall time nowMs on a log whose high
// watermark is hw, as the package doc and the comment above say.
func (l *Log) Clean(nowMs, hw int64, c CleanerConfig) (CleanResult, error) {
	if !l.cfg.Compact {
		fail("%s: Clean on a log whose topic does not compact", l.name)
	}
	firstDirty, err := l.firstDirtyOffset()
	if err != nil {
		return CleanResult{}, err
	}
	uncleanable := min(l.LastStableOffset(hw), l.active().base)
	if c.MinCompactionLagMs > 0 {
		for _, s := range l.segments[:len(l.segments)-1] {
			if s.nextOffset() > firstDirty && s.maxTimestamp() > nowMs-c.MinCompactionLagMs {
				uncleanable = min(uncleanable, s.base)
				break
			}
		}
	}
	uncleanable = max(uncleanable, firstDirty)
	end := l.segments[l.segmentFor(uncleanable)].base // whole segments only
	if l.segments[0].base > uncleanable {
		end = l.segments[0].base
	}
	res := CleanResult{FirstDirty: firstDirty, End: end}
	var dirtyBytes, cleanBytes int64
	for _, s := range l.segments {
		switch {
		case s.base >= end:
		case s.base >= firstDirty || s.nextOffset() > firstDirty:
			dirtyBytes += s.size
		default:
			cleanBytes += s.size
		}
	}
	// LogCleanerManager.grabFilthiestCompactedLog: cleanable once the
	// ratio exceeds min.cleanable.dirty.ratio.
	if end <= firstDirty || dirtyBytes == 0 || float64(dirtyBytes)/float64(dirtyBytes+cleanBytes) <= c.MinCleanableDirtyRatio {
		return res, nil
	}

	// The offset map of the dirty section (Cleaner.buildOffsetMap).
	keys := map[string]int64{}
	txns := newCleanedTxns(l.abortedBetween(firstDirty, end))
	for si := l.segmentFor(firstDirty); si < len(l.segments) && l.segments[si].base < end; si++ {
		bs, err := l.readSegment(l.segments[si])
		if err != nil {
			return res, err
		}
		for _, rb := range bs {
			if rb.e.last < firstDirty {
				continue
			}
			if rb.e.control() {
				txns.onControl(rb)
				continue
			}
			if txns.onData(&rb.e) {
				continue // aborted: never the latest value of a key
			}
			for _, r := range rb.recs {
				if off := rb.e.base + int64(r.OffsetDelta); r.Key != nil && off >= firstDirty {
					keys[string(r.Key)] = off
				}
			}
		}
	}
	latest := end - 1 // fast-forwarded over any gap to the section's end

	// Rewrite [first segment, end) in groups (Cleaner.cleanSegments).
	last := map[int64]lastRecord{}
	for pid, p := range l.producers.producers {
		lr := lastRecord{epoch: p.epoch, dataOffset: -1}
		if n := len(p.batches); n > 0 {
			lr.dataOffset = p.batches[n-1].lastOffset
		}
		last[pid] = lr
	}
	f := &cleanFilter{now: nowMs, deleteRetention: c.DeleteRetentionMs, keys: keys, latest: latest, end: end,
		txns: newCleanedTxns(l.abortedBetween(l.segments[0].base, end)), last: last, res: &res}
	var cleaned []*segment
	replaced := 0
	for _, group := range l.cleanGroups(end) {
		s, err := l.cleanGroup(group, f)
		if err != nil {
			// The groups already swapped are in place on disk: take them.
			l.segments = append(cleaned, l.segments[replaced:]...)
			return res, err
		}
		cleaned = append(cleaned, s)
		replaced += len(group)
		res.Segments += len(group)
	}
	l.segments = append(cleaned, l.segments[replaced:]...)
	if err := writeCheckpoint(l.disk, l.cleanerCheckpointName(), []string{strconv.FormatInt(end, 10)}); err != nil {
		return res, l.storageErr("write cleaner checkpoint", err)
	}
	l.cleaned = true
	res.Cleaned = true
	l.checkInvariants()
	return res, nil
}

// cleanGroups groups the segments below end whose combined size fits in
// segment.bytes, as Cleaner.groupSegmentsBySize does.
func (l *Log) cleanGroups(end int64) [][]*segment {
	var groups [][]*segment
	var cur []*segment
	var size int64
	for _, s := range l.segments {
		if s.base >= end || s == l.active() {
			break
		}
		if len(cur) > 0 && size+s.size > l.cfg.SegmentBytesMax {
			groups = append(groups, cur)
			cur, size = nil, 0
		}
		cur = append(cur, s)
		size += s.size
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return groups
}

// abortedBetween is Kafka's collectAbortedTransactions: the aborted
// transactions overlapping [from, to), in order of first offset.
func (l *Log) abortedBetween(from, to int64) []AbortedTxn {
	var out []AbortedTxn
	for _, t := range l.producers.aborted {
		if t.LastOffset >= from && t.FirstOffset < to {
			out = append(out, t)
		}
	}
	// l.producers.aborted is in marker order; the cleaner consumes them
	// by first offset.
	slices.SortStableFunc(out, func(x, y AbortedTxn) int { return cmp.Compare(x.FirstOffset, y.FirstOffset) })
	return out
}

// readBatch is one batch of a segment read back for cleaning.
type readBatch struct {
	e    batchEntry
	b    record.Batch
	recs []record.Record
}

// readSegment reads and verifies every batch of s; a batch failing its
// checks stops the round (Kafka's cleaner fails the partition on a
// CorruptRecordException).
func (l *Log) readSegment(s *segment) ([]readBatch, error) {
	if s.size == 0 {
		return nil, nil
	}
	buf := make([]byte, s.size)
	if _, err := l.disk.ReadAt(s.logFile, buf, 0); err != nil {
		return nil, l.storageErr(fmt.Sprintf("cleaner read of segment %d", s.base), err)
	}
	out := make([]readBatch, 0, len(s.batches))
	for _, e := range s.batches {
		b := record.Batch(buf[e.position : e.position+int64(e.size)])
		if reason := checkServed(b, &e); reason != "" {
			return nil, &CorruptionError{Partition: l.name, Offset: e.base, Reason: "cleaner: " + reason}
		}
		rb := readBatch{e: e, b: b}
		if !e.control() {
			recs, err := b.DecodeRecords()
			if err != nil {
				return nil, &CorruptionError{Partition: l.name, Offset: e.base, Reason: "cleaner: " + err.Error()}
			}
			rb.recs = recs
		}
		out = append(out, rb)
	}
	return out, nil
}

// lastRecord is Kafka's LastRecord of an active producer: the last offset
// of its last data batch (-1 if its last entry is a marker) and its epoch.
type lastRecord struct {
	dataOffset int64
	epoch      int16
}

// cleanFilter is the round's RecordFilter.
type cleanFilter struct {
	now, deleteRetention int64
	keys                 map[string]int64
	latest, end          int64
	txns                 *cleanedTxns
	last                 map[int64]lastRecord
	res                  *CleanResult
}

// filter returns what of rb the round keeps: the batch bytes (the
// original, a rebuilt batch, or an empty header), or nil to drop it.
func (f *cleanFilter) filter(rb readBatch) (record.Batch, error) {
	e := &rb.e
	var canDiscard bool
	if e.control() {
		canDiscard = f.txns.onControl(rb)
	} else {
		canDiscard = f.txns.onData(e)
	}
	horizon, hasHorizon := rb.b.DeleteHorizon()
	discardRecords := canDiscard
	if e.control() {
		discardRecords = canDiscard && hasHorizon && horizon <= f.now
	}
	isLastOfProducer := false
	if lr, ok := f.last[e.producerID]; ok && e.producerID >= 0 {
		if lr.dataOffset >= 0 {
			isLastOfProducer = e.last == lr.dataOffset
		} else {
			isLastOfProducer = e.control() && e.producerEpoch == lr.epoch
		}
	}
	retainEmpty := isLastOfProducer || e.last+1 == f.end
	if e.control() {
		switch {
		case discardRecords && !retainEmpty:
			f.res.MarkersRemoved++
			f.res.BatchesRemoved++
			return nil, nil
		case discardRecords:
			f.res.MarkersRemoved++
			return record.EmptyBatch(rb.b), nil
		case canDiscard && !hasHorizon:
			// A marker whose transaction left nothing: it waits out
			// delete.retention.ms like a tombstone.
			return rebuildMarker(rb.b, f.now+f.deleteRetention)
		}
		return rb.b, nil
	}
	var keep []record.Record
	tombstones := false
	for _, r := range rb.recs {
		if !discardRecords && f.retain(rb, r, horizon, hasHorizon) {
			keep = append(keep, r)
			tombstones = tombstones || r.Value == nil
		} else if r.Value == nil {
			f.res.TombstonesRemoved++
		}
	}
	removed := len(rb.recs) - len(keep)
	f.res.RecordsRemoved += removed
	if len(keep) == 0 {
		if discardRecords && len(rb.recs) > 0 {
			f.res.AbortedBatchesRemoved++
		}
		if retainEmpty {
			return record.EmptyBatch(rb.b), nil
		}
		f.res.BatchesRemoved++
		return nil, nil
	}
	needHorizon := tombstones && !hasHorizon
	if removed == 0 && !needHorizon {
		return rb.b, nil
	}
	h := int64(-1)
	if needHorizon {
		h = f.now + f.deleteRetention
	}
	return record.Retain(rb.b, keep, h)
}

// retain is Cleaner.shouldRetainRecord.
func (f *cleanFilter) retain(rb readBatch, r record.Record, horizon int64, hasHorizon bool) bool {
	off := rb.e.base + int64(r.OffsetDelta)
	if off > f.latest {
		return true
	}
	if r.Key == nil {
		return false // a compacted topic's record needs a key
	}
	found, ok := f.keys[string(r.Key)]
	if ok && off < found {
		return false
	}
	return r.Value != nil || !hasHorizon || f.now < horizon
}

// rebuildMarker is a marker batch with a delete horizon set.
func rebuildMarker(b record.Batch, horizon int64) (record.Batch, error) {
	recs, err := b.DecodeRecords()
	if err != nil {
		return nil, err
	}
	return record.Retain(b, recs, horizon)
}

// cleanedTxns is Kafka's CleanedTransactionMetadata: which transactions the
// cleaner is inside of as it walks the log, to drop aborted batches and
// decide when markers may go.
type cleanedTxns struct {
	aborted          []AbortedTxn // not yet reached, by first offset
	ongoingAborted   map[int64]*abortedSeen
	ongoingCommitted map[int64]bool
}

type abortedSeen struct {
	txn  AbortedTxn
	seen bool // a batch of it was read in this round
}

func newCleanedTxns(aborted []AbortedTxn) *cleanedTxns {
	return &cleanedTxns{aborted: aborted, ongoingAborted: map[int64]*abortedSeen{}, ongoingCommitted: map[int64]bool{}}
}

func (t *cleanedTxns) consumeUpTo(offset int64) {
	for len(t.aborted) > 0 && t.aborted[0].FirstOffset <= offset {
		a := t.aborted[0]
		t.aborted = t.aborted[1:]
		if t.ongoingAborted[a.ProducerID] == nil {
			t.ongoingAborted[a.ProducerID] = &abortedSeen{txn: a}
		}
	}
}

// onData reports whether a data batch belongs to an aborted transaction.
func (t *cleanedTxns) onData(e *batchEntry) bool {
	t.consumeUpTo(e.last)
	if !e.transactional() {
		return false
	}
	if a := t.ongoingAborted[e.producerID]; a != nil {
		a.seen = true
		return true
	}
	t.ongoingCommitted[e.producerID] = true
	return false
}

// onControl reports whether a marker may be discarded: an abort marker
// once no batch of its transaction was seen, a commit marker once none was.
func (t *cleanedTxns) onControl(rb readBatch) bool {
	e := &rb.e
	t.consumeUpTo(e.last)
	if rb.b.RecordCount() == 0 {
		return true // an emptied marker: already cleaned
	}
	if e.commit() {
		seen := t.ongoingCommitted[e.producerID]
		delete(t.ongoingCommitted, e.producerID)
		return !seen
	}
	a := t.ongoingAborted[e.producerID]
	delete(t.ongoingAborted, e.producerID)
	return a == nil || !a.seen
}

// Cleaned segment files and the swap manifest.
func cleanedLogName(dir string, base int64) string { return logName(dir, base) + ".cleaned" }
func cleanedHdrName(dir string, base int64) string { return hdrName(dir, base) + ".cleaned" }
func swapName(dir string, base int64) string       { return segmentPrefix(dir, base) + ".swap" }

// cleanGroup cleans one group of segments into one segment at the group's
// first base and swaps it in on disk.
func (l *Log) cleanGroup(group []*segment, f *cleanFilter) (*segment, error) {
	base := group[0].base
	var raw, side []byte
	var entries []batchEntry
	for _, s := range group {
		bs, err := l.readSegment(s)
		if err != nil {
			return nil, err
		}
		for _, rb := range bs {
			out, err := f.filter(rb)
			if err != nil {
				return nil, err
			}
			if out == nil {
				continue
			}
			e := newEntry(out, int64(len(raw)))
			e.txnFirstOffset = rb.e.txnFirstOffset
			entries = append(entries, e)
			raw = append(raw, out...)
			side = appendHdrEntry(side, out)
		}
	}
	dir := l.dir
	for _, w := range []struct {
		name string
		data []byte
	}{{cleanedHdrName(dir, base), side}, {cleanedLogName(dir, base), raw}} {
		if err := l.disk.WriteAt(w.name, w.data, 0); err != nil {
			return nil, l.storageErr("write "+w.name, err)
		}
		if err := l.disk.Truncate(w.name, int64(len(w.data))); err != nil {
			return nil, l.storageErr("truncate "+w.name, err)
		}
		if err := l.disk.Sync(w.name); err != nil {
			return nil, l.storageErr("sync "+w.name, err)
		}
	}
	bases := make([]string, len(group))
	for i, s := range group {
		bases[i] = strconv.FormatInt(s.base, 10)
	}
	if err := writeCheckpoint(l.disk, swapName(dir, base), bases); err != nil {
		return nil, l.storageErr("write swap manifest", err)
	}
	if err := l.finishSwap(base, bases); err != nil {
		return nil, err
	}
	s := newSegment(dir, base)
	s.batches, s.size = entries, int64(len(raw))
	if err := l.rewriteTxnIndex(s); err != nil {
		return nil, err
	}
	return s, nil
}

// finishSwap completes a committed swap: the replaced segments' files go,
// the cleaned files take the first one's name (header checksums first),
// the manifest goes. After a crash at any step it is run again, and only
// redoes what is not done: while the cleaned header checksums are still
// there no rename has happened, so the old files may all go; once they are
// renamed the old files are gone and only the cleaned log may be left to
// rename.
func (l *Log) finishSwap(base int64, bases []string) error {
	cleanedHdr, cleanedLog := cleanedHdrName(l.dir, base), cleanedLogName(l.dir, base)
	exists := func(name string) bool { _, err := l.disk.Size(name); return err == nil }
	if exists(cleanedHdr) {
		for _, b := range bases {
			old, err := strconv.ParseInt(b, 10, 64)
			if err != nil {
				return l.storageErr("swap manifest", err)
			}
			if err := l.removeSegmentFiles(old); err != nil {
				return err
			}
		}
		if err := l.disk.Rename(cleanedHdr, hdrName(l.dir, base)); err != nil {
			return l.storageErr("rename "+cleanedHdr, err)
		}
	}
	if exists(cleanedLog) {
		if err := l.disk.Rename(cleanedLog, logName(l.dir, base)); err != nil {
			return l.storageErr("rename "+cleanedLog, err)
		}
	}
	if err := l.disk.Remove(swapName(l.dir, base)); err != nil {
		return l.storageErr("remove swap manifest", err)
	}
	return nil
}

// completeSwaps is Open's part: finish every committed swap, remove
// cleaned files no manifest commits.
func (l *Log) completeSwaps() error {
	for _, name := range l.disk.List(l.dir + "/") {
		rest, ok := strings.CutSuffix(name, ".swap")
		if !ok {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimPrefix(rest, l.dir+"/"), 10, 64)
		if err != nil {
			continue
		}
		lines, ok, err := readCheckpoint(l.disk, name)
		if err != nil || !ok {
			// A torn manifest was never the commit point: WriteFileAtomic
			// renames a complete one into place.
			if err := l.disk.Remove(name); err != nil {
				return l.storageErr("remove "+name, err)
			}
			continue
		}
		if l.recovery.Reason != "" {
			l.recovery.Reason += "; "
		}
		l.recovery.Reason += fmt.Sprintf("finished the cleaner's swap of segment %d", base)
		if err := l.finishSwap(base, lines); err != nil {
			return err
		}
	}
	for _, name := range l.disk.List(l.dir + "/") {
		if strings.HasSuffix(name, ".cleaned") {
			if err := l.disk.Remove(name); err != nil {
				return l.storageErr("remove "+name, err)
			}
		}
	}
	return nil
}
