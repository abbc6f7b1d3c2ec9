package client

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionQueue is one partition's accumulator (Kafka's deque of
// batches) and, with idempotence, its sequence bookkeeping (Kafka's
// TxnPartitionEntry).
type partitionQueue struct {
	tp    TopicPartition
	queue []*batch // waiting to be sent, head first; the last may take more records
	wire  []*batch // in produce requests awaiting an answer

	// Idempotence.
	ident         identity // the producer id and epoch its sequences belong to
	nextSeq       int32    // the sequence the next new batch gets
	lastAcked     int32    // the last sequence acknowledged, -1 none
	sequenced     []*batch // batches with a sequence, not yet completed, by sequence
	unresolvedSeq int32    // the sequence after a batch that expired with its fate unknown, -1 none
	rewrite       bool     // an epoch bump must restart this partition's sequences
}

// batch is one partition's records sent together: the unit of produce
// requests, retries and sequence numbers.
type batch struct {
	q       *partitionQueue
	recs    []*pendingRecord
	bytes   int
	created env.Time
	closed  bool // takes no more records (sent once, or full)

	retries      int      // retries used
	lastAttempt  env.Time // when the last attempt ended; 0 before any
	onWire       bool
	maybeWritten bool  // some attempt ended without knowing whether it was appended
	lastErr      error // why the last attempt failed
	done         bool

	// Idempotence: the sequence is assigned when the batch is first
	// drained and kept for every retry, so the leader recognises a retry
	// of a batch it already appended.
	ident    identity
	baseSeq  int32
	seqReset bool // its sequence was rewritten by an epoch bump

	encoded    []byte
	encodedFor struct {
		ident identity
		seq   int32
	}
}

func (q *partitionQueue) add(pr *pendingRecord, batchSize int) {
	if n := len(q.queue); n > 0 {
		if b := q.queue[n-1]; !b.closed && b.bytes+pr.size <= batchSize {
			b.recs = append(b.recs, pr)
			b.bytes += pr.size
			b.closed = b.bytes >= batchSize
			return
		}
	}
	b := &batch{q: q, recs: []*pendingRecord{pr}, bytes: record.BatchHeaderSize + pr.size, created: pr.created, baseSeq: record.NoSequence, ident: noIdentity}
	b.closed = b.bytes >= batchSize
	q.queue = append(q.queue, b)
}

func (b *batch) lastSeq() int32 { return record.IncrementSequence(b.baseSeq, int32(len(b.recs)-1)) }

// unresolved reports whether the batch, ending now without success, may
// nonetheless have been appended: an attempt is on the wire, or one ended
// without an answer that said.
func (b *batch) unresolved() bool { return b.onWire || b.maybeWritten }

// encode returns the batch's RecordBatch, built once per producer identity
// and sequence so that every retry re-sends the same bytes.
func (b *batch) encode(codec record.Compression, transactional bool) []byte {
	if b.encoded != nil && b.encodedFor.ident == b.ident && b.encodedFor.seq == b.baseSeq {
		return b.encoded
	}
	h := record.NewHeader()
	first := b.recs[0].rec.Timestamp.UnixMilli()
	h.FirstTimestamp = first
	h.Attributes |= record.Attributes(codec)
	if b.baseSeq != record.NoSequence {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = b.ident.id, b.ident.epoch, b.baseSeq
	}
	if transactional {
		h.Attributes |= record.AttrTransactional
	}
	recs := make([]record.Record, len(b.recs))
	for i, pr := range b.recs {
		recs[i] = record.Record{
			TimestampDelta: pr.rec.Timestamp.UnixMilli() - first,
			Key:            pr.rec.Key,
			Value:          pr.rec.Value,
			Headers:        pr.rec.Headers,
		}
	}
	enc, err := record.Encode(h, recs)
	if err != nil {
		panic("client: encoding a batch failed: " + err.Error()) // only for codecs Validate refuses
	}
	b.encoded = enc
	b.encodedFor.ident, b.encodedFor.seq = b.ident, b.baseSeq
	return enc
}

