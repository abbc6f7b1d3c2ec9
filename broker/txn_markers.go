package broker

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// markerJob writes one decided transaction's markers to every partition in
// it, as Kafka's TransactionMarkerChannelManager: grouped by partition
// leader, retried until each leader has the marker committed, then the
// Complete* record ends the transaction.
type markerJob struct {
	tc               *txnCoordinator
	t                *txnMeta
	commit           bool
	producerID       int64
	epoch            int16
	coordinatorEpoch int32
	remaining        []metadata.TopicPartition // sorted
	inflight         int
	timer            env.TimerID
	stopped          bool
}

func (j *markerJob) stop() {
	j.stopped = true
	if j.timer != 0 {
		j.tc.b.e.Cancel(j.timer)
		j.timer = 0
	}
}

// live reports whether the job still speaks for its transaction: the
// coordinator still holds it, in the epoch it was decided in.
func (j *markerJob) live() bool {
	tc := j.tc
	epoch, loaded := tc.loaded[tc.partitionFor(j.t.id).Partition]
	return !j.stopped && tc.current(j.t) && j.t.markers == j && loaded && epoch == j.coordinatorEpoch && j.t.State.prepared()
}

// startMarkers writes the markers of t's Prepare* state.
func (tc *txnCoordinator) startMarkers(t *txnMeta) {
	if !t.State.prepared() {
		panic(invariantf("transaction %q: markers for state %v", t.id, t.State))
	}
	if t.markers != nil {
		t.markers.stop()
	}
	j := &markerJob{
		tc: tc, t: t, commit: t.State == txnPrepareCommit,
		producerID: t.ProducerID, epoch: t.ProducerEpoch,
		coordinatorEpoch: tc.loaded[tc.partitionFor(t.id).Partition],
		remaining:        slices.Clone(t.Partitions),
	}
	t.markers = j
	tc.b.e.Probe(probe.TransactionPrepared, t.id)
	j.send()
}

// send sends the markers still missing to their leaders, or completes the
// transaction once none is.
func (j *markerJob) send() {
	j.timer = 0
	if !j.live() || j.inflight > 0 || j.t.pending != txnNone {
		return // gone, or answers (or the Complete* write) still to come
	}
	if len(j.remaining) == 0 {
		j.complete()
		return
	}
	if p, code := j.tc.serving(j.t.id); code == 0 && p.highWatermark() < j.t.stateEnd {
		// The decision must be durable before any partition hears it:
		// a marker for a Prepare* record a failover could still lose
		// tears the transaction.
		panic(invariantf("transaction %q: markers for %v sent before its record (offset %d) committed: %v's high watermark is %d",
			j.t.id, j.t.State, j.t.stateEnd-1, p.tp, p.highWatermark()))
	}
	b := j.tc.b
	byLeader := map[int32][]metadata.TopicPartition{}
	var leaders []int32
	for _, tp := range j.remaining {
		ps, ok := b.image.Partition(tp)
		switch {
		case !ok:
			// The topic is gone: nothing can read the transaction there.
			b.e.Log("txn-marker-dropped", "id", j.t.id, "partition", tp.String())
			j.done(tp)
			continue
		case ps.Leader == metadata.NoLeader:
			continue
		}
		if byLeader[ps.Leader] == nil {
			leaders = append(leaders, ps.Leader)
		}
		byLeader[ps.Leader] = append(byLeader[ps.Leader], tp)
	}
	slices.Sort(leaders)
	if len(leaders) == 0 {
		j.retry()
		return
	}
	// Count every request before sending any: a local leader may answer at
	// once.
	j.inflight = len(leaders)
	for _, leader := range leaders {
		req := j.request(byLeader[leader])
		if leader == b.opts.ID {
			j.tc.writeMarkers(req, func(resp *kmsg.WriteTxnMarkersResponse) { j.answered(resp, nil) })
			continue
		}
		peer, ok := j.tc.peer(j.tc.markerPeers, leader)
		if !ok {
			j.answered(nil, errNoPeer)
			continue
		}
		peer.Do(req, txnRequestTimeout, func(resp kmsg.Response, err error) {
			r, _ := resp.(*kmsg.WriteTxnMarkersResponse)
			j.answered(r, err)
		})
	}
}

