package broker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
)

type role uint8

const (
	roleNone role = iota // offline or not yet told
	roleLeader
	roleFollower
)

func (r role) String() string { return [...]string{"none", "leader", "follower"}[r] }

// partition is this broker's replica of one partition: its log, its high
// watermark and, while it leads, what it knows of its followers.
type partition struct {
	b     *Broker
	tp    metadata.TopicPartition
	log   *log.Log
	state metadata.Partition // the controller's latest word
	role  role
	hw    int64

	// Leader only.
	followers  map[int32]*follower
	pendingISR []int32 // an AlterPartition in flight, or nil
	// waiters are delayed produces and fetches parked on this partition;
	// they are woken when the log end or high watermark moves.
	waiters []waiter

	// Follower only: whether the fetcher must truncate before fetching.
	truncatePending bool

	// hwFloor and lsoFloor are the leader's high watermark and last
	// stable offset so far in its epoch (hwFloorEpoch): neither may move
	// back within one.
	hwFloor      int64
	lsoFloor     int64
	hwFloorEpoch int32
}

// follower is the leader's view of one follower replica.
type follower struct {
	logEnd                int64 // offset the follower fetched from last; -1 unknown
	lastCaughtUp          env.Time
	lastFetch             env.Time
	lastFetchLeaderLogEnd int64
}

// waiter is a parked request; wake reports whether it completed and can be
// dropped.
type waiter interface{ wake() bool }

// PartitionState is a snapshot of a replica for tests and the harness.
type PartitionState struct {
	Role          string
	Leader        int32
	LeaderEpoch   int32
	ISR           []int32
	HighWatermark int64
	// LastStableOffset is the first offset of an undecided transaction
	// (the high watermark when there is none).
	LastStableOffset int64
	LogEndOffset     int64
	LogStartOffset   int64
}

func (p *partition) snapshot() PartitionState {
	s := PartitionState{Role: p.role.String(), Leader: p.state.Leader, LeaderEpoch: p.state.LeaderEpoch, ISR: slices.Clone(p.state.ISR), HighWatermark: p.hw}
	if p.log != nil {
		s.LogEndOffset, s.LogStartOffset = p.log.LogEndOffset(), p.log.LogStartOffset()
		s.LastStableOffset = p.lastStableOffset()
	}
	return s
}

func (b *Broker) openPartition(ps metadata.Partition) (*partition, error) {
	l, err := log.Open(b.e.Disk(), log.Config{
		Topic:                    ps.Topic,
		Partition:                ps.Partition,
		SegmentBytesMax:          b.cfg.SegmentBytes,
		FlushIntervalMessages:    b.cfg.LogFlushIntervalMessages,
		KIP360ProducerIDRecovery: true,
		Defects:                  b.cfg.Defects,
	})
	if err != nil {
		return nil, fmt.Errorf("open log %v: %w", ps.TopicPartition, err)
	}
	if r := l.Recovery(); r.TruncatedAt >= 0 {
		b.e.Log("log-recovery-truncated", "partition", ps.TopicPartition.String(), "at", r.TruncatedAt, "bytes", r.BytesTruncated, "reason", r.Reason)
		if strings.Contains(r.Reason, "crc") || strings.Contains(r.Reason, "checksum") {
			b.e.Probe(probe.CorruptBatchDetected, ps.TopicPartition.String())
		}
	}
	p := &partition{b: b, tp: ps.TopicPartition, log: l, hw: l.HighWatermarkCheckpoint()}
	p.state = metadata.Partition{TopicPartition: ps.TopicPartition, Leader: metadata.NoLeader, LeaderEpoch: -1, PartitionEpoch: -1}
	b.partitions[ps.TopicPartition] = p
	return p, nil
}

