// Package replica is one partition replica's replication rules, as etcd's
// raft is a consensus core: a state machine that takes steps and hands
// back what to do, and does no I/O of its own.
//
// # State
//
// A Replica holds what Kafka's Partition holds for replication: its role
// (leader, follower or none), the controller's Assignment (leader, leader
// epoch, partition epoch, ISR, replicas), the high watermark, and while it
// leads, each follower's log end offset and last caught-up time and the
// ISR change it has proposed and not yet seen answered. It reads its log
// through the Log interface (log end, epoch cache, last stable offset) and
// never writes it.
//
// # Steps
//
// The broker feeds it inputs: BecomeLeader, BecomeFollower, BecomeOffline
// and Assign (the controller's word), FollowerFetched (a follower's fetch
// offset), Appended (the leader's own append), ISRAnswered (the
// controller's answer to a proposal), Tick (time passing, for the ISR's
// lag), EpochAnswered and Diverged (where a leader says the logs agree),
// OffsetOutOfRange, LeaderHighWatermark (a follower's view of the leader's
// high watermark) and Truncated (a truncation it asked for, done).
//
// # Effects
//
// Each step queues Effects, in the order they must happen; the broker takes
// them with Ready and carries them out: a trace line, a probe hit, an
// AlterPartition to send, a truncation to perform (then report with
// Truncated), waiters to wake because the high watermark or the role moved.
// A Truncate is always the last effect of its step.
//
// # Rules
//
//   - The leader's high watermark is the smallest log end among the ISR and
//     any member a pending change adds or removes (Kafka's maximal ISR,
//     KIP-497); a member not heard from since the leader took over holds
//     it. It never moves back within an epoch.
//   - A follower that has not caught up for replica.lag.time.max.ms leaves
//     the ISR; one reaches it again once it holds everything the high
//     watermark covers and has reached the start of the leader's epoch
//     (KAFKA-7128). One change is in flight at a time.
//   - A new follower truncates by the leader's epochs (KIP-101, KIP-279):
//     if the leader has its epoch, to the smaller of both ends of it; if
//     not, to the smaller of the leader's end and its own high watermark.
//     With LeaderEpochTruncation off it cuts to its high watermark instead,
//     the lossy pre-KIP-101 rule.
//   - Fetch epochs (KIP-320): a fetch from a stale epoch says nothing, one
//     whose log diverged from the leader's says nothing about its offset.
//
// The invariants (InvariantViolation) are checked by the broker after every
// step. The transcripts under testdata drive the core by itself.
package replica
