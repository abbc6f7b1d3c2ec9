package broker

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCoordinator is the transaction coordinator of the __transaction_state
// partitions this broker leads, as Kafka's TransactionCoordinator: a
// transactional id's state lives in the partition its id hashes to, and
// every change is written there, committed by the ISR, before the
// coordinator acts on it or answers. A new leader of the partition loads
// the log and finishes what its predecessor decided (Prepare* states).
//
// KIP-890 part 2 (kip890.epoch.bump.per.transaction): when the knob is on
// and the producer speaks EndTxn v5+ (the version whose response carries
// the producer's next epoch), every EndTxn bumps the epoch; the markers
// carry the new epoch, so a late produce or TxnOffsetCommit of the ended
// transaction is fenced at the partition, and a delayed EndTxn cannot end
// the next transaction. A retried EndTxn of the transaction that bumped is
// recognized and answered. A producer that speaks EndTxn v4 or older gets
// the pre-KIP-890 behaviour, as Kafka's transaction version 1 does. The
// producer still adds partitions with AddPartitionsToTxn and
// AddOffsetsToTxn: partitions are never added implicitly by Produce v12 or
// TxnOffsetCommit v5 here.
type txnCoordinator struct {
	b      *Broker
	loaded map[int32]int32 // __transaction_state partition → leader epoch loaded in (the coordinator epoch)
	txns   map[string]*txnMeta

	// Partition side: verification guards, txn_verify.go.
	guards   map[txnGuardKey]uint64
	guardSeq uint64

	// Connections to other brokers for markers and for verification,
	// apart from the replica fetchers' (as Kafka's marker channel and
	// AddPartitionsToTxnManager have their own): a WriteTxnMarkers waits
	// for the marker to replicate, and must not sit in front of the fetch
	// that replicates it.
	markerPeers map[int32]*rpc.Client
	verifyPeers map[int32]*rpc.Client
}

// txnMeta is one transactional id at its coordinator.
type txnMeta struct {
	id string
	txnRecord
	// pending is the state being written, or txnNone: while a write is in
	// flight, requests that would change the transaction get
	// CONCURRENT_TRANSACTIONS.
	pending          txnState
	coordinatorEpoch int32
	markers          *markerJob // markers being written for a Prepare* state
	// stateEnd is the offset after the state record this coordinator last
	// wrote for the transaction (0 for a state loaded from the log: Kafka
	// loads to the log end and sends a loaded Prepare*'s markers at once).
	stateEnd int64
}

const (
	// txnTimeoutCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (Kafka's
	// default): how often the coordinator looks for transactions open
	// longer than their transaction.timeout.ms.
	txnTimeoutCheckInterval = 10 * time.Second
	// txnRetryBackoff is the wait before the coordinator retries markers
	// or a Complete* write that failed (Kafka's retry.backoff.ms).
	txnRetryBackoff = 100 * time.Millisecond
	// txnRequestTimeout bounds a broker-to-broker transaction request
	// (WriteTxnMarkers, AddPartitionsToTxn verification): longer than the
	// partition leader's own wait for replication.
	txnRequestTimeout = 2 * internalAppendTimeout
)

func newTxnCoordinator(b *Broker) *txnCoordinator {
	tc := &txnCoordinator{b: b, loaded: map[int32]int32{}, txns: map[string]*txnMeta{}, guards: map[txnGuardKey]uint64{},
		markerPeers: map[int32]*rpc.Client{}, verifyPeers: map[int32]*rpc.Client{}}
	b.e.AfterFunc(txnTimeoutCheckInterval, tc.abortTimedOut)
	return tc
}

// peer returns the client in clients for broker id, made on first use.
func (tc *txnCoordinator) peer(clients map[int32]*rpc.Client, id int32) (*rpc.Client, bool) {
	return tc.b.peerClient(clients, id, "-txn")
}

func (tc *txnCoordinator) partitionFor(id string) metadata.TopicPartition {
	return metadata.TopicPartition{Topic: metadata.TransactionTopic, Partition: metadata.PartitionFor(id, tc.b.cfg.TransactionTopicPartitions)}
}