// becomeLeader takes over as leader in ps's epoch: the epoch starts at the
// log end, followers are presumed caught up as of now, and the high
// watermark stays where this replica had it until followers report in.
func (p *partition) becomeLeader(ps metadata.Partition) error {
	b := p.b
	b.stopFetching(p.tp)
	if err := p.log.AssignEpoch(ps.LeaderEpoch); err != nil {
		return fmt.Errorf("become leader of %v in epoch %d: %w", p.tp, ps.LeaderEpoch, err)
	}
	p.state = ps.Clone()
	p.role = roleLeader
	p.pendingISR = nil
	p.truncatePending = false
	now := b.e.WallClock() // the ISR lag's clock (isr.go)
	p.followers = map[int32]*follower{}
	for _, r := range ps.Replicas {
		if r != b.opts.ID {
			p.followers[r] = &follower{logEnd: -1, lastCaughtUp: now, lastFetch: now}
		}
	}
	b.e.Log("become-leader", "partition", p.tp.String(), "epoch", ps.LeaderEpoch, "leo", p.log.LogEndOffset(), "hw", p.hw, "isr", fmt.Sprint(ps.ISR))
	b.e.Probe(probe.LeaderElected, p.tp.String())
	p.failWaiters() // requests parked under the previous epoch
	p.maybeAdvanceHighWatermark()
	return nil
}

// becomeFollower starts following ps.Leader. Truncation happens in the
// fetcher before the first fetch: by leader epoch (KIP-101) or, with that
// knob off, to the high watermark.
func (p *partition) becomeFollower(ps metadata.Partition) error {
	b := p.b
	b.stopFetching(p.tp)
	p.state = ps.Clone()
	p.role = roleFollower
	p.followers = nil
	p.pendingISR = nil
	p.failWaiters()
	b.e.Log("become-follower", "partition", p.tp.String(), "leader", ps.Leader, "epoch", ps.LeaderEpoch, "leo", p.log.LogEndOffset(), "hw", p.hw)
	if !b.cfg.LeaderEpochTruncation {
		if _, err := p.truncateTo(p.hw, probe.FollowerTruncatedToHighWatermark, "high watermark (kip101.leader.epoch.truncation=false)"); err != nil {
			return err
		}
	} else {
		p.truncatePending = true
	}
	b.startFetching(p)
	return nil
}

// becomeOffline: no leader. The replica stops serving and fetching.
func (p *partition) becomeOffline(ps metadata.Partition) {
	p.b.stopFetching(p.tp)
	p.state = ps.Clone()
	p.role = roleNone
	p.followers = nil
	p.pendingISR = nil
	p.failWaiters()
	p.b.e.Log("partition-offline", "partition", p.tp.String(), "epoch", ps.LeaderEpoch)
}

// updateISR adopts a newer ISR for the leader's own epoch.
func (p *partition) updateISR(ps metadata.Partition) {
	p.state = ps.Clone()
	if p.pendingISR != nil && slices.Equal(p.pendingISR, ps.ISR) {
		p.pendingISR = nil
	}
	p.maybeAdvanceHighWatermark()
}

// truncateTo cuts the log at offset; cutting anything hits the probe named
// by how (follower-truncated-by-epoch or -to-high-watermark).
func (p *partition) truncateTo(offset int64, how, why string) (int64, error) {
	before := p.log.LogEndOffset()
	offset = max(offset, p.log.LogStartOffset())
	end, err := p.log.TruncateTo(offset)
	if err != nil {
		return end, fmt.Errorf("truncate %v to %d: %w", p.tp, offset, err)
	}
	if end < before {
		p.b.e.Log("truncate", "partition", p.tp.String(), "from", before, "to", end, "why", why)
		p.b.e.Probe(how, p.tp.String())
		p.b.e.Probe(probe.FollowerTruncated, p.tp.String())
	}
	if p.hw > end {
		p.hw = end
	}
	return end, nil
}

// effectiveISR is the ISR the leader must wait for: the committed one plus
// any member a pending change adds (Kafka's "maximal ISR"), so the high
// watermark never outruns a replica that may be in the ISR.
func (p *partition) effectiveISR() []int32 {
	isr := slices.Clone(p.state.ISR)
	for _, r := range p.pendingISR {
		if !slices.Contains(isr, r) {
			isr = append(isr, r)
		}
	}
	return isr
}

