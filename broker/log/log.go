package log

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
)

// Config is one log's knobs, spelled out: there are no hidden defaults.
type Config struct {
	Topic     string
	Partition int32
	// SegmentBytesMax is segment.bytes: a batch that would take the active
	// segment past it starts a new segment (an empty segment takes any
	// batch). Must be positive.
	SegmentBytesMax int64
	// FlushIntervalMessages is log.flush.interval.messages: sync once this
	// many offsets are unflushed (1 = after every append). 0 never syncs
	// on its own, Kafka's default: durability then rests on replication.
	FlushIntervalMessages int64
	// MessageBytesMax is max.message.bytes: the largest batch a leader
	// accepts. 0 means no limit below 2 GiB.
	MessageBytesMax int
	// KIP360ProducerIDRecovery selects how a leader treats a batch from a
	// producer id it has no state for (its records were truncated away, or
	// it never wrote here) at a first sequence other than 0: true accepts
	// it, as Kafka does since 2.5 (KIP-360); false refuses it with
	// ErrUnknownProducerID, the older behaviour.
	KIP360ProducerIDRecovery bool
	// Compact is cleanup.policy containing compact: the log may be
	// cleaned (Clean), and so may have gaps between batches where the
	// cleaner removed some — its own, or its leader's copied by a
	// follower. A log without it keeps offsets contiguous, and recovery
	// treats a gap as damage (a segment lost or cut in the middle), unless
	// the log was cleaned once (a cleaner checkpoint exists) and its topic
	// stopped compacting since.
	Compact bool
	// Defects are bugs planted for the checkers' self-test (package
	// defect); the log plants the producer-state ones.
	Defects defect.Set
}

func (c Config) validate() error {
	switch {
	case c.Topic == "" || strings.ContainsAny(c.Topic, "/ \n"):
		return fmt.Errorf("log: bad topic name %q", c.Topic)
	case c.Partition < 0:
		return fmt.Errorf("log: negative partition %d", c.Partition)
	case c.SegmentBytesMax <= 0:
		return fmt.Errorf("log: SegmentBytesMax %d must be positive", c.SegmentBytesMax)
	case c.FlushIntervalMessages < 0:
		return fmt.Errorf("log: negative FlushIntervalMessages %d", c.FlushIntervalMessages)
	case c.MessageBytesMax < 0:
		return fmt.Errorf("log: negative MessageBytesMax %d", c.MessageBytesMax)
	}
	return nil
}

// Dir is the directory of a partition's files: "<topic>-<partition>".
func Dir(topic string, partition int32) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}

// RecoveryInfo is what Open found and did.
type RecoveryInfo struct {
	Segments int // segments kept
	Batches  int // batches kept
	// TruncatedAt is the offset at which recovery cut the log (the next
	// offset after the last good batch), or -1 if it kept everything. A
	// log started afresh at its checkpointed start (see Open) was cut at
	// its first segment's base: every segment went.
	TruncatedAt int64
	// BytesTruncated counts bytes cut from segments, dropped segments
	// included.
	BytesTruncated  int64
	SegmentsDropped int
	Reason          string // why it cut, for the trace
	// CheckpointErrors lists checkpoint files that were unreadable (failed
	// their CRC or did not parse) and so were ignored or rebuilt.
	CheckpointErrors []string
}

// AppendResult describes an append.
type AppendResult struct {
	FirstOffset int64 // offset of the first record
	LastOffset  int64 // offset of the last record
	// Duplicate: the batch repeats one of the producer's last five, which
	// was not appended again. The offsets are the original batch's, as
	// Kafka answers a retried produce.
	Duplicate bool
}

// Log is one partition replica's log. See the package doc.
type Log struct {
	cfg  Config
	disk env.Disk
	dir  string
	name string // "<topic>-<partition>", for errors and invariants

	// segments are in offset order, the last the active one. Offsets
	// increase across batches and segments; they are contiguous except
	// where the cleaner removed batches of a compacted log (or a follower
	// copied such gaps from its leader).
	segments []*segment
	// logStart is the log start offset: the first segment's base, or past
	// it once IncrementLogStartOffset moved it (the segments below it stay
	// until DeleteSegmentsBelow removes them).
	logStart int64
	logEnd   int64
	// recoveryPoint: offsets below it are known synced or lie below the
	// log start.
	recoveryPoint int64

	epochs       epochCache
	producers    producerState
	hwCheckpoint int64
	recovery     RecoveryInfo
	// cleaned: a cleaner checkpoint exists, so gaps may exist whatever
	// the config says now.
	cleaned bool
}

// gapsAllowed reports whether offsets may skip between batches.
func (l *Log) gapsAllowed() bool { return l.cfg.Compact || l.cleaned }

// follows reports whether a batch at base may follow one that ended at
// end (end is the next offset expected).
func (l *Log) follows(base, end int64) bool {
	return base == end || (base > end && l.gapsAllowed())
}

const (
	epochCheckpointFile    = "leader-epoch-checkpoint"
	hwCheckpointFile       = "high-watermark-checkpoint"
	logStartCheckpointFile = "log-start-offset-checkpoint"
)

