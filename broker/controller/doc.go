// Package controller is the cluster's controller: a voter of the KRaft
// metadata quorum (broker/quorum) that, while it leads, is the active
// controller and decides brokers', topics' and partitions' fate.
//
// # The quorum and the active controller
//
// Every controller is a quorum voter (NewVoter: its node id and every
// voter's address; New: a quorum of one, node id ID). The metadata log is
// the quorum's, replicated and fsynced by it; each entry is one decision's
// records (records.go), and every controller applies each committed entry,
// in order, to its own state. The quorum's leader is the active controller
// once everything committed before its epoch is applied (its epoch's
// leader-change entry commits), as a KRaft controller claims leadership
// only after catching up. Its quorum epoch is the controller epoch the
// brokers see. A controller that is not active answers every controller
// request NOT_CONTROLLER; a broker asks again.
//
// # Decisions
//
// Only the active controller decides, one decision at a time against the
// committed state (decide.go); a decision exists once its entry commits:
// only then is its requester answered (and brokers read it). If the
// controller stops leading first, the decision is refused (NOT_CONTROLLER)
// — its entry may still commit under the next leader, which every
// controller then applies. Sessions (when a broker last heartbeated) are
// the active controller's memory, as Kafka's BrokerHeartbeatManager keeps
// them: a new active controller gives every broker a fresh one.
//
// Brokers register (BrokerRegistration: the broker epoch is the offset of
// the entry that registers it, and a broker registers fenced) and heartbeat
// (BrokerHeartbeat: one asking not to be fenced is unfenced). One silent
// for broker.session.timeout.ms is fenced, which removes it from every ISR
// (unless it is the last member: the ISR never empties) and moves every
// leadership it held to a live in-sync replica — or, with
// unclean.leader.election.enable, to any live replica as a last resort —
// bumping the partition's leader epoch; the fence and its partition changes
// are one entry. Leaders change the ISR with AlterPartition; the controller
// checks their leader and partition epochs.
//
// # Telling brokers
//
// Nothing is sent to brokers: they are observers of the quorum and learn
// every decision from the committed log (broker/metadata_log.go), as
// KRaft brokers do. A heartbeat carries the broker's applied offset
// (CurrentMetadataOffset); a broker is caught up once it reached the entry
// that registered it, and only then may it be unfenced. While no
// controller is active, nothing is decided and nothing elected.
package controller
