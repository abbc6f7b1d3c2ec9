// Package probe names the coverage probes: points in the broker, its
// clients, the applications and the world that a run reports reaching, as
// FoundationDB's TEST() and Antithesis' "sometimes" assertions do. A probe
// is hit through env.Env.Probe with a subject (a partition as "topic/N", a
// group, a transactional id, a node) and counted by the world; counting
// never changes what happens, so probes leave the trace hash unchanged.
//
// Probes serve two ends. A claim names the probes its verdict depends on:
// "exactly-once held" over runs that never retried a duplicate or never
// failed a leader over is not evidence, and such a claim is reported
// untested. And a fault schedule can wait for one (a trigger: "crash the
// probed node when produce-acknowledged-before-replication"), so a fault
// lands inside the window a mechanism guards.
package probe

import (
	"slices"
	"strings"
)

// Replication.
const (
	// LeaderElected: a replica became leader of a partition (any epoch).
	LeaderElected = "leader-elected"
	// LeaderFailover: the controller moved a partition's leadership away
	// from a broker that was fenced, shut down or cut from the ISR.
	LeaderFailover = "leader-failover"
	// AcknowledgedMissingOnNewLeader: a replica became leader without
	// records a producer had been told were written (the harness derives it
	// from leader-elected and the history).
	AcknowledgedMissingOnNewLeader = "acknowledged-missing-on-new-leader"
	// FollowerTruncated: a follower cut its log, by whichever rule (the
	// two below): what a fault aimed at a failover's truncation waits for.
	FollowerTruncated = "follower-truncated"
	// FollowerTruncatedByEpoch: a follower cut its log where the leader's
	// epochs said the logs diverged (KIP-101, KIP-279, KIP-320).
	FollowerTruncatedByEpoch = "follower-truncated-by-epoch"
	// FollowerTruncatedToHighWatermark: a follower cut its log to its high
	// watermark (kip101.leader.epoch.truncation=false, or no epoch to ask).
	FollowerTruncatedToHighWatermark = "follower-truncated-to-high-watermark"
	// ISRShrunkToLeader: a partition's ISR became the leader alone.
	ISRShrunkToLeader = "isr-shrunk-to-leader"
	// ISRExpansionPending: a leader asked the controller to add a follower
	// to the ISR and has no answer yet.
	ISRExpansionPending = "isr-expansion-pending"
	// UncleanElection: the controller elected a replica outside the ISR.
	UncleanElection = "unclean-election"
	// ProduceAcknowledgedBeforeReplication: a leader answered a produce
	// (acks=1) for records an ISR follower has not fetched and has no fetch
	// waiting to carry: until it asks again they are on the leader alone.
	ProduceAcknowledgedBeforeReplication = "produce-acknowledged-before-replication"
	// FollowerFetchOutOfSync: a leader served a fetch from a replica outside
	// the ISR that is behind the high watermark (catching up).
	FollowerFetchOutOfSync = "follower-fetch-out-of-sync"
	// ProduceAwaitingReplication: a leader appended an acks=all produce
	// and waits for its followers to fetch it: fail it over now and the
	// producer retries what a new leader may already hold.
	ProduceAwaitingReplication = "produce-awaiting-replication"
	// ProduceAnswered: a leader answered a produce with records written
	// (acks=1 once appended, acks=all once committed): lose the answer and
	// the producer retries what is already in the log.
	ProduceAnswered = "produce-answered"
)

// Producers.
const (
	// DuplicateSequenceDropped: a leader answered a retried batch with its
	// original offsets instead of appending it again.
	DuplicateSequenceDropped = "duplicate-sequence-dropped"
	// OutOfOrderSequenceRefused: a leader refused a batch whose sequence
	// left a gap (OUT_OF_ORDER_SEQUENCE_NUMBER).
	OutOfOrderSequenceRefused = "out-of-order-sequence-refused"
	// ProducerFenced: a broker refused a producer's stale epoch
	// (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED).
	ProducerFenced = "producer-fenced"
)

// Transactions.
const (
	// TransactionPrepared: a transaction coordinator wrote PrepareCommit or
	// PrepareAbort and has not yet completed the transaction's markers.
	TransactionPrepared = "transaction-prepared"
	// TransactionTimedOut: a coordinator aborted a transaction open longer
	// than its transaction.timeout.ms.
	TransactionTimedOut = "transaction-timed-out"
	// CoordinatorLoadedPreparedTransaction: a transaction coordinator took
	// over a partition of __transaction_state holding a transaction in
	// PrepareCommit or PrepareAbort (a failover during the commit).
	CoordinatorLoadedPreparedTransaction = "coordinator-loaded-prepared-transaction"
	// LateBatchRefusedByVerification: a leader refused a transactional
	// batch the coordinator said was not part of an ongoing transaction
	// (transaction.partition.verification.enable, KIP-890 part 1).
	LateBatchRefusedByVerification = "late-batch-refused-by-verification"
	// TransactionAborted: a transaction ended in an abort.
	TransactionAborted = "transaction-aborted"
	// PredecessorFenced: a transactional producer's InitProducerId found
	// the transaction its previous incarnation left open, bumped the epoch
	// and aborted it (KIP-98's zombie fencing).
	PredecessorFenced = "predecessor-fenced"
	// RebalanceDuringTransaction: a processor's assignment changed while it
	// had a transaction open.
	RebalanceDuringTransaction = "rebalance-during-transaction"
	// TransactionAwaitingCommit: a processor's transaction holds its
	// outputs and its offsets, and the processor has not yet asked to
	// commit (a crash now leaves it open until fenced or timed out).
	TransactionAwaitingCommit = "transaction-awaiting-commit"
)