// wake schedules a sender pass in an event of its own, so that every Send
// of one event can join one batch.
func (p *Producer) wake() {
	if p.runQueued || p.closed {
		return
	}
	p.runQueued = true
	p.e.AfterFunc(0, func() {
		p.runQueued = false
		p.run()
	})
}

const never = env.Time(math.MaxInt64)

// run is one pass of Kafka's sender loop: place records whose metadata
// arrived, expire what passed delivery.timeout.ms, keep the producer id
// and sequences in order, and send every ready batch to a leader with room
// for another request.
func (p *Producer) run() {
	if p.closed {
		return
	}
	defer p.deliver()
	now := p.e.WallClock()
	next := never
	p.placeAwaiting(now, &next)
	p.expire(now, &next)
	if t := p.txn; t != nil && t.sweep {
		t.sweep = false
		p.failUnsent(t.lastErr)
	}
	if p.fatal == nil && p.maintainIdempotence(now, &next) {
		p.sendReady(now, &next)
	}
	p.arm(now, next)
}

// arm sets the sender's timer for next, unless an earlier one is set.
func (p *Producer) arm(now, next env.Time) {
	if next == never || (p.timer != 0 && p.timerAt <= next) {
		return
	}
	if p.timer != 0 {
		p.e.Cancel(p.timer)
	}
	p.timerAt = next
	p.timer = p.e.AfterFunc(next.Sub(now), func() {
		p.timer = 0
		p.run()
	})
}

func (p *Producer) placeAwaiting(now env.Time, next *env.Time) {
	if len(p.awaiting) == 0 {
		return
	}
	if p.awaitingTried == p.cl.applied {
		// The metadata every awaiting record failed with is unchanged, so
		// none can be placed: only the oldest can have run out of time
		// (records await in send order, all with one delivery.timeout.ms).
		// Placing each again on every send made a long wait quadratic.
		n := 0
		for n < len(p.awaiting) && now >= p.awaiting[n].created.Add(p.opts.DeliveryTimeout) {
			pr := p.awaiting[n]
			p.complete(pr, SendResult{Partition: -1, Offset: -1, Outcome: Fail,
				Err: failed(fmt.Errorf("%w: no metadata for topic %q", ErrDeliveryTimeout, pr.rec.Topic))})
			n++
		}
		if n > 0 {
			rest := copy(p.awaiting, p.awaiting[n:])
			clear(p.awaiting[rest:])
			p.awaiting = p.awaiting[:rest]
		}
		if len(p.awaiting) > 0 {
			*next = min(*next, p.awaiting[0].created.Add(p.opts.DeliveryTimeout))
			p.cl.requestUpdate()
		}
		return
	}
	p.awaitingTried = p.cl.applied
	kept := p.awaiting[:0]
	for _, pr := range p.awaiting {
		switch {
		case p.place(pr):
		case now >= pr.created.Add(p.opts.DeliveryTimeout):
			p.complete(pr, SendResult{Partition: -1, Offset: -1, Outcome: Fail,
				Err: failed(fmt.Errorf("%w: no metadata for topic %q", ErrDeliveryTimeout, pr.rec.Topic))})
		default:
			*next = min(*next, pr.created.Add(p.opts.DeliveryTimeout))
			kept = append(kept, pr)
		}
	}
	clear(p.awaiting[len(kept):])
	p.awaiting = kept
	if len(kept) > 0 {
		p.cl.requestUpdate() // the topic may appear: ask again, within retry.backoff.ms
	}
}

// expire fails every batch past delivery.timeout.ms: Info if a send of it
// may have landed (one is on the wire, or one ended without an answer),
// Fail if none can have.
func (p *Producer) expire(now env.Time, next *env.Time) {
	for _, q := range p.ordered {
		for _, b := range slices.Concat(q.wire, q.queue) {
			deadline := b.created.Add(p.opts.DeliveryTimeout)
			if now < deadline {
				*next = min(*next, deadline)
				continue
			}
			err := fmt.Errorf("%w after %v (%d retries)", ErrDeliveryTimeout, p.opts.DeliveryTimeout, b.retries)
			if b.lastErr != nil {
				err = fmt.Errorf("%w after %v (%d retries, the last after %w)", ErrDeliveryTimeout, p.opts.DeliveryTimeout, b.retries, b.lastErr)
			}
			unknown := b.unresolved()
			p.finishBatch(b, unknown, err)
			p.sequenceFailed(b, unknown)
		}
	}
}

