// Package log is one partition replica's log on an env.Disk, as Kafka keeps
// it: segments of record batches, an offset index, a leader-epoch cache, a
// high-watermark checkpoint, producer state for idempotence and the
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
//     marker lies in the segment); "leader-epoch-checkpoint" and
//     "high-watermark-checkpoint", both replaced atomically and carrying
//     their own CRC line.
//   - Open recovers: it scans every segment, verifies each batch (framing,
//     CRC, header checksum, contiguous offsets), truncates the log at the
//     first bad batch (a torn or corrupt tail, or bytes that never reached
//     the disk) and drops every later segment, then rebuilds all derived
//     state — offset index, producer state, transactions, aborted index,
//     epoch cache — from the batches that remain. Recovery never loses a
//     batch that was synced and is intact; what it did is in Recovery().
//   - Durability: appends land in the page cache. With FlushIntervalMessages
//     N > 0 the log syncs once N offsets are unflushed; Flush syncs on
//     demand. Nothing else syncs data, except that TruncateTo and recovery
//     sync the files they cut (a truncation must not be undone by a power
//     loss) and checkpoints are written with env.WriteFileAtomic.
//   - A corrupt batch is never served: Read checks every batch it returns
//     against the index and its CRC and stops before the first bad one; if
//     that is the first, it returns a *CorruptionError naming the partition
//     and offset.
//   - Operating errors are values that unwrap to Kafka's error codes
//     (github.com/twmb/franz-go/pkg/kerr), so a broker answers with
//     errors.As(err, &kerrErr). Broken invariants — offsets not contiguous,
//     an index entry past the log end, a non-monotonic epoch cache — panic
//     with a message that names the invariant and the partition.
package log