// Groups and consumer applications.
const (
	// MemberFenced: a group coordinator refused an offset commit from a
	// stale generation or an unknown member.
	MemberFenced = "member-fenced"
	// CommittedBeforeProcessing: a consumer application committed offsets
	// of records it has not processed yet (commit-before-process).
	CommittedBeforeProcessing = "committed-before-processing"
	// ProcessedBeforeCommit: a consumer application wrote the output of
	// records whose offsets it has not committed yet (process-then-commit).
	ProcessedBeforeCommit = "processed-before-commit"
	// OffsetCommitAwaitingReplication: a group coordinator appended an
	// offset commit (plain or transactional) to __consumer_offsets and
	// waits for it to commit before answering: a failover now must not
	// lose what it then acknowledges.
	OffsetCommitAwaitingReplication = "offset-commit-awaiting-replication"
	// StaticMemberReplaced: a static member (group.instance.id) joined
	// again without its member id and took its old incarnation's place
	// (KIP-345).
	StaticMemberReplaced = "static-member-replaced"
	// StaticMemberFenced: a request from an older incarnation of a static
	// member was refused with FENCED_INSTANCE_ID.
	StaticMemberFenced = "static-member-fenced"
	// ConsumerGroupRevocationPending: a consumer group (KIP-848) member was
	// asked to revoke partitions before it may be given others
	// (UNREVOKED_PARTITIONS).
	ConsumerGroupRevocationPending = "consumer-group-revocation-pending"
	// ConsumerGroupRevocationAcknowledged: a consumer group member
	// reported it no longer owns what it had to revoke, and moved on.
	ConsumerGroupRevocationAcknowledged = "consumer-group-revocation-acknowledged"
	// ConsumerGroupMemberFenced: a consumer group member was removed by
	// its session or rebalance timeout, or left.
	ConsumerGroupMemberFenced = "consumer-group-member-fenced"
	// ShareRecordsAcquired: a share partition (KIP-932) handed records to
	// a share group member.
	ShareRecordsAcquired = "share-records-acquired"
	// ShareRecordsReleased: a share group member released records (or its
	// session closed with records acquired), making them available to
	// another delivery.
	ShareRecordsReleased = "share-records-released"
	// ShareRecordLockExpired: records a member acquired were not
	// acknowledged within share.record.lock.duration.ms and went back.
	ShareRecordLockExpired = "share-record-lock-expired"
	// ShareGroupMemberFenced: a share group member left or was fenced by
	// its session timeout.
	ShareGroupMemberFenced = "share-group-member-fenced"
)

// Storage.
const (
	// CompactionRemovedRecords: a log cleaner round removed records
	// superseded by a later record of the same key.
	CompactionRemovedRecords = "compaction-removed-records"
	// TombstoneRemoved: a log cleaner round removed a tombstone past its
	// delete horizon (delete.retention.ms).
	TombstoneRemoved = "tombstone-removed"
	// PowerLossDroppedUnsynced: a node lost power with bytes not yet synced
	// to its disk, and they are gone.
	PowerLossDroppedUnsynced = "power-loss-dropped-unsynced"
	// CorruptBatchDetected: a broker found a batch whose checksum fails and
	// refused to serve it or cut its log there.
	CorruptBatchDetected = "corrupt-batch-detected"
	// SyncFailedHalt: a broker's fsync failed and it halted, as Kafka does.
	SyncFailedHalt = "sync-failed-halt"
	// MetadataSnapshotInstalled: a controller or broker behind the
	// quorum leader's log start fetched the leader's metadata snapshot and
	// installed it (KIP-630).
	MetadataSnapshotInstalled = "metadata-snapshot-installed"
)

// Info describes one probe.
type Info struct {
	Name string
	// Where is the room that hits it.
	Where string
	Doc   string
}