// Open opens (creating if needed) the log of cfg.Topic, cfg.Partition on d,
// recovering it as the package doc says. It fails only on a bad Config or
// a disk that fails its reads or the repairs recovery makes.
func Open(d env.Disk, cfg Config) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir := Dir(cfg.Topic, cfg.Partition)
	l := &Log{cfg: cfg, disk: d, dir: dir, name: dir, producers: newProducerState()}
	l.recovery.TruncatedAt = -1

	checkpointedStart, haveStart, err := l.loadLogStartCheckpoint()
	if err != nil {
		return nil, err
	}
	if err := l.completeSwaps(); err != nil {
		return nil, err
	}
	if _, err := d.Size(l.cleanerCheckpointName()); err == nil {
		l.cleaned = true
	}
	var bases, sidecars []int64
	for _, name := range d.List(dir + "/") {
		if base, ok := parseSegmentName(dir, name); ok {
			bases = append(bases, base) // List sorts; 20-digit names sort numerically
		} else if base, ok := parseSidecarName(dir, name); ok {
			sidecars = append(sidecars, base)
		}
	}
	if len(bases) > 0 {
		l.logStart = bases[0]
	}
	expected := l.logStart
	for i, base := range bases {
		if !l.follows(base, expected) {
			if err := l.dropSegments(bases[i:], fmt.Sprintf("segment %d does not start at offset %d", base, expected)); err != nil {
				return nil, err
			}
			break
		}
		seg, cut, err := l.recoverSegment(base)
		if err != nil {
			return nil, err
		}
		l.segments = append(l.segments, seg)
		expected = seg.nextOffset()
		if cut {
			if err := l.dropSegments(bases[i+1:], ""); err != nil {
				return nil, err
			}
			break
		}
	}
	// Kafka's LogLoader: a log start offset checkpoint past the recovered
	// log end (the batches below it were deleted, then a power loss took
	// the unsynced tail) starts the log afresh there, with no segments and
	// no epochs (deleteSegmentsIfLogStartGreaterThanLogEnd); otherwise the
	// log starts at the larger of the checkpoint and the first segment's
	// base.
	afresh := false
	if haveStart && len(l.segments) > 0 {
		if end := l.segments[len(l.segments)-1].nextOffset(); end < checkpointedStart {
			reason := fmt.Sprintf("log start offset checkpoint %d is past the recovered log end %d: the log starts afresh there", checkpointedStart, end)
			if l.recovery.Reason != "" {
				reason = l.recovery.Reason + "; then " + reason
			}
			l.recovery.TruncatedAt = -1
			segBases := make([]int64, len(l.segments))
			for i, s := range l.segments {
				segBases[i] = s.base
			}
			if err := l.dropSegments(segBases, reason); err != nil {
				return nil, err
			}
			l.segments, afresh = nil, true
		}
	}
	if haveStart && (len(l.segments) == 0 || checkpointedStart > l.logStart) {
		l.logStart = checkpointedStart
	}
	if len(l.segments) == 0 {
		s, err := l.freshSegment(l.logStart)
		if err != nil {
			return nil, err
		}
		l.segments = []*segment{s}
	}
	// Header checksums and transaction indexes below the first segment are
	// what a crash left of a segment DeleteSegmentsBelow was removing (its
	// .log goes first).
	for _, base := range sidecars {
		if base < l.segments[0].base {
			if err := l.removeSidecars(base); err != nil {
				return nil, err
			}
		}
	}
	l.logEnd = l.active().nextOffset()
	l.recoveryPoint = l.logStart // unknown: a crash keeps unsynced bytes
	for _, s := range l.segments {
		l.recovery.Batches += len(s.batches)
	}
	l.recovery.Segments = len(l.segments)

	if err := l.recoverEpochs(afresh); err != nil {
		return nil, err
	}
	l.recallProducerState()
	if err := l.reconcileTxnIndexes(); err != nil {
		return nil, err
	}
	if err := l.loadHighWatermark(); err != nil {
		return nil, err
	}
	l.checkInvariants()
	return l, nil
}

// recoverSegment scans one segment file and cuts it at the first batch that
// fails a check. cut reports whether it did.
func (l *Log) recoverSegment(base int64) (*segment, bool, error) {
	var (
		side     []byte
		sideErr  error
		seg      = newSegment(l.dir, base)
		expected = base
		pos      = 0
		size     = 0
		reason   = ""
		recalled *scanMemo
	)
	// The segment is lent, not copied (env.ViewFile): the scan keeps only
	// batch entries, never the bytes.
	err := env.ViewFile(l.disk, logName(l.dir, base), func(data []byte) error {
		size = len(data)
		if side, sideErr = l.disk.ReadFile(hdrName(l.dir, base)); sideErr != nil && !isNotExist(sideErr) {
			return nil
		}
		seg.dirty, seg.txnDirty = len(data) > 0, true
		if recalled = l.recallScan(base, len(data)); recalled != nil {
			seg.batches = recalled.batches // shared: see scanMemo
			pos, expected = recalled.size, recalled.next
		} else {
			seg.batches = make([]batchEntry, 0, len(side)/hdrEntrySize) // a synced batch has a header entry: most of them
			pos, expected = 0, base
		}
		pos, expected, reason = l.verifyBatches(seg, data, side, pos, expected)
		return nil
	})
	if err != nil {
		return nil, false, l.storageErr("recovery read of segment "+strconv.FormatInt(base, 10), err)
	}
	if sideErr != nil && !isNotExist(sideErr) {
		return nil, false, l.storageErr("recovery read of header checksums", sideErr)
	}
	seg.size = int64(pos)
	cut := pos < size
	sideWant := int64(len(seg.batches) * hdrEntrySize)
	if cut {
		l.recovery.TruncatedAt = expected
		l.recovery.BytesTruncated += int64(size - pos)
		l.recovery.Reason = fmt.Sprintf("segment %d at byte %d: %s", base, pos, reason)
		if err := l.cutFile(logName(l.dir, base), seg.size); err != nil {
			return nil, false, err
		}
	}
	if int64(len(side)) != sideWant {
		if err := l.cutFile(hdrName(l.dir, base), sideWant); err != nil {
			return nil, false, err
		}
	}
	l.rememberScan(seg, recalled)
	return seg, cut, nil
}

// verifyBatches appends to seg an entry for each batch of data, from byte
// pos (where a batch at offset expected begins, every batch before it
// already in seg), that passes every check, and returns where the first
// that fails begins (len(data) if none), the offset it should have started
// at, and why it failed.
func (l *Log) verifyBatches(seg *segment, data, side []byte, pos int, expected int64) (int, int64, string) {
	reason := ""
	for pos < len(data) {
		b, _, err := record.Next(data[pos:])
		switch {
		case err != nil:
			reason = err.Error()
		case !l.follows(b.BaseOffset(), expected):
			reason = fmt.Sprintf("batch base offset %d, expected %d", b.BaseOffset(), expected)
		default:
			if err := b.VerifyCRC(); err != nil {
				reason = err.Error()
			} else if b.IsControl() {
				if _, err := b.EndTxnMarker(); err != nil {
					reason = err.Error()
				}
			}
			if reason == "" {
				switch checkHdrEntry(side, len(seg.batches), b) {
				case hdrMismatch:
					reason = fmt.Sprintf("header checksum mismatch at offset %d", b.BaseOffset())
				case hdrMissing:
					reason = fmt.Sprintf("no header checksum for the batch at offset %d (never synced)", b.BaseOffset())
				}
			}
		}
		if reason != "" {
			return pos, expected, reason
		}
		seg.batches = append(seg.batches, newEntry(b, int64(pos)))
		pos += b.Size()
		expected = b.NextOffset()
	}
	return pos, expected, ""
}

// cutFile truncates a file and makes the truncation durable.
func (l *Log) cutFile(name string, size int64) error {
	if err := l.disk.Truncate(name, size); err != nil && !isNotExist(err) {
		return l.storageErr("truncate "+name, err)
	}
	if size == 0 {
		if _, err := l.disk.Size(name); isNotExist(err) {
			return nil
		}
	}
	if err := l.disk.Sync(name); err != nil {
		return l.storageErr("sync "+name, err)
	}
	return nil
}

// dropSegments removes whole segments, last first, so that a crash midway
// leaves a contiguous prefix.
func (l *Log) dropSegments(bases []int64, reason string) error {
	if len(bases) == 0 {
		return nil
	}
	if l.recovery.TruncatedAt < 0 {
		l.recovery.TruncatedAt = bases[0]
		l.recovery.Reason = reason
	}
	for i := len(bases) - 1; i >= 0; i-- {
		if n, err := l.disk.Size(logName(l.dir, bases[i])); err == nil {
			l.recovery.BytesTruncated += n
		}
		if err := l.removeSegmentFiles(bases[i]); err != nil {
			return err
		}
		l.recovery.SegmentsDropped++
	}
	return nil
}

