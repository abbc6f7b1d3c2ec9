// Package checkers judges a history (package history) from a simulated or a
// real-mode run: is each partition a linearizable log, which Kafka
// anomalies occurred, and which delivery guarantee held. It imports nothing
// of kafkasim but history and model, and is deterministic: the same history
// and options give the same verdict, witnesses in the same order (porcupine
// timeouts aside, which only ever make a verdict inconclusive).
//
// The entry point is Check(h, opts), used by the scenario runner and
// `kafkasim check FILE`.
//
// # Partition logs
//
// CheckLog decides in O(n log n) what model.LogModel asks porcupine:
// because the broker assigns offsets, appends linearize in offset order, so
// it sorts them, refuses two at one offset, places each at the earliest
// moment allowed and checks that is before its return, then checks every
// read against the resulting log (its records, the entries its isolation
// level requires between its position and its last record, and that it
// returned after the append of its last record was invoked).
// A differential test holds it to porcupine's verdict on thousands of
// generated histories, correct and defective, 1 to 32 concurrent clients.
// Options.Linearizability selects porcupine instead, or both.
//
// Check resolves the history once (model.Resolve) and every check reads
// that one layout: each record already matched with the value written at
// its offset, offsets numbered into cells, values interned to ids once.
// The checks walk it in the order it lies in memory and merge the walks
// that visit the same data, so a history costs a few walks, not a map
// lookup per record (BenchmarkCheck measures it).
//
// # Compacted topics
//
// Options.Compacted names the topics whose cleanup.policy holds compact.
// There a log cleaner may remove a record that a later record of its key
// (not of an aborted transaction) supersedes, and the records of aborted
// transactions; it never removes the latest record of a key
// (model.Resolution.Compact marks each partition's removable offsets). A
// read may skip a removable record, and one no read returned is no
// lost-write, unseen, output-loss or torn-transaction; every other record
// stays required, so the loss of a key's latest acknowledged value is
// judged as any loss is. Replicas there may hold a batch cleaned to other
// records, or lack one their cleaner removed (see replicaAgreement).
// Porcupine's model has no cleaner: compacted partitions are judged by the
// fast checker whatever Linearizability says. Not judged: whether a read
// could skip a record when it did — a rule that its superseding record lay
// below the fetch's last stable offset is unsound, since a new leader's
// high watermark can lag what its predecessor's cleaner already removed
// (judging it needs each leader's high-watermark history); compaction of
// an output topic; tombstones.
//
// # Anomalies
//
// Names follow Jepsen's Kafka checker (jepsen.tests.kafka) and KAFKA.md §6.
// Each is reported with its count and first witnesses: a sentence and the
// operations involved, with their process, node and virtual times.
//
//	anomaly               class     breaks            what
//	lost-write            safety    at-least-once     an acknowledged write that no read returned, though reads
//	                                                  returned values first written at higher offsets
//	unseen                liveness  at-least-once     an acknowledged write to a partition with a final read that no
//	                                                  read ever returned (and not a lost-write)
//	output-loss           liveness  at-least-once     an acknowledged intent with no effect in the final output
//	duplicate             safety    at-most-once      one value at two or more offsets of a partition
//	output-dup            safety    at-most-once      an intent with two or more effects in the final output
//	inconsistent-offsets  safety    exactly-once      two different values at one offset
//	G1a                   safety    exactly-once      a read returned a definitely failed send's value, or
//	                                                  read_committed returned an aborted transaction's
//	precommitted-read     safety    exactly-once      read_committed returned a transaction's write before the
//	                                                  transaction asked to commit (Txn.EndCall, or its last send)
//	read-past-lso         safety    exactly-once      read_committed returned a record at or past the last stable
//	                                                  offset its own fetch response reported (Fetch.LastStable)
//	torn-transaction      safety    exactly-once      some but not all writes of a committed transaction are in
//	                                                  the final reads of their partitions
//	poll-skip             safety    exactly-once      a consumer's consecutive reads of a partition (in one poll, or
//	                                                  in successive polls with no assign, subscribe, rebalance or
//	                                                  seek of it between) skip offsets known to hold values its
//	                                                  isolation level sees
//	nonmonotonic-poll     safety    exactly-once      same, but going back to or before an offset already read
//	nonmonotonic-send     safety    partition order   a producer's later send to a partition got a lower offset
//	                                                  (reordering loses and duplicates nothing)
//	sequence-gap          safety    partition order   a replica's log holds a producer's batch whose sequence skips
//	                                                  past the last one of its epoch, or an epoch not starting at 0
//	offset-regression     safety    exactly-once      a commit (or committed transaction's, or sink's stored offset)
//	                                                  invoked after another returned, lower than it
//	offset-commit-lost    safety    at-most-once      the group's final committed offset (the final offset fetch)
//	                                                  below an acknowledged commit: resuming processes again
//	stale-offset-fetch    safety    exactly-once      commits and offset fetches of a group-partition are not a
//	                                                  linearizable register (porcupine, model.OffsetModel)
//	nonlinearizable       safety    exactly-once      a partition log has no linearization (the witness says why:
//	                                                  offsets out of real-time order, a read of the future, ...)
//	key-order             safety    key order         with Options.Order key, a key's first effects in an output
//	                                                  store out of input-offset order
//	replica-divergence    safety    at-least-once     replicas read off the brokers' disks disagree below a high
//	                                                  watermark: an ISR member and its leader, any two replicas
//	                                                  below the smaller one, or a leader lacking what an earlier
//	                                                  leader committed (history.Replica, sampled during the run)
//	final-read-stuck      liveness  at-least-once     a final read could not finish after heal and drain
//
// Breaking at-least-once or at-most-once also breaks exactly-once; a
// transaction whose outcome is info counts as committed once a
// read_committed read returned one of its writes. poll-skip and
// nonmonotonic-poll are judged only across polls without an assignment
// change, as KAFKA.md §6 says; with Options.Rebalancing, not across polls
// of group consumers at all.
//
// Safety versus liveness: an anomaly is liveness-flavoured when it is
// something that had not happened by the end of the run, after the faults
// healed and the system drained (unseen, output-loss), so a longer drain
// might have fixed it; everything else is something wrong that happened.
// A message lost for good (acks=0, a commit-before-process crash) shows up
// as unseen or output-loss, so a liveness violation of at-least-once after
// a proper drain is a lost message.
//
// # Delivery
//
// Every value of a sent message without a Source is an intent; it is
// acknowledged if a send of it was ok (and its transaction, if any,
// committed). The final output is every final read marked Output (a topic
// read with read_committed, or the sink); an item there is an effect of its
// Source, or of its own value. at-most-once: no intent has two effects (and
// no duplicate in a log); at-least-once: every acknowledged intent has an
// effect (and no lost-write, no unseen); exactly-once: both, and none of
// the other anomalies. Without an output final read, delivery is not
// judged and Verdict.Notes says so.
//
// # Verdict
//
// Verdict.Observed is the strongest guarantee that held: exactly-once, else
// at-least-once, else at-most-once, else none (when at-least-once and
// at-most-once both hold but exactly-once does not, at-least-once; ask
// Holds for either); Held lists every guarantee that held. Holds(expected)
// is what a scenario asserts, and Breaking(expected) the anomalies that
// failed it, each safety or liveness. If
// porcupine timed out anywhere, the verdict is Inconclusive and
// exactly-once is not claimed: Unknown is never a pass.
//
// # Tests and sweeps
//
// The default test run takes a few seconds. KAFKASIM_CHECKER_CASES=N sets how
// many generated histories the differential and pipeline tests run
// (default 2000 and 200); the rapid properties take -rapid.checks=N.
// Benchmarks: go test -bench Check -cpu 1 ./checkers/.
package checkers