// finishBatch ends a batch without success; every record gets Info if
// maybe, else Fail.
func (p *Producer) finishBatch(b *batch, maybe bool, cause error) {
	if b.done {
		return
	}
	b.done = true
	b.q.queue = deleteBatch(b.q.queue, b)
	outcome := Fail
	if maybe {
		outcome = Info
	}
	err := outcomeErr(maybe, cause)
	for _, pr := range b.recs {
		p.complete(pr, SendResult{Partition: b.q.tp.Partition, Offset: -1, Outcome: outcome, Err: err})
	}
}

// succeedBatch reports every record of b appended at base (-1: unknown).
func (p *Producer) succeedBatch(b *batch, base int64) {
	if b.done {
		return
	}
	b.done = true
	b.q.queue = deleteBatch(b.q.queue, b)
	for i, pr := range b.recs {
		off := int64(-1)
		if base >= 0 {
			off = base + int64(i)
		}
		p.complete(pr, SendResult{Partition: b.q.tp.Partition, Offset: off, Outcome: OK})
	}
}

func deleteBatch(bs []*batch, b *batch) []*batch {
	if i := slices.Index(bs, b); i >= 0 {
		return slices.Delete(bs, i, i+1)
	}
	return bs
}

// sendReady drains ready batches into produce requests, one request per
// leader with room under max.in.flight.requests.per.connection, at most one
// batch per partition per request, as Kafka's RecordAccumulator.drain does.
func (p *Producer) sendReady(now env.Time, next *env.Time) {
	byLeader := map[int32][]*partitionQueue{}
	var leaders []int32
	for _, q := range p.ordered {
		if len(q.queue) == 0 {
			continue
		}
		leader, _, ok := p.cl.leader(q.tp)
		if !ok {
			p.cl.want(q.tp.Topic)
			p.cl.requestUpdate()
			continue
		}
		if !p.batchReady(q, now, next) {
			continue
		}
		if byLeader[leader] == nil {
			leaders = append(leaders, leader)
		}
		byLeader[leader] = append(byLeader[leader], q)
	}
	slices.Sort(leaders)
	for _, leader := range leaders {
		for p.requests[leader] < p.opts.MaxInFlightRequestsPerConnection {
			conn, ok := p.cl.ready(leader)
			if !ok {
				break // woken when the connection is up
			}
			batches := p.drain(leader, byLeader[leader], now, next)
			if len(batches) == 0 {
				break
			}
			p.sendBatches(leader, conn, batches)
			if p.closed {
				return
			}
		}
	}
}

// batchReady is Kafka's ready check of a partition's head batch: full,
// lingered long enough, flushed, or a retry past its backoff.
func (p *Producer) batchReady(q *partitionQueue, now env.Time, next *env.Time) bool {
	b := q.queue[0]
	if b.lastAttempt != 0 {
		at := b.lastAttempt.Add(p.opts.RetryBackoff)
		if now < at {
			*next = min(*next, at)
			return false
		}
		return true
	}
	if len(q.queue) > 1 || b.closed || len(p.flushes) > 0 {
		return true
	}
	at := b.created.Add(p.opts.Linger)
	if now < at {
		*next = min(*next, at)
		return false
	}
	return true
}

// drain takes at most one batch from each ready partition of a leader,
// starting where the last drain for it stopped, up to max.request.size.
func (p *Producer) drain(leader int32, qs []*partitionQueue, now env.Time, next *env.Time) []*batch {
	var out []*batch
	size := 0
	start := p.drainFrom[leader]
	for i := range qs {
		q := qs[(start+i)%len(qs)]
		if len(q.queue) == 0 || !p.batchReady(q, now, next) || !p.drainable(q, q.queue[0]) {
			continue
		}
		b := q.queue[0]
		if len(out) > 0 && size+b.bytes > p.opts.MaxRequestSize {
			p.drainFrom[leader] = (start + i) % len(qs)
			return out
		}
		q.queue = q.queue[1:]
		b.closed = true
		p.assignSequence(q, b)
		size += b.bytes
		out = append(out, b)
	}
	p.drainFrom[leader] = start + 1
	return out
}