// removeSidecars removes a segment's header checksums and transaction
// index.
func (l *Log) removeSidecars(base int64) error {
	for _, name := range []string{hdrName(l.dir, base), txnIdxName(l.dir, base)} {
		if err := l.disk.Remove(name); err != nil {
			return l.storageErr("remove "+name, err)
		}
	}
	return nil
}

func (l *Log) removeSegmentFiles(base int64) error {
	// The .log goes last: a crash midway leaves a segment without its
	// header checksums, which recovery cuts, never checksums without a
	// segment, which would misalign a later segment of the same name.
	for _, name := range []string{hdrName(l.dir, base), txnIdxName(l.dir, base), logName(l.dir, base)} {
		if err := l.disk.Remove(name); err != nil {
			return l.storageErr("remove "+name, err)
		}
	}
	return nil
}

// recoverEpochs loads the epoch checkpoint and brings it in line with the
// batches: Kafka's assign for each batch's leader epoch, then removal of
// entries at or past the log end, then the truncation from the log start
// (LogLoader.load's truncateFromStartAsyncFlush: the checkpoint may predate
// the last move of the start). A log started afresh has no epochs
// (clearAndFlush). As in Kafka, an entry starting at the log end goes even
// when it is the one the start collapsed into: the batches below the start,
// if the segments still hold any, name that epoch again. The checkpoint is
// rewritten if that changed it.
func (l *Log) recoverEpochs(afresh bool) error {
	name := l.dir + "/" + epochCheckpointFile
	lines, ok, err := readCheckpoint(l.disk, name)
	if err != nil && errors.Is(err, env.ErrIO) {
		return l.storageErr("read "+name, err)
	}
	var loaded epochCache
	if err != nil {
		l.recovery.CheckpointErrors = append(l.recovery.CheckpointErrors, err.Error())
		ok = false
	} else if ok {
		loaded, err = parseEpochLines(lines)
		if err == nil && !isMonotonic(loaded) {
			err = fmt.Errorf("entries not monotonic")
		}
		if err != nil {
			l.recovery.CheckpointErrors = append(l.recovery.CheckpointErrors, fmt.Sprintf("%s: %v", name, err))
			ok, loaded = false, epochCache{}
		}
	}
	l.epochs = loaded.clone()
	if afresh {
		l.epochs = epochCache{}
	}
	for _, s := range l.segments {
		for i := range s.batches {
			if e := s.batches[i].leaderEpoch; e >= 0 {
				l.epochs.assign(e, s.batches[i].base)
			}
		}
	}
	l.epochs.truncateFromEnd(l.logEnd)
	l.epochs.truncateFromStart(l.logStart)
	l.epochs.assertMonotonic(l.name)
	if (ok && !l.epochs.equal(loaded)) || (!ok && len(l.epochs.entries) > 0) {
		return l.writeEpochCheckpoint()
	}
	return nil
}

func isMonotonic(c epochCache) bool {
	for i := 1; i < len(c.entries); i++ {
		if c.entries[i-1].Epoch >= c.entries[i].Epoch || c.entries[i-1].StartOffset >= c.entries[i].StartOffset {
			return false
		}
	}
	return true
}

func (l *Log) writeEpochCheckpoint() error {
	name := l.dir + "/" + epochCheckpointFile
	if err := writeCheckpoint(l.disk, name, l.epochs.lines()); err != nil {
		return l.storageErr("write "+name, err)
	}
	return nil
}

// rebuildProducerState replays every indexed batch into fresh producer
// state, transactions and aborted index.
func (l *Log) rebuildProducerState() {
	l.producers = newProducerState()
	for _, s := range l.segments {
		for i := range s.batches {
			l.indexProducerState(&s.batches[i])
		}
	}
}

// indexProducerState applies one batch to producer state and, for a marker
// that closes a transaction, records the transaction on the entry and, if
// aborted, in the aborted index. It returns the aborted transaction, if any.
func (l *Log) indexProducerState(e *batchEntry) (AbortedTxn, bool) {
	closed, aborted, ok := l.producers.apply(e)
	if e.control() {
		e.txnFirstOffset = -1
	}
	if !ok {
		return AbortedTxn{}, false
	}
	e.txnFirstOffset = closed.firstOffset
	if !aborted {
		return AbortedTxn{}, false
	}
	lso := e.last + 1
	if fu, ok := l.producers.firstUnstableOffset(); ok {
		lso = fu
	}
	t := AbortedTxn{ProducerID: e.producerID, FirstOffset: closed.firstOffset, LastOffset: e.last, LastStableOffset: lso}
	l.producers.aborted = append(l.producers.aborted, t)
	return t, true
}

// txnIndexBytes is the .txnindex content a segment should have.
func (l *Log) txnIndexBytes(s *segment) []byte { return txnIndexEntries(l.producers.aborted, s) }

// txnIndexEntries is the .txnindex content of the aborted transactions
// whose markers lie in s.
func txnIndexEntries(aborted []AbortedTxn, s *segment) []byte {
	var b []byte
	for _, t := range aborted {
		if t.LastOffset >= s.base && t.LastOffset < s.nextOffset() {
			b = appendTxnEntry(b, t)
		}
	}
	return b
}

// reconcileTxnIndexes rewrites every .txnindex that differs from what the
// batches say (a torn append, a lost sync, a truncation).
func (l *Log) reconcileTxnIndexes() error {
	for _, s := range l.segments {
		if err := l.rewriteTxnIndex(s); err != nil {
			return err
		}
	}
	return nil
}

func (l *Log) rewriteTxnIndex(s *segment) error {
	name := s.txnFile
	want := l.txnIndexBytes(s)
	have, err := l.disk.ReadFile(name)
	if err != nil && !isNotExist(err) {
		return l.storageErr("read "+name, err)
	}
	if err == nil && string(have) == string(want) {
		return nil
	}
	if len(want) == 0 {
		if err := l.disk.Remove(name); err != nil {
			return l.storageErr("remove "+name, err)
		}
		return nil
	}
	if err := env.WriteFileAtomic(l.disk, name, want); err != nil {
		return l.storageErr("write "+name, err)
	}
	s.txnDirty = false
	return nil
}

// loadLogStartCheckpoint reads the log start offset checkpoint: ok is
// false when there is none or it is unreadable (then noted in Recovery).
func (l *Log) loadLogStartCheckpoint() (start int64, ok bool, err error) {
	name := l.dir + "/" + logStartCheckpointFile
	lines, ok, err := readCheckpoint(l.disk, name)
	if err != nil && errors.Is(err, env.ErrIO) {
		return 0, false, l.storageErr("read "+name, err)
	}
	if err != nil {
		l.recovery.CheckpointErrors = append(l.recovery.CheckpointErrors, err.Error())
		return 0, false, nil
	}
	if !ok {
		return 0, false, nil
	}
	v, perr := strconv.ParseInt(strings.TrimSpace(strings.Join(lines, "")), 10, 64)
	if len(lines) != 1 || perr != nil || v < 0 {
		l.recovery.CheckpointErrors = append(l.recovery.CheckpointErrors, name+": bad entry")
		return 0, false, nil
	}
	return v, true, nil
}

