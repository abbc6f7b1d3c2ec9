// Package log is one partition replica's log on an env.Disk, as Kafka keeps
// it: segments of record batches, an offset index, a leader-epoch cache, a
// high-watermark checkpoint, a log start offset that DeleteRecords,
// retention and snapshots move, producer state for idempotence and the
// transaction bookkeeping (ongoing transactions, last stable offset, aborted
// transaction index).
//
// The contract:
//
//   - A Log does only what it is told. It never starts a goroutine, reads a
//     clock or draws randomness; every effect goes through the env.Disk it was
//     opened on, one call at a time from the owning process's event loop.
//   - Files live under "<topic>-<partition>/": segments "<base offset, 20
//     digits>.log" holding Kafka's batches byte for byte, beside each a
//     ".hdrcrc" (a checksum of the 21 header bytes Kafka's CRC leaves out:
//     base offset, length, leader epoch, magic, crc — so a flipped bit there
//     is caught at recovery too) and a ".txnindex" (aborted transactions whose
//     marker lies in the segment); "leader-epoch-checkpoint",
//     "high-watermark-checkpoint" and "log-start-offset-checkpoint", each
//     replaced atomically and carrying its own CRC line. The last is
//     written only once the start moves: a log whose start never moves
//     writes no file and makes no disk operation it did not make before.
//   - Open recovers: it scans every segment, verifies each batch (framing,
//     CRC, header checksum, contiguous offsets), truncates the log at the
//     first bad batch (a torn or corrupt tail, or bytes that never reached
//     the disk) and drops every later segment, then rebuilds all derived
//     state — offset index, producer state, transactions, aborted index,
//     epoch cache — from the batches that remain. Recovery never loses a
//     batch that was synced and is intact; what it did is in Recovery().
//     The log start is the larger of the start checkpoint and the first
//     segment's base (LogLoader.load). A checkpointed start past the log
//     end recovery found (records below it were deleted, then a power loss
//     took the unsynced tail) starts the log afresh there, every segment
//     removed and no epochs (LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd):
//     no offset below a start comes back or is handed out again. The epoch
//     cache is truncated from the start again (the checkpoint may predate
//     the last move), and side files orphaned below the first segment by
//     an interrupted DeleteSegmentsBelow are removed.
//     On a disk that keeps memos (env.Memos: the simulated one) the scan
//     resumes where the last one stopped on bytes the disk vouches
//     unchanged since (scanmemo.go): the checks are a function of those
//     bytes, so only CPU time differs, and the package's tests open every
//     log both ways and compare. Kafka scans only from its recovery point
//     (LogLoader.recoverLog) and trusts the flushed bytes below it; this
//     log checks every byte, so bit rot below the recovery point is found
//     at the next start, not served.
//   - The log start offset only rises, except by TruncateFullyAndStartAt.
//     IncrementLogStartOffset (DeleteRecords) moves it, never past the log
//     end — nor past the high watermark, which is the caller's to check.
//     Reads below it are ErrOffsetOutOfRange; the epoch cache's entries at
//     or below it collapse into one starting at it
//     (LeaderEpochFileCache.truncateFromStart); the first unstable and last
//     stable offsets are held at it at least. Batches below it stay in the
//     first segments, never served, until DeleteSegmentsBelow (retention)
//     removes the segments wholly below it — never the active one.
//     TruncateFullyAndStartAt empties the log and starts it at any offset,
//     as a follower installing a snapshot does. Producer state, open
//     transactions and the aborted index are always what the batches the
//     segments hold give: this log keeps no producer snapshots, so removing
//     a segment forgets a producer whose every batch was in it (as Kafka
//     did before KIP-360) and a transaction is known from its first
//     remaining batch.
//   - Offsets are contiguous across batches and segments, except in a
//     compacted log (Config.Compact, or a cleaner checkpoint on disk): Clean
//     (cleaner.go) rewrites the segments below the first uncleanable offset
//     keeping each key's latest record, and drops whole batches, so offsets
//     skip where they were; kept batches keep their base and last offsets, and
//     a follower copies the gaps (AppendAsFollower takes a batch past its log
//     end). A read from inside a gap gets the next batch. Cleaning never
//     moves the log start and never touches the active segment or anything
//     at or past the last stable offset. A round's segment swap is atomic
//     across crashes: Open finishes one whose manifest was written and
//     discards one whose manifest was not. Elsewhere a gap is damage, and
//     recovery cuts the log there.
//   - Durability: appends land in the page cache. With FlushIntervalMessages
//     N > 0 the log syncs once N offsets are unflushed; Flush syncs on
//     demand. Nothing else syncs data, except that TruncateTo and recovery
//     sync the files they cut (a truncation must not be undone by a power
//     loss) and checkpoints are written with env.WriteFileAtomic. Removing
//     and renaming a file is durable once the call returns (env.Disk). So a
//     moved start is durable when IncrementLogStartOffset returns (its
//     checkpoint is written before the log takes it; Kafka checkpoints the
//     start only every log.flush.start.offset.checkpoint.interval.ms),
//     removed segments stay removed, and TruncateFullyAndStartAt is durable
//     when it returns, a crash midway recovering to a prefix of the old log
//     or to the new empty one. The high-watermark checkpoint is the
//     caller's to rewrite after a move: the log raises its own copy to the
//     start, and Open clamps the file's into the log.
//   - A corrupt batch is never served: Read checks every batch it returns
//     against the index and its CRC and stops before the first bad one; if
//     that is the first, it returns a *CorruptionError naming the partition
//     and offset.
//   - Operating errors are values that unwrap to Kafka's error codes
//     (github.com/twmb/franz-go/pkg/kerr), so a broker answers with
//     errors.As(err, &kerrErr). Broken invariants — offsets not contiguous,
//     an index entry past the log end, a non-monotonic epoch cache, a log
//     start outside [first segment's base, log end] or an epoch entry below
//     it — panic with a message that names the invariant and the partition.
package log
