package broker

import (
	"fmt"
	"strings"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/replica"
	"github.com/kafkasim/kafkasim/probe"
)

// partition is this broker's replica of one partition: its log, the
// replication rules that run it (package replica, a core without I/O),
// and the requests parked on it.
type partition struct {
	b       *Broker
	tp      metadata.TopicPartition
	topicID [16]byte
	log     *log.Log
	r       *replica.Replica
	// waiters are delayed produces, fetches and coordinator appends parked
	// on this partition; they are woken when the core says the high
	// watermark or the role moved (replica.Wake) and when the log grows.
	waiters      []waiter
	spareWaiters []waiter // wakeWaiters' second array
}

// waiter is a parked request; wake reports whether it completed and can be
// dropped.
type waiter interface{ wake() bool }

// PartitionState is a snapshot of a replica for tests and the harness.
type PartitionState struct {
	Role        string
	Leader      int32
	LeaderEpoch int32
	// ISR is the replica's own (a change replaces it, never edits it):
	// read it, do not keep or change it.
	ISR           []int32
	HighWatermark int64
	// LastStableOffset is the first offset of an undecided transaction
	// (the high watermark when there is none).
	LastStableOffset int64
	LogEndOffset     int64
	LogStartOffset   int64
}

func (p *partition) snapshot() PartitionState {
	a := p.r.Assignment()
	s := PartitionState{Role: p.r.Role().String(), Leader: a.Leader, LeaderEpoch: a.LeaderEpoch, ISR: a.ISR, HighWatermark: p.r.HighWatermark()}
	if p.log != nil {
		s.LogEndOffset, s.LogStartOffset = p.log.LogEndOffset(), p.log.LogStartOffset()
		s.LastStableOffset = p.lastStableOffset()
	}
	return s
}

// What the core says of the replica, as the rest of the broker asks it.
func (p *partition) leading() bool        { return p.r.Role() == replica.Leader }
func (p *partition) following() bool      { return p.r.Role() == replica.Follower }
func (p *partition) leader() int32        { return p.r.Assignment().Leader }
func (p *partition) epoch() int32         { return p.r.Assignment().LeaderEpoch }
func (p *partition) isr() []int32         { return p.r.Assignment().ISR }
func (p *partition) highWatermark() int64 { return p.r.HighWatermark() }

// assignment is the controller's word as the replica core takes it.
func assignment(ps metadata.Partition) replica.Assignment {
	return replica.Assignment{Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, PartitionEpoch: ps.PartitionEpoch, ISR: ps.ISR, Replicas: ps.Replicas}
}

// replicaLog is the log as the replica core reads it.
type replicaLog struct{ *log.Log }

func (l replicaLog) EpochStart(epoch int32) (int64, bool) {
	start, ok := int64(0), false
	for e := range l.Epochs() {
		if e.Epoch == epoch {
			start, ok = e.StartOffset, true
		}
	}
	return start, ok
}

// apply carries out, in order, what the replica core asked for in the
// steps since it was last asked: trace lines, probes, ISR proposals,
// truncations (reported back), wake-ups. A truncation's error is the
// log's; the caller halts on it.
func (p *partition) apply() error {
	for {
		effects := p.r.Ready()
		if len(effects) == 0 {
			return nil
		}
		for _, e := range effects {
			switch e.Kind {
			case replica.TraceLine:
				p.b.e.Log(e.Event, e.Fields...)
			case replica.HitProbe:
				p.b.e.Probe(e.Probe, p.tp.String())
			case replica.ProposeISR:
				p.sendAlterPartition(e)
			case replica.Wake:
				p.wakeWaiters()
			case replica.Truncate:
				before := p.log.LogEndOffset()
				end, err := p.log.TruncateTo(e.To)
				if err != nil {
					return fmt.Errorf("truncate %v to %d: %w", p.tp, e.To, err)
				}
				p.r.Truncated(before, end, e.How, e.Why)
			case replica.MoveLogStart:
				var err error
				if e.Fully {
					err = p.log.TruncateFullyAndStartAt(e.To)
				} else {
					err = p.log.IncrementLogStartOffset(e.To)
				}
				if err != nil {
					return fmt.Errorf("move the log start of %v to %d: %w", p.tp, e.To, err)
				}
				p.b.e.Log("log-start-moved", "partition", p.tp.String(), "to", e.To, "fully", e.Fully)
				p.r.LogStartMoved(e.To)
			}
		}
	}
}