// writeLogStartCheckpoint durably replaces the log start offset checkpoint
// (Kafka's log-start-offset-checkpoint, one per partition here).
func (l *Log) writeLogStartCheckpoint(start int64) error {
	name := l.dir + "/" + logStartCheckpointFile
	if err := writeCheckpoint(l.disk, name, []string{strconv.FormatInt(start, 10)}); err != nil {
		return l.storageErr("write "+name, err)
	}
	return nil
}

func (l *Log) loadHighWatermark() error {
	name := l.dir + "/" + hwCheckpointFile
	lines, ok, err := readCheckpoint(l.disk, name)
	if err != nil && errors.Is(err, env.ErrIO) {
		return l.storageErr("read "+name, err)
	}
	hw := l.logStart
	if err != nil {
		l.recovery.CheckpointErrors = append(l.recovery.CheckpointErrors, err.Error())
	} else if ok {
		v, perr := strconv.ParseInt(strings.TrimSpace(strings.Join(lines, "")), 10, 64)
		if len(lines) != 1 || perr != nil {
			l.recovery.CheckpointErrors = append(l.recovery.CheckpointErrors, name+": bad entry")
		} else {
			hw = v
		}
	}
	// Kafka clamps a checkpointed high watermark into the log as recovered.
	l.hwCheckpoint = min(max(hw, l.logStart), l.logEnd)
	return nil
}

func (l *Log) storageErr(what string, err error) error {
	return fmt.Errorf("log %s: %s: %w: %w", l.name, what, ErrKafkaStorage, err)
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// Name is "<topic>-<partition>".
func (l *Log) Name() string { return l.name }

// LogEndOffset is the offset the next record will get.
func (l *Log) LogEndOffset() int64 { return l.logEnd }

// LogStartOffset is the log start offset: the first offset a read may ask
// for. It is the first segment's base unless IncrementLogStartOffset or
// TruncateFullyAndStartAt moved it (Open restores it from its checkpoint);
// batches below it may remain in the first segments until
// DeleteSegmentsBelow removes them, and are never served.
func (l *Log) LogStartOffset() int64 { return l.logStart }

// UnflushedMessages counts offsets appended since the last successful sync
// (after a restart: every offset, since a crash keeps unsynced bytes in the
// page cache and Open cannot tell which are durable).
func (l *Log) UnflushedMessages() int64 { return l.logEnd - l.recoveryPoint }

// Size is the bytes of the log's segments (Kafka's UnifiedLog.size), what
// DescribeLogDirs reports.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// RecoveryPoint is the offset below which the log is known to be synced
// (or lies below the log start, which a power loss cannot bring back).
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint }

// SetConfig changes the log's knobs from the next append on, as Kafka's
// UnifiedLog.updateConfig does when a topic's configs are altered: a
// smaller segment.bytes rolls at the next batch that would pass it, a new
// flush interval counts the messages already unflushed. Topic and
// partition cannot change.
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.Topic != l.cfg.Topic || cfg.Partition != l.cfg.Partition {
		return fmt.Errorf("log %s: SetConfig for %s-%d", l.name, cfg.Topic, cfg.Partition)
	}
	l.cfg = cfg
	return nil
}

// Config is the log's knobs.
func (l *Log) Config() Config { return l.cfg }

// Recovery reports what Open found and did.
func (l *Log) Recovery() RecoveryInfo { return l.recovery }

// SegmentBaseOffsets lists the segments' base offsets in order.
func (l *Log) SegmentBaseOffsets() []int64 {
	out := make([]int64, len(l.segments))
	for i, s := range l.segments {
		out[i] = s.base
	}
	return out
}

// AppendAsLeader appends one batch from a producer: it validates the batch
// (framing, CRC, records, size, no control flag), checks the producer's
// epoch and sequence if it has a producer id, assigns offsets from the log
// end, stamps leaderEpoch, and syncs if the flush policy says so. A
// duplicate of one of the producer's last five batches is not appended: the
// result has Duplicate set and the original offsets.
//
// If the batch was appended but the flush the policy demanded failed, the
// result describes the appended batch and err wraps ErrKafkaStorage.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendResult, error) {
	b, err := record.Parse(records)
	if err != nil {
		return AppendResult{}, l.refuse(err)
	}
	if l.cfg.MessageBytesMax > 0 && len(b) > l.cfg.MessageBytesMax {
		return AppendResult{}, fmt.Errorf("log %s: batch of %d bytes over %d: %w", l.name, len(b), l.cfg.MessageBytesMax, ErrMessageTooLarge)
	}
	if err := b.Validate(); err != nil {
		return AppendResult{}, l.refuse(err)
	}
	if b.IsControl() {
		return AppendResult{}, fmt.Errorf("log %s: clients may not write control batches: %w", l.name, ErrInvalidRecord)
	}
	if b.IsTransactional() && !b.HasProducerID() {
		return AppendResult{}, fmt.Errorf("log %s: transactional batch without a producer id: %w", l.name, ErrInvalidRecord)
	}
	if l.cfg.Compact {
		if err := requireKeys(b); err != nil {
			return AppendResult{}, fmt.Errorf("log %s: %w", l.name, err)
		}
	}
	if err := l.checkLeaderEpoch(leaderEpoch); err != nil {
		return AppendResult{}, err
	}
	if b.HasProducerID() {
		dup, isDup, err := l.producers.validate(b, validation{kip360: l.cfg.KIP360ProducerIDRecovery,
			gapsAccepted: l.cfg.Defects.Has(defect.SequenceGapAccepted), retriesAppended: l.cfg.Defects.Has(defect.RetriedBatchAppendedAgain)})
		if err != nil {
			return AppendResult{}, fmt.Errorf("log %s: %w", l.name, err)
		}
		if isDup {
			return AppendResult{FirstOffset: dup.firstOffset, LastOffset: dup.lastOffset, Duplicate: true}, nil
		}
	}
	b = b.Clone()
	b.SetBaseOffset(l.logEnd)
	b.SetPartitionLeaderEpoch(leaderEpoch)
	return l.appendLocal(b)
}

// AppendMarker appends a transaction marker for producerID (a
// WriteTxnMarkers request from the coordinator) as leader: the marker must
// not come from an older producer epoch or an older coordinator epoch than
// the producer's last marker. timestamp is in milliseconds.
func (l *Log) AppendMarker(producerID int64, producerEpoch int16, m record.EndTxnMarker, leaderEpoch int32, timestamp int64) (AppendResult, error) {
	if !(producerID >= 0) {
		fail("%s: marker for producer id %d", l.name, producerID)
	}
	if err := l.checkLeaderEpoch(leaderEpoch); err != nil {
		return AppendResult{}, err
	}
	if err := l.producers.validateMarker(producerID, producerEpoch, m); err != nil {
		return AppendResult{}, fmt.Errorf("log %s: %w", l.name, err)
	}
	b := record.EncodeEndTxnMarker(l.logEnd, leaderEpoch, producerID, producerEpoch, timestamp, m)
	return l.appendLocal(b)
}

