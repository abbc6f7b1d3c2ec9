// Package client is kafkasim's Kafka clients — a Producer and a Consumer —
// speaking the Kafka protocol through broker/rpc, to this repository's
// broker or to any Kafka broker.
//
// # Embedding
//
// A client lives inside an env.Process. NewProducer and NewConsumer take
// the process's env.Env and its *rpc.Router (to which the process forwards
// its Connected, Received and Closed callbacks). A client holds no global
// state, starts no goroutine, and reaches time, timers and randomness only
// through the Env, so one process can run several clients and one test
// binary several worlds. Every method must be called on the process's
// loop; callbacks run on it too, and never inside the call that registered
// them. Options structs name every knob as Kafka does (acks, linger.ms,
// enable.idempotence, auto.offset.reset, ...); DefaultProducerOptions and
// DefaultConsumerOptions spell out Kafka's defaults, and constructors refuse
// impossible settings instead of filling in hidden ones.
//
// # Clocks
//
// The clients measure their deadlines — delivery.timeout.ms, linger.ms,
// retry backoffs, max.block.ms, poll and API timeouts, auto-commit, metadata
// age — on the wall clock (Env.WallClock), as Kafka's clients read
// Time.milliseconds() in NetworkClient, RecordAccumulator, Sender and the
// consumer's timers; record timestamps (CreateTime) come from it too. A
// clock stepped forward expires what is pending at the next look; one
// stepped back stretches every deadline by the step. Timers still run on
// the monotonic clock; each wakes the client to look at the wall clock
// again.
//
// # Metadata
//
// Each client keeps its own view of the cluster: broker addresses (a
// simulated node's name has no port: metadata.SplitAddr and JoinAddr carry
// it as port -1), and per partition the leader and leader epoch. It asks a
// broker for Metadata — a connected one with the fewest requests in flight,
// else the bootstrap servers in turn — when a partition's leader is unknown,
// after NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION,
// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, KAFKA_STORAGE_ERROR or a
// disconnect, at most once per retry.backoff.ms, and every
// metadata.max.age.ms. An answer with an older leader epoch than the one
// cached does not replace it (KIP-320). There is one connection per broker
// per client.
//
// # Producer
//
// Send appends a record to its partition's batch (Record.Partition with
// PartitionerManual; murmur2 of the key, as Kafka's default partitioner;
// or round robin). A batch goes once it is full (batch.size), has waited
// linger.ms, or is flushed — to its leader, at most one batch per partition
// per produce request and at most max.in.flight.requests.per.connection
// requests per broker, and only on a connection that is up, so that every
// request handed over is really on the wire. Retriable errors re-queue the
// batch after retry.backoff.ms, up to retries, within delivery.timeout.ms;
// every retry re-sends the same bytes. Without idempotence a failed batch
// goes back to the front of its queue, as Kafka's does, so with more than
// one request in flight a retried batch can land after a later one
// (reordering), and a retry of a batch whose answer was lost lands twice.
// With enable.idempotence the producer gets a producer id and epoch from
// InitProducerId, numbers each partition's records from sequence 0 and
// retries in sequence order; the leader answers a retry of a batch it
// already has with the original offset. idempotence.go documents how
// OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID and batches that fail or
// expire are handled (KIP-360 epoch bumps); INVALID_PRODUCER_EPOCH is
// fatal.
//
// # Outcomes
//
// Each Send reports exactly once, with an Outcome the checkers rely on:
// Fail means the record certainly was not written, so it is only reported
// when no attempt to write it can have landed. The rule: a batch that ends
// without success is Info if any attempt of it was on the wire and ended
// without an answer saying it was not appended (or is still on the wire),
// and Fail otherwise.
//
//	outcome  when
//	ok       the leader acknowledged it (acks 1 or all: with its offset);
//	         acks=0: once the request is on the wire, without an offset;
//	         DUPLICATE_SEQUENCE_NUMBER: ok, offset unknown
//	fail     refused before sending: producer closed or fatal, record too
//	         large, buffer.memory full, partition out of range, no
//	         metadata for the topic within delivery.timeout.ms;
//	         delivery.timeout.ms or retries exhausted for a batch never
//	         sent, or whose every attempt was refused before append:
//	         NOT_ENOUGH_REPLICAS, LEADER_NOT_AVAILABLE,
//	         UNKNOWN_TOPIC_OR_PARTITION, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE,
//	         INVALID_RECORD, OUT_OF_ORDER_SEQUENCE_NUMBER,
//	         UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH (fatal) and the
//	         other refusals listed in produceIndefinite
//	info     an attempt may have been appended: request timeout or
//	         disconnect after sending, NOT_LEADER_OR_FOLLOWER,
//	         NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT,
//	         KAFKA_STORAGE_ERROR, any unknown error code; delivery timeout
//	         while an attempt is on the wire or after such an attempt;
//	         Close with such a batch outstanding
//
// Offset commits are classified the same way (OutcomeOf on the error):
// NOT_COORDINATOR and REQUEST_TIMED_OUT may follow the coordinator's append
// of the offsets, so they and unanswered requests are Info;
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and the group
// errors are Fail. Any error that is not an *Error counts as Info.
//
// # Consumer
//
// Assign takes partitions (no group membership); Subscribe joins the
// group (group.go: JoinGroup, SyncGroup with the range assignor run by the
// leader, heartbeats, LeaveGroup, eager rebalances announced to a
// RebalanceListener, max.poll.interval.ms). A partition starts at the
// group's committed offset (OffsetFetch, when group.id is set; with
// read_committed it sets require_stable and waits out
// UNSTABLE_OFFSET_COMMIT while a transaction may still move the offset),
// else at auto.offset.reset via ListOffsets (earliest, latest, or none:
// Poll reports ErrNoOffset until Seek); OFFSET_OUT_OF_RANGE resets the
// same way. Poll returns records as soon as fetches bring some, up to
// max.poll.records (or the caller's maximum), with topic, partition,
// offset, key, value, headers, timestamp and the leader epoch of their
// batch; control batches are skipped, and with read_committed the fetch
// stops at the last stable offset and drops aborted transactions using the
// fetch's aborted list. One fetch is in flight per broker, long-polled by
// fetch.max.wait.ms and fetch.min.bytes, and only while a Poll is pending
// (plus one prefetch when a Poll returns), as Kafka's consumer does its
// network work inside poll. Fetches carry the current leader epoch and the
// epoch of the last record returned, so a leader fences a stale view
// (FENCED_LEADER_EPOCH, refreshed) and reports a log that diverged below
// the position (KIP-320): the consumer moves back to the divergence point,
// or with auto.offset.reset none reports ErrLogTruncation. CommitOffsets
// and CommitPositions send OffsetCommit to the group coordinator
// (FindCoordinator) — with generation -1 and no member id after Assign,
// with the member's generation and id after Subscribe (refused locally
// with ErrCommitFailed while it is not in a stable generation; the
// coordinator's ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID are definite
// failures and send the member to rejoin) — retrying retriable errors
// within default.api.timeout.ms; Committed reads them back. With
// enable.auto.commit, a Poll first commits the positions the previous
// Poll reached once auto.commit.interval.ms has passed (and Close commits
// the current ones), asynchronously and without retries, as Kafka does.
//
// # Transactions
//
// With transactional.id the producer is transactional (transaction.go):
// InitTransactions, BeginTransaction, Send, SendOffsetsToTransaction
// (with the consumer's GroupMetadata, KIP-447), CommitTransaction,
// AbortTransaction, each a callback on the loop. Errors are fatal (Err
// reports them: fenced by a newer instance, not authorized, an unexpected
// answer) or abortable (a record failed, the group refused the offsets:
// abort and go on), as Kafka's TransactionManager distinguishes them.
// Rewinding the consumer after an abort is the application's job: Committed
// and Seek give it what it needs.
//
// A record's outcome says whether it was appended, not whether its
// transaction committed: OK records of an aborted transaction are in the
// log, hidden from read_committed consumers by the abort marker; records
// never sent because the transaction aborted or turned abortable fail
// (ErrTransactionAborted, or the abortable error). A transaction's outcome
// is CommitTransaction's:
//
//	outcome  when
//	ok       EndTxn(commit) answered without error: the coordinator wrote
//	         PrepareCommit; the markers follow
//	fail     the commit certainly did not happen: refused before EndTxn
//	         (abortable state, a record failed, a fatal error) or every
//	         EndTxn attempt was answered with a refusal (PRODUCER_FENCED,
//	         INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, ...); an aborted
//	         transaction (AbortTransaction) never commits, whatever its
//	         EndTxn(abort) hears
//	info     an EndTxn(commit) went unanswered (timeout, disconnect) or was
//	         answered NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
//	         REQUEST_TIMED_OUT or an unknown code — which a coordinator may
//	         send after appending the decision — and no later attempt
//	         settled it: max.block.ms passed, the producer was closed, or
//	         a later attempt was fenced
package client
