// Package history is the record of a run that the checkers judge: every
// client operation's invocation and completion in virtual time, plus fault
// events. Workloads in simulated and real-mode runs produce it through a
// Recorder; it is saved as JSON lines and read back to be re-checked
// (`kafkasim check FILE`). This package imports nothing else of kafkasim.
//
// # The contract
//
// A History is a list of Ops. Every Op has a positive, unique ID (0 means
// "no operation"), a Process (one client session: a restarted client is a
// new process), the Node it runs on, a Kind, a Call time and a Return time
// in virtual nanoseconds (Never if it never completed), an Outcome and
// exactly one payload, the one named by its Kind.
//
//   - ok: it happened and its result is known.
//   - fail: it definitely did not happen (NOT_ENOUGH_REPLICAS,
//     INVALID_PRODUCER_EPOCH, an aborted transaction ...).
//   - info: it may or may not have happened (timeouts, disconnects,
//     NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND, a crash).
//     An operation that never completed is info. Never record an
//     indefinite outcome as fail: checkers would then call a correct
//     system broken.
//
// A process may have several operations in flight (a producer's sends are
// asynchronous); a consumer's polls are sequential.
//
// # What to record, per kind
//
//   - send: one producer send of a batch (usually one message) to one
//     topic-partition. Values are unique per topic-partition: an
//     application that re-sends after a timeout records a second send with
//     the same value, and the checkers count both. On ok, Offset is the base
//     offset; with acks=0 or an indefinite outcome it is NoOffset. A send in
//     a transaction names its txn operation.
//   - poll: what one consumer poll returned, per partition, with the
//     position before the poll (From, NoOffset if not known), the
//     isolation level, and Rebalanced if the assignment changed since the
//     previous poll. Records of polls that failed count too: Kafka must
//     never return bad data, whatever happens to the poller.
//   - assign, subscribe, rebalance, seek: a consumer's assignment changed
//     or it moved its position. Poll-skip and nonmonotonic-poll are judged
//     only between polls with none of these in between (for the
//     partitions involved).
//   - commit: a group's offset commit (next offset to read).
//   - offset-fetch: a read of a group's committed offsets.
//   - txn: one transaction, from begin to the end of commit/abort: ok =
//     committed, fail = aborted, info = unknown. Offsets are those sent
//     with sendOffsetsToTransaction; EndCall is when commit was requested.
//     Its sends are separate send operations naming it.
//   - sink-write: a write to the external sink store: outputs (each with
//     the Source input value it derives from) and, for the atomic
//     exactly-once pattern, the input offsets stored with them.
//   - final-read: after heal and drain, what a store holds: a topic
//     partition read from From to its end, or a sink's items in storage
//     order and its stored offsets. Output marks the pipeline's output,
//     which the delivery checker counts: for a produce-only workload the
//     topic itself, read with read_committed.
//   - nemesis: a fault, from Call to Return, on Nodes; used to annotate
//     visualizations.
//
// Intents, the messages a workload meant to deliver, are implicit: every
// value of a sent message without a Source is an intent; an output message
// (sink item or output-topic record) is an effect of its Source, or of its
// own Value if it has none. An intent is acknowledged if some send of it was
// ok (and its transaction, if any, committed).
//
// Validate checks this contract and names the first operation that breaks
// it. Write and Read give the JSON-lines form, one operation per line, with
// "return" absent for operations that never completed.
package history
