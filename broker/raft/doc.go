// Package raft is one voter's core of KRaft, Kafka's metadata quorum
// protocol (KIP-595), with pre-vote (KIP-996) and check quorum
// (KAFKA-15489): a state machine that takes steps and hands back what to
// do, and does no I/O of its own, as broker/replica is for a partition.
//
// # State
//
// A Node holds what KafkaRaftClient and QuorumState hold: its id and the
// static voter set (1, 3 or 5), its role (Unattached, Prospective,
// Candidate, Leader, Follower, Resigned), the epoch, the vote cast in it
// and the leader known in it (the persisted QuorumState), the log (entries
// of offset, epoch and data), how much of it is flushed, and the high
// watermark. A leader keeps each other voter's fetched offset and last
// fetch time (LeaderState); a follower its fetch timer (FollowerState).
//
// # Steps
//
// New restarts a node from its persisted QuorumState and durable log. The
// runtime feeds it Tick (time passing: election, fetch and check-quorum
// timers, resends), Receive (a message from a voter), Flushed (the log is
// durable up to an offset) and Propose (data to append, on the leader).
// Randomness (election timeouts and backoffs) comes only from
// Config.Jitter, drawn from the runtime's own seeded stream; time only from
// the env.Time values steps carry.
//
// # Effects
//
// Each step queues Effects, in the order they must happen; the runtime
// takes them with Ready. PersistQuorumState must be written and fsynced
// before any Send after it; AppendLog and TruncateLog change the log
// before anything after them (a truncation durably); AppendLog is not a
// flush — the runtime reports durability with Flushed. Sends may be lost,
// duplicated or reordered. Messages are plain structs named after Kafka's
// schemas (VoteRequest, BeginQuorumEpochRequest, EndQuorumEpochRequest,
// FetchRequest and their responses) for a runtime to map onto kmsg.
//
// # Rules
//
//   - Elections: an Unattached voter past its election timeout
//     (quorum.election.timeout.ms plus up to as much jitter), or a
//     follower without a successful fetch for quorum.fetch.timeout.ms,
//     becomes Prospective and asks for pre-votes, bumping and persisting
//     nothing. A pre-vote is granted to a log at least as up to date (last
//     epoch, then end offset) by a voter that is not the leader and has not
//     fetched from one within the fetch timeout. A majority of pre-votes
//     makes it Candidate: epoch+1, a vote for itself, persisted. A vote is
//     granted once per epoch, to an up-to-date log, by a voter that knows
//     no leader in the epoch. A lost or timed-out round backs off with
//     jitter (quorum.election.backoff.max.ms), then stands again.
//   - Any higher epoch seen makes the node Unattached in it, or Follower if
//     the message names the leader.
//   - A majority of votes makes a Leader: it writes a leader-change entry
//     in its epoch and sends BeginQuorumEpoch until acknowledged or
//     fetched from.
//   - Followers pull with Fetch from their flushed end. The leader answers
//     with the entries from there, or with DivergingEpoch when the
//     fetcher's (last fetched epoch, offset) is not in its log; the
//     follower truncates (KafkaMetadataLog.truncateToEndOffset) and
//     fetches again. Stale epochs get FENCED_LEADER_EPOCH, newer ones
//     UNKNOWN_LEADER_EPOCH, non-leaders NOT_LEADER_OR_FOLLOWER. A fetch
//     the leader has nothing for it holds (Parked, KafkaRaftClient's
//     fetchPurgatory) until it appends or the fetch's MaxWait
//     (quorum.fetch.max.wait, 500ms) passes; a leader that stops leading
//     answers what it holds NOT_LEADER_OR_FOLLOWER. A follower fetches
//     again as soon as an answer is in and its log flushed, and sends a
//     fetch again if none came within MaxWait plus the request timeout.
//     Followers so learn a new high watermark with the next entry, or
//     within MaxWait.
//   - The high watermark is the largest offset a majority of voters holds,
//     the leader counted by its flushed end, and moves only once past the
//     start of the leader's epoch; it never moves back. A follower's is the
//     leader's capped at its own end. Entries below it are committed.
//   - Check quorum: a leader without fetches from a majority (itself
//     counted) within 1.5 × the fetch timeout resigns and sends
//     EndQuorumEpoch; its followers then grant pre-votes and stand by their
//     place among its preferred successors.
//
// Observers (Config.Observer: brokers following the metadata log) fetch
// and never vote; observer.go says how they find and follow the leader.
//
// Snapshots (KIP-630: a log start offset, FetchSnapshot, installing a
// fetched snapshot) are in snapshot.go.
//
// Not modelled: voter changes (KIP-853), cluster ids, batching.
//
// NextTick says when Tick next has something to do, so a runtime arms one
// timer instead of polling; a lone voter that leads has none.
//
// Check names the first invariant a node breaks; the runtime asks after
// every step. The transcripts under testdata drive a few nodes step by
// step; TestRandomized runs many seeds of faults and checks Kafka's
// RaftEventSimulationTest invariants.
package raft
