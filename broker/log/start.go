package log

import (
	"bytes"
	"fmt"
)

// The log start offset moves for two users: DeleteRecords and retention
// (IncrementLogStartOffset, then DeleteSegmentsBelow), and a KRaft
// follower installing a snapshot past its log end
// (TruncateFullyAndStartAt). The package doc gives the contract; this file
// models UnifiedLog.maybeIncrementLogStartOffset, deleteOldSegments and
// truncateFullyAndStartAt.

// IncrementLogStartOffset moves the log start offset up to offset, as
// UnifiedLog.maybeIncrementLogStartOffset does for DeleteRecords: reads
// below it are then ErrOffsetOutOfRange. An offset at or below the log
// start changes nothing (the start never goes back); one past the log end
// is ErrOffsetOutOfRange.
//
// Kafka also refuses an offset past the high watermark. The high watermark
// is the caller's (the replica's), so the caller must refuse that: the log
// checks only the log end.
//
// The new start is written to the log start offset checkpoint (atomically,
// synced) before the log takes it, so it survives a restart and a power
// loss; Kafka checkpoints it every log.flush.start.offset.checkpoint.interval.ms
// instead, and may lose a move. If the write fails the start does not move
// and err wraps ErrKafkaStorage. Moving the start also:
//   - truncates the epoch cache from the start
//     (LeaderEpochFileCache.truncateFromStartAsyncFlush: the entries at or
//     below it collapse into one starting at it), rewriting its checkpoint
//     — if that write fails the start has moved all the same, err wraps
//     ErrKafkaStorage, and Open truncates the epochs again;
//   - holds the first unstable and last stable offsets at the start at
//     least (maybeIncrementFirstUnstableOffset);
//   - raises the recovery point and the checkpointed high watermark to the
//     start if they were below it (updateLogStartOffset; nothing below the
//     start can come back, see Open).
//
// Segments, producer state and the aborted index do not change: the
// batches are all still on disk (ProducerStateManager.onLogStartOffsetIncremented
// only forgets unreplicated transactions, which this log does not keep).
func (l *Log) IncrementLogStartOffset(offset int64) error {
	if offset <= l.logStart {
		return nil
	}
	if offset > l.logEnd {
		return fmt.Errorf("log %s: log start offset %d past the log end %d: %w", l.name, offset, l.logEnd, ErrOffsetOutOfRange)
	}
	if err := l.writeLogStartCheckpoint(offset); err != nil {
		return err
	}
	l.logStart = offset
	l.recoveryPoint = max(l.recoveryPoint, offset)
	l.hwCheckpoint = max(l.hwCheckpoint, offset)
	var err error
	if l.epochs.truncateFromStart(offset) {
		l.epochs.assertMonotonic(l.name)
		err = l.writeEpochCheckpoint()
	}
	l.checkInvariants()
	return err
}

// DeleteSegmentsBelow removes from disk every segment that lies entirely
// below both offset and the log start offset — each one whose successor
// begins at or below them — and returns how many it removed, as
// UnifiedLog.deleteOldSegments does for retention and after DeleteRecords
// (deleteLogStartOffsetBreachedSegments). The active segment is never
// removed; once the start has reached the log end, a non-empty active
// segment is rolled first, so its records go too. The log start does not move: the caller moves it first with
// IncrementLogStartOffset (Kafka's retention moves it to the next segment's
// base as it deletes).
//
// Segments go oldest first, each one's .log before its header checksums
// and transaction index, so a crash at any point leaves a log that begins
// at a later segment (Open removes the orphaned side files). Removals are
// durable once they return (env.Disk), so nothing is synced.
//
// Producer state, open transactions and the aborted index are rebuilt from
// the batches that remain, as Open builds them (this log keeps no producer
// snapshots): a producer whose every batch was in a removed segment is
// forgotten, as Kafka's ProducerStateManager.truncateHead did before
// KIP-360 (Kafka since 2.5 keeps it in its snapshots); a transaction that
// began in a removed segment is known from its first remaining batch. The
// .txnindex of a remaining segment whose aborted transactions changed so is
// rewritten (atomically). The epoch cache was truncated when the start
// moved; it is truncated from the start again, which changes nothing.
//
// After an I/O error the segments removed before it are gone (deleted
// counts them) and the log is consistent without them; err wraps
// ErrKafkaStorage.
func (l *Log) DeleteSegmentsBelow(offset int64) (deleted int, err error) {
	limit := min(offset, l.logStart)
	if limit == l.logEnd && len(l.active().batches) > 0 {
		// Every record lies below the start: roll, so that the segment
		// holding them is no longer the active one (Kafka's deleteSegments
		// rolls before deleting them all).
		if _, err := l.roll(); err != nil {
			return 0, err
		}
	}
	k := 0
	for k+1 < len(l.segments) && l.segments[k+1].base <= limit {
		k++
	}
	for deleted < k && err == nil {
		base := l.segments[deleted].base
		if rerr := l.disk.Remove(logName(l.dir, base)); rerr != nil {
			err = l.storageErr("remove "+logName(l.dir, base), rerr)
			break
		}
		deleted++ // gone for recovery too, whatever happens to its side files
		err = l.removeSidecars(base)
	}
	if deleted == 0 {
		return 0, err
	}
	if !(l.segments[deleted].base <= l.logStart) {
		fail("%s: deleted segments up to %d past log start %d", l.name, l.segments[deleted].base, l.logStart)
	}
	if ferr := l.dropFrontSegments(deleted); err == nil {
		err = ferr
	}
	return deleted, err
}

