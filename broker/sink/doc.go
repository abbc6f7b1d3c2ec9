// Package sink is the external store of the exactly-once-without-2PC
// pattern (KAFKA.md §5, pattern 3): a node with durable key/value state and
// atomic multi-key writes, so a consumer stores its output and its input
// offsets in one write and, after a restart, reads the offsets back from
// here rather than from Kafka.
//
// The contract:
//
//   - Data: string keys (1..KeyBytesMax bytes), byte values. Every write
//     that takes effect gets the next revision of the store (1, 2, ...), a
//     total order; each key's Version is the revision of the write that last
//     put it, 0 meaning absent.
//   - Writes are atomic: all of a write's puts (and deletes) take effect, or
//     none. A write may carry conditions (IfVersion, IfAbsent, IfValue); it
//     takes effect only if all hold in the state just before it, otherwise
//     it fails with a *ConditionError — this is how a zombie consumer is
//     fenced.
//   - Durability: a write is appended to a log on the node's env.Disk and
//     the log synced before the write is acknowledged. A write acknowledged
//     survives any crash or power loss; a write not acknowledged may or may
//     not survive, whole or not at all. Writes that survive are always a
//     prefix of the log, so what survives is the acknowledged writes plus
//     some of the unacknowledged ones, in order.
//   - Reads (Get, Scan by key prefix in key order) see only durable writes:
//     while a write waits for its sync (ServerOptions.SyncDelay, group
//     commit) every answer waits with it, so no answer depends on a state a
//     power loss could take back.
//   - Recovery (Server.Start) loads the snapshot, replays the log, cuts a
//     torn tail (a record cut short by a power loss) or a corrupt one (a
//     record failing its CRC-32C — disk damage, which loses that record and
//     every later one: a single copy can do no better, and the trace line
//     sink-log-corrupt says so), then syncs the log before serving. A disk
//     fault during recovery is retried; a corrupt snapshot halts the server
//     (it answers ErrUnavailable) rather than serve an invented state. A
//     failed sync rolls the pending writes back, in memory and on disk, and
//     answers them ErrStorage. The log is compacted into a snapshot once it
//     outgrows ServerOptions.LogBytesMax and the state.
//   - Client errors say what is known. Definite — the request certainly had
//     no effect: ErrNotSent, ErrInvalid, ErrConditionFailed, ErrStorage,
//     ErrUnavailable. Indefinite — it may have: ErrDisconnected, ErrTimeout,
//     ErrBadResponse. The client never re-sends a request that left it.
//   - The protocol is the package's own (see codec.go): one request or
//     response per env frame, with a request id, an op and a compact binary
//     body. A malformed frame closes the connection with a sink-bad-request
//     (or sink-bad-response) trace line; decoding never panics.
//   - Determinism: no goroutines, clocks, global randomness or map-order
//     decisions; time, timers, network, disk and randomness come from the
//     env.Env only. Broken invariants panic with "sink: invariant broken".
//
// A consumer process owns a Client beside its Kafka clients and offers it
// every connection callback first (see Client). The pattern:
//
//  1. On start or after any indefinite error, Get (or Scan) the offsets
//     stored under the consumer's prefix and seek the Kafka consumer there.
//  2. Process a batch; Write its outputs and the next offsets in one write,
//     conditioned on the version of the offsets key it read (or on an epoch
//     key), so a zombie instance's write fails definitely.
//  3. Ok: carry on from the new version. Definite failure: reread (step 1).
//     Indefinite: reread — the write is either wholly there or wholly absent.
package sink
