package broker

import (
	"errors"
	"time"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleFetch serves consumers (ReplicaID -1) and followers (their broker
// id). With nothing to return it parks until data arrives or MaxWait ends.
// From v13 topics come by id (KIP-516): each is named from the image here,
// and one the image does not know is answered UNKNOWN_TOPIC_ID.
func (b *Broker) handleFetch(r *rpc.Request, req *kmsg.FetchRequest) {
	if req.Version >= 13 {
		for i := range req.Topics {
			req.Topics[i].Topic = b.topicNames[req.Topics[i].TopicID] // "" when unknown
		}
	}
	replica := req.ReplicaID
	if req.Version >= 15 {
		replica = req.ReplicaState.ID
	}
	if replica >= 0 && !b.clusterAction(r) {
		r.Respond(followerFetchRefused(req))
		return
	}
	if replica >= 0 {
		b.recordFollowerFetch(replica, req)
	}
	d := &delayedFetch{b: b, r: r, req: req, replica: replica}
	resp, bytes, stop := d.build()
	if stop || bytes >= int(req.MinBytes) || req.MaxWaitMillis <= 0 {
		r.Respond(resp)
		return
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if p := b.partitions[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]; p != nil {
				p.waiters = append(p.waiters, d)
			}
		}
	}
	d.timer = b.e.AfterFunc(time.Duration(req.MaxWaitMillis)*time.Millisecond, d.timeout)
}

// followerFetchRefused answers a follower fetch from a connection without
// CLUSTER_ACTION as Kafka's handleFetchRequest does: every partition
// TOPIC_AUTHORIZATION_FAILED, nothing read, no follower state moved.
func followerFetchRefused(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			p.ErrorCode = kerr.TopicAuthorizationFailed.Code
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

type delayedFetch struct {
	b        *Broker
	r        *rpc.Request
	req      *kmsg.FetchRequest
	replica  int32
	timer    env.TimerID
	answered bool
}

func (d *delayedFetch) wake() bool {
	if d.answered {
		return true
	}
	if !d.r.Live() {
		d.finish(nil)
		return true
	}
	if !d.mayComplete() {
		return false
	}
	resp, bytes, stop := d.build()
	if !stop && bytes < int(d.req.MinBytes) {
		return false
	}
	d.finish(resp)
	return true
}

// mayComplete is false when building the answer now would find nothing to
// answer with: every partition still leads, agrees on epochs and has no
// bytes before its read stops. It reads nothing and allocates nothing, as
// Kafka's DelayedFetch.tryComplete decides from offsets before it reads
// (core/src/main/scala/kafka/server/DelayedFetch.scala): most wake-ups (a
// high watermark that moved, a follower's own append) satisfy no fetch.
func (d *delayedFetch) mayComplete() bool {
	for ti := range d.req.Topics {
		rt := &d.req.Topics[ti]
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			fb := d.b.fetchBounds(metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp, d.replica, d.req.IsolationLevel)
			if !fb.empty(rp) {
				return true
			}
		}
	}
	return false
}

func (d *delayedFetch) timeout() {
	d.timer = 0
	if !d.answered {
		resp, _, _ := d.build()
		d.finish(resp)
	}
}

func (d *delayedFetch) finish(resp *kmsg.FetchResponse) {
	d.answered = true
	if d.timer != 0 {
		d.b.e.Cancel(d.timer)
		d.timer = 0
	}
	if resp != nil {
		d.r.Respond(resp)
	} else {
		d.r.NoResponse() // the connection is gone
	}
}

// build reads every requested partition. stop reports a partition error or
// divergence, which is answered at once. The response is the broker's one
// scratch response, good until the next build: Respond encodes it before
// anything else can build (rpc.Request.Respond), and an unsent one is
// simply built again.
func (d *delayedFetch) build() (resp *kmsg.FetchResponse, bytes int, stop bool) {
	b, req := d.b, d.req
	resp = b.scratchFetchResponse()
	budget := int(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = 1 << 30
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		tr := appendReused(&resp.Topics)
		*tr = kmsg.FetchResponseTopic{Topic: rt.Topic, TopicID: rt.TopicID, Partitions: tr.Partitions[:0]}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			pr := appendReused(&tr.Partitions)
			*pr = kmsg.NewFetchResponseTopicPartition() // aborted transactions nil: a null array on the wire, as before
			pr.Partition = rp.Partition
			n := b.fetchPartition(pr, metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp, d.replica, req.IsolationLevel, min(int(rp.PartitionMaxBytes), budget), bytes == 0)
			if req.Version >= 13 && rt.Topic == "" {
				pr.ErrorCode = kerr.UnknownTopicID.Code
			}
			if pr.ErrorCode != 0 || pr.DivergingEpoch.Epoch >= 0 {
				stop = true
			}
			bytes += n
			budget -= n
		}
	}
	return resp, bytes, stop
}

// scratchFetchResponse is the broker's Fetch response, emptied, its arrays
// kept: most of what a busy broker allocated was the same response shape,
// fetch after fetch.
func (b *Broker) scratchFetchResponse() *kmsg.FetchResponse {
	r := b.fetchScratch
	if r == nil {
		r = kmsg.NewPtrFetchResponse()
		b.fetchScratch = r
	}
	*r = kmsg.FetchResponse{Topics: r.Topics[:0]}
	return r
}