// serving returns the __transaction_state partition of id if this broker
// coordinates id now, else an error code.
func (tc *txnCoordinator) serving(id string) (*partition, int16) {
	tp := tc.partitionFor(id)
	p := tc.b.partitions[tp]
	if p == nil || !p.leading() {
		return nil, kerr.NotCoordinator.Code
	}
	if epoch, ok := tc.loaded[tp.Partition]; !ok || epoch != p.epoch() {
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return p, 0
}

// current reports whether t is still this coordinator's live state of its
// id (not unloaded or replaced by a reload).
func (tc *txnCoordinator) current(t *txnMeta) bool { return tc.txns[t.id] == t }

// metadataChanged forgets transactional ids of partitions this broker no
// longer leads and loads those of partitions it now leads.
func (tc *txnCoordinator) metadataChanged() {
	b := tc.b
	for _, part := range slices.Sorted(maps.Keys(tc.loaded)) {
		p := b.partitions[metadata.TopicPartition{Topic: metadata.TransactionTopic, Partition: part}]
		if p == nil || !p.leading() || p.epoch() != tc.loaded[part] {
			delete(tc.loaded, part)
			for _, id := range slices.Sorted(maps.Keys(tc.txns)) {
				if tc.partitionFor(id).Partition == part {
					if j := tc.txns[id].markers; j != nil {
						j.stop()
					}
					delete(tc.txns, id)
				}
			}
			b.e.Log("txn-unloaded", "partition", part)
		}
	}
	for _, tp := range slices.SortedFunc(maps.Keys(b.partitions), metadata.TopicPartition.Compare) {
		p := b.partitions[tp]
		if tp.Topic != metadata.TransactionTopic || !p.leading() {
			continue
		}
		if epoch, ok := tc.loaded[tp.Partition]; ok && epoch == p.epoch() {
			continue
		}
		if err := tc.load(p); err != nil {
			b.e.Halt(fmt.Sprintf("load %v: %v", tp, err))
			return
		}
		tc.loaded[tp.Partition] = p.epoch()
		// Finish what the previous coordinator decided: a Prepare* state
		// is a decision whose markers may not all have been written.
		for _, id := range slices.Sorted(maps.Keys(tc.txns)) {
			if t := tc.txns[id]; tc.partitionFor(id) == tp && t.State.prepared() {
				b.e.Log("txn-resume", "id", id, "state", t.State.String(), "pid", t.ProducerID, "epoch", t.ProducerEpoch)
				b.e.Probe(probe.CoordinatorLoadedPreparedTransaction, id)
				tc.startMarkers(t)
			}
		}
	}
}

// load replays a __transaction_state partition's log: the last record of
// each transactional id is its state.
func (tc *txnCoordinator) load(p *partition) error {
	for _, id := range slices.Sorted(maps.Keys(tc.txns)) {
		if tc.partitionFor(id) == p.tp {
			delete(tc.txns, id)
		}
	}
	n := 0
	err := replayLog(p, func(bt record.Batch, r record.Record) {
		id, ok := decodeTxnKey(r.Key)
		if !ok {
			return
		}
		if r.Value == nil {
			delete(tc.txns, id)
			return
		}
		rec, ok := decodeTxnValue(r.Value)
		if !ok {
			tc.b.e.Log("txn-bad-record", "partition", p.tp.String(), "id", id)
			return
		}
		tc.txns[id] = &txnMeta{id: id, txnRecord: rec, pending: txnNone, coordinatorEpoch: p.epoch()}
		n++
	}, nil)
	if err != nil {
		return err
	}
	tc.b.e.Log("txn-loaded", "partition", p.tp.String(), "epoch", p.epoch(), "records", n)
	return nil
}

// replayLog calls apply for every record of every data batch of p's log,
// from its start to its end, and marker (if set) for every transaction
// marker, in log order.
func replayLog(p *partition, apply func(record.Batch, record.Record), marker func(record.Batch, record.EndTxnMarker)) error {
	from := p.log.LogStartOffset()
	for from < p.log.LogEndOffset() {
		data, err := p.log.Read(from, 1<<20, p.log.LogEndOffset())
		if err != nil {
			return err
		}
		batches, err := record.Split(data)
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			break
		}
		for _, bt := range batches {
			from = bt.NextOffset()
			if bt.IsControl() {
				m, err := bt.EndTxnMarker()
				if err != nil {
					return err
				}
				if marker != nil {
					marker(bt, m)
				}
				continue
			}
			recs, err := bt.DecodeRecords()
			if err != nil {
				return err
			}
			for _, r := range recs {
				apply(bt, r)
			}
		}
	}
	return nil
}