// refuse wraps a record error; record's errors unwrap to their Kafka codes
// (CORRUPT_MESSAGE, UNSUPPORTED_COMPRESSION_TYPE, INVALID_RECORD, ...).
func (l *Log) refuse(err error) error { return fmt.Errorf("log %s: %w", l.name, err) }

func (l *Log) checkLeaderEpoch(epoch int32) error {
	if !(epoch >= 0) {
		fail("%s: leader append with epoch %d", l.name, epoch)
	}
	if latest, ok := l.epochs.latest(); ok && epoch < latest.Epoch {
		return fmt.Errorf("log %s: leader epoch %d older than the log's %d: %w", l.name, epoch, latest.Epoch, ErrFencedLeaderEpoch)
	}
	return nil
}

// appendLocal appends a leader batch whose offsets and epoch are set.
func (l *Log) appendLocal(b record.Batch) (AppendResult, error) {
	if err := l.assignEpochs([]record.Batch{b}); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{FirstOffset: b.BaseOffset(), LastOffset: b.LastOffset()}
	if err := l.appendBatches([]record.Batch{b}, b); err != nil {
		l.forgetUnwrittenEpochs()
		return AppendResult{}, err
	}
	return res, l.maybeFlush()
}

// AppendAsFollower appends batches fetched from the leader, offsets and
// epochs as the leader assigned them. They must start at the log end and be
// contiguous (else ErrUnexpectedAppendOffset) — in a compacted log, at or
// past it and increasing: the leader's log has gaps where its cleaner
// removed batches, and the follower copies them (UnifiedLog.append without
// offset assignment refuses only a first offset below the log end); each must pass its CRC (else
// ErrCorruptMessage). Producer state is updated without the leader's checks.
// An empty input appends nothing; a partial batch at the end (a fetch
// response cut at its byte limit) is ignored, as Kafka's fetcher does. On an
// I/O error a prefix of the batches
// may have been appended: LogEndOffset says how far.
func (l *Log) AppendAsFollower(records []byte) (AppendResult, error) {
	batches, err := record.Split(records)
	if errors.Is(err, record.ErrTruncated) {
		n := 0
		for _, b := range batches {
			n += len(b)
		}
		records, err = records[:n], nil
	}
	if err != nil {
		return AppendResult{}, l.refuse(err)
	}
	if len(batches) == 0 {
		return AppendResult{FirstOffset: l.logEnd, LastOffset: l.logEnd - 1}, nil
	}
	next := l.logEnd
	for _, b := range batches {
		if !l.follows(b.BaseOffset(), next) {
			return AppendResult{}, fmt.Errorf("log %s: batch at offset %d, expected %d: %w", l.name, b.BaseOffset(), next, ErrUnexpectedAppendOffset)
		}
		if err := b.VerifyCRC(); err != nil {
			return AppendResult{}, l.refuse(err)
		}
		if b.IsControl() {
			if _, err := b.EndTxnMarker(); err != nil {
				return AppendResult{}, l.refuse(err)
			}
		}
		next = b.NextOffset()
	}
	if err := l.assignEpochs(batches); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{FirstOffset: batches[0].BaseOffset(), LastOffset: next - 1}
	if err := l.appendBatches(batches, records); err != nil {
		l.forgetUnwrittenEpochs()
		return AppendResult{}, err
	}
	return res, l.maybeFlush()
}

// assignEpochs records the batches' leader epochs in the epoch cache and
// checkpoints it, before the batches reach the disk.
func (l *Log) assignEpochs(batches []record.Batch) error {
	latest, ok := l.epochs.latest()
	needed := false
	for _, b := range batches {
		if e := b.PartitionLeaderEpoch(); e >= 0 && (!ok || e != latest.Epoch || b.BaseOffset() < latest.StartOffset) {
			needed = true
			break
		}
	}
	if !needed {
		return nil
	}
	before := l.epochs.clone()
	changed := false
	for _, b := range batches {
		if e := b.PartitionLeaderEpoch(); e >= 0 {
			changed = l.epochs.assign(e, b.BaseOffset()) || changed
		}
	}
	if !changed {
		return nil
	}
	l.epochs.assertMonotonic(l.name)
	if err := l.writeEpochCheckpoint(); err != nil {
		l.epochs = before
		return err
	}
	return nil
}

// forgetUnwrittenEpochs drops epoch entries that start past the log end
// after a failed append. The checkpoint is rewritten if the disk lets us;
// if not, Open drops those entries again.
func (l *Log) forgetUnwrittenEpochs() {
	if l.epochs.truncateFromEnd(l.logEnd + 1) {
		_ = l.writeEpochCheckpoint()
	}
}

// appendBatches writes increasing batches starting at or past the log end (raw is
// exactly their concatenation) and indexes them, rolling segments at
// SegmentBytesMax.
func (l *Log) appendBatches(batches []record.Batch, raw []byte) error {
	start := 0 // position of batches[i] in raw
	for i := 0; i < len(batches); {
		seg := l.active()
		if seg.size > 0 && seg.size+int64(len(batches[i])) > l.cfg.SegmentBytesMax {
			var err error
			if seg, err = l.roll(); err != nil {
				return err
			}
		}
		j, size := i+1, seg.size+int64(len(batches[i]))
		for j < len(batches) && size+int64(len(batches[j])) <= l.cfg.SegmentBytesMax {
			size += int64(len(batches[j]))
			j++
		}
		n := int(size - seg.size)
		if err := l.writeGroup(seg, batches[i:j], raw[start:start+n]); err != nil {
			return err
		}
		start += n
		i = j
	}
	// Checked once every group is in, not per segment: the epochs of all
	// the batches were assigned before the first group was written
	// (assignEpochs), and a follower's batches may resume past a gap the
	// leader's cleaner left, so an epoch can start past the end of a group
	// written before it.
	l.checkInvariants()
	return nil
}

// freshSegment returns a new, empty segment at base, first removing any
// header checksums or transaction index left under its name by a crash.
func (l *Log) freshSegment(base int64) (*segment, error) {
	s := newSegment(l.dir, base)
	for _, name := range []string{s.hdrFile, s.txnFile} {
		if err := l.disk.Remove(name); err != nil {
			return nil, l.storageErr("remove "+name, err)
		}
	}
	return s, nil
}

func (l *Log) roll() (*segment, error) {
	if !(l.active().nextOffset() == l.logEnd) {
		fail("%s: active segment ends at %d, log end %d", l.name, l.active().nextOffset(), l.logEnd)
	}
	s, err := l.freshSegment(l.logEnd)
	if err != nil {
		return nil, err
	}
	l.segments = append(l.segments, s)
	return s, nil
}