// Catalogue is every probe, in the order this file lists them.
var Catalogue = []Info{
	{LeaderElected, "broker", "a replica became leader of a partition"},
	{LeaderFailover, "controller", "leadership moved away from a fenced, shut-down or out-of-ISR broker"},
	{AcknowledgedMissingOnNewLeader, "harness", "a new leader lacks records a producer was told were written"},
	{FollowerTruncated, "broker", "a follower cut its log, by whichever rule"},
	{FollowerTruncatedByEpoch, "broker", "a follower cut its log where the leader's epochs said the logs diverged"},
	{FollowerTruncatedToHighWatermark, "broker", "a follower cut its log to its high watermark"},
	{ISRShrunkToLeader, "broker", "a partition's ISR became the leader alone"},
	{ISRExpansionPending, "broker", "a leader asked to add a follower to the ISR and awaits the answer"},
	{UncleanElection, "controller", "a replica outside the ISR was elected leader"},
	{ProduceAcknowledgedBeforeReplication, "broker", "a produce was answered before every follower fetched it (acks=1)"},
	{FollowerFetchOutOfSync, "broker", "a leader served an out-of-sync follower still behind the high watermark"},
	{ProduceAwaitingReplication, "broker", "a leader appended an acks=all produce and waits for its followers"},
	{ProduceAnswered, "broker", "a leader answered a produce with records written"},
	{DuplicateSequenceDropped, "broker", "a retried batch was answered with its original offsets"},
	{OutOfOrderSequenceRefused, "broker", "a batch with a sequence gap was refused"},
	{ProducerFenced, "broker", "a producer's stale epoch was refused"},
	{TransactionPrepared, "broker", "a coordinator wrote PrepareCommit or PrepareAbort, markers not yet complete"},
	{TransactionTimedOut, "broker", "a coordinator aborted a transaction past its transaction.timeout.ms"},
	{CoordinatorLoadedPreparedTransaction, "broker", "a new transaction coordinator found a transaction mid-commit"},
	{LateBatchRefusedByVerification, "broker", "a late transactional batch was refused by partition verification"},
	{TransactionAborted, "broker", "a transaction ended in an abort"},
	{PredecessorFenced, "broker", "InitProducerId aborted what the producer's previous incarnation left open"},
	{RebalanceDuringTransaction, "application", "a processor's assignment changed with a transaction open"},
	{TransactionAwaitingCommit, "application", "a processor's transaction holds outputs and offsets, commit not yet asked"},
	{MemberFenced, "broker", "an offset commit from a stale generation or unknown member was refused"},
	{CommittedBeforeProcessing, "application", "a consumer committed offsets of records not yet processed"},
	{ProcessedBeforeCommit, "application", "a consumer wrote output of records whose offsets are not yet committed"},
	{OffsetCommitAwaitingReplication, "broker", "a group coordinator appended an offset commit and awaits its replication"},
	{StaticMemberReplaced, "broker", "a static member's new incarnation took its place in the group"},
	{StaticMemberFenced, "broker", "an older incarnation of a static member was told FENCED_INSTANCE_ID"},
	{ConsumerGroupRevocationPending, "broker", "a KIP-848 member was asked to revoke partitions first"},
	{ConsumerGroupRevocationAcknowledged, "broker", "a KIP-848 member revoked what it had to and moved on"},
	{ConsumerGroupMemberFenced, "broker", "a KIP-848 member left or was fenced by its session or rebalance timeout"},
	{ShareRecordsAcquired, "broker", "a share partition handed records to a share group member"},
	{ShareRecordsReleased, "broker", "a share group member released records for another delivery"},
	{ShareRecordLockExpired, "broker", "acquired records went back when their acquisition lock expired"},
	{ShareGroupMemberFenced, "broker", "a share group member left or was fenced by its session timeout"},
	{PowerLossDroppedUnsynced, "world", "a power loss dropped bytes not yet synced"},
	{CompactionRemovedRecords, "broker", "the log cleaner removed records a later record of the same key superseded"},
	{TombstoneRemoved, "broker", "the log cleaner removed a tombstone past delete.retention.ms"},
	{CorruptBatchDetected, "broker", "a batch failing its checksum was refused or cut"},
	{SyncFailedHalt, "broker", "a failed fsync halted the broker"},
	{MetadataSnapshotInstalled, "controller", "a replica behind the leader's log start fetched and installed its metadata snapshot"},
}

// Known reports whether name is a probe of the catalogue.
func Known(name string) bool {
	return slices.ContainsFunc(Catalogue, func(i Info) bool { return i.Name == name })
}

// Names lists every probe's name, in catalogue order.
func Names() []string {
	names := make([]string, len(Catalogue))
	for i, p := range Catalogue {
		names[i] = p.Name
	}
	return names
}

// Count is how often one probe was hit.
type Count struct {
	Name string `json:"name"`
	Hits uint64 `json:"hits"`
}

// Counts are a run's probe hits, sorted by name, probes never hit left out.
type Counts []Count

// Hits is how often name was hit.
func (c Counts) Hits(name string) uint64 {
	i, ok := slices.BinarySearchFunc(c, name, func(x Count, n string) int { return strings.Compare(x.Name, n) })
	if !ok {
		return 0
	}
	return c[i].Hits
}

// Add sums other into c.
func (c Counts) Add(other Counts) Counts {
	m := map[string]uint64{}
	for _, x := range c {
		m[x.Name] += x.Hits
	}
	for _, x := range other {
		m[x.Name] += x.Hits
	}
	return FromMap(m)
}

// FromMap sorts a name → hits map into Counts.
func FromMap(m map[string]uint64) Counts {
	out := make(Counts, 0, len(m))
	for n, h := range m {
		if h > 0 {
			out = append(out, Count{n, h})
		}
	}
	slices.SortFunc(out, func(a, b Count) int { return strings.Compare(a.Name, b.Name) })
	return out
}