// persist writes next as t's new state and adopts it once committed in the
// __transaction_state partition; done gets 0 or the error that stopped
// it (t then keeps its old state, as Kafka's coordinator does).
func (tc *txnCoordinator) persist(t *txnMeta, next txnRecord, done func(code int16)) {
	if t.pending != txnNone {
		panic(invariantf("transaction %q: write of %v while %v is pending", t.id, next.State, t.pending))
	}
	if !validTxnTransition(t.State, next.State) {
		panic(invariantf("transaction %q: illegal transition %v → %v", t.id, t.State, next.State))
	}
	if next.ProducerID == t.ProducerID && next.ProducerEpoch < t.ProducerEpoch {
		panic(invariantf("transaction %q: producer %d epoch went back from %d to %d", t.id, t.ProducerID, t.ProducerEpoch, next.ProducerEpoch))
	}
	p, code := tc.serving(t.id)
	if code != 0 {
		done(code)
		return
	}
	next.Updated = tc.b.e.WallClock()
	t.pending = next.State
	rec := record.Record{Key: encodeTxnKey(t.id), Value: encodeTxnValue(next)}
	tc.b.appendReplicatedBatch(p, record.NewHeader(), []record.Record{rec}, "", func(base int64, code int16) {
		t.pending = txnNone
		if code == 0 && !tc.current(t) {
			code = kerr.NotCoordinator.Code
		}
		if code == 0 {
			if !validTxnTransition(t.State, next.State) {
				panic(invariantf("transaction %q: illegal transition %v → %v", t.id, t.State, next.State))
			}
			tc.b.e.Log("txn-state", "id", t.id, "from", t.State.String(), "to", next.State.String(), "pid", next.ProducerID, "epoch", next.ProducerEpoch, "partitions", len(next.Partitions))
			t.txnRecord = next
			t.stateEnd = base + 1
		}
		done(code)
	})
}

// fencedCode is PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for request
// versions older than the one that introduced PRODUCER_FENCED (KIP-588).
func fencedCode(version, since int16) int16 {
	if version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return kerr.ProducerFenced.Code
}

// checkProducer validates a request's producer id and epoch against t.
func (tc *txnCoordinator) checkProducer(t *txnMeta, pid int64, epoch int16, fenced int16) int16 {
	switch {
	case t == nil || pid != t.ProducerID:
		return kerr.InvalidProducerIDMapping.Code
	case epoch != t.ProducerEpoch:
		tc.b.e.Probe(probe.ProducerFenced, t.id)
		return fenced
	}
	return 0
}

// handleInitProducerID gives a transactional producer its id and a new
// epoch, fencing every older instance: an open transaction of the old
// instance is aborted first (the answer is CONCURRENT_TRANSACTIONS until
// the abort completes; the producer retries), a decided one is finished.
func (tc *txnCoordinator) handleInitProducerID(r *rpc.Request, req *kmsg.InitProducerIDRequest) {
	respond := func(code int16, pid int64, epoch int16) {
		resp := kmsg.NewPtrInitProducerIDResponse()
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, pid, epoch
		if code != 0 {
			resp.ProducerID, resp.ProducerEpoch = -1, -1
		}
		tc.b.respond(r, resp)
	}
	id := *req.TransactionalID
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	switch {
	case id == "":
		respond(kerr.InvalidRequest.Code, -1, -1)
		return
	case timeout <= 0 || timeout > tc.b.cfg.TransactionTimeoutMax:
		respond(kerr.InvalidTransactionTimeout.Code, -1, -1)
		return
	}
	if _, code := tc.serving(id); code != 0 {
		respond(code, -1, -1)
		return
	}
	if t := tc.txns[id]; t != nil {
		tc.initProducer(t, req, timeout, respond)
		return
	}
	tc.b.allocateProducerID(func(pid int64, code int16) {
		if code == 0 {
			_, code = tc.serving(id)
		}
		if code != 0 {
			respond(code, -1, -1)
			return
		}
		t := tc.txns[id]
		if t == nil { // else a concurrent init created it; this id is wasted, as in Kafka
			t = &txnMeta{id: id, pending: txnNone, coordinatorEpoch: tc.loaded[tc.partitionFor(id).Partition],
				txnRecord: txnRecord{ProducerID: pid, ProducerEpoch: -1, EndedEpoch: -1, LastEpoch: -1, NextProducerID: -1, State: txnEmpty}}
			tc.txns[id] = t
		}
		tc.initProducer(t, req, timeout, respond)
	})
}

