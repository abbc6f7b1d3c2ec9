package replica

import (
	"fmt"
	"github.com/kafkasim/kafkasim/internal/invariant"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
)

// Role is what the replica does for its partition.
type Role uint8

const (
	None     Role = iota // offline, or not yet told
	Leader               // it leads: it appends, serves, and keeps the ISR
	Follower             // it fetches from the leader
)

func (r Role) String() string { return [...]string{"none", "leader", "follower"}[r] }

// NoLeader is the Assignment.Leader of a partition without one.
const NoLeader int32 = -1

// Assignment is the controller's word about a partition: who leads, in
// which epoch, and who is in sync.
type Assignment struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	Replicas       []int32
}

// InISR reports whether broker id is in the ISR.
func (a Assignment) InISR(id int32) bool { return slices.Contains(a.ISR, id) }

func (a Assignment) clone() Assignment {
	a.ISR, a.Replicas = slices.Clone(a.ISR), slices.Clone(a.Replicas)
	return a
}

// Log is what the core reads of its replica's log; it never writes it.
type Log interface {
	LogEndOffset() int64
	LogStartOffset() int64
	// EpochStart is the offset at which leader epoch epoch begins in the
	// log, if the epoch cache has it.
	EpochStart(epoch int32) (int64, bool)
	// EndOffsetForEpoch is OffsetForLeaderEpoch's answer: the largest
	// epoch at or below epoch the cache has, and where it ends.
	EndOffsetForEpoch(epoch int32) (int32, int64)
	// LastStableOffset is the first offset of an undecided transaction
	// below hw, or hw.
	LastStableOffset(hw int64) int64
}

// Config is the replica's identity and the knobs its rules read.
type Config struct {
	// ID is this broker's id; Name the partition, as trace lines and
	// probes name it ("input/0").
	ID   int32
	Name string
	// ReplicaLagTimeMax is replica.lag.time.max.ms.
	ReplicaLagTimeMax time.Duration
	// LeaderEpochTruncation is kip101.leader.epoch.truncation;
	// FetchEpochValidation is kip320.fetch.epoch.validation.
	LeaderEpochTruncation bool
	FetchEpochValidation  bool

	// Planted defects (package defect), for the checkers' self-test.
	HighWatermarkIgnoresFollowers    bool
	HighWatermarkIgnoresPendingISR   bool
	ISRExpansionIgnoresHighWatermark bool
	FollowerTruncatesToHighWatermark bool
	LSOIgnoresOpenTransactions       bool
}

// Remote is the leader's view of one follower (Kafka's remote replica).
type Remote struct {
	// LogEnd is the offset it fetched from last (its log end); -1 until
	// it fetches in this epoch.
	LogEnd int64
	// LastCaughtUp is when it last had everything the leader had when it
	// asked (on the wall clock, as Kafka's ISR lag is).
	LastCaughtUp env.Time
	LastFetch    env.Time
	// LastFetchLeaderLogEnd is the leader's log end at its last fetch.
	LastFetchLeaderLogEnd int64
	// LogStart is the log start offset its last fetch reported; -1 until
	// it fetches in this epoch.
	LogStart int64
}

// Replica is one partition replica's replication state.
type Replica struct {
	cfg  Config
	log  Log
	role Role
	a    Assignment
	hw   int64

	// Leader only.
	followers  map[int32]*Remote
	pendingISR []int32 // proposed and not yet answered, or nil

	// Follower only: it must ask the leader's epochs before it fetches.
	truncatePending bool

	// The leader's high watermark and last stable offset so far in epoch
	// floorEpoch: neither may move back within one.
	hwFloor, lsoFloor int64
	floorEpoch        int32

	effects []Effect
	handed  []Effect // what the last Ready returned, reused by the next (effects.go)
}

