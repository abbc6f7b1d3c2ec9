package client

import (
	"fmt"
	"math"

	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The idempotent producer, after Kafka's TransactionManager (KIP-98,
// KIP-360):
//
//   - InitProducerId gives a producer id and epoch; nothing is sent before.
//   - Each partition numbers its records from sequence 0; a batch gets its
//     sequence when first drained and keeps it, bytes and all, for every
//     retry, so the leader answers a retry of an appended batch with the
//     original offset.
//   - Retries go in sequence order: a retried batch is re-queued by
//     sequence and sent only when it is the partition's first incomplete
//     one (Kafka's firstInFlightSequence), which drops the partition to one
//     batch in flight until the retries are through.
//   - OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that is not the next one
//     expected (an earlier batch is being retried) is retried as is; for
//     the next one, it reveals a gap: the epoch is bumped.
//     UNKNOWN_PRODUCER_ID (the leader lost the producer's state) is retried
//     with a bump too.
//   - A batch that ends with its fate unknown (delivery timeout or retries
//     exhausted after a send that got no answer) leaves its sequence
//     "unresolved": no new batch of the partition is sent until the batches
//     on the wire are answered; if a later sequence was acknowledged the
//     unknown batch was appended and all is well, otherwise the epoch is
//     bumped (Kafka's maybeResolveSequences).
//   - A batch that fails definitely (it was not appended) leaves a gap:
//     where Kafka rewrites the later batches' sequences down
//     (adjustSequencesDueToFailedBatch), this producer bumps the epoch
//     instead, which KIP-360 also allows and which is simpler to get right.
//   - An epoch bump (done locally, as Kafka's idempotent producer does; a
//     new InitProducerId only when the epoch is exhausted) waits until the
//     affected partitions have nothing on the wire, then restarts their
//     sequences at 0 under the new epoch, keeping the order of their
//     incomplete batches. Other partitions move to the new epoch once their
//     incomplete batches are done.
//   - INVALID_PRODUCER_EPOCH (or PRODUCER_FENCED) is fatal: a newer
//     instance owns the producer id.

// identity is a producer id and epoch.
type identity struct {
	id    int64
	epoch int16
}

var noIdentity = identity{id: record.NoProducerID, epoch: record.NoProducerEpoch}

type idempotence struct {
	current    identity
	requesting bool     // an InitProducerId is out
	retryAt    env.Time // no InitProducerId before this
	bumpWanted bool     // some partition needs its sequences restarted
}

func (i *idempotence) reset() { *i = idempotence{current: noIdentity} }

// maintainIdempotence keeps the producer id and the sequences in order and
// reports whether batches may be drained now.
func (p *Producer) maintainIdempotence(now env.Time, next *env.Time) bool {
	if !p.opts.EnableIdempotence {
		return true
	}
	id := &p.idem
	if id.current.id < 0 && p.txn != nil {
		return false // InitTransactions gets the id
	}
	if id.current.id < 0 {
		switch {
		case id.requesting:
		case now >= id.retryAt:
			p.initProducerID()
		default:
			*next = min(*next, id.retryAt)
		}
		return false
	}
	p.resolveSequences()
	if id.bumpWanted {
		p.maybeBumpEpoch()
	}
	return id.current.id >= 0
}

func (p *Producer) initProducerID() {
	id := &p.idem
	id.requesting = true
	// A transactional producer's goes to its coordinator: transaction.go.
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = p.transactionalID
	req.TransactionTimeoutMillis = math.MaxInt32
	req.ProducerID, req.ProducerEpoch = -1, -1
	conn, timeout := p.cl.leastLoaded()
	conn.Do(req, timeout, func(resp kmsg.Response, err error) {
		defer p.deliver()
		id.requesting = false
		if p.closed {
			return
		}
		defer p.wake()
		if err == nil {
			if code := resp.(*kmsg.InitProducerIDResponse).ErrorCode; code != 0 {
				err = codeErr(code)
				if !retriable(err) {
					p.setFatal(fmt.Errorf("InitProducerId: %w", err))
					return
				}
			}
		}
		if err != nil {
			id.retryAt = p.e.WallClock().Add(p.opts.RetryBackoff)
			p.e.Log("producer-id-failed", "client", p.opts.ClientID, "error", err.Error())
			return
		}
		r := resp.(*kmsg.InitProducerIDResponse)
		id.current = identity{id: r.ProducerID, epoch: r.ProducerEpoch}
		p.e.Log("producer-id", "client", p.opts.ClientID, "id", r.ProducerID, "epoch", r.ProducerEpoch)
		if id.bumpWanted {
			p.rewriteSequences()
		}
	})
}

// resolveSequences settles partitions with an unresolved sequence once
// nothing of theirs is outstanding.
func (p *Producer) resolveSequences() {
	for _, q := range p.ordered {
		if q.unresolvedSeq < 0 || len(q.sequenced) > 0 || len(q.wire) > 0 {
			continue
		}
		if record.IncrementSequence(q.lastAcked, 1) == q.nextSeq {
			// A later batch was acknowledged: the unknown one was appended.
			q.unresolvedSeq = -1
			continue
		}
		q.unresolvedSeq = -1
		p.requestBump(q, "unresolved sequence")
	}
}

func (p *Producer) requestBump(q *partitionQueue, why string) {
	if !q.rewrite {
		p.e.Log("producer-epoch-bump-wanted", "client", p.opts.ClientID, "partition", q.tp.String(), "why", why)
	}
	q.rewrite = true
	if p.txn != nil {
		// Only the coordinator moves a transactional producer's epoch:
		// the transaction aborts, and the epoch is bumped then.
		p.txn.requireEpochBump(why)
		return
	}
	p.idem.bumpWanted = true
}

// maybeBumpEpoch bumps the epoch once the partitions to rewrite have
// nothing on the wire.
func (p *Producer) maybeBumpEpoch() {
	for _, q := range p.ordered {
		if q.rewrite && len(q.wire) > 0 {
			return
		}
	}
	if p.idem.current.epoch == math.MaxInt16 {
		p.idem.current = noIdentity // a new producer id; the rewrite follows it
		return
	}
	p.idem.current.epoch++
	p.rewriteSequences()
}

// rewriteSequences restarts the sequences of the partitions marked for it
// at 0 under the current identity (Kafka's startSequencesAtBeginning).
func (p *Producer) rewriteSequences() {
	cur := p.idem.current
	p.e.Log("producer-epoch-bump", "client", p.opts.ClientID, "id", cur.id, "epoch", cur.epoch)
	for _, q := range p.ordered {
		if !q.rewrite {
			continue
		}
		seq := int32(0)
		for _, b := range q.sequenced {
			b.ident, b.baseSeq, b.seqReset = cur, seq, true
			seq = record.IncrementSequence(seq, int32(len(b.recs)))
		}
		q.ident, q.nextSeq, q.lastAcked, q.unresolvedSeq, q.rewrite = cur, seq, -1, -1, false
	}
	p.idem.bumpWanted = false
}

// syncIdentity moves a partition with nothing incomplete to the current
// identity, its sequences starting at 0 (Kafka's
// maybeUpdateProducerIdAndEpoch).
func (p *Producer) syncIdentity(q *partitionQueue) {
	if q.ident != p.idem.current && len(q.sequenced) == 0 {
		q.ident, q.nextSeq, q.lastAcked, q.unresolvedSeq = p.idem.current, 0, -1, -1
	}
}

// idempotentDrainable is Kafka's shouldStopDrainBatchesForPartition.
func (p *Producer) idempotentDrainable(q *partitionQueue, b *batch) bool {
	if q.rewrite {
		return false
	}
	if b.baseSeq == record.NoSequence {
		p.syncIdentity(q)
		// Not while batches of an older epoch are incomplete (a new one at
		// sequence 0 could overtake them), nor while a sequence is
		// unresolved.
		return q.ident == p.idem.current && q.unresolvedSeq < 0
	}
	return len(q.sequenced) > 0 && q.sequenced[0] == b
}

// assignSequence numbers a batch drained for the first time.
func (p *Producer) assignSequence(q *partitionQueue, b *batch) {
	if !p.opts.EnableIdempotence || b.baseSeq != record.NoSequence {
		return
	}
	b.ident, b.baseSeq = q.ident, q.nextSeq
	q.nextSeq = record.IncrementSequence(q.nextSeq, int32(len(b.recs)))
	q.sequenced = append(q.sequenced, b)
}

// sequenceAcked records an acknowledged batch.
func (p *Producer) sequenceAcked(b *batch) {
	if !p.opts.EnableIdempotence || b.baseSeq == record.NoSequence {
		return
	}
	q := b.q
	q.sequenced = deleteBatch(q.sequenced, b)
	if b.ident == q.ident && b.lastSeq() > q.lastAcked {
		q.lastAcked = b.lastSeq()
	}
}

// sequenceFailed records a batch that ended without success.
func (p *Producer) sequenceFailed(b *batch, unknown bool) {
	if !p.opts.EnableIdempotence || b.baseSeq == record.NoSequence {
		return
	}
	q := b.q
	q.sequenced = deleteBatch(q.sequenced, b)
	if b.ident != q.ident || p.fatal != nil {
		return
	}
	if unknown {
		q.unresolvedSeq = max(q.unresolvedSeq, record.IncrementSequence(b.lastSeq(), 1))
		return
	}
	p.requestBump(q, "batch failed")
}

// idempotentRetry is TransactionManager.canRetry for the codes that
// idempotence retries although they are not retriable: it reports whether
// to retry and whether it decided at all.
func (p *Producer) idempotentRetry(b *batch, code int16, logStartOffset int64) (retry, decided bool) {
	q := b.q
	switch code {
	case kerr.UnknownProducerID.Code:
		if logStartOffset == -1 || b.seqReset {
			return true, true
		}
		if b.ident == q.ident {
			p.requestBump(q, "unknown producer id")
		}
		return p.txn == nil, true // a transactional batch fails: the transaction aborts
	case kerr.OutOfOrderSequenceNumber.Code:
		isNext := record.IncrementSequence(q.lastAcked, 1) == b.baseSeq
		if q.unresolvedSeq < 0 && (b.seqReset || !isNext) {
			return true, true // an earlier batch is being retried: wait for it
		}
		if (q.unresolvedSeq < 0 || q.unresolvedSeq == b.baseSeq) && b.ident == q.ident {
			p.requestBump(q, "out of order sequence")
		}
		return p.txn == nil, true
	}
	return false, false
}
