// Package broker is the real code under test: a Kafka-style broker process
// and, in subpackages, the controller, the clients and the external sink
// store.
//
// Every process here is an env.Process: it reaches time, timers, the
// network, the disk and randomness only through env.Env, so the same code
// runs in the simulator (package sim) and on TCP (package host). Nothing
// under broker starts a goroutine, reads the wall clock, sleeps, uses global
// randomness, or lets map iteration order decide anything observable.
// Processes speak the Kafka wire protocol to each other and to real Kafka
// clients. broker never imports the simulator's world, faults, checkers or
// scenarios.
//
// # Subsystems
//
// The broker holds, as Kafka's KafkaApis does, the replica manager and
// the two coordinators side by side:
//
//   - Replicas: one partition per replica (partition.go), its log (package
//     log) and its replication rules (package replica, a core without I/O
//     whose effects partition.apply carries out); the leader's side of
//     fetching (fetch.go), the follower's fetcher (fetcher.go), ISR
//     proposals to the controller (isr.go), produce (produce.go), and the
//     one wait of a parked write, until the high watermark passes it
//     (hwwait.go).
//   - The group coordinator (groupCoordinator: group_coordinator.go,
//     group.go, group_offsets.go): groups, offset commits and fetches over
//     __consumer_offsets; KIP-848 consumer groups (consumer_group.go) and
//     KIP-932 share groups' membership (share_group.go), with their
//     records (consumer_group_records.go, share_group_records.go) and the
//     share group offsets admin APIs (share_admin.go).
//   - Share partitions (shareManager: share_fetch.go, share_partition.go):
//     KIP-932's record-level sharing at each partition's leader — share
//     sessions, ShareFetch and ShareAcknowledge, acquisition locks,
//     delivery counts — in the leader's memory (no share coordinator).
//   - The transaction coordinator (txnCoordinator: txn_coordinator.go,
//     txn_state.go, txn_markers.go, txn_verify.go): transactional ids,
//     their state in __transaction_state, markers, KIP-890's verification.
//   - What both share (coordination.go): the internal topics,
//     FindCoordinator, writes that wait for the high watermark, answers
//     held to the end of the event; the internal topics' record formats
//     (internal_records.go).
//   - The controllers (controller_channel.go): registration, heartbeats,
//     ISR proposals, forwarded CreateTopics and DescribeQuorum and
//     producer-id blocks go to the active controller of the metadata
//     quorum, the leader the broker's observer knows (or, knowing none,
//     round the controllers).
//   - The metadata log (metadata_log.go): the broker is an observer of the
//     quorum, fetches the log and applies every committed entry to its own
//     metadata; once caught up and acknowledged by the controller it
//     publishes each new image to its partitions and coordinators. No
//     metadata reaches it any other way (it serves no UpdateMetadata).
//   - handlers.go dispatches each request to its subsystem and asserts
//     every invariant after it (checkInvariants).
//
// # The path of a produce
//
// handleProduce checks the transactional batches with the transaction
// coordinator (txn_verify.go, KIP-890 part 1), then produce appends each
// partition's batch as leader (appendAsLeader: log.AppendAsLeader checks
// sequences and epochs, the core hears Appended). acks=0 and 1 answer at
// once; acks=all parks a delayedProduce with one hwWait per partition. A
// follower's fetch (handleFetch → recordFollowerFetch) tells the core its
// log end (FollowerFetched); the core advances the high watermark over the
// maximal ISR and asks for a Wake, which rechecks the parked produce; once
// every partition's wait is reached, deposed or timed out, the produce is
// answered. The coordinators' own writes take the same path and the same
// wait (appendReplicated).
//
// Subpackages: wire (Kafka framing), rpc (request transport), record
// (RecordBatch v2), log (one replica's log on a disk), replica (the
// replication rules), metadata (the cluster image), config (the knobs),
// defect (bugs the self-test plants), controller (the controller process,
// a voter of the metadata quorum), raft and quorum (KRaft's Raft and its
// runtime),
// client (producers and consumers), sink (the external store).
package broker