// New returns a replica of no role over log, its high watermark hw (its
// checkpoint).
func New(cfg Config, log Log, hw int64) *Replica {
	return &Replica{cfg: cfg, log: log, hw: hw, a: Assignment{Leader: NoLeader, LeaderEpoch: -1, PartitionEpoch: -1}}
}

// Role, Assignment, HighWatermark and TruncatePending report the state.
func (r *Replica) Role() Role             { return r.role }
func (r *Replica) Assignment() Assignment { return r.a }
func (r *Replica) HighWatermark() int64   { return r.hw }
func (r *Replica) TruncatePending() bool  { return r.truncatePending }
func (r *Replica) PendingISR() []int32    { return r.pendingISR }
func (r *Replica) Remote(id int32) (Remote, bool) {
	f, ok := r.followers[id]
	if !ok {
		return Remote{}, false
	}
	return *f, true
}

// LastStableOffset is the LSO read_committed consumers are served to.
func (r *Replica) LastStableOffset() int64 {
	if r.cfg.LSOIgnoresOpenTransactions {
		return r.hw
	}
	return r.log.LastStableOffset(r.hw)
}

// BecomeLeader takes over as leader for a's epoch (the broker has already
// begun the epoch in the log): followers are presumed caught up as of now,
// and the high watermark stays where this replica had it until they report
// in.
func (r *Replica) BecomeLeader(a Assignment, now env.Time) {
	r.a = a.clone()
	r.role = Leader
	r.pendingISR = nil
	r.truncatePending = false
	r.followers = map[int32]*Remote{}
	for _, id := range a.Replicas {
		if id != r.cfg.ID {
			r.followers[id] = &Remote{LogEnd: -1, LogStart: -1, LastCaughtUp: now, LastFetch: now}
		}
	}
	r.logf("become-leader", "partition", r.cfg.Name, "epoch", a.LeaderEpoch, "leo", r.log.LogEndOffset(), "hw", r.hw, "isr", fmt.Sprint(a.ISR))
	r.probe(probe.LeaderElected)
	r.wake() // requests parked under the previous epoch
	r.maybeAdvanceHighWatermark()
}

// BecomeFollower starts following a.Leader: it truncates by the leader's
// epochs before it fetches (TruncatePending, then EpochAnswered) or, with
// LeaderEpochTruncation off, to its high watermark at once.
func (r *Replica) BecomeFollower(a Assignment) {
	r.a = a.clone()
	r.role = Follower
	r.followers = nil
	r.pendingISR = nil
	r.wake()
	r.logf("become-follower", "partition", r.cfg.Name, "leader", a.Leader, "epoch", a.LeaderEpoch, "leo", r.log.LogEndOffset(), "hw", r.hw)
	if !r.cfg.LeaderEpochTruncation {
		r.truncate(r.hw, probe.FollowerTruncatedToHighWatermark, "high watermark (kip101.leader.epoch.truncation=false)")
		return
	}
	r.truncatePending = true
}

// BecomeOffline: no leader; the replica neither serves nor fetches.
func (r *Replica) BecomeOffline(a Assignment) {
	r.a = a.clone()
	r.role = None
	r.followers = nil
	r.pendingISR = nil
	r.wake()
	r.logf("partition-offline", "partition", r.cfg.Name, "epoch", a.LeaderEpoch)
}

// UpdateISR adopts a newer ISR for the leader's own epoch: committed
// state from the controller ends any pending proposal (Partition.makeLeader
// replaces a pending state with the committed one; an answer to the
// proposal that comes later is ignored).
func (r *Replica) UpdateISR(a Assignment) {
	r.a = a.clone()
	r.pendingISR = nil
	r.maybeAdvanceHighWatermark()
}

// Assign adopts a newer word that changes nothing the role depends on (a
// follower's new partition epoch).
func (r *Replica) Assign(a Assignment) { r.a = a.clone() }