func (tc *txnCoordinator) initProducer(t *txnMeta, req *kmsg.InitProducerIDRequest, timeout time.Duration, respond func(int16, int64, int16)) {
	switch {
	case t.pending != txnNone || t.State.prepared():
		respond(kerr.ConcurrentTransactions.Code, -1, -1)
		return
	case req.ProducerID >= 0 && (req.ProducerID != t.ProducerID || (req.ProducerEpoch != t.ProducerEpoch && req.ProducerEpoch != t.LastEpoch)):
		// KIP-360: a producer re-initializing with its id and epoch may
		// bump — also with the epoch just before the last bump, which is
		// how a producer whose transaction the coordinator timed out
		// recovers (KIP-588); one presenting another is fenced.
		tc.b.e.Probe(probe.ProducerFenced, t.id)
		respond(fencedCode(req.Version, 4), -1, -1)
		return
	case t.State == txnOngoing:
		tc.b.e.Probe(probe.PredecessorFenced, t.id)
		tc.fence(t, "fenced by InitProducerId", func(code int16) {
			if code == 0 {
				code = kerr.ConcurrentTransactions.Code // retry once the abort completes
			}
			respond(code, -1, -1)
		})
		return
	}
	bump := func(pid int64) {
		next := t.clone()
		next.State, next.Partitions, next.Timeout, next.EndedEpoch, next.NextProducerID = txnEmpty, nil, timeout, -1, -1
		next.LastEpoch = t.ProducerEpoch
		if pid >= 0 {
			next.ProducerID, next.ProducerEpoch, next.LastEpoch = pid, 0, -1
		} else {
			next.ProducerEpoch++
		}
		tc.persist(t, next, func(code int16) { respond(code, next.ProducerID, next.ProducerEpoch) })
	}
	if t.ProducerEpoch < maxProducerEpoch-1 {
		bump(-1)
		return
	}
	// The epoch is exhausted: the producer continues under a new id.
	epoch := t.ProducerEpoch
	tc.b.allocateProducerID(func(pid int64, code int16) {
		switch {
		case code != 0:
			respond(code, -1, -1)
		case !tc.current(t) || t.pending != txnNone || !t.State.completed() || t.ProducerEpoch != epoch:
			respond(kerr.ConcurrentTransactions.Code, -1, -1)
		default:
			bump(pid)
		}
	})
}

// fence bumps the epoch of t's producer and aborts its open transaction
// with the new epoch, so every write of the old instance is refused from
// here on (Kafka's PrepareEpochFence then PrepareAbort). At the maximum
// epoch the abort keeps it; the next InitProducerId moves to a new id.
func (tc *txnCoordinator) fence(t *txnMeta, why string, done func(code int16)) {
	next := t.clone()
	if next.ProducerEpoch < maxProducerEpoch {
		next.ProducerEpoch++
	}
	next.State, next.EndedEpoch, next.LastEpoch = txnPrepareAbort, -1, t.ProducerEpoch
	tc.b.e.Log("txn-fence", "id", t.id, "pid", t.ProducerID, "epoch", next.ProducerEpoch, "why", why)
	tc.persist(t, next, func(code int16) {
		if code == 0 {
			tc.startMarkers(t)
		}
		done(code)
	})
}

