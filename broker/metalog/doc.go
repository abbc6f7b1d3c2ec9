// Package metalog reads the metadata log as a state machine: what a
// controller and a broker both do with the committed entries of the KRaft
// quorum (Kafka's MetadataLoader, with the SnapshotGenerator beside it).
//
// A Loader applies each committed entry, in order, to its metadata.State
// (every controller and every broker so holds the same state for the same
// prefix) and folds it into a quorum.Chain (the digest the harness
// compares across processes). It loads a snapshot in place of the entries
// it covers — at a restart, or when a replica behind the leader's log
// start installs the leader's — and takes one of its own once the entries
// applied since its last hold metadata.log.max.record.bytes.between.snapshots
// bytes: the node keeps it and its log then starts there.
//
// A snapshot's bytes are JSON: the chain's digest at its last entry and
// the records that rebuild the state from nothing (metadata.State.Records,
// as a KRaft snapshot holds the image's records); the snapshot's epoch is
// the active controller's epoch of its last entry.
package metalog