// FollowerFetched records a follower's fetch (its current and last fetched
// leader epochs, its fetch offset and log start offset) at now, then maybe expands the ISR —
// proposing only if canPropose (the broker is registered) — and advances
// the high watermark.
func (r *Replica) FollowerFetched(id, currentLeaderEpoch, lastFetchedEpoch int32, fetchOffset, logStartOffset int64, now env.Time, canPropose bool) {
	if r.role != Leader {
		return
	}
	if r.cfg.FetchEpochValidation && currentLeaderEpoch >= 0 && currentLeaderEpoch != r.a.LeaderEpoch {
		return
	}
	f := r.followers[id]
	if f == nil {
		return // not a replica of this partition
	}
	if r.cfg.FetchEpochValidation && lastFetchedEpoch >= 0 {
		if epoch, end := r.log.EndOffsetForEpoch(lastFetchedEpoch); epoch < lastFetchedEpoch || end < fetchOffset {
			return // diverged: its offset says nothing about our log
		}
	}
	leo := r.log.LogEndOffset()
	fetchOffset = min(fetchOffset, leo)
	if !r.a.InISR(id) && fetchOffset < r.hw {
		r.probe(probe.FollowerFetchOutOfSync)
	}
	switch {
	case fetchOffset >= leo:
		f.LastCaughtUp = max(f.LastCaughtUp, now)
	case fetchOffset >= f.LastFetchLeaderLogEnd:
		f.LastCaughtUp = max(f.LastCaughtUp, f.LastFetch)
	}
	f.LogEnd = fetchOffset
	if f.LogStart >= 0 && logStartOffset != f.LogStart {
		r.wake() // a DeleteRecords may be waiting for the low watermark
	}
	f.LogStart = logStartOffset
	f.LastFetchLeaderLogEnd = leo
	f.LastFetch = now
	r.maybeExpandISR(id, canPropose)
	r.maybeAdvanceHighWatermark()
}

// Appended: the leader appended to its log (a leader alone in its ISR
// commits at once).
func (r *Replica) Appended() { r.maybeAdvanceHighWatermark() }