// openPartition opens this broker's replica of ps, of the topic with
// topicID. A log on disk that names another topic id is a stray of a topic
// deleted while this broker was away (or while it crashed deleting it),
// and is deleted first, as Kafka's LogManager does with stray logs.
func (b *Broker) openPartition(ps metadata.Partition, topicID [16]byte) (*partition, error) {
	tp := ps.TopicPartition
	d := b.e.Disk()
	had, ok, err := log.TopicID(d, tp.Topic, tp.Partition)
	if err != nil || (ok && had != topicID) {
		b.e.Log("stray-log-deleted", "partition", tp.String(), "why", strayWhy(err))
		if err := log.Delete(d, tp.Topic, tp.Partition); err != nil {
			return nil, fmt.Errorf("delete stray log %v: %w", tp, err)
		}
		ok = false
	}
	if !ok {
		if err := log.SetTopicID(d, tp.Topic, tp.Partition, topicID); err != nil {
			return nil, fmt.Errorf("open log %v: %w", tp, err)
		}
	}
	l, err := log.Open(d, b.logConfig(ps.TopicPartition))
	if err != nil {
		return nil, fmt.Errorf("open log %v: %w", ps.TopicPartition, err)
	}
	if r := l.Recovery(); r.TruncatedAt >= 0 {
		b.e.Log("log-recovery-truncated", "partition", ps.TopicPartition.String(), "at", r.TruncatedAt, "bytes", r.BytesTruncated, "reason", r.Reason)
		if strings.Contains(r.Reason, "crc") || strings.Contains(r.Reason, "checksum") {
			b.e.Probe(probe.CorruptBatchDetected, ps.TopicPartition.String())
		}
	}
	cfg := b.cfg
	p := &partition{b: b, tp: ps.TopicPartition, topicID: topicID, log: l}
	p.r = replica.New(replica.Config{
		ID: b.opts.ID, Name: ps.TopicPartition.String(),
		ReplicaLagTimeMax:                cfg.ReplicaLagTimeMax,
		LeaderEpochTruncation:            cfg.LeaderEpochTruncation,
		FetchEpochValidation:             cfg.FetchEpochValidation,
		HighWatermarkIgnoresFollowers:    cfg.Defects.Has(defect.HighWatermarkIgnoresFollowers),
		HighWatermarkIgnoresPendingISR:   cfg.Defects.Has(defect.HighWatermarkIgnoresPendingISR),
		ISRExpansionIgnoresHighWatermark: cfg.Defects.Has(defect.ISRExpansionIgnoresHighWatermark),
		FollowerTruncatesToHighWatermark: cfg.Defects.Has(defect.FollowerTruncatesToHighWatermark),
		LSOIgnoresOpenTransactions:       cfg.Defects.Has(defect.LastStableOffsetIgnoresOpenTransactions),
	}, replicaLog{l}, l.HighWatermarkCheckpoint())
	b.partitions[ps.TopicPartition] = p
	return p, nil
}

// becomeLeader takes over as leader in ps's epoch: the epoch starts at the
// log end, then the core takes over (replica.BecomeLeader).
func (p *partition) becomeLeader(ps metadata.Partition) error {
	b := p.b
	b.stopFetching(p.tp)
	if err := p.log.AssignEpoch(ps.LeaderEpoch); err != nil {
		return fmt.Errorf("become leader of %v in epoch %d: %w", p.tp, ps.LeaderEpoch, err)
	}
	p.r.BecomeLeader(assignment(ps), b.e.WallClock()) // the ISR lag's clock
	return p.apply()
}

// becomeFollower starts following ps.Leader: truncated to the high
// watermark at once (kip101.leader.epoch.truncation off) or by the
// leader's epochs before the first fetch.
func (p *partition) becomeFollower(ps metadata.Partition) error {
	p.b.stopFetching(p.tp)
	p.r.BecomeFollower(assignment(ps))
	if err := p.apply(); err != nil {
		return err
	}
	p.b.startFetching(p)
	return nil
}

// becomeOffline: no leader. The replica stops serving and fetching.
func (p *partition) becomeOffline(ps metadata.Partition) error {
	p.b.stopFetching(p.tp)
	p.r.BecomeOffline(assignment(ps))
	return p.apply()
}

// updateISR adopts a newer ISR for the leader's own epoch.
func (p *partition) updateISR(ps metadata.Partition) error {
	p.r.UpdateISR(assignment(ps))
	return p.apply()
}

// appended tells the core the leader's log grew (a leader alone in its
// ISR commits at once).
func (p *partition) appended() {
	p.r.Appended()
	if err := p.apply(); err != nil {
		p.b.e.Halt(err.Error()) // Appended truncates nothing: never
	}
}

// wakeWaiters lets parked requests check again.
func (p *partition) wakeWaiters() {
	if len(p.waiters) == 0 {
		return
	}
	// ws is iterated while wake may park new waiters (or wake this
	// partition again): the kept ones go to the spare array, which is nil
	// until the pass ends and ws, cleared, becomes the spare.
	ws := p.waiters
	p.waiters, p.spareWaiters = p.spareWaiters[:0], nil
	for _, w := range ws {
		if !w.wake() {
			p.waiters = append(p.waiters, w)
		}
	}
	clear(ws)
	p.spareWaiters = ws[:0]
}

// lastStableOffset is the LSO for read_committed consumers.
func (p *partition) lastStableOffset() int64 { return p.r.LastStableOffset() }

// invariantViolation names the first invariant this replica breaks, or is
// "" if it is in a possible state; Broker.checkInvariants asks after every
// step: the core's replication invariants, then the leader's epoch cache.
func (p *partition) invariantViolation() string {
	if p.log == nil {
		return ""
	}
	if msg := p.r.InvariantViolation(); msg != "" || !p.leading() {
		return msg
	}
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