// drainable reports whether b, the head of q, may go now.
func (p *Producer) drainable(q *partitionQueue, b *batch) bool {
	if p.opts.MaxInFlightRequestsPerConnection == 1 && len(q.wire) > 0 {
		return false // Kafka mutes the partition to guarantee order
	}
	// A partition not yet added with AddPartitionsToTxn waits here.
	if p.txn != nil && !p.txn.canDrain(q, b) {
		return false
	}
	if !p.opts.EnableIdempotence {
		return true
	}
	return p.idempotentDrainable(q, b)
}

// sendBatches sends one produce request.
func (p *Producer) sendBatches(leader int32, conn *rpc.Client, batches []*batch) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = p.opts.Acks
	req.TimeoutMillis = int32(p.opts.RequestTimeout / time.Millisecond)
	req.TransactionID = p.transactionalID
	for _, b := range batches {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != b.q.tp.Topic {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = b.q.tp.Topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = b.q.tp.Partition
		rp.Records = b.encode(p.opts.CompressionType, p.txn != nil)
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
		b.onWire = true
		b.q.wire = append(b.q.wire, b)
	}
	p.requests[leader]++
	if p.opts.Acks == AcksNone {
		conn.Send(req, func(err error) { p.handleResponse(leader, batches, nil, err) })
		return
	}
	conn.Do(req, p.opts.RequestTimeout, func(resp kmsg.Response, err error) { p.handleResponse(leader, batches, resp, err) })
}

// handleResponse settles every batch of one produce request.
func (p *Producer) handleResponse(leader int32, batches []*batch, resp kmsg.Response, err error) {
	defer p.deliver()
	p.requests[leader]--
	for _, b := range batches {
		b.onWire = false
		b.q.wire = deleteBatch(b.q.wire, b)
	}
	if p.closed {
		return
	}
	defer p.wake()
	if p.txn != nil {
		defer p.txn.maybeIdle() // an abort waits for the wire to empty
	}
	if err != nil {
		// Sent and unanswered: it may have been appended. Not sent (the
		// connection was up when handed over, so only a client shut
		// meanwhile) or unsupported: it was not.
		maybe := callIndefinite(err)
		p.cl.requestUpdate()
		for _, b := range batches {
			retry := !errors.Is(err, rpc.ErrUnsupported)
			p.attemptFailed(b, err, maybe, retry)
		}
		return
	}
	if p.opts.Acks == AcksNone {
		for _, b := range batches {
			p.succeedBatch(b, -1)
		}
		return
	}
	answers := map[TopicPartition]*kmsg.ProduceResponseTopicPartition{}
	pr := resp.(*kmsg.ProduceResponse)
	for i := range pr.Topics {
		for j := range pr.Topics[i].Partitions {
			a := &pr.Topics[i].Partitions[j]
			answers[TopicPartition{Topic: pr.Topics[i].Topic, Partition: a.Partition}] = a
		}
	}
	for _, b := range batches {
		a := answers[b.q.tp]
		if a == nil {
			p.attemptFailed(b, fmt.Errorf("produce response without %v", b.q.tp), true, true)
			continue
		}
		p.handlePartition(b, a)
	}
}