// Tick shrinks the ISR by the followers that have not caught up for
// replica.lag.time.max.ms as of now (on the wall clock, as Kafka's
// Partition.getOutOfSyncReplicas reads time.milliseconds()).
func (r *Replica) Tick(now env.Time, canPropose bool) {
	if r.role != Leader || r.pendingISR != nil {
		return
	}
	var out []int32
	for _, id := range r.a.ISR {
		if f := r.followers[id]; id != r.cfg.ID && f != nil && now.Sub(f.LastCaughtUp) > r.cfg.ReplicaLagTimeMax {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return
	}
	isr := slices.DeleteFunc(slices.Clone(r.a.ISR), func(id int32) bool { return slices.Contains(out, id) })
	r.logf("isr-shrink", "partition", r.cfg.Name, "out", fmt.Sprint(out), "isr", fmt.Sprint(isr))
	r.propose(isr, canPropose)
}

// ISRResult is the controller's answer to an AlterPartition.
type ISRResult struct {
	// Lost: no answer (the request failed). It may have been applied.
	Lost bool
	// Refused is why the controller refused it ("" if it did not), and
	// Code its Kafka error code.
	Refused string
	Code    int16
	// What the controller committed, if it did not refuse.
	LeaderEpoch, PartitionEpoch int32
	ISR                         []int32
}

// Kafka error codes of AlterPartition refusals that say the request was
// not applied.
const (
	codeOperationNotAttempted int16 = 55  // OPERATION_NOT_ATTEMPTED
	codeIneligibleReplica     int16 = 107 // INELIGIBLE_REPLICA
)

// ISRAnswered takes the answer to the proposal of isr made in leader epoch
// epoch, as Partition.handleAlterPartitionError and
// handleAlterPartitionUpdate do. An answer to a proposal the replica no
// longer waits for is ignored. No answer at all may hide a commit, so the
// proposal stays pending (the high watermark keeps waiting for the maximal
// ISR) and goes again. A refusal that says the request was not applied
// (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED) ends the wait and the
// replica is back at its committed ISR; any other (a stale partition or
// leader epoch, an unknown partition) leaves it pending until metadata
// brings the committed state: what the controller holds may include the
// proposal, and a smaller ISR could let the high watermark pass a member
// the controller may elect. A commit for this epoch newer than what it
// knows is adopted.
func (r *Replica) ISRAnswered(epoch int32, isr []int32, res ISRResult) {
	if r.role != Leader || r.a.LeaderEpoch != epoch || !slices.Equal(r.pendingISR, isr) {
		return // the world moved on
	}
	if res.Lost {
		r.effects = append(r.effects, Effect{Kind: ProposeISR, ISR: slices.Clone(isr), LeaderEpoch: r.a.LeaderEpoch, PartitionEpoch: r.a.PartitionEpoch})
		return
	}
	if res.Refused != "" {
		r.logf("alter-partition-refused", "partition", r.cfg.Name, "error", res.Refused)
		if res.Code == codeIneligibleReplica || res.Code == codeOperationNotAttempted {
			r.pendingISR = nil
		}
		return
	}
	r.pendingISR = nil
	if res.LeaderEpoch == r.a.LeaderEpoch && res.PartitionEpoch > r.a.PartitionEpoch {
		r.a = r.a.clone()
		r.a.ISR = slices.Clone(res.ISR)
		r.a.PartitionEpoch = res.PartitionEpoch
		if len(r.a.ISR) == 1 && len(r.a.Replicas) > 1 {
			r.probe(probe.ISRShrunkToLeader)
		}
		r.maybeAdvanceHighWatermark()
	}
}

// EpochAnswered applies the leader's OffsetForLeaderEpoch answer (epoch,
// end) to the truncation a new follower owes, after which it may fetch.
func (r *Replica) EpochAnswered(epoch int32, end int64) {
	r.truncatePending = false
	r.truncateByEpoch(epoch, end)
}

// SkipTruncation: a new follower whose epoch cache is empty has nothing
// of its own to reconcile, and fetches at once.
func (r *Replica) SkipTruncation() { r.truncatePending = false }

// Diverged applies a fetch response's diverging epoch (KIP-320).
func (r *Replica) Diverged(epoch int32, end int64) { r.truncateByEpoch(epoch, end) }

// OffsetOutOfRange: the leader refused a fetch outside its log. A log that
// ends below the leader's log start (records the leader deleted, or whose
// segments retention removed) starts over at it, empty, as Kafka's
// ReplicaFetcherThread truncates fully and starts at the leader's log start
// offset. A log running past the leader's high watermark is cut there (the
// old, lossy way a follower learns it must truncate). It reports whether it
// did either.
func (r *Replica) OffsetOutOfRange(leaderHighWatermark, leaderLogStart int64) bool {
	if leaderLogStart > r.log.LogEndOffset() {
		r.logf("follower-starts-at-leader-log-start", "log-end", r.log.LogEndOffset(), "leader-log-start", leaderLogStart)
		r.effects = append(r.effects, Effect{Kind: MoveLogStart, To: leaderLogStart, Fully: true})
		return true
	}
	if leaderHighWatermark < 0 || r.log.LogEndOffset() <= leaderHighWatermark {
		return false
	}
	r.truncate(leaderHighWatermark, probe.FollowerTruncatedToHighWatermark, "offset out of range at leader")
	return true
}

// LeaderHighWatermark takes a follower's view of the leader's high
// watermark from a fetch response: its own is that, as far as its log
// reaches.
func (r *Replica) LeaderHighWatermark(hw int64) {
	hw = min(hw, r.log.LogEndOffset())
	if hw != r.hw && hw >= 0 {
		r.hw = hw
		r.wake()
	}
}

// LeaderLogStart takes the leader's log start offset from a fetch
// response: a follower's log starts there too, as far as its own high
// watermark reaches (Kafka's follower calls maybeIncrementLogStartOffset
// with it), so records a leader deleted are deleted everywhere.
func (r *Replica) LeaderLogStart(start int64) {
	if to := min(start, r.hw); r.role == Follower && to > r.log.LogStartOffset() {
		r.effects = append(r.effects, Effect{Kind: MoveLogStart, To: to})
	}
}

// DeleteRecordsBefore moves a leader's log start offset to offset (-1: its
// high watermark), as Kafka's DeleteRecords does; false, and nothing moved,
// if this replica does not lead or offset lies past its high watermark
// (OFFSET_OUT_OF_RANGE). It returns the offset the log starts at.
func (r *Replica) DeleteRecordsBefore(offset int64) (int64, bool) {
	if offset == -1 {
		offset = r.hw
	}
	if r.role != Leader || offset < 0 || offset > r.hw {
		return 0, false
	}
	if offset > r.log.LogStartOffset() {
		r.effects = append(r.effects, Effect{Kind: MoveLogStart, To: offset})
	}
	return offset, true
}

// LowWatermark is the lowest log start offset among the leader and the
// followers counted (Kafka's lowWatermarkIfLeader counts those on live
// brokers whose log start it knows): a DeleteRecords is done once it
// reaches the offset asked. A follower that has not fetched in this epoch
// does not count.
func (r *Replica) LowWatermark(counted func(id int32) bool) int64 {
	low := r.log.LogStartOffset()
	for _, id := range r.a.Replicas {
		if f := r.followers[id]; f != nil && f.LogStart >= 0 && counted(id) {
			low = min(low, f.LogStart)
		}
	}
	return low
}

// LogStartMoved reports a MoveLogStart the replica asked for: the log now
// starts at start (and, if it started over, ends there too); the high
// watermark is never below it.
func (r *Replica) LogStartMoved(start int64) {
	if r.hw < start {
		r.hw = start
	}
	r.wake()
}

// Truncated reports a truncation the replica asked for: the log ended at
// before and now ends at end.
func (r *Replica) Truncated(before, end int64, how, why string) {
	if end < before {
		r.logf("truncate", "partition", r.cfg.Name, "from", before, "to", end, "why", why)
		r.probe(how)
		r.probe(probe.FollowerTruncated)
	}
	if r.hw > end {
		r.hw = end
	}
}

// truncateByEpoch: if the leader has our epoch, cut to the smaller of both
// ends of it; if it answers an older one, to the smaller of its end and
// our high watermark. An undefined answer falls back to the high
// watermark.
func (r *Replica) truncateByEpoch(epoch int32, end int64) {
	if epoch < 0 || end < 0 || r.cfg.FollowerTruncatesToHighWatermark {
		r.truncate(r.hw, probe.FollowerTruncatedToHighWatermark, "leader has no epoch at or below ours: to high watermark")
		return
	}
	target := end
	if ours, ourEnd := r.log.EndOffsetForEpoch(epoch); ours == epoch {
		target = min(target, ourEnd)
	} else {
		target = min(target, r.hw)
	}
	r.truncate(min(target, r.log.LogEndOffset()), probe.FollowerTruncatedByEpoch, "leader epoch")
}

// truncate asks the broker to cut the log at offset (never below its
// start); how is the probe a cut hits.
func (r *Replica) truncate(offset int64, how, why string) {
	r.effects = append(r.effects, Effect{Kind: Truncate, To: max(offset, r.log.LogStartOffset()), How: how, Why: why})
}

// effectiveISR is the ISR the leader must wait for: the committed one plus
// any member a pending change adds (Kafka's "maximal ISR"), so the high
// watermark never outruns a replica that may be in the ISR.
// The result is for reading: without a pending change it is the ISR itself.
func (r *Replica) effectiveISR() []int32 {
	if len(r.pendingISR) == 0 {
		return r.a.ISR
	}
	isr := slices.Clone(r.a.ISR)
	for _, id := range r.pendingISR {
		if !slices.Contains(isr, id) {
			isr = append(isr, id)
		}
	}
	return isr
}

// maybeAdvanceHighWatermark moves the leader's high watermark to the
// smallest log end among the effective ISR.
func (r *Replica) maybeAdvanceHighWatermark() {
	if r.role != Leader {
		return
	}
	hw := r.log.LogEndOffset()
	waitFor := r.effectiveISR()
	switch {
	case r.cfg.HighWatermarkIgnoresFollowers:
		waitFor = nil
	case r.cfg.HighWatermarkIgnoresPendingISR:
		waitFor = r.a.ISR
	}
	for _, id := range waitFor {
		if id == r.cfg.ID {
			continue
		}
		f := r.followers[id]
		if f == nil || f.LogEnd < 0 {
			return // a member we have not heard from: wait
		}
		hw = min(hw, f.LogEnd)
	}
	if hw > r.hw {
		r.hw = hw
		r.wake()
	}
	if r.hw > r.log.LogEndOffset() {
		panic(invariantf("high watermark %d past log end %d of %v", r.hw, r.log.LogEndOffset(), r.cfg.Name))
	}
}

// maybeExpandISR adds a follower that has caught up to the high watermark
// and to the start of the current leader epoch.
func (r *Replica) maybeExpandISR(id int32, canPropose bool) {
	if r.role != Leader || r.pendingISR != nil || r.a.InISR(id) {
		return
	}
	f := r.followers[id]
	start, ok := r.log.EpochStart(r.a.LeaderEpoch)
	hw := r.hw
	if r.cfg.ISRExpansionIgnoresHighWatermark {
		hw = 0
	}
	if f == nil || !ok || f.LogEnd < hw || f.LogEnd < start {
		return
	}
	isr := append(slices.Clone(r.a.ISR), id)
	slices.Sort(isr)
	r.logf("isr-expand", "partition", r.cfg.Name, "in", id, "isr", fmt.Sprint(isr))
	r.propose(isr, canPropose)
	if r.pendingISR != nil {
		r.probe(probe.ISRExpansionPending)
	}
}

// propose asks the controller for isr; until it answers, the high
// watermark waits for the union of the old and the new ISR.
func (r *Replica) propose(isr []int32, canPropose bool) {
	if !canPropose {
		return
	}
	for _, id := range isr {
		if r.a.InISR(id) {
			continue
		}
		// A replica joins the ISR only once it holds everything the high
		// watermark covers and has reached the start of the leader's
		// epoch (KAFKA-7128): else a failover to it loses what this
		// leader committed in its epoch.
		f := r.followers[id]
		start, ok := r.log.EpochStart(r.a.LeaderEpoch)
		if f == nil || !ok || f.LogEnd < r.hw || f.LogEnd < start {
			end := int64(-1)
			if f != nil {
				end = f.LogEnd
			}
			panic(invariantf("%v: replica %d proposed for the ISR at log end %d, below the high watermark %d or the epoch %d start %d", r.cfg.Name, id, end, r.hw, r.a.LeaderEpoch, start))
		}
	}
	r.pendingISR = isr
	r.effects = append(r.effects, Effect{Kind: ProposeISR, ISR: slices.Clone(isr), LeaderEpoch: r.a.LeaderEpoch, PartitionEpoch: r.a.PartitionEpoch})
}

func (r *Replica) logf(event string, kv ...any) {
	r.effects = append(r.effects, Effect{Kind: TraceLine, Event: event, Fields: kv})
}

func (r *Replica) probe(name string) {
	r.effects = append(r.effects, Effect{Kind: HitProbe, Probe: name})
}

func (r *Replica) wake() { r.effects = append(r.effects, Effect{Kind: Wake}) }

// invariantf is the message of a broken replication invariant: the
// broker's own (invariant.Message).
func invariantf(format string, args ...any) string {
	return invariant.Message("broker", format, args...)
}
