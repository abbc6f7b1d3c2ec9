package broker

// What the two coordinators share, as Kafka's coordinators share the
// replica manager: the internal topics they live in (created on first
// need, FindCoordinator), writes to them that wait until the high
// watermark passes (appendReplicated), and answers held until the current
// event ends (respond).

import (
	"time"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type outgoing struct {
	r    *rpc.Request
	resp kmsg.Response
}

// respond answers r once the current event is over. Answering serves the
// connection's next request at once (rpc.Server), and a coordinator must
// not be re-entered halfway through a change of a group or transaction —
// a member's parked SyncGroup answered while the member is being removed
// would otherwise meet that member's next request mid-removal.
func (b *Broker) respond(r *rpc.Request, resp kmsg.Response) {
	b.outbox = append(b.outbox, outgoing{r, resp})
	if !b.flushing {
		b.flushing = true
		b.e.AfterFunc(0, b.flush)
	}
}

func (b *Broker) flush() {
	out := b.outbox
	b.outbox, b.flushing = nil, false
	for _, o := range out {
		o.r.Respond(o.resp)
	}
	b.checkInvariants()
}

// ensureInternalTopics asks the controller for the internal topics once,
// with their configured replication factors. As in Kafka, an internal
// topic is not created while fewer brokers are live than its replication
// factor (coordinators stay COORDINATOR_NOT_AVAILABLE until then): created
// smaller — by a broker that has just restarted and knows no live broker
// yet — it could never meet min.insync.replicas, and every coordinator
// write would fail for good.
func (b *Broker) ensureInternalTopics() {
	if b.creatingInternalTopics || (b.image.Topics[metadata.OffsetsTopic] != nil && b.image.Topics[metadata.TransactionTopic] != nil) {
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	live := len(b.image.Brokers)
	for _, t := range []struct {
		name   string
		parts  int
		factor int
	}{
		{metadata.OffsetsTopic, b.cfg.OffsetsTopicPartitions, b.cfg.OffsetsTopicReplicationFactor},
		{metadata.TransactionTopic, b.cfg.TransactionTopicPartitions, b.cfg.TransactionTopicReplicationFactor},
	} {
		if b.image.Topics[t.name] != nil || live < t.factor {
			continue
		}
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = t.name
		rt.NumPartitions = int32(t.parts)
		rt.ReplicationFactor = int16(t.factor)
		req.Topics = append(req.Topics, rt)
	}
	if len(req.Topics) == 0 {
		return
	}
	b.creatingInternalTopics = true
	b.controller.Do(req, b.cfg.BrokerSessionTimeout, func(kmsg.Response, error) { b.creatingInternalTopics = false })
}

// coordinatorFor returns the leader of the internal partition for key, or
// an error code.
func (b *Broker) coordinatorFor(topic, key string, partitions int) (metadata.Broker, int16) {
	t := b.image.Topics[topic]
	if t == nil {
		b.ensureInternalTopics()
		return metadata.Broker{}, kerr.CoordinatorNotAvailable.Code
	}
	p := t.Partitions[metadata.PartitionFor(key, len(t.Partitions))]
	br, ok := b.image.Broker(p.Leader)
	if !ok {
		return metadata.Broker{}, kerr.CoordinatorNotAvailable.Code
	}
	return br, 0
}

// handleFindCoordinator answers with the coordinator's address on the
// request's listener; one without that listener is not available.
func (b *Broker) handleFindCoordinator(listener string, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		topic, parts := metadata.OffsetsTopic, b.cfg.OffsetsTopicPartitions
		switch req.CoordinatorType {
		case 0:
		case 1:
			topic, parts = metadata.TransactionTopic, b.cfg.TransactionTopicPartitions
		default:
			// Share coordinators (key type 2, v6, KIP-932: the
			// partition of __share_group_state a group:topic:partition
			// hashes to) are not modelled: share-partition state lives
			// at the partition leaders (share_fetch.go), and share
			// groups themselves are found with key type 0.
			rc.ErrorCode = kerr.InvalidRequest.Code
		}
		if rc.ErrorCode == 0 {
			br, code := b.coordinatorFor(topic, key, parts)
			addr, on := br.AddrOn(listener)
			if code == 0 && !on {
				code = kerr.CoordinatorNotAvailable.Code
			}
			rc.ErrorCode = code
			rc.NodeID = br.ID
			rc.Host, rc.Port = metadata.SplitAddr(addr)
			if code != 0 {
				rc.NodeID, rc.Host, rc.Port = -1, "", -1
			}
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	if req.Version < 4 && len(resp.Coordinators) == 1 {
		rc := resp.Coordinators[0]
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = rc.ErrorCode, rc.NodeID, rc.Host, rc.Port
	}
	return resp
}

// appendReplicated appends records to an internal partition as leader and
// calls done with 0 once the high watermark has passed them (every ISR
// member holds them), or with the error that stopped them.
func (b *Broker) appendReplicated(p *partition, recs []record.Record, done func(code int16)) {
	b.appendReplicatedBatch(p, record.NewHeader(), recs, "", func(_ int64, code int16) { done(code) })
}

// appendReplicatedBatch is appendReplicated for a batch with header h (a
// transactional offset commit carries its producer's id, epoch and
// sequence); done also gets the offset of the first record. An offset
// commit names its group: the coordinator then hits
// offset-commit-awaiting-replication while it waits.
func (b *Broker) appendReplicatedBatch(p *partition, h record.BatchHeader, recs []record.Record, offsetsOf string, done func(base int64, code int16)) {
	res, code := b.appendInternal(p, h, recs, offsetsOf)
	if code != 0 {
		done(-1, code)
		return
	}
	b.awaitInternal(p, res, func(code int16) { done(res.FirstOffset, code) })
}

// appendInternal appends records to internal partition p as its leader;
// a non-zero code (as a coordinator answers it) if they were refused.
func (b *Broker) appendInternal(p *partition, h record.BatchHeader, recs []record.Record, offsetsOf string) (log.AppendResult, int16) {
	h.FirstTimestamp = b.e.WallClock().UnixMilli()
	batch, err := record.Encode(h, recs)
	if err != nil {
		return log.AppendResult{}, kerr.UnknownServerError.Code
	}
	res, code := b.appendAsLeader(p.tp, batch, -1)
	if code != 0 {
		return log.AppendResult{}, coordinatorCode(code)
	}
	if offsetsOf != "" && p.highWatermark() <= res.LastOffset {
		b.e.Probe(probe.OffsetCommitAwaitingReplication, offsetsOf)
	}
	return res, 0
}

// awaitInternal calls done once the records appendInternal appended
// (res) are committed, or with why they may not be (awaitReplicated).
func (b *Broker) awaitInternal(p *partition, res log.AppendResult, done func(code int16)) {
	if (p.tp.Topic == metadata.TransactionTopic && b.cfg.Defects.Has(defect.TxnStateAdoptedBeforeReplication)) ||
		(p.tp.Topic == metadata.OffsetsTopic && b.cfg.Defects.Has(defect.OffsetCommitAckedBeforeReplication)) {
		done(0)
		return
	}
	b.awaitReplicated(p, res.LastOffset+1, done)
}

// awaitReplicated calls done with 0 once p's high watermark reaches
// required, with NOT_COORDINATOR if p loses its leadership first, or with
// REQUEST_TIMED_OUT after internalAppendTimeout.
func (b *Broker) awaitReplicated(p *partition, required int64, done func(code int16)) {
	w := &delayedAppend{hwWait: waitFor(p, required), done: done}
	if !w.wake() {
		p.waiters = append(p.waiters, w)
		w.timer = b.e.AfterFunc(internalAppendTimeout, func() {
			if !w.finished {
				w.finish(kerr.RequestTimedOut.Code)
			}
		})
	}
}

// internalAppendTimeout bounds how long a coordinator waits for its write
// to an internal partition to commit (Kafka: the request's timeout, or
// offsets.commit.timeout.ms = 5 s).
const internalAppendTimeout = 5 * time.Second

// coordinatorCode maps a partition error to what a coordinator answers.
func coordinatorCode(code int16) int16 {
	switch code {
	case kerr.NotLeaderForPartition.Code:
		return kerr.NotCoordinator.Code
	case kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	}
	return code
}

// delayedAppend is a coordinator's write to its internal partition
// waiting to commit.
type delayedAppend struct {
	hwWait
	done     func(int16)
	timer    env.TimerID
	finished bool
}

func (d *delayedAppend) wake() bool {
	if d.finished {
		return true
	}
	switch d.state() {
	case hwDeposed:
		d.finish(kerr.NotCoordinator.Code)
	case hwReached:
		d.finish(0)
	default:
		return false
	}
	return true
}

func (d *delayedAppend) finish(code int16) {
	d.finished = true
	if d.timer != 0 {
		d.p.b.e.Cancel(d.timer)
	}
	d.done(code)
}