// abortTimedOut aborts, and fences, every transaction open longer than its
// transaction.timeout.ms.
func (tc *txnCoordinator) abortTimedOut() {
	defer tc.b.e.AfterFunc(txnTimeoutCheckInterval, tc.abortTimedOut)
	// On the wall clock, as Kafka's TransactionStateManager.timedOutTransactions
	// compares txnStartTimestamp with time.milliseconds(): the start is
	// persisted, so a coordinator taking over compares it with its own clock.
	now := tc.b.e.WallClock()
	for _, id := range slices.Sorted(maps.Keys(tc.txns)) {
		t := tc.txns[id]
		if t.State != txnOngoing || t.pending != txnNone || now.Sub(t.Started) <= t.Timeout {
			continue
		}
		if _, code := tc.serving(id); code != 0 {
			continue
		}
		tc.b.e.Probe(probe.TransactionTimedOut, id)
		tc.fence(t, "transaction.timeout.ms", func(int16) {})
	}
}

// addPartitions adds tps to the producer's transaction, opening it if
// none is open; done gets one code for every partition.
func (tc *txnCoordinator) addPartitions(id string, pid int64, epoch int16, tps []metadata.TopicPartition, fenced int16, done func(code int16)) {
	_, code := tc.serving(id)
	t := tc.txns[id]
	if code == 0 {
		code = tc.checkProducer(t, pid, epoch, fenced)
	}
	switch {
	case code != 0:
	case t.pending != txnNone || t.State.prepared():
		code = kerr.ConcurrentTransactions.Code
	case len(tps) == 0 || (t.State == txnOngoing && containsAll(t.Partitions, tps)):
	default:
		next := t.clone()
		if t.State != txnOngoing {
			next.Partitions, next.Started = nil, tc.b.e.WallClock()
		}
		next.State = txnOngoing
		next.Partitions = addPartitions(next.Partitions, tps)
		tc.persist(t, next, done)
		return
	}
	done(code)
}

func containsAll(set, tps []metadata.TopicPartition) bool {
	for _, tp := range tps {
		if !slices.Contains(set, tp) {
			return false
		}
	}
	return true
}

// unknownPartitions returns the partitions metadata does not know.
func (tc *txnCoordinator) unknownPartitions(tps []metadata.TopicPartition) map[metadata.TopicPartition]bool {
	var out map[metadata.TopicPartition]bool
	for _, tp := range tps {
		if _, ok := tc.b.image.Partition(tp); !ok {
			if out == nil {
				out = map[metadata.TopicPartition]bool{}
			}
			out[tp] = true
		}
	}
	return out
}

