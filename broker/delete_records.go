package broker

import (
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteRecords moves each partition's log start offset to the offset
// asked (-1: the high watermark), as Kafka's ReplicaManager.deleteRecords
// does: only a leader, only below its high watermark (OFFSET_OUT_OF_RANGE
// beyond), never on an internal topic (INVALID_TOPIC_EXCEPTION). The
// followers follow from the leader's log start in their fetch responses;
// the request is answered, with each partition's low watermark, once every
// replica on a live broker starts at the offset or the request times out
// (Kafka's DelayedDeleteRecords: REQUEST_TIMED_OUT).
func (b *Broker) handleDeleteRecords(r *rpc.Request, req *kmsg.DeleteRecordsRequest) {
	d := &delayedDeleteRecords{b: b, r: r, resp: kmsg.NewPtrDeleteRecordsResponse()}
	for _, rt := range req.Topics {
		tr := kmsg.NewDeleteRecordsResponseTopic()
		tr.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			pr := kmsg.NewDeleteRecordsResponseTopicPartition()
			pr.Partition, pr.LowWatermark = rp.Partition, -1
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			p, code := b.leading(tp, -1)
			if code == 0 && (tp.Topic == metadata.OffsetsTopic || tp.Topic == metadata.TransactionTopic) {
				code = kerr.InvalidTopicException.Code
			}
			if code == 0 {
				start, ok := p.r.DeleteRecordsBefore(rp.Offset)
				if !ok {
					code = kerr.OffsetOutOfRange.Code
				} else if err := p.apply(); err != nil {
					b.haltOnStorageError(err.Error())
					code = kerr.KafkaStorageError.Code
				} else {
					d.waits = append(d.waits, deleteWait{p: p, epoch: p.epoch(), required: start, topic: len(d.resp.Topics), part: len(tr.Partitions)})
				}
			}
			pr.ErrorCode = code
			tr.Partitions = append(tr.Partitions, pr)
		}
		d.resp.Topics = append(d.resp.Topics, tr)
	}
	if d.wake() {
		return
	}
	for _, w := range d.waits {
		w.p.waiters = append(w.p.waiters, d)
	}
	d.timer = b.e.AfterFunc(time.Duration(req.TimeoutMillis)*time.Millisecond, d.timeout)
}

type delayedDeleteRecords struct {
	b        *Broker
	r        *rpc.Request
	resp     *kmsg.DeleteRecordsResponse
	waits    []deleteWait
	timer    env.TimerID
	answered bool
}

// deleteWait is one partition's wait for its low watermark to reach
// required while p leads in epoch.
type deleteWait struct {
	p           *partition
	epoch       int32
	required    int64
	topic, part int
}

// lowWatermark counts the replicas on live brokers, as Kafka does.
func (b *Broker) lowWatermark(p *partition) int64 {
	return p.r.LowWatermark(func(id int32) bool { _, live := b.image.Broker(id); return live })
}

// wake answers once every partition is done; it reports whether the
// request is answered (and the waiter can go).
func (d *delayedDeleteRecords) wake() bool {
	if d.answered {
		return true
	}
	for _, w := range d.waits {
		if w.p.leading() && w.p.epoch() == w.epoch && d.b.partitions[w.p.tp] == w.p && d.b.lowWatermark(w.p) < w.required {
			return false
		}
	}
	d.finish(0)
	return true
}

func (d *delayedDeleteRecords) timeout() {
	d.timer = 0
	if !d.answered {
		d.finish(kerr.RequestTimedOut.Code)
	}
}

// finish fills each waited partition's answer: its low watermark, or
// NOT_LEADER_OR_FOLLOWER if it stopped leading, or code (a timeout) if it
// has not got there.
func (d *delayedDeleteRecords) finish(code int16) {
	d.answered = true
	if d.timer != 0 {
		d.b.e.Cancel(d.timer)
	}
	for _, w := range d.waits {
		pr := &d.resp.Topics[w.topic].Partitions[w.part]
		switch low := d.b.lowWatermark(w.p); {
		case !w.p.leading() || w.p.epoch() != w.epoch || d.b.partitions[w.p.tp] != w.p:
			pr.ErrorCode = kerr.NotLeaderForPartition.Code
		case low >= w.required:
			pr.LowWatermark = low
		default:
			pr.ErrorCode = code
		}
	}
	d.b.respond(d.r, d.resp)
}