// writeGroup appends batches to one segment: header checksums first, then
// the batches, so that a batch on disk always has its checksum before it.
// A failed write is rolled back and leaves the log as it was.
func (l *Log) writeGroup(seg *segment, batches []record.Batch, raw []byte) error {
	side := make([]byte, 0, hdrEntrySize*len(batches))
	for _, b := range batches {
		side = appendHdrEntry(side, b)
	}
	hdr, lg := seg.hdrFile, seg.logFile
	sideSize := int64(len(seg.batches) * hdrEntrySize)
	if err := l.disk.Append(hdr, side); err != nil {
		_ = l.disk.Truncate(hdr, sideSize)
		return l.storageErr("append header checksums", err)
	}
	if err := l.disk.Append(lg, raw); err != nil {
		_ = l.disk.Truncate(lg, seg.size)
		_ = l.disk.Truncate(hdr, sideSize)
		return l.storageErr(fmt.Sprintf("append at offset %d", l.logEnd), err)
	}
	var txnBytes []byte
	pos := seg.size
	for _, b := range batches {
		e := newEntry(b, pos)
		if !l.follows(e.base, l.logEnd) {
			fail("%s: offsets not contiguous: batch at %d appended at log end %d", l.name, e.base, l.logEnd)
		}
		if !(e.last >= e.base) {
			fail("%s: batch at %d ends at %d", l.name, e.base, e.last)
		}
		if t, ok := l.indexProducerState(&e); ok {
			txnBytes = appendTxnEntry(txnBytes, t)
		}
		seg.batches = append(seg.batches, e)
		pos += int64(e.size)
		l.logEnd = e.last + 1
	}
	seg.size = pos
	seg.dirty = true
	if len(txnBytes) > 0 {
		seg.txnDirty = true
		if err := l.disk.Append(seg.txnFile, txnBytes); err != nil {
			// The index is derived from the batches, which are in: the
			// next Flush (or Open) rewrites it whole.
			seg.txnStale = true
		}
	}
	return nil
}

func (l *Log) maybeFlush() error {
	if n := l.cfg.FlushIntervalMessages; n > 0 && l.UnflushedMessages() >= n {
		return l.Flush()
	}
	return nil
}

// Flush syncs every segment written since the last flush: header checksums
// before batches, so a durable batch always has a durable checksum. On
// failure nothing is marked synced, and the next Flush tries again.
func (l *Log) Flush() error {
	for _, s := range l.segments {
		if s.txnStale {
			if err := l.rewriteTxnIndex(s); err != nil {
				return err
			}
			s.txnStale = false
		}
		if s.dirty {
			if err := l.disk.Sync(s.hdrFile); err != nil && !isNotExist(err) {
				return l.storageErr("flush", err)
			}
			if err := l.disk.Sync(s.logFile); err != nil && !isNotExist(err) {
				return l.storageErr("flush", err)
			}
		}
		if s.txnDirty {
			if err := l.disk.Sync(s.txnFile); err != nil && !isNotExist(err) {
				return l.storageErr("flush", err)
			}
		}
	}
	for _, s := range l.segments {
		s.dirty, s.txnDirty = false, false
	}
	l.recoveryPoint = l.logEnd
	return nil
}

// Read returns whole batches starting with the one that holds offset from,
// up to maxBytes (but always at least one batch, as Kafka's fetch does since
// KIP-74), and only batches that end below limit (the high watermark for a
// consumer, the last stable offset for read_committed, the log end for a
// follower). A from past limit but within the log returns nothing; a from
// outside [LogStartOffset, LogEndOffset] is ErrOffsetOutOfRange. Every batch
// is checked against the index and its CRC; Read stops before a bad one and,
// if that is the first, returns a *CorruptionError.
func (l *Log) Read(from int64, maxBytes int, limit int64) ([]byte, error) {
	if from < l.logStart || from > l.logEnd {
		return nil, fmt.Errorf("log %s: offset %d outside [%d, %d]: %w", l.name, from, l.logStart, l.logEnd, ErrOffsetOutOfRange)
	}
	limit = min(limit, l.logEnd)
	if from >= limit {
		return nil, nil
	}
	type span struct {
		seg    *segment
		lo, hi int // batches [lo, hi)
	}
	var spans []span
	total := 0
	first := l.segmentFor(from)
	done := false
	for si := first; si < len(l.segments) && !done; si++ {
		seg := l.segments[si]
		lo := 0
		if si == first {
			lo = seg.find(from)
		}
		hi := lo
		for ; hi < len(seg.batches); hi++ {
			e := &seg.batches[hi]
			if e.last >= limit || (total > 0 && total+int(e.size) > maxBytes) {
				done = true
				break
			}
			total += int(e.size)
		}
		if hi > lo {
			spans = append(spans, span{seg, lo, hi})
		}
	}
	buf := make([]byte, total)
	p := 0
	var ioErr error
	for _, sp := range spans {
		first, last := &sp.seg.batches[sp.lo], &sp.seg.batches[sp.hi-1]
		n := int(last.position + int64(last.size) - first.position)
		got, err := l.disk.ReadAt(sp.seg.logFile, buf[p:p+n], first.position)
		if err != nil && !(errors.Is(err, io.EOF) && got == n) {
			// A failed read, or a file shorter than its index: keep
			// what came back and serve the part of it that checks out.
			buf = buf[:p+got]
			if !errors.Is(err, io.EOF) {
				ioErr = l.storageErr(fmt.Sprintf("read at offset %d", first.base), err)
			}
			break
		}
		p += n
	}
	// Verify, batch by batch, in index order.
	q := 0
	for _, sp := range spans {
		for k := sp.lo; k < sp.hi; k++ {
			e := &sp.seg.batches[k]
			reason := ""
			if q+int(e.size) > len(buf) {
				if ioErr != nil && q == 0 {
					return nil, ioErr
				}
				reason = fmt.Sprintf("segment file holds %d of the batch's %d bytes", len(buf)-q, e.size)
			} else {
				reason = checkServed(buf[q:q+int(e.size)], e)
			}
			if reason != "" {
				if q > 0 {
					return buf[:q], nil
				}
				return nil, &CorruptionError{Partition: l.name, Offset: e.base, Reason: reason}
			}
			q += int(e.size)
		}
	}
	return buf, nil
}

// checkServed compares a batch read back from disk with its index entry
// and its CRC. It returns why the batch must not be served, or "".
func checkServed(buf []byte, e *batchEntry) string {
	b := record.Batch(buf)
	switch {
	case b.Magic() != record.Magic:
		return fmt.Sprintf("magic %d", b.Magic())
	case b.BaseOffset() != e.base:
		return fmt.Sprintf("base offset field reads %d", b.BaseOffset())
	case b.Size() != int(e.size):
		return fmt.Sprintf("length field gives %d bytes, index %d", b.Size(), e.size)
	case b.PartitionLeaderEpoch() != e.leaderEpoch:
		return fmt.Sprintf("leader epoch field reads %d, index %d", b.PartitionLeaderEpoch(), e.leaderEpoch)
	case b.LastOffset() != e.last:
		return fmt.Sprintf("last offset reads %d, index %d", b.LastOffset(), e.last)
	}
	if err := b.VerifyCRC(); err != nil {
		return err.Error()
	}
	return ""
}