// handleAddPartitionsToTxn: versions 0-3 come from producers; 4+ from
// brokers, batched by transactional id, and with VerifyOnly from a
// partition leader checking a transactional batch (KIP-890 part 1).
func (tc *txnCoordinator) handleAddPartitionsToTxn(r *rpc.Request, req *kmsg.AddPartitionsToTxnRequest) {
	if req.Version >= 4 && !tc.b.clusterAction(r) {
		// v4+ comes only from brokers verifying a transaction (KIP-890):
		// CLUSTER_AUTHORIZATION_FAILED from anyone else (listeners.go).
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		r.Respond(resp)
		return
	}
	if req.Version >= 4 {
		tc.handleAddPartitionsToTxnBatch(r, req)
		return
	}
	var tps []metadata.TopicPartition
	for _, rt := range req.Topics {
		for _, part := range rt.Partitions {
			tps = append(tps, metadata.TopicPartition{Topic: rt.Topic, Partition: part})
		}
	}
	respond := func(codeOf func(metadata.TopicPartition) int16) {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		for _, rt := range req.Topics {
			tr := kmsg.NewAddPartitionsToTxnResponseTopic()
			tr.Topic = rt.Topic
			for _, part := range rt.Partitions {
				pr := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				pr.Partition, pr.ErrorCode = part, codeOf(metadata.TopicPartition{Topic: rt.Topic, Partition: part})
				tr.Partitions = append(tr.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, tr)
		}
		tc.b.respond(r, resp)
	}
	if unknown := tc.unknownPartitions(tps); unknown != nil {
		respond(func(tp metadata.TopicPartition) int16 {
			if unknown[tp] {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		})
		return
	}
	tc.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, fencedCode(req.Version, 2), func(code int16) {
		respond(func(metadata.TopicPartition) int16 { return code })
	})
}

func (tc *txnCoordinator) handleAddPartitionsToTxnBatch(r *rpc.Request, req *kmsg.AddPartitionsToTxnRequest) {
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	waiting := 1 // held until every transaction below has started
	finish := func() {
		if waiting--; waiting == 0 {
			tc.b.respond(r, resp)
		}
	}
	for i, rt := range req.Transactions {
		resp.Transactions[i] = kmsg.NewAddPartitionsToTxnResponseTransaction()
		resp.Transactions[i].TransactionalID = rt.TransactionalID
		var tps []metadata.TopicPartition
		for _, t := range rt.Topics {
			for _, part := range t.Partitions {
				tps = append(tps, metadata.TopicPartition{Topic: t.Topic, Partition: part})
			}
		}
		fill := func(codeOf func(metadata.TopicPartition) int16) {
			out := &resp.Transactions[i]
			for _, t := range rt.Topics {
				ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				ot.Topic = t.Topic
				for _, part := range t.Partitions {
					op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					op.Partition, op.ErrorCode = part, codeOf(metadata.TopicPartition{Topic: t.Topic, Partition: part})
					ot.Partitions = append(ot.Partitions, op)
				}
				out.Topics = append(out.Topics, ot)
			}
		}
		if rt.VerifyOnly {
			codes := tc.verifyPartitions(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, tps)
			fill(func(tp metadata.TopicPartition) int16 { return codes[tp] })
			continue
		}
		waiting++
		tc.addPartitions(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, tps, kerr.ProducerFenced.Code, func(code int16) {
			fill(func(metadata.TopicPartition) int16 { return code })
			finish()
		})
	}
	finish()
}

// verifyPartitions answers a partition leader's question: is each of tps
// in the producer's open transaction? (KIP-890 part 1.)
func (tc *txnCoordinator) verifyPartitions(id string, pid int64, epoch int16, tps []metadata.TopicPartition) map[metadata.TopicPartition]int16 {
	_, code := tc.serving(id)
	t := tc.txns[id]
	if code == 0 {
		code = tc.checkProducer(t, pid, epoch, kerr.ProducerFenced.Code)
	}
	if code == 0 && (t.State.prepared() || t.pending.prepared()) {
		code = kerr.ConcurrentTransactions.Code // ending: ask again
	}
	codes := make(map[metadata.TopicPartition]int16, len(tps))
	for _, tp := range tps {
		switch {
		case code != 0:
			codes[tp] = code
		case t.State == txnOngoing && slices.Contains(t.Partitions, tp):
			codes[tp] = 0
		default:
			codes[tp] = kerr.InvalidTxnState.Code
		}
	}
	return codes
}

// handleAddOffsetsToTxn adds the group's __consumer_offsets partition to
// the transaction, so that its markers reach the group coordinator.
func (tc *txnCoordinator) handleAddOffsetsToTxn(r *rpc.Request, req *kmsg.AddOffsetsToTxnRequest) {
	respond := func(code int16) {
		resp := kmsg.NewPtrAddOffsetsToTxnResponse()
		resp.ErrorCode = code
		tc.b.respond(r, resp)
	}
	if tc.b.image.Topics[metadata.OffsetsTopic] == nil {
		tc.b.ensureInternalTopics()
		respond(kerr.CoordinatorNotAvailable.Code)
		return
	}
	tp := tc.b.groups.offsetsPartition(req.Group)
	tc.addPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []metadata.TopicPartition{tp}, fencedCode(req.Version, 2), respond)
}

