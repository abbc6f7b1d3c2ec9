package client

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetched is one partition of a fetch request, as sent.
type fetched struct {
	a      *assignment
	gen    uint64
	offset int64
}

// sendFetches sends one fetch per leader for the positioned partitions
// with nothing buffered and no request out, as Kafka's Fetcher does: one
// fetch in flight per broker.
func (c *Consumer) sendFetches(now env.Time, next *env.Time) {
	byLeader := map[int32][]*assignment{}
	var leaders []int32
	for _, a := range c.ordered {
		if a.state != positioned || a.inflight || c.hasBuffered(a) {
			continue
		}
		if now < a.backoffAt {
			*next = min(*next, a.backoffAt)
			continue
		}
		leader, _, ok := c.cl.leader(a.tp)
		if !ok {
			c.cl.requestUpdate()
			continue
		}
		if c.fetching[leader] {
			continue
		}
		if byLeader[leader] == nil {
			leaders = append(leaders, leader)
		}
		byLeader[leader] = append(byLeader[leader], a)
	}
	slices.Sort(leaders)
	for _, leader := range leaders {
		c.fetch(leader, byLeader[leader])
	}
}

func (c *Consumer) fetch(leader int32, as []*assignment) {
	conn, ok := c.cl.broker(leader)
	if !ok {
		c.cl.requestUpdate()
		return
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(c.opts.FetchMaxWait / time.Millisecond)
	req.MinBytes = c.opts.FetchMinBytes
	req.MaxBytes = c.opts.FetchMaxBytes
	req.IsolationLevel = int8(c.opts.IsolationLevel)
	req.SessionID, req.SessionEpoch = 0, -1 // full fetches, no session
	sent := make([]fetched, 0, len(as))
	for _, a := range as {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != a.tp.Topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = a.tp.Topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = a.tp.Partition
		rp.FetchOffset = a.position
		rp.CurrentLeaderEpoch = c.cl.leaderEpoch(a.tp)
		// The epoch of the last record returned: the leader tells us if its
		// log diverged below our position (KIP-320 validation, carried by
		// the fetch as KIP-595 followers do, instead of a separate
		// OffsetForLeaderEpoch round trip).
		rp.LastFetchedEpoch = a.epoch
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = c.opts.MaxPartitionFetchBytes
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
		a.inflight = true
		sent = append(sent, fetched{a: a, gen: a.gen, offset: a.position})
	}
	c.fetching[leader] = true
	conn.Do(req, c.opts.RequestTimeout, func(resp kmsg.Response, err error) {
		c.handleFetch(leader, sent, resp, err)
	})
}

func (c *Consumer) handleFetch(leader int32, sent []fetched, resp kmsg.Response, err error) {
	defer c.deliver()
	c.fetching[leader] = false
	for _, s := range sent {
		s.a.inflight = false
	}
	if c.closed {
		return
	}
	defer c.wake()
	now := c.e.WallClock()
	if err != nil {
		c.cl.requestUpdate()
		for _, s := range sent {
			s.a.backoffAt = now.Add(c.opts.RetryBackoff)
		}
		return
	}
	answers := map[TopicPartition]*kmsg.FetchResponseTopicPartition{}
	fr := resp.(*kmsg.FetchResponse)
	for i := range fr.Topics {
		for j := range fr.Topics[i].Partitions {
			p := &fr.Topics[i].Partitions[j]
			answers[TopicPartition{Topic: fr.Topics[i].Topic, Partition: p.Partition}] = p
		}
	}
	if fr.ErrorCode != 0 {
		c.e.Log("consumer-fetch-error", "client", c.opts.ClientID, "error", codeErr(fr.ErrorCode).Error())
	}
	for _, s := range sent {
		a := s.a
		if c.assigned[a.tp] != a || a.gen != s.gen || a.state != positioned || a.position != s.offset {
			continue // reassigned, sought or reset meanwhile
		}
		pr := answers[a.tp]
		if pr == nil {
			a.backoffAt = now.Add(c.opts.RetryBackoff)
			continue
		}
		c.handleFetchPartition(a, s.offset, pr, now)
	}
}

func (c *Consumer) handleFetchPartition(a *assignment, offset int64, pr *kmsg.FetchResponseTopicPartition, now env.Time) {
	switch code := pr.ErrorCode; {
	case code == 0:
	case code == kerr.OffsetOutOfRange.Code:
		c.e.Log("consumer-offset-out-of-range", "client", c.opts.ClientID, "partition", a.tp.String(), "offset", offset)
		c.needReset(a, offset, ErrNoOffset)
		return
	case invalidMetadata(code):
		c.cl.invalidate(a.tp)
		a.backoffAt = now.Add(c.opts.RetryBackoff)
		return
	default:
		c.e.Log("consumer-fetch-error", "client", c.opts.ClientID, "partition", a.tp.String(), "error", codeErr(code).Error())
		a.backoffAt = now.Add(c.opts.RetryBackoff)
		return
	}
	if pr.DivergingEpoch.Epoch >= 0 {
		c.truncated(a, pr.DivergingEpoch.Epoch, pr.DivergingEpoch.EndOffset)
		return
	}
	recs, nextOffset, nextEpoch, err := c.decode(a, offset, pr)
	if err != nil {
		c.pollErr = &PartitionError{TopicPartition: a.tp, Offset: offset, Err: err}
		a.backoffAt = now.Add(c.opts.RetryBackoff)
		return
	}
	if len(recs) == 0 {
		// Only control batches or aborted records: step past them.
		if nextOffset > a.position {
			a.position, a.epoch = nextOffset, nextEpoch
		}
		return
	}
	c.buffered = append(c.buffered, &completedFetch{a: a, gen: a.gen, records: recs, nextOffset: nextOffset, nextEpoch: nextEpoch})
}

// needReset handles a position the log does not have: reset by the
// partition's strategy, or, with none, stop the partition and tell the
// next Poll.
func (c *Consumer) needReset(a *assignment, offset int64, cause error) {
	a.gen++
	if c.resetStrategy(a) == OffsetResetNone {
		a.state = awaitingSeek
		c.pollErr = &PartitionError{TopicPartition: a.tp, Offset: offset, Err: cause}
		return
	}
	a.state, a.position, a.epoch = needsReset, -1, -1
}

// truncated handles a leader saying its log diverged from what this
// consumer read: the last epoch both share ends at endOffset. Kafka's
// consumer moves back to that offset when it has a reset strategy and
// raises LogTruncationException when it has none.
func (c *Consumer) truncated(a *assignment, epoch int32, endOffset int64) {
	c.e.Log("consumer-log-truncation", "client", c.opts.ClientID, "partition", a.tp.String(), "position", a.position, "epoch", epoch, "end", endOffset)
	if endOffset >= a.position {
		a.epoch = epoch
		return
	}
	if c.resetStrategy(a) == OffsetResetNone {
		a.gen++
		a.state = awaitingSeek
		c.pollErr = &PartitionError{TopicPartition: a.tp, Offset: a.position, Err: ErrLogTruncation}
		return
	}
	a.gen++
	a.position, a.epoch = endOffset, epoch
}

// decode turns one partition's fetched batches into records from offset
// on: control batches are skipped, and with read_committed so are the
// batches of aborted transactions (Kafka's CompletedFetch). It returns the
// position after the last batch and that batch's leader epoch.
func (c *Consumer) decode(a *assignment, offset int64, pr *kmsg.FetchResponseTopicPartition) ([]Record, int64, int32, error) {
	batches, err := record.Split(pr.RecordBatches)
	if err != nil && !errors.Is(err, record.ErrTruncated) {
		return nil, 0, 0, fmt.Errorf("%w: %v", ErrCorruptRecord, err) // a partial last batch is normal
	}
	readCommitted := c.opts.IsolationLevel == ReadCommitted
	var aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	abortedProducers := map[int64]bool{}
	if readCommitted {
		aborted = slices.Clone(pr.AbortedTransactions)
		slices.SortStableFunc(aborted, func(x, y kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
			return cmp.Compare(x.FirstOffset, y.FirstOffset)
		})
	}
	nextOffset, nextEpoch := offset, a.epoch
	var recs []Record
	for _, b := range batches {
		if b.NextOffset() <= offset {
			continue
		}
		if c.opts.CheckCRCs {
			if err := b.VerifyCRC(); err != nil {
				return nil, 0, 0, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
			}
		}
		if readCommitted {
			for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
				abortedProducers[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
		}
		nextOffset, nextEpoch = b.NextOffset(), b.PartitionLeaderEpoch()
		if b.IsControl() {
			if readCommitted && abortedProducers[b.ProducerID()] {
				if m, err := b.EndTxnMarker(); err == nil && !m.Commit() {
					delete(abortedProducers, b.ProducerID())
				}
			}
			continue
		}
		if readCommitted && b.IsTransactional() && abortedProducers[b.ProducerID()] {
			continue
		}
		rs, err := b.DecodeRecords()
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
		}
		base, first, epoch := b.BaseOffset(), b.FirstTimestamp(), b.PartitionLeaderEpoch()
		logAppendTime := b.Attributes().LogAppendTime()
		for _, r := range rs {
			off := base + int64(r.OffsetDelta)
			if off < offset {
				continue
			}
			ts := first + r.TimestampDelta
			if logAppendTime {
				ts = b.MaxTimestamp()
			}
			recs = append(recs, Record{
				Topic: a.tp.Topic, Partition: a.tp.Partition,
				Key: r.Key, Value: r.Value, Headers: r.Headers,
				Timestamp: env.Time(ts * int64(time.Millisecond)),
				Offset:    off, LeaderEpoch: epoch, LastStableOffset: pr.LastStableOffset,
			})
		}
	}
	return recs, nextOffset, nextEpoch, nil
}