// segmentFor returns the index of the segment holding offset (the last one
// whose base is ≤ offset).
func (l *Log) segmentFor(offset int64) int {
	lo, hi := 0, len(l.segments)
	for lo < hi {
		m := (lo + hi) / 2
		if l.segments[m].base <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(lo-1, 0)
}

// TruncateTo removes every batch that holds an offset ≥ offset, as a
// follower does to match its leader. Batches are whole, so the new log end
// is the start of the batch holding offset if offset falls inside one (in
// practice truncation points are batch boundaries). An offset at or past
// the log end cuts no batch, but drops epoch entries starting at the log
// end (an epoch assigned and never written to). The cut is synced; the epoch cache loses
// entries at or past the new end; producer state, transactions and the
// aborted index are rebuilt. It returns the new log end. After an I/O error
// the disk may be partly truncated: reopen the log.
//
// The offset may not be below the log start. When the batch holding it
// begins below the log start (the start was moved into that batch), no
// batch at or past the start survives: the log is truncated fully and
// starts again at its log start, as UnifiedLog.truncateTo does when the
// target lies before the log (TruncateFullyAndStartAt; the start does not
// go back).
func (l *Log) TruncateTo(offset int64) (int64, error) {
	if !(offset >= l.logStart) {
		fail("%s: truncation to %d below log start %d", l.name, offset, l.logStart)
	}
	if offset >= l.logEnd {
		// The epoch cache may still end with an entry at the log end: this
		// replica led, assigned its epoch, and lost leadership before it
		// appended. That entry disagrees with the new leader, and while it
		// stays the leader reports the same divergence on every fetch.
		// Kafka's UnifiedLog.truncateTo drops it too.
		changed := l.epochs.truncateFromEnd(l.logEnd)
		if l.restoreStartEpoch() {
			changed = true
		}
		if changed {
			if err := l.writeEpochCheckpoint(); err != nil {
				return l.logEnd, err
			}
		}
		return l.logEnd, nil
	}
	si := l.segmentFor(offset)
	seg := l.segments[si]
	k := seg.find(offset)
	if !(k < len(seg.batches) || (l.cfg.Compact && si < len(l.segments)-1)) {
		fail("%s: no batch holds offset %d below log end %d", l.name, offset, l.logEnd)
	}
	var newEnd, pos int64
	if k < len(seg.batches) {
		newEnd, pos = seg.batches[k].base, seg.batches[k].position
	}
	if k == len(seg.batches) || newEnd > offset {
		// offset lies in a gap the cleaner left, inside the segment or
		// after its last batch kept (before the next segment's): the log
		// ends where the batches kept end.
		newEnd, pos = seg.base, seg.size
		if k > 0 {
			newEnd = seg.batches[k-1].last + 1
		}
		if k < len(seg.batches) {
			pos = seg.batches[k].position
		}
	}
	if newEnd < l.logStart {
		if err := l.TruncateFullyAndStartAt(l.logStart); err != nil {
			return l.logEnd, err
		}
		return l.logEnd, nil
	}

	// Drop later segments, last first, then cut the one holding offset.
	for i := len(l.segments) - 1; i > si; i-- {
		if err := l.removeSegmentFiles(l.segments[i].base); err != nil {
			return l.logEnd, err
		}
	}
	l.segments = l.segments[:si+1]
	if err := l.cutFile(seg.logFile, pos); err != nil {
		return l.logEnd, err
	}
	if err := l.cutFile(seg.hdrFile, int64(k*hdrEntrySize)); err != nil {
		return l.logEnd, err
	}
	seg.batches = seg.batches[:k]
	seg.size = pos
	l.logEnd = newEnd
	l.recoveryPoint = min(l.recoveryPoint, newEnd)

	changed := l.epochs.truncateFromEnd(newEnd)
	if l.restoreStartEpoch() {
		changed = true
	}
	if changed {
		if err := l.writeEpochCheckpoint(); err != nil {
			return l.logEnd, err
		}
	}
	l.rebuildProducerState()
	if err := l.rewriteTxnIndex(seg); err != nil {
		return l.logEnd, err
	}
	if l.hwCheckpoint > newEnd {
		l.hwCheckpoint = newEnd
	}
	l.checkInvariants()
	return l.logEnd, nil
}

// restoreStartEpoch gives a log whose start was moved above its first
// segment's base an epoch entry at the start again when a truncation from
// the end left none at or below it: the epoch of the last batch at or
// below the start, as Open derives it from the batches (an entry at the
// log end is dropped by the truncation even when it names the epoch of the
// batches below the start). It reports whether the cache changed.
func (l *Log) restoreStartEpoch() bool {
	if !(l.logStart > l.segments[0].base) {
		return false
	}
	if len(l.epochs.entries) > 0 && l.epochs.entries[0].StartOffset <= l.logStart {
		return false
	}
	for si := l.segmentFor(l.logStart); si >= 0; si-- {
		s := l.segments[si]
		for k := min(s.find(l.logStart), len(s.batches)-1); k >= 0; k-- {
			e := &s.batches[k]
			if e.base > l.logStart || e.leaderEpoch < 0 {
				continue
			}
			if len(l.epochs.entries) > 0 && !(e.leaderEpoch < l.epochs.entries[0].Epoch) {
				return false
			}
			l.epochs.entries = append([]EpochEntry{{Epoch: e.leaderEpoch, StartOffset: l.logStart}}, l.epochs.entries...)
			return true
		}
	}
	return false
}

// AssignEpoch records that leader epoch epoch starts at the log end, as a
// replica becoming leader does before it appends. An epoch older than the
// latest is ErrFencedLeaderEpoch; the latest epoch again changes nothing.
func (l *Log) AssignEpoch(epoch int32) error {
	if err := l.checkLeaderEpoch(epoch); err != nil {
		return err
	}
	before := l.epochs.clone()
	if !l.epochs.assign(epoch, l.logEnd) {
		return nil
	}
	l.epochs.assertMonotonic(l.name)
	if err := l.writeEpochCheckpoint(); err != nil {
		l.epochs = before
		return err
	}
	return nil
}

// LatestEpoch is the newest epoch in the cache, or UndefinedEpoch.
func (l *Log) LatestEpoch() int32 {
	e, _ := l.epochs.latest()
	return e.Epoch
}

// EpochEntries returns a copy of the epoch cache, oldest first.
func (l *Log) EpochEntries() []EpochEntry { return l.epochs.clone().entries }

// Epochs yields the epoch cache's entries, oldest first, without copying
// it: for a reader that only looks, such as an invariant check.
func (l *Log) Epochs() iter.Seq[EpochEntry] { return slices.Values(l.epochs.entries) }

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279): the
// largest epoch ≤ epoch this log knows and the offset where it ends (the
// log end for the latest epoch), or (UndefinedEpoch, UndefinedEpochOffset).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.endOffsetFor(epoch, l.logEnd)
}

// CheckpointHighWatermark durably records the partition's high watermark
// (atomically replacing the previous checkpoint).
func (l *Log) CheckpointHighWatermark(hw int64) error {
	if !(hw >= l.logStart && hw <= l.logEnd) {
		fail("%s: high watermark %d outside the log [%d, %d]", l.name, hw, l.logStart, l.logEnd)
	}
	name := l.dir + "/" + hwCheckpointFile
	if err := writeCheckpoint(l.disk, name, []string{strconv.FormatInt(hw, 10)}); err != nil {
		return l.storageErr("write "+name, err)
	}
	l.hwCheckpoint = hw
	return nil
}

