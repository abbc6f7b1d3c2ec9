package broker

import (
	"errors"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetcher replicates every partition this broker follows from one leader:
// first truncating each where needed, then fetching in a loop, one request
// in flight at a time, long-polled by the leader.
type fetcher struct {
	b        *Broker
	leader   int32
	parts    map[metadata.TopicPartition]*fetchState
	order    []metadata.TopicPartition // parts' keys, sorted: the order kick sweeps them in
	inflight bool
	timer    env.TimerID
}

type fetchState struct {
	p     *partition
	epoch int32    // the leader epoch this state was made for
	delay env.Time // do not fetch before (after an error)
}

func (b *Broker) startFetching(p *partition) {
	f := b.fetchers[p.leader()]
	if f == nil {
		f = &fetcher{b: b, leader: p.leader(), parts: map[metadata.TopicPartition]*fetchState{}}
		b.fetchers[p.leader()] = f
	}
	if _, ok := f.parts[p.tp]; !ok {
		i, _ := slices.BinarySearchFunc(f.order, p.tp, metadata.TopicPartition.Compare)
		f.order = slices.Insert(f.order, i, p.tp)
	}
	f.parts[p.tp] = &fetchState{p: p, epoch: p.epoch()}
	f.kick()
}

func (b *Broker) stopFetching(tp metadata.TopicPartition) {
	for _, f := range b.fetchers {
		if _, ok := f.parts[tp]; ok {
			delete(f.parts, tp)
			i, _ := slices.BinarySearchFunc(f.order, tp, metadata.TopicPartition.Compare)
			f.order = slices.Delete(f.order, i, i+1)
		}
	}
}

// live reports whether s still describes what its partition should do.
func (s *fetchState) live(f *fetcher) bool {
	p := s.p
	return p.b.partitions[p.tp] == p && p.following() && p.leader() == f.leader && p.epoch() == s.epoch && f.parts[p.tp] == s
}

// kick sends the next request unless one is in flight or waiting.
func (f *fetcher) kick() {
	if f.inflight || f.timer != 0 || len(f.parts) == 0 {
		return
	}
	if _, ok := f.b.peer(f.leader); !ok {
		f.retryIn(f.b.cfg.ReplicaFetchBackoff)
		return
	}
	now := f.b.e.Now()
	var truncate []*fetchState
	fetch := make([]*fetchState, 0, len(f.order))
	var wake env.Time
	if len(f.order) != len(f.parts) {
		panic(invariantf("fetcher from %d: %d partitions in order, %d fetched", f.leader, len(f.order), len(f.parts)))
	}
	for _, tp := range f.order {
		s := f.parts[tp]
		switch {
		case now < s.delay:
			if wake == 0 || s.delay < wake {
				wake = s.delay
			}
		case s.p.r.TruncatePending():
			truncate = append(truncate, s)
		default:
			fetch = append(fetch, s)
		}
	}
	switch {
	case len(truncate) > 0:
		f.sendOffsetForLeaderEpoch(truncate)
	case len(fetch) > 0:
		f.sendFetch(fetch)
	case wake != 0:
		f.retryIn(wake.Sub(now))
	}
}

func (f *fetcher) retryIn(d time.Duration) {
	if f.timer != 0 {
		return
	}
	f.timer = f.b.e.AfterFunc(d, func() { f.timer = 0; f.kick() })
}

func (f *fetcher) backoff(s *fetchState) {
	s.delay = f.b.e.Now().Add(f.b.cfg.ReplicaFetchBackoff)
}

func (f *fetcher) requestTimeout() time.Duration {
	return f.b.cfg.ReplicaFetchWaitMax + 5*time.Second
}

func (f *fetcher) sendOffsetForLeaderEpoch(states []*fetchState) {
	b := f.b
	client, _ := b.peer(f.leader)
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = b.opts.ID
	var asked []*fetchState
	for _, s := range states {
		epoch := s.p.log.LatestEpoch()
		if epoch < 0 {
			// An empty epoch cache: nothing of ours to reconcile.
			s.p.r.SkipTruncation()
			continue
		}
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = s.p.tp.Topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = s.p.tp.Partition
		rp.LeaderEpoch = epoch
		rp.CurrentLeaderEpoch = -1
		if b.cfg.FetchEpochValidation {
			rp.CurrentLeaderEpoch = s.epoch
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		asked = append(asked, s)
	}
	if len(asked) == 0 {
		f.kick()
		return
	}
	f.inflight = true
	client.Do(req, f.requestTimeout(), func(resp kmsg.Response, err error) {
		f.inflight = false
		if err != nil {
			for _, s := range asked {
				f.backoff(s)
			}
			f.kick()
			return
		}
		answers := map[metadata.TopicPartition]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
		for _, rt := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
			for _, rp := range rt.Partitions {
				answers[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp
			}
		}
		for _, s := range asked {
			if !s.live(f) {
				continue
			}
			a, ok := answers[s.p.tp]
			if !ok || a.ErrorCode != 0 {
				f.backoff(s)
				continue
			}
			s.p.r.EpochAnswered(a.LeaderEpoch, a.EndOffset)
			if err := s.p.apply(); err != nil {
				b.e.Halt(err.Error())
				return
			}
		}
		f.kick()
	})
}

func (f *fetcher) sendFetch(states []*fetchState) {
	b := f.b
	client, _ := b.peer(f.leader)
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = b.opts.ID
	req.ReplicaState.ID, req.ReplicaState.Epoch = b.opts.ID, -1 // where v15+ carries it
	req.MaxWaitMillis = int32(b.cfg.ReplicaFetchWaitMax / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 10 << 20
	req.Topics = make([]kmsg.FetchRequestTopic, 0, len(states))
	parts := make([]kmsg.FetchRequestTopicPartition, len(states)) // one partition a topic, one array for all
	for i, s := range states {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = s.p.tp.Topic, s.p.topicID // by id from v13
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = s.p.tp.Partition
		rp.FetchOffset = s.p.log.LogEndOffset()
		rp.LogStartOffset = s.p.log.LogStartOffset()
		rp.PartitionMaxBytes = 1 << 20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = -1, -1
		if b.cfg.FetchEpochValidation {
			rp.CurrentLeaderEpoch = s.epoch
			rp.LastFetchedEpoch = s.p.log.LatestEpoch()
		}
		parts[i] = rp
		rt.Partitions = parts[i : i+1 : i+1]
		req.Topics = append(req.Topics, rt)
	}
	f.inflight = true
	client.Do(req, f.requestTimeout(), func(resp kmsg.Response, err error) {
		f.inflight = false
		defer b.checkInvariants()
		if err != nil {
			for _, s := range states {
				f.backoff(s)
			}
			f.kick()
			return
		}
		for _, rt := range resp.(*kmsg.FetchResponse).Topics {
			topic := rt.Topic
			if resp.GetVersion() >= 13 {
				topic = b.topicNames[rt.TopicID] // v13+ answers name topics by id only
			}
			for _, rp := range rt.Partitions {
				s := f.parts[metadata.TopicPartition{Topic: topic, Partition: rp.Partition}]
				if s == nil || !s.live(f) {
					continue
				}
				if err := f.handlePartition(s, rp); err != nil {
					b.haltOnStorageError(err.Error())
					return
				}
			}
		}
		f.kick()
	})
}

func (f *fetcher) handlePartition(s *fetchState, rp kmsg.FetchResponseTopicPartition) error {
	p := s.p
	switch {
	case rp.ErrorCode == kerr.OffsetOutOfRange.Code:
		// Our log runs past the leader's (without epochs this is how a
		// follower learns it must cut: the old, lossy path), or ends below
		// the leader's log start (it starts over there).
		if p.r.OffsetOutOfRange(rp.HighWatermark, rp.LogStartOffset) {
			return p.apply()
		}
		f.backoff(s)
		return nil
	case rp.ErrorCode != 0:
		f.backoff(s)
		return nil
	case rp.DivergingEpoch.Epoch >= 0:
		p.r.Diverged(rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		return p.apply()
	}
	if len(rp.RecordBatches) > 0 {
		if _, err := p.log.AppendAsFollower(rp.RecordBatches); err != nil {
			if isStorageError(err) {
				return err
			}
			p.b.e.Log("follower-append-refused", "partition", p.tp.String(), "error", err.Error())
			if errors.Is(err, log.ErrCorruptMessage) {
				p.b.e.Probe(probe.CorruptBatchDetected, p.tp.String())
			}
			f.backoff(s)
			return nil
		}
	}
	p.r.LeaderHighWatermark(rp.HighWatermark)
	p.r.LeaderLogStart(rp.LogStartOffset)
	return p.apply()
}

func isStorageError(err error) bool { return errors.Is(err, log.ErrKafkaStorage) }