// appendReused grows *s by one element and returns it, reusing the slot
// (and the arrays inside it) left from an earlier use when there is one.
func appendReused[T any](s *[]T) *T {
	if n := len(*s); n < cap(*s) {
		*s = (*s)[:n+1]
	} else {
		var zero T
		*s = append(*s, zero)
	}
	return &(*s)[len(*s)-1]
}

// fetchBounds is what one partition of a fetch may read, found without
// reading: the leading partition, an error code or a divergence that answers
// at once, and the offset the read stops before (the log end for a
// follower, the high watermark or last stable offset for a consumer).
type fetchBounds struct {
	p          *partition
	code       int16
	diverging  bool
	epoch      int32 // with diverging: the leader's end for the fetcher's epoch
	end, limit int64
}

func (b *Broker) fetchBounds(tp metadata.TopicPartition, rp *kmsg.FetchRequestTopicPartition, replica int32, isolation int8) fetchBounds {
	p, code := b.leading(tp, rp.CurrentLeaderEpoch)
	if code != 0 {
		return fetchBounds{code: code}
	}
	if b.cfg.FetchEpochValidation && rp.LastFetchedEpoch >= 0 {
		epoch, end := p.log.EndOffsetForEpoch(rp.LastFetchedEpoch)
		if epoch < rp.LastFetchedEpoch || end < rp.FetchOffset {
			// The fetcher's log holds records this leader never had: tell it
			// where the logs diverged so it truncates (KIP-320, KIP-595).
			return fetchBounds{p: p, diverging: true, epoch: epoch, end: end}
		}
	}
	limit := p.log.LogEndOffset()
	if replica < 0 && !b.cfg.Defects.Has(defect.FetchServesPastHighWatermark) {
		limit = p.highWatermark()
		if isolation == 1 {
			limit = p.lastStableOffset()
		}
	}
	return fetchBounds{p: p, limit: limit}
}

// empty says that reading rp would return no bytes and no error: the fetch
// offset lies in the log and at or past where the read stops (log.Read's
// own test).
func (fb *fetchBounds) empty(rp *kmsg.FetchRequestTopicPartition) bool {
	if fb.code != 0 || fb.diverging {
		return false
	}
	l := fb.p.log
	from := rp.FetchOffset
	return from >= l.LogStartOffset() && from <= l.LogEndOffset() && from >= min(fb.limit, l.LogEndOffset())
}

// fetchPartition fills one partition's answer and returns the bytes read.
func (b *Broker) fetchPartition(pr *kmsg.FetchResponseTopicPartition, tp metadata.TopicPartition, rp *kmsg.FetchRequestTopicPartition, replica int32, isolation int8, maxBytes int, first bool) int {
	pr.HighWatermark, pr.LastStableOffset, pr.LogStartOffset = -1, -1, -1
	// An empty record set, never a null one, as Kafka sends: librdkafka
	// refuses null ("invalid MessageSetSize -1").
	pr.RecordBatches = []byte{}
	fb := b.fetchBounds(tp, rp, replica, isolation)
	if fb.code != 0 {
		pr.ErrorCode = fb.code
		return 0
	}
	p := fb.p
	pr.HighWatermark = p.highWatermark()
	pr.LastStableOffset = p.lastStableOffset()
	pr.LogStartOffset = p.log.LogStartOffset()
	if fb.diverging {
		pr.DivergingEpoch.Epoch, pr.DivergingEpoch.EndOffset = fb.epoch, fb.end
		return 0
	}
	limit := fb.limit
	if !first {
		maxBytes = max(maxBytes, 0)
	}
	data, err := p.log.Read(rp.FetchOffset, maxBytes, limit)
	if err != nil {
		switch {
		case errors.Is(err, log.ErrOffsetOutOfRange):
			pr.ErrorCode = kerr.OffsetOutOfRange.Code
		case errors.Is(err, log.ErrCorruptMessage):
			b.e.Log("corrupt-batch", "partition", tp.String(), "error", err.Error())
			b.e.Probe(probe.CorruptBatchDetected, tp.String())
			pr.ErrorCode = kerr.KafkaStorageError.Code
		default:
			b.e.Halt(err.Error())
			pr.ErrorCode = kerr.KafkaStorageError.Code
		}
		return 0
	}
	if data != nil {
		pr.RecordBatches = data
	}
	if isolation == 1 && replica < 0 && len(data) > 0 && !b.cfg.Defects.Has(defect.AbortedTransactionsNotListed) {
		for _, a := range p.log.AbortedTransactions(rp.FetchOffset, limit) {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			pr.AbortedTransactions = append(pr.AbortedTransactions, at)
		}
	}
	return len(data)
}

// recordFollowerFetch gives each partition's core a follower's fetch
// offsets (which are its log end); the core updates the ISR and the high
// watermark.
func (b *Broker) recordFollowerFetch(replica int32, req *kmsg.FetchRequest) {
	// On the wall clock, as Kafka's ReplicaManager takes fetchTimeMs from
	// time.milliseconds(): a clock stepped forward drops followers from the
	// ISR, one stepped back keeps a stuck one in it.
	now := b.e.WallClock()
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			p := b.partitions[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			if p == nil {
				continue
			}
			p.r.FollowerFetched(replica, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.FetchOffset, rp.LogStartOffset, now, b.brokerEpoch >= 0)
			if err := p.apply(); err != nil {
				b.e.Halt(err.Error())
				return
			}
		}
	}
}