// errNoPeer: the broker is not in the metadata (fenced or gone).
var errNoPeer = errors.New("broker not in metadata")

func (j *markerJob) request(tps []metadata.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = j.producerID, j.epoch, j.commit, j.coordinatorEpoch
	for _, tp := range tps {
		if n := len(m.Topics); n == 0 || m.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			m.Topics = append(m.Topics, t)
		}
		t := &m.Topics[len(m.Topics)-1]
		t.Partitions = append(t.Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, m)
	return req
}

func (j *markerJob) done(tp metadata.TopicPartition) {
	j.remaining = slices.DeleteFunc(j.remaining, func(x metadata.TopicPartition) bool { return x == tp })
}

// answered folds one leader's answer in: written partitions are done,
// retriable failures stay, and a fenced coordinator stops.
func (j *markerJob) answered(resp *kmsg.WriteTxnMarkersResponse, err error) {
	j.inflight--
	if j.stopped {
		return
	}
	if err == nil && resp != nil {
		for _, m := range resp.Markers {
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					tp := metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition}
					switch p.ErrorCode {
					case 0:
						j.done(tp)
					case kerr.InvalidProducerEpoch.Code:
						// The partition has seen a newer epoch of the producer:
						// a later decision already passed through it.
						j.tc.b.e.Log("txn-marker-stale", "id", j.t.id, "partition", tp.String())
						j.done(tp)
					case kerr.TransactionCoordinatorFenced.Code:
						j.tc.b.e.Log("txn-coordinator-fenced", "id", j.t.id, "partition", tp.String(), "epoch", j.coordinatorEpoch)
						j.stop()
						return
					}
				}
			}
		}
	}
	if j.inflight > 0 {
		return
	}
	if len(j.remaining) == 0 {
		j.send()
		return
	}
	j.retry()
}

func (j *markerJob) retry() {
	if j.timer == 0 && !j.stopped {
		j.timer = j.tc.b.e.AfterFunc(txnRetryBackoff, j.send)
	}
}

// complete writes the Complete* record: the transaction is over and the
// producer may begin the next one.
func (j *markerJob) complete() {
	t := j.t
	next := t.clone()
	next.State, next.Partitions = txnCompleteAbort, nil
	if j.commit {
		next.State = txnCompleteCommit
	}
	if next.NextProducerID >= 0 {
		next.ProducerID, next.ProducerEpoch, next.NextProducerID, next.EndedEpoch, next.LastEpoch = next.NextProducerID, 0, -1, -1, -1
	}
	j.tc.persist(t, next, func(code int16) {
		switch {
		case code == 0:
			if t.markers == j {
				t.markers = nil
			}
			if !j.commit {
				j.tc.b.e.Probe(probe.TransactionAborted, t.id)
			}
		case code == kerr.NotCoordinator.Code || !j.tc.current(t):
			j.stop()
		default:
			j.retry()
		}
	})
}

// handleWriteTxnMarkers is the partition side: append each marker as
// leader and answer once it is committed.
func (tc *txnCoordinator) handleWriteTxnMarkers(r *rpc.Request, req *kmsg.WriteTxnMarkersRequest) {
	if !tc.b.clusterAction(r) {
		// Only brokers write markers (listeners.go): every partition
		// CLUSTER_AUTHORIZATION_FAILED, nothing written.
		resp := kmsg.NewPtrWriteTxnMarkersResponse()
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, mt := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = mt.Topic
				for _, part := range mt.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition, rp.ErrorCode = part, kerr.ClusterAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		r.Respond(resp)
		return
	}
	tc.writeMarkers(req, func(resp *kmsg.WriteTxnMarkersResponse) { tc.b.respond(r, resp) })
}