// dropFrontSegments forgets the first n segments, whose files are gone,
// and rebuilds what was derived from their batches.
func (l *Log) dropFrontSegments(n int) error {
	before := l.producers.aborted
	l.segments = append([]*segment(nil), l.segments[n:]...)
	var err error
	if l.epochs.truncateFromStart(l.logStart) {
		err = l.writeEpochCheckpoint()
	}
	l.rebuildProducerState()
	for _, s := range l.segments {
		if bytes.Equal(txnIndexEntries(before, s), txnIndexEntries(l.producers.aborted, s)) {
			continue
		}
		if werr := l.rewriteTxnIndex(s); werr != nil && err == nil {
			err = werr
		}
	}
	l.checkInvariants()
	return err
}

// TruncateFullyAndStartAt empties the log and starts it again at offset:
// every segment is removed, the log start and end become offset, the epoch
// cache and producer state are cleared and the checkpointed high watermark
// becomes offset — UnifiedLog.truncateFullyAndStartAt, which a follower
// uses when it installs a snapshot past its log end or when its fetch
// position fell below the leader's log start. offset may lie anywhere, the
// start moving back included. The change is durable when it returns.
//
// The order makes every crash point recover to a prefix of the old log or
// to the new empty log: first the segments holding offsets at or past
// offset are removed, last first (each state is a shorter log); then the
// epoch checkpoint is cleared and offset is written to the log start
// checkpoint (both atomically, synced), so that Open, finding the log end
// below the checkpointed start, starts the log afresh at offset; then the
// remaining segments are removed. Removals are durable once they return
// (env.Disk); nothing else needs a sync. The new active segment has no
// file until the first append.
//
// The caller's high watermark must be raised to offset at least, as
// Kafka's truncateFullyAndStartAt sets it to the log end: the log refuses
// (panics on) a high watermark below its start in CheckpointHighWatermark
// and LastStableOffset.
//
// After an I/O error the disk holds one of those states and the Log no
// longer matches it: reopen the log.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if !(offset >= 0) {
		fail("%s: truncating fully to start at negative offset %d", l.name, offset)
	}
	n := len(l.segments)
	for n > 0 && l.segments[n-1].nextOffset() > offset {
		if err := l.removeSegmentFiles(l.segments[n-1].base); err != nil {
			return err
		}
		n--
	}
	epochName := l.dir + "/" + epochCheckpointFile
	if _, err := l.disk.Size(epochName); err == nil || len(l.epochs.entries) > 0 {
		if err := writeCheckpoint(l.disk, epochName, nil); err != nil {
			return l.storageErr("write "+epochName, err)
		}
	}
	if err := l.writeLogStartCheckpoint(offset); err != nil {
		return err
	}
	for i := n - 1; i >= 0; i-- {
		if err := l.removeSegmentFiles(l.segments[i].base); err != nil {
			return err
		}
	}
	s, err := l.freshSegment(offset)
	if err != nil {
		return err
	}
	l.segments = []*segment{s}
	l.logStart, l.logEnd, l.recoveryPoint = offset, offset, offset
	l.epochs = epochCache{}
	l.producers = newProducerState() // ProducerStateManager.truncateFullyAndStartAt
	l.hwCheckpoint = offset
	l.checkInvariants()
	return nil
}
