package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleProduce appends each partition's batch as leader and answers at
// once (acks 1), never (acks 0), or once the high watermark passes every
// batch (acks all) — within the request's timeout. With
// transaction.partition.verification.enable, a transactional batch that
// would open the producer's transaction in a partition waits until the
// transaction coordinator confirms the partition was added (KIP-890 part
// 1); the connection's next request waits too.
func (b *Broker) handleProduce(r *rpc.Request, req *kmsg.ProduceRequest) {
	if req.TransactionID != nil && b.cfg.TransactionPartitionVerification {
		b.txns.verifyProduce(req, func(refused map[metadata.TopicPartition]int16) {
			b.produce(r, req, refused)
		})
		return
	}
	b.produce(r, req, nil)
}

// produce is handleProduce once verification is done; refused holds the
// partitions it failed, with their error codes.
func (b *Broker) produce(r *rpc.Request, req *kmsg.ProduceRequest, refused map[metadata.TopicPartition]int16) {
	resp := kmsg.NewPtrProduceResponse()
	d := &delayedProduce{b: b, r: r, req: req, resp: resp}
	for _, rt := range req.Topics {
		tr := kmsg.NewProduceResponseTopic()
		tr.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			pr := kmsg.NewProduceResponseTopicPartition()
			pr.Partition = rp.Partition
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if code, ok := refused[tp]; ok {
				pr.ErrorCode, pr.BaseOffset, pr.LogAppendTime = code, -1, -1
				tr.Partitions = append(tr.Partitions, pr)
				continue
			}
			unfetched := b.partitions[tp] != nil && b.partitions[tp].followerWithoutFetch()
			appendTime := int64(-1)
			if b.settings(tp.Topic).LogAppendTime {
				appendTime = stampLogAppendTime(rp.Records, b.e.WallClock().UnixMilli())
			}
			res, code := b.appendAsLeader(tp, rp.Records, req.Acks)
			pr.ErrorCode = code
			if p := b.partitions[tp]; p != nil && code == 0 && req.Acks == 1 && p.highWatermark() <= res.LastOffset && unfetched {
				// Answered while a follower has no fetch here to carry
				// the records: until it asks again, they are on this
				// replica alone.
				b.e.Probe(probe.ProduceAcknowledgedBeforeReplication, tp.String())
			}
			pr.BaseOffset = res.FirstOffset
			pr.LogAppendTime = -1
			if code == 0 && !res.Duplicate {
				pr.LogAppendTime = appendTime
			}
			if p := b.partitions[tp]; p != nil && code == 0 {
				pr.LogStartOffset = p.log.LogStartOffset()
				if req.Acks == -1 {
					d.pending = append(d.pending, pendingAppend{hwWait: waitFor(p, res.LastOffset+1), topic: len(resp.Topics), part: len(tr.Partitions)})
				}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	switch {
	case req.Acks == 0:
		r.NoResponse()
	case len(d.pending) == 0:
		b.answerProduce(r, resp)
	default:
		d.deadline = b.e.Now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
		if !d.wake() {
			for _, pa := range d.pending {
				pa.p.waiters = append(pa.p.waiters, d)
				b.e.Probe(probe.ProduceAwaitingReplication, pa.p.tp.String())
			}
			d.timer = b.e.AfterFunc(time.Duration(req.TimeoutMillis)*time.Millisecond, d.timeout)
		}
	}
}

// appendAsLeader appends one partition's records, returning a Kafka error
// code for anything refused.
func (b *Broker) appendAsLeader(tp metadata.TopicPartition, records []byte, acks int16) (log.AppendResult, int16) {
	p := b.partitions[tp]
	switch {
	case b.image.Topics[tp.Topic] == nil:
		return log.AppendResult{FirstOffset: -1}, kerr.UnknownTopicOrPartition.Code
	case p == nil || !p.leading():
		return log.AppendResult{FirstOffset: -1}, kerr.NotLeaderForPartition.Code
	case acks == -1 && len(p.isr()) < b.minInsync(tp):
		// Refused before append: a definite failure.
		return log.AppendResult{FirstOffset: -1}, kerr.NotEnoughReplicas.Code
	}
	res, err := p.log.AppendAsLeader(records, p.epoch())
	if err != nil {
		switch {
		case errors.Is(err, log.ErrKafkaStorage):
			b.haltOnStorageError(fmt.Sprintf("append to %v: %v", tp, err))
			return log.AppendResult{FirstOffset: -1}, kerr.KafkaStorageError.Code
		case errors.Is(err, log.ErrOutOfOrderSequence):
			b.e.Probe(probe.OutOfOrderSequenceRefused, tp.String())
		case errors.Is(err, log.ErrInvalidProducerEpoch):
			b.e.Probe(probe.ProducerFenced, tp.String())
		}
		return log.AppendResult{FirstOffset: -1}, errorCode(err)
	}
	if res.Duplicate {
		b.e.Probe(probe.DuplicateSequenceDropped, tp.String())
	} else {
		p.appended() // a leader alone in its ISR commits at once
		p.wakeWaiters()
	}
	return res, 0
}

// stampLogAppendTime gives every batch of a produce to a topic with
// message.timestamp.type=LogAppendTime the append time ms (Kafka's
// LogValidator), returning it; a stream that does not split is left for the
// log to refuse.
func stampLogAppendTime(records []byte, ms int64) int64 {
	batches, err := record.Split(records)
	if err != nil {
		return -1
	}
	for _, bt := range batches {
		bt.SetLogAppendTime(ms)
	}
	return ms
}

// minInsync is min.insync.replicas for a partition: its topic's override,
// else the cluster's (internal topics too, as Kafka's defaults do).
func (b *Broker) minInsync(tp metadata.TopicPartition) int {
	return b.settings(tp.Topic).MinInsyncReplicas
}

// errorCode maps an error from the log to its Kafka code.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// pendingAppend is one partition's batch of an acks=all produce.
type pendingAppend struct {
	hwWait
	topic, part int // where its answer goes in the response
	done        bool
}

// delayedProduce is an acks=all produce waiting for its batches to commit.
type delayedProduce struct {
	b        *Broker
	r        *rpc.Request
	req      *kmsg.ProduceRequest
	resp     *kmsg.ProduceResponse
	pending  []pendingAppend
	deadline env.Time
	timer    env.TimerID
	answered bool
}

// wake checks every pending batch: committed (the high watermark passed
// it), lost its leadership, or still waiting. It answers once none waits.
func (d *delayedProduce) wake() bool {
	if d.answered {
		return true
	}
	waiting := false
	for i := range d.pending {
		pa := &d.pending[i]
		if pa.done {
			continue
		}
		pr := &d.resp.Topics[pa.topic].Partitions[pa.part]
		switch pa.state() {
		case hwDeposed:
			pr.ErrorCode = kerr.NotLeaderForPartition.Code
			pa.done = true
		case hwReached:
			if len(pa.p.isr()) < d.b.minInsync(pa.p.tp) {
				// Committed, but by fewer replicas than promised.
				pr.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
			}
			pa.done = true
		default:
			waiting = true
		}
	}
	if waiting {
		return false
	}
	d.finish()
	return true
}

func (d *delayedProduce) timeout() {
	d.timer = 0
	if d.answered {
		return
	}
	for i := range d.pending {
		if pa := &d.pending[i]; !pa.done {
			d.resp.Topics[pa.topic].Partitions[pa.part].ErrorCode = kerr.RequestTimedOut.Code
			pa.done = true
		}
	}
	d.finish()
}

func (d *delayedProduce) finish() {
	d.answered = true
	if d.timer != 0 {
		d.b.e.Cancel(d.timer)
		d.timer = 0
	}
	d.b.answerProduce(d.r, d.resp)
}

// answerProduce sends a produce's answer; each partition it reports
// written hits produce-answered, the moment a lost answer makes the
// producer retry what is already in the log.
func (b *Broker) answerProduce(r *rpc.Request, resp *kmsg.ProduceResponse) {
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 {
				b.e.Probe(probe.ProduceAnswered, metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}.String())
			}
		}
	}
	r.Respond(resp)
}

// followerWithoutFetch reports whether some follower in the ISR has no
// fetch parked on this leader: records appended now reach it only when it
// asks again.
func (p *partition) followerWithoutFetch() bool {
	if !p.leading() {
		return false
	}
	for _, r := range p.isr() {
		if r == p.b.opts.ID {
			continue
		}
		parked := false
		for _, w := range p.waiters {
			if d, ok := w.(*delayedFetch); ok && d.replica == r && !d.answered {
				parked = true
				break
			}
		}
		if !parked {
			return true
		}
	}
	return false
}