// handlePartition settles one batch from its partition's answer.
func (p *Producer) handlePartition(b *batch, a *kmsg.ProduceResponseTopicPartition) {
	code := a.ErrorCode
	switch code {
	case 0:
		p.sequenceAcked(b)
		p.succeedBatch(b, a.BaseOffset)
		return
	case kerr.DuplicateSequenceNumber.Code:
		// An older broker's answer to a retry it had already appended: a
		// success whose offset it did not keep.
		p.sequenceAcked(b)
		p.succeedBatch(b, -1)
		return
	}
	err := codeErr(code)
	if invalidMetadata(code) {
		p.cl.invalidate(b.q.tp)
	}
	switch {
	case code == kerr.ProducerFenced.Code || (code == kerr.InvalidProducerEpoch.Code && p.txn == nil) ||
		(p.txn != nil && (code == kerr.TransactionalIDAuthorizationFailed.Code || code == kerr.ClusterAuthorizationFailed.Code)):
		p.attemptFailed(b, err, false, false)
		p.setFatal(fmt.Errorf("producer %d epoch %d fenced: %w", b.ident.id, b.ident.epoch, err))
		return
	case code == kerr.InvalidProducerEpoch.Code:
		// KIP-588: for a transactional producer this is abortable — the
		// coordinator may have aborted the transaction on its timeout; the
		// abort says PRODUCER_FENCED if a newer instance exists.
		p.attemptFailed(b, err, false, false)
		return
	}
	p.attemptFailed(b, err, produceIndefinite(code), p.canRetry(b, code, err, a.LogStartOffset))
}

// canRetry is Kafka's Sender.canRetry: within delivery.timeout.ms and
// retries, and retriable — for the idempotent producer, OUT_OF_ORDER_SEQUENCE
// and UNKNOWN_PRODUCER_ID are retried too, with an epoch bump when they
// reveal a gap (TransactionManager.canRetry).
func (p *Producer) canRetry(b *batch, code int16, err error, logStartOffset int64) bool {
	if b.done || p.fatal != nil || b.retries >= p.opts.Retries || p.e.WallClock() >= b.created.Add(p.opts.DeliveryTimeout) {
		return false
	}
	if p.opts.EnableIdempotence && b.baseSeq != record.NoSequence {
		if retry, decided := p.idempotentRetry(b, code, logStartOffset); decided {
			return retry
		}
	}
	return retriable(err)
}

// attemptFailed ends one attempt of b without success: retried (back in
// its queue, in sequence order with idempotence, else at the front — which
// is how Kafka reorders batches without idempotence) or finished.
func (p *Producer) attemptFailed(b *batch, cause error, maybe, retry bool) {
	if maybe {
		b.maybeWritten = true
	}
	b.lastErr = cause
	if b.done {
		return // expired while on the wire; its outcome is out
	}
	if retry && p.fatal == nil && b.retries < p.opts.Retries && p.e.WallClock() < b.created.Add(p.opts.DeliveryTimeout) {
		b.retries++
		b.lastAttempt = p.e.WallClock()
		p.reenqueue(b)
		return
	}
	p.finishBatch(b, b.maybeWritten, cause)
	p.sequenceFailed(b, b.maybeWritten)
}

func (p *Producer) reenqueue(b *batch) {
	q := b.q
	if p.opts.EnableIdempotence && b.baseSeq != record.NoSequence {
		i := 0
		for i < len(q.queue) && q.queue[i].baseSeq != record.NoSequence && q.queue[i].baseSeq < b.baseSeq {
			i++
		}
		q.queue = slices.Insert(q.queue, i, b)
		return
	}
	q.queue = slices.Insert(q.queue, 0, b)
}

// setFatal stops the producer: nothing more is sent. Queued batches fail
// (Info if a send of them may have landed); batches on the wire complete
// with their answers.
func (p *Producer) setFatal(err error) {
	if p.fatal != nil {
		return
	}
	p.fatal = err
	p.e.Log("producer-fatal", "client", p.opts.ClientID, "error", err.Error())
	if p.txn != nil {
		p.txn.state = txnFatal
		defer p.txn.stop(err, false)
	}
	for _, pr := range p.awaiting {
		p.complete(pr, SendResult{Partition: -1, Offset: -1, Outcome: Fail, Err: failed(err)})
	}
	p.awaiting = nil
	for _, q := range p.ordered {
		for _, b := range slices.Clone(q.queue) {
			p.finishBatch(b, b.maybeWritten, err)
		}
	}
}