// maybeAdvanceHighWatermark moves the leader's high watermark to the
// smallest log end among the effective ISR. It never moves back within an
// epoch.
func (p *partition) maybeAdvanceHighWatermark() {
	if p.role != roleLeader {
		return
	}
	hw := p.log.LogEndOffset()
	waitFor := p.effectiveISR()
	switch {
	case p.b.cfg.Defects.Has(defect.HighWatermarkIgnoresFollowers):
		waitFor = nil
	case p.b.cfg.Defects.Has(defect.HighWatermarkIgnoresPendingISR):
		waitFor = p.state.ISR
	}
	for _, r := range waitFor {
		if r == p.b.opts.ID {
			continue
		}
		f := p.followers[r]
		if f == nil || f.logEnd < 0 {
			return // a member we have not heard from: wait
		}
		hw = min(hw, f.logEnd)
	}
	if hw > p.hw {
		p.hw = hw
		p.wakeWaiters()
	}
	if p.hw > p.log.LogEndOffset() {
		panic(invariantf("high watermark %d past log end %d of %v", p.hw, p.log.LogEndOffset(), p.tp))
	}
}

// wakeWaiters lets parked requests check again.
func (p *partition) wakeWaiters() {
	if len(p.waiters) == 0 {
		return
	}
	ws := p.waiters
	p.waiters = nil
	for _, w := range ws {
		if !w.wake() {
			p.waiters = append(p.waiters, w)
		}
	}
}

// failWaiters wakes every parked request after a role change; each sees the
// change and answers accordingly.
func (p *partition) failWaiters() { p.wakeWaiters() }

// lastStableOffset is the LSO for read_committed consumers.
func (p *partition) lastStableOffset() int64 {
	if p.b.cfg.Defects.Has(defect.LastStableOffsetIgnoresOpenTransactions) {
		return p.hw
	}
	return p.log.LastStableOffset(p.hw)
}

// invariantViolation names the first invariant this replica breaks, or is
// "" if it is in a possible state; Broker.checkInvariants asks after every
// step. A leader that passes the high watermark checks records its high
// watermark as the floor for the rest of its epoch.
func (p *partition) invariantViolation() string {
	if p.log == nil {
		return ""
	}
	leo := p.log.LogEndOffset()
	if p.hw > leo {
		return invariantf("high watermark %d past log end %d of %v", p.hw, leo, p.tp)
	}
	if p.hw < p.log.LogStartOffset() {
		return invariantf("high watermark %d below log start %d of %v", p.hw, p.log.LogStartOffset(), p.tp)
	}
	if p.role != roleLeader {
		return ""
	}
	if p.state.Leader != p.b.opts.ID {
		return invariantf("%v: acting as leader while the controller named %d", p.tp, p.state.Leader)
	}
	if len(p.state.ISR) == 0 {
		return invariantf("%v: ISR is empty", p.tp)
	}
	if !p.state.InISR(p.b.opts.ID) {
		return invariantf("%v: leader %d not in its ISR %v", p.tp, p.b.opts.ID, p.state.ISR)
	}
	lso := p.lastStableOffset()
	if lso > p.hw {
		return invariantf("%v: last stable offset %d past the high watermark %d", p.tp, lso, p.hw)
	}
	if p.hwFloorEpoch == p.state.LeaderEpoch {
		if p.hw < p.hwFloor {
			return invariantf("%v: leader high watermark moved back from %d to %d within epoch %d", p.tp, p.hwFloor, p.hw, p.state.LeaderEpoch)
		}
		if lso < p.lsoFloor {
			return invariantf("%v: last stable offset moved back from %d to %d within epoch %d", p.tp, p.lsoFloor, lso, p.state.LeaderEpoch)
		}
		if p.hw > p.hwFloor {
			// The high watermark advanced: every replica it waits for
			// (the ISR, and any a pending change adds or removes) had
			// fetched past it — Kafka's Partition.maybeIncrementLeaderHW.
			for _, r := range p.effectiveISR() {
				if r == p.b.opts.ID {
					continue
				}
				if f := p.followers[r]; f == nil || f.logEnd < p.hw {
					end := int64(-1)
					if f != nil {
						end = f.logEnd
					}
					return invariantf("%v: high watermark advanced to %d past the log end %d of ISR member %d", p.tp, p.hw, end, r)
				}
			}
		}
	}
	p.hwFloor, p.lsoFloor, p.hwFloorEpoch = p.hw, lso, p.state.LeaderEpoch
	var prev log.EpochEntry
	first := true
	for e := range p.log.Epochs() {
		if !first && (e.Epoch <= prev.Epoch || e.StartOffset < prev.StartOffset) {
			return invariantf("%v: epoch cache not monotonic: %v then %v", p.tp, prev, e)
		}
		prev, first = e, false
	}
	return ""
}
