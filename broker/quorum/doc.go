// Package quorum runs the sans-IO KRaft core (broker/raft) inside a
// process: a Voter carries the core's effects out over Kafka's wire
// protocol (broker/rpc) and the node's disk (env.Disk), and feeds it time,
// requests and answers. It is what KafkaRaftClient's I/O half is to its
// state machine, for one controller of a static voter set, or for an
// observer (Config.Observer: a broker following the metadata log; it
// serves no quorum request and its log is not synced for it; a leader's
// DescribeQuorum lists the observers that fetched in its epoch).
//
// # Wiring
//
// A process builds its rpc.Server with a handler that first offers each
// request to Voter.Handle (it reports whether the request was a quorum
// API), its rpc.Router on that server, and then calls Start(e, router,
// cfg) from its own Start. Config names the node's id, every voter's id
// and address, the quorum timeouts (raft.Config: quorum.election.timeout.ms
// and friends; ID, Voters and Jitter are filled in, Jitter from e.Rand()),
// the ClientID of its requests, and the hooks OnCommitted and OnRoleChange.
// After every step the voter arms one timer for the core's next deadline
// (raft.Node.NextTick) and calls Tick then; only where the core keeps no
// single deadline (a follower's fetch loop, a resigned leader's resends)
// does it poll, every TickInterval (10ms). A voter alone in its quorum,
// leading, sets no timer at all.
//
// # APIs and versions
//
// Ranges lists what a voter serves and calls, Kafka 4.x's versions where
// kmsg v1.15.1 encodes them: Vote 0-2 (v2 carries PreVote, KIP-996),
// BeginQuorumEpoch 0-1, EndQuorumEpoch 0-1, Fetch 12-17 (v12 brings
// LastFetchedEpoch and DivergingEpoch; v13+ names the topic by id, Kafka's
// METADATA_TOPIC_ID 0…01, v12 by the name __cluster_metadata; v15+ names
// the fetcher by ReplicaState.ID, earlier versions by ReplicaID), and
// DescribeQuorum 0-2, answered by the runtime from the core's view without a
// step: the leader reports every voter's log end and fetch times (wall
// clock), a follower NOT_LEADER_OR_FOLLOWER (describe.go). Versions
// adds ApiVersions for a process that serves nothing else. Every message
// addresses the one partition __cluster_metadata/0; a request for another
// is answered UNKNOWN_TOPIC_OR_PARTITION. The version used is the highest
// both sides speak (rpc negotiates with ApiVersions per connection).
//
// # Requests and the core's messages
//
// The core's messages are Kafka's schemas flattened to one partition
// (codec.go maps each field). The core names no correlation; the runtime
// does:
//
//   - Inbound. A served request is decoded, its sender taken from the id
//     it names (CandidateID, LeaderID, or the fetch's replica id), and fed
//     to the core with Receive. The core answers within that step, with a
//     Send of the matching response to the sender; that Send becomes the
//     rpc response of the request (after the effects before it, a
//     PersistQuorumState included, are done) — except a Fetch the leader
//     has nothing for, which it holds (raft.Node.Parked: KafkaRaftClient's
//     fetchPurgatory) until it appends or the fetch's MaxWaitMillis (500)
//     passes; the runtime keeps that request, and the core's later
//     FetchResponse to its sender answers it. A request the core leaves
//     unanswered otherwise (its sender is no voter, or names another id)
//     gets an INVALID_REQUEST top-level error. A response-kind Send with no
//     request being served is dropped and traced (quorum-unmatched-response;
//     the core never emits one).
//   - Outbound. A request-kind Send becomes rpc.Client.Do to that voter
//     (one client per peer, dialed on first use, requests pipelined,
//     timeout quorum.request.timeout.ms). Its answer is decoded and fed to
//     the core as Receive(peer, response); a FetchResponse gets its
//     FetchOffset and LastFetchedEpoch from the request it answers. A
//     failed call, or an answer with a top-level error, is dropped: the
//     core resends on its own timers.
//   - Steps never nest: the rpc server hands a connection's next request
//     over as soon as the previous one is answered, i.e. from inside a
//     step; such a request waits in a queue until the step's effects are
//     all carried out.
//
// # Disk: what is persisted and fsynced when
//
// Effects are carried out in the order the core emits them.
//
//   - PersistQuorumState writes the quorum-state file (Kafka's
//     FileQuorumStateStore JSON: clusterId, leaderId, leaderEpoch,
//     votedId, appliedOffset 0, currentVoters, data_version 0) with
//     env.WriteFileAtomic — a temporary file, synced, renamed over it —
//     before any later effect, so before any Send that follows it.
//   - AppendLog appends the entries to the metadata log, page cache only.
//   - TruncateLog truncates the log; broker/log syncs the cut, so a power
//     loss cannot bring truncated entries back.
//   - After the step's effects (FlushDelay 0) or FlushDelay later, the log
//     is synced and the core told Flushed(end): the leader counts its own
//     end toward the high watermark, and a follower fetches past what it
//     appended, only once it is durable.
//
// The metadata log is a broker/log Log of __cluster_metadata partition 0
// ("__cluster_metadata-0/" on the disk): every entry one record batch of
// one record, base offset the entry's offset, PartitionLeaderEpoch its
// epoch (so broker/log's leader-epoch cache is the epochs of the raft
// log), timestamps 0 so every replica writes the same bytes. A data
// entry's record has a null key and the data as value. The leader-change
// entry's record has the LEADER_CHANGE control key (version 0, type 2) and
// a LeaderChangeMessage value (LeaderID -1: raft.Entry does not carry the
// epoch's leader; the voter set), but its batch lacks the control
// attribute, because broker/log only takes transaction markers as control
// batches. broker/log was used rather than an own format for its recovery
// (torn tails cut at the first bad batch, CRCs) and its durable truncation.
//
// Start reads the quorum-state file (missing: epoch 0, no vote, no leader;
// missing fields likewise), opens the log (recovering it), syncs whatever
// a crash left in the page cache — so all of the log the core restarts
// with is durable, as raft.New assumes — and restarts the core with both.
// Any disk error halts the process (env.Halt), as Kafka halts on a failed
// metadata write.
//
// # API for the controller
//
// Propose(data) appends an entry as the leader (raft.NotLeaderError
// otherwise) and returns its offset. HighWatermark, Leader (id, epoch),
// Role, LogEnd and Entries read the core. OnCommitted is called for every
// entry in offset order once below the high watermark — exactly once per
// entry per process life; a restarted process gets first its latest
// snapshot (OnSnapshot) and then every entry after it again (the log after
// the snapshot is replayed; no applied offset is kept). Leader-change
// entries are delivered too. OnApplied follows each step's batch of
// commits. Snapshot(end, data) keeps the state machine's snapshot of the
// entries below end; OnSnapshot also hands over a snapshot fetched from
// the leader. Hooks run inside a step and may call Propose or Snapshot.
//
// # Snapshots (KIP-630)
//
// Snapshot files sit beside the log's segments as
// "<end offset>-<epoch>.checkpoint" (snapshot.go): a CRC line and the
// state machine's bytes, written with env.WriteFileAtomic before any later
// effect; writing one removes the older. After a snapshot the log's start
// moves to its end (broker/log's IncrementLogStartOffset, then whole
// segments below are deleted). A follower sent the leader's snapshot id
// fetches it with FetchSnapshot 0-1 and installs it: the file written,
// the log truncated fully to start at its end (TruncateFullyAndStartAt),
// OnSnapshot called. A start with a snapshot file that fails its CRC halts
// the process.
//
// # Checks and trace
//
// After every step the core's Check runs and the voter checks that the
// disk log and the core's log end agree and that the high watermark never
// moves back; a broken rule panics (invariant), which the simulator turns
// into a failed run. Role, epoch or leader changes are traced with e.Log
// as quorum-elected, quorum-resigned, quorum-following, quorum-candidate,
// quorum-prospective and quorum-unattached (with id, epoch, leader, vote,
// log end, high watermark); starts as quorum-start and truncations as
// quorum-truncate.
//
// # Not done yet
//
// Voter changes (KIP-853: AddRaftVoter,
// UpdateRaftVoter, directory ids are sent as zero),
// cluster id checks, endpoints in Vote/BeginQuorumEpoch/EndQuorumEpoch,
// batching several entries per batch, and a peer that negotiates Vote below v2 (a pre-vote
// would then go out as a real vote; every voter here speaks v2).
package quorum