// HighWatermarkCheckpoint is the last checkpointed high watermark: as read
// by Open (clamped into the recovered log; the log start if there was none
// or it was unreadable) or as last written, raised to the log start when
// the start moved past it (the file keeps its value until the next
// CheckpointHighWatermark; Open clamps it the same way).
func (l *Log) HighWatermarkCheckpoint() int64 { return l.hwCheckpoint }

// LastStableOffset is the LSO for the high watermark hw: the first offset
// of the earliest transaction not yet decided below hw — one still open, or
// one whose marker is at or above hw — and hw itself if there is none.
func (l *Log) LastStableOffset(hw int64) int64 {
	if !(hw >= l.logStart && hw <= l.logEnd) {
		fail("%s: high watermark %d outside the log [%d, %d]", l.name, hw, l.logStart, l.logEnd)
	}
	lso := hw
	if fu, ok := l.producers.firstUnstableOffset(); ok {
		lso = min(lso, fu)
	}
	if hw == l.logEnd {
		return max(lso, l.logStart)
	}
	for si := l.segmentFor(hw); si < len(l.segments); si++ {
		s := l.segments[si]
		for k := s.find(hw); k < len(s.batches); k++ {
			if e := &s.batches[k]; e.control() && e.txnFirstOffset >= 0 {
				lso = min(lso, e.txnFirstOffset)
			}
		}
	}
	// A transaction that began below the log start holds the LSO at the
	// start (UnifiedLog.maybeIncrementFirstUnstableOffset).
	return max(lso, l.logStart)
}

// FirstUnstableOffset is the first offset of the earliest open
// transaction, if any, and the log start if that transaction began below
// it (UnifiedLog.maybeIncrementFirstUnstableOffset).
func (l *Log) FirstUnstableOffset() (int64, bool) {
	fu, ok := l.producers.firstUnstableOffset()
	if !ok {
		return 0, false
	}
	return max(fu, l.logStart), true
}

// AbortedTransactions returns the aborted transactions that overlap the
// fetch range [from, to) — their markers at or after from, their first
// offsets before to — in marker order, as a fetch response carries them
// for read_committed consumers.
func (l *Log) AbortedTransactions(from, to int64) []AbortedTxn {
	a := l.producers.aborted
	lo, hi := 0, len(a)
	for lo < hi {
		m := (lo + hi) / 2
		if a[m].LastOffset < from {
			lo = m + 1
		} else {
			hi = m
		}
	}
	var out []AbortedTxn
	for _, t := range a[lo:] {
		if t.FirstOffset < to {
			out = append(out, t)
		}
	}
	return out
}

// Producer returns what the log knows of a producer id.
func (l *Log) Producer(producerID int64) (ProducerSnapshot, bool) {
	return l.producers.snapshot(producerID)
}

// ProducerIDs lists the producer ids with state, ascending.
func (l *Log) ProducerIDs() []int64 { return l.producers.ids() }

// checkInvariants asserts what must hold after every operation; it is
// cheap (constant time plus the epoch cache).
func (l *Log) checkInvariants() {
	if !(len(l.segments) > 0) {
		fail("%s: no segments", l.name)
	}
	if !(l.segments[0].base <= l.logStart && l.logStart <= l.logEnd) {
		fail("%s: log start %d outside [first segment %d, log end %d]", l.name, l.logStart, l.segments[0].base, l.logEnd)
	}
	a := l.active()
	if !(a.nextOffset() == l.logEnd) {
		fail("%s: log end %d, active segment ends at %d", l.name, l.logEnd, a.nextOffset())
	}
	if n := len(a.batches); n > 0 {
		last := &a.batches[n-1]
		if !(last.last < l.logEnd) {
			fail("%s: index entry at %d past log end %d", l.name, last.last, l.logEnd)
		}
		if !(last.position+int64(last.size) == a.size) {
			fail("%s: active segment size %d, index ends at %d", l.name, a.size, last.position+int64(last.size))
		}
	}
	if !(l.logStart <= l.recoveryPoint && l.recoveryPoint <= l.logEnd) {
		fail("%s: recovery point %d outside [%d, %d]", l.name, l.recoveryPoint, l.logStart, l.logEnd)
	}
	l.epochs.assertMonotonic(l.name)
	if e, ok := l.epochs.latest(); ok {
		if !(e.StartOffset <= l.logEnd) {
			fail("%s: epoch %d starts at %d past log end %d", l.name, e.Epoch, e.StartOffset, l.logEnd)
		}
		if first := l.epochs.entries[0]; !(first.StartOffset >= l.logStart) {
			fail("%s: epoch %d starts at %d below log start %d", l.name, first.Epoch, first.StartOffset, l.logStart)
		}
	}
	if fu, ok := l.producers.firstUnstableOffset(); ok {
		// Open transactions are known from the batches the segments hold,
		// which may begin below the log start.
		if !(fu >= l.segments[0].base && fu < l.logEnd) {
			fail("%s: open transaction at %d outside the log", l.name, fu)
		}
	}
	if !(l.hwCheckpoint >= l.logStart && l.hwCheckpoint <= l.logEnd) {
		fail("%s: checkpointed high watermark %d outside the log [%d, %d]", l.name, l.hwCheckpoint, l.logStart, l.logEnd)
	}
}

// CheckConsistency walks the whole index and asserts its invariants:
// offsets increasing across batches and segments (contiguous but where the
// cleaner left gaps), positions contiguous, every entry below the log end. It costs time linear in the
// number of batches; tests and the simulator's slow checks call it.
func (l *Log) CheckConsistency() {
	l.checkInvariants()
	next := l.segments[0].base
	for i, s := range l.segments {
		if !l.follows(s.base, next) {
			fail("%s: segment %d starts at %d, previous ended at %d", l.name, i, s.base, next)
		}
		if !(i == len(l.segments)-1 || len(s.batches) > 0 || l.gapsAllowed()) {
			fail("%s: empty segment %d is not the last", l.name, s.base)
		}
		next = s.base
		var pos int64
		for k := range s.batches {
			e := &s.batches[k]
			if !l.follows(e.base, next) {
				fail("%s: batch at %d, expected %d", l.name, e.base, next)
			}
			if !(e.last >= e.base && e.last < l.logEnd) {
				fail("%s: batch %d..%d outside log end %d", l.name, e.base, e.last, l.logEnd)
			}
			if !(e.position == pos) {
				fail("%s: batch at %d at byte %d, expected %d", l.name, e.base, e.position, pos)
			}
			pos += int64(e.size)
			next = e.last + 1
		}
		if !(pos == s.size) {
			fail("%s: segment %d size %d, batches end at %d", l.name, s.base, s.size, pos)
		}
	}
	if !(next == l.logEnd) {
		fail("%s: batches end at %d, log end %d", l.name, next, l.logEnd)
	}
}