// writeMarkers appends the markers and calls done once each is committed
// or failed. A marker committed on a __consumer_offsets partition
// materializes or drops the producer's pending transactional offsets
// there.
func (tc *txnCoordinator) writeMarkers(req *kmsg.WriteTxnMarkersRequest, done func(*kmsg.WriteTxnMarkersResponse)) {
	type wait struct {
		m, t, p  int
		part     *partition
		required int64
		pid      int64
		commit   bool
	}
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	var waits []wait
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for ti, mt := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = mt.Topic
			for pi, part := range mt.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = part
				tp := metadata.TopicPartition{Topic: mt.Topic, Partition: part}
				p, required, code := tc.appendMarker(tp, m)
				rp.ErrorCode = code
				if code == 0 {
					waits = append(waits, wait{mi, ti, pi, p, required, m.ProducerID, m.Committed})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	waiting := len(waits) + 1
	finish := func() {
		if waiting--; waiting == 0 {
			done(resp)
		}
	}
	for _, w := range waits {
		tc.b.awaitReplicated(w.part, w.required, func(code int16) {
			if code == kerr.NotCoordinator.Code {
				code = kerr.NotLeaderForPartition.Code
			}
			resp.Markers[w.m].Topics[w.t].Partitions[w.p].ErrorCode = code
			if code == 0 && w.part.tp.Topic == metadata.OffsetsTopic {
				tc.b.groups.completeTxnOffsets(w.part.tp.Partition, w.pid, w.commit)
			}
			finish()
		})
	}
	finish()
}

// appendMarker appends one marker as leader of tp; it returns the offset
// the high watermark must pass for the marker to be committed.
func (tc *txnCoordinator) appendMarker(tp metadata.TopicPartition, m kmsg.WriteTxnMarkersRequestMarker) (*partition, int64, int16) {
	b := tc.b
	p := b.partitions[tp]
	switch {
	case b.image.Topics[tp.Topic] == nil:
		return nil, 0, kerr.UnknownTopicOrPartition.Code
	case p == nil || !p.leading():
		return nil, 0, kerr.NotLeaderForPartition.Code
	case len(p.isr()) < b.minInsync(tp):
		return nil, 0, kerr.NotEnoughReplicas.Code
	case m.ProducerID < 0 || m.ProducerEpoch < 0:
		return nil, 0, kerr.InvalidRequest.Code // only a coordinator sends markers, and never these
	}
	marker := record.EndTxnMarker{Type: record.ControlAbort, CoordinatorEpoch: m.CoordinatorEpoch}
	if m.Committed {
		marker.Type = record.ControlCommit
	}
	res, err := p.log.AppendMarker(m.ProducerID, m.ProducerEpoch, marker, p.epoch(), b.e.WallClock().UnixMilli())
	if err != nil {
		if errors.Is(err, log.ErrKafkaStorage) {
			b.haltOnStorageError(fmt.Sprintf("append marker to %v: %v", tp, err))
			return nil, 0, kerr.KafkaStorageError.Code
		}
		b.e.Log("txn-marker-refused", "partition", tp.String(), "pid", m.ProducerID, "epoch", m.ProducerEpoch, "error", err.Error())
		return nil, 0, errorCode(err)
	}
	// The transaction is over here: a verification still in flight for
	// it must not let its batch start a new one (KIP-890's guard).
	delete(tc.guards, txnGuardKey{tp, m.ProducerID})
	p.appended()
	p.wakeWaiters()
	return p, res.LastOffset + 1, 0
}

// checkInvariants asserts the transaction side's invariants after every
// step: a completed transaction holds no partitions and an open one holds
// some. (Each partition's LSO is the replica core's invariant.)
func (tc *txnCoordinator) checkInvariants() {
	checkEach(tc.txns, cmp.Compare[string], func(id string, t *txnMeta) string {
		if t.State.completed() && len(t.Partitions) > 0 {
			return invariantf("transaction %q: %v still holds partitions %v", id, t.State, t.Partitions)
		}
		if t.State == txnOngoing && len(t.Partitions) == 0 {
			return invariantf("transaction %q: Ongoing with no partitions", id)
		}
		if t.pending != txnNone && !validTxnTransition(t.State, t.pending) {
			return invariantf("transaction %q: pending %v from %v", id, t.pending, t.State)
		}
		return ""
	})
}