// handleEndTxn decides the producer's transaction: the Prepare* record is
// the decision, and the producer is answered once it is committed in the
// transaction log; markers follow, then Complete*.
func (tc *txnCoordinator) handleEndTxn(r *rpc.Request, req *kmsg.EndTxnRequest) {
	respond := func(code int16, pid int64, epoch int16) {
		resp := kmsg.NewPtrEndTxnResponse()
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		tc.b.respond(r, resp)
	}
	id := req.TransactionalID
	fenced := fencedCode(req.Version, 2)
	_, code := tc.serving(id)
	t := tc.txns[id]
	if code == 0 && (t == nil || req.ProducerID != t.ProducerID) {
		code = kerr.InvalidProducerIDMapping.Code
	}
	if code != 0 {
		respond(code, -1, -1)
		return
	}
	bump := tc.b.cfg.EpochBumpPerTransaction && req.Version >= 5
	// retry: the epoch of the transaction the last bumping EndTxn ended.
	retry := t.EndedEpoch >= 0 && req.ProducerEpoch == t.EndedEpoch
	ok := func() { respond(0, t.ProducerID, t.ProducerEpoch) }
	same := (req.Commit && (t.State == txnPrepareCommit || t.State == txnCompleteCommit)) ||
		(!req.Commit && (t.State == txnPrepareAbort || t.State == txnCompleteAbort))
	switch {
	case req.ProducerEpoch != t.ProducerEpoch && !retry:
		tc.b.e.Probe(probe.ProducerFenced, t.id)
		respond(fenced, -1, -1)
	case t.pending != txnNone:
		respond(kerr.ConcurrentTransactions.Code, -1, -1)
	case retry:
		switch {
		case same && t.State.prepared():
			respond(kerr.ConcurrentTransactions.Code, -1, -1)
		case same:
			ok()
		case t.State == txnOngoing || t.State == txnEmpty:
			// A delayed EndTxn of the previous transaction: it must not
			// end the one the producer has opened since.
			respond(fenced, -1, -1)
		default:
			respond(kerr.InvalidTxnState.Code, -1, -1)
		}
	case t.State == txnOngoing:
		tc.endTransaction(t, req.Commit, bump, respond)
	case same && t.State.prepared():
		respond(kerr.ConcurrentTransactions.Code, -1, -1)
	case !req.Commit && bump && t.State.completed():
		// KIP-890 part 2: aborting with no transaction open is legal and
		// bumps the epoch (a producer unsure whether its transaction
		// began aborts to start clean).
		tc.endTransaction(t, false, true, respond)
	case same:
		ok() // a retry: the transaction ended as asked
	default:
		respond(kerr.InvalidTxnState.Code, -1, -1)
	}
}

// endTransaction writes the decision (PrepareCommit or PrepareAbort),
// answers, and starts the markers. With bump the epoch moves on (KIP-890
// part 2); at an exhausted epoch the producer's next id is allocated first.
func (tc *txnCoordinator) endTransaction(t *txnMeta, commit, bump bool, respond func(int16, int64, int16)) {
	prepare := func(nextID int64) {
		next := t.clone()
		next.State, next.EndedEpoch, next.NextProducerID = txnPrepareAbort, -1, nextID
		if commit {
			next.State = txnPrepareCommit
		}
		if t.State != txnOngoing {
			next.Partitions = nil
		}
		if bump {
			next.EndedEpoch = t.ProducerEpoch
			next.ProducerEpoch++
		}
		tc.persist(t, next, func(code int16) {
			if code != 0 {
				respond(code, -1, -1)
				return
			}
			if nextID >= 0 {
				respond(0, nextID, 0)
			} else {
				respond(0, next.ProducerID, next.ProducerEpoch)
			}
			tc.startMarkers(t)
		})
	}
	if !bump || t.ProducerEpoch < maxProducerEpoch-1 {
		prepare(-1)
		return
	}
	state, epoch := t.State, t.ProducerEpoch
	tc.b.allocateProducerID(func(pid int64, code int16) {
		switch {
		case code != 0:
			respond(code, -1, -1)
		case !tc.current(t) || t.pending != txnNone || t.State != state || t.ProducerEpoch != epoch:
			respond(kerr.ConcurrentTransactions.Code, -1, -1)
		default:
			prepare(pid)
		}
	})
}

// TransactionState is a snapshot of a transactional id at its coordinator,
// for tests and the harness.
type TransactionState struct {
	State         string
	ProducerID    int64
	ProducerEpoch int16
	Partitions    []metadata.TopicPartition
	Pending       string // a state being written, or "None"
}

// Transaction returns the state of transactional id id if this broker
// coordinates it.
func (b *Broker) Transaction(id string) (TransactionState, bool) {
	t := b.txns.txns[id]
	if t == nil {
		return TransactionState{}, false
	}
	return TransactionState{State: t.State.String(), ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch,
		Partitions: slices.Clone(t.Partitions), Pending: t.pending.String()}, true
}
