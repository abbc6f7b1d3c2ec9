package broker

import (
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transaction.partition.verification.enable (KIP-890 part 1), the
// partition side. Without it, a transactional batch that arrives after its
// transaction ended (a retry stuck in the network, a zombie's write) opens
// a new transaction in the partition that no coordinator knows of: it
// never gets a marker and holds the last stable offset — read_committed
// consumers stall — until the producer happens to add the partition to a
// later transaction, which then commits or aborts it along with its own.
// With it, the leader asks the coordinator (AddPartitionsToTxn v4+,
// VerifyOnly) before appending the batch that would open the producer's
// transaction in the partition, and refuses it unless the partition is in
// the producer's ongoing transaction.

// txnGuardKey names a verification in flight: Kafka's verification guard.
// A marker for the producer on the partition removes it, so a verification
// answered "yes" for a transaction that has meanwhile ended does not let
// its batch in.
type txnGuardKey struct {
	tp         metadata.TopicPartition
	producerID int64
}

type txnVerification struct {
	tp    metadata.TopicPartition
	pid   int64
	epoch int16
	guard uint64
}

// verifyProduce checks every transactional batch of req that would open a
// transaction in its partition; done gets the refused partitions.
func (tc *txnCoordinator) verifyProduce(req *kmsg.ProduceRequest, done func(refused map[metadata.TopicPartition]int16)) {
	var need []txnVerification
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			bt, err := record.Parse(rp.Records)
			if err != nil || !bt.IsTransactional() || !bt.HasProducerID() {
				continue // the append refuses or needs no verification
			}
			need = append(need, txnVerification{tp: metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, pid: bt.ProducerID(), epoch: bt.ProducerEpoch()})
		}
	}
	tc.verify(*req.TransactionID, need, func(codes map[metadata.TopicPartition]int16) {
		refused := map[metadata.TopicPartition]int16{}
		for _, tp := range slices.SortedFunc(maps.Keys(codes), metadata.TopicPartition.Compare) {
			if code := codes[tp]; code != 0 {
				refused[tp] = produceVerificationCode(code)
				if code == kerr.InvalidTxnState.Code {
					tc.b.e.Probe(probe.LateBatchRefusedByVerification, tp.String())
				}
			}
		}
		done(refused)
	})
}

// produceVerificationCode is what a producer is told when verification
// fails: coordinator trouble becomes NOT_ENOUGH_REPLICAS, which every
// producer retries (as Kafka answers), a fenced producer hears
// INVALID_PRODUCER_EPOCH as from the log, the rest pass through
// (INVALID_TXN_STATE: the partition is not in the producer's transaction).
func produceVerificationCode(code int16) int16 {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.ConcurrentTransactions.Code, kerr.RequestTimedOut.Code:
		return kerr.NotEnoughReplicas.Code
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// verify asks the transactional id's coordinator whether each partition is
// in the producer's ongoing transaction, skipping partitions where this
// leader's log already has the producer's transaction open (only the batch
// that opens it needs asking). done gets a code per partition asked.
func (tc *txnCoordinator) verify(id string, vs []txnVerification, done func(codes map[metadata.TopicPartition]int16)) {
	b := tc.b
	var asked []txnVerification
	for _, v := range vs {
		if p := b.partitions[v.tp]; p != nil && p.leading() {
			if s, ok := p.log.Producer(v.pid); ok && s.TxnFirstOffset >= 0 && s.ProducerEpoch == v.epoch {
				continue
			}
		} else {
			continue // the append answers NOT_LEADER_OR_FOLLOWER
		}
		tc.guardSeq++
		v.guard = tc.guardSeq
		tc.guards[txnGuardKey{v.tp, v.pid}] = v.guard
		asked = append(asked, v)
	}
	if len(asked) == 0 {
		done(nil)
		return
	}
	tc.askCoordinator(id, asked, func(codes map[metadata.TopicPartition]int16) {
		out := map[metadata.TopicPartition]int16{}
		for _, v := range asked {
			key := txnGuardKey{v.tp, v.pid}
			code, ok := codes[v.tp]
			if !ok {
				code = kerr.NotEnoughReplicas.Code
			}
			if code == 0 && tc.guards[key] != v.guard {
				// A marker ended the transaction while we asked.
				code = kerr.InvalidTxnState.Code
			}
			if tc.guards[key] == v.guard {
				delete(tc.guards, key)
			}
			out[v.tp] = code
		}
		done(out)
	})
}

// askCoordinator sends AddPartitionsToTxn with VerifyOnly to the
// coordinator of id (itself, if this broker is it).
func (tc *txnCoordinator) askCoordinator(id string, vs []txnVerification, done func(map[metadata.TopicPartition]int16)) {
	b := tc.b
	all := func(code int16) {
		codes := map[metadata.TopicPartition]int16{}
		for _, v := range vs {
			codes[v.tp] = code
		}
		done(codes)
	}
	br, code := tc.b.coordinatorFor(metadata.TransactionTopic, id, b.cfg.TransactionTopicPartitions)
	if code != 0 {
		all(code)
		return
	}
	// One verification per producer id and epoch; a request carries one
	// producer in practice.
	type producer struct {
		pid   int64
		epoch int16
	}
	var producers []producer
	byProducer := map[producer][]metadata.TopicPartition{}
	for _, v := range vs {
		k := producer{v.pid, v.epoch}
		if byProducer[k] == nil {
			producers = append(producers, k)
		}
		byProducer[k] = append(byProducer[k], v.tp)
	}
	if br.ID == b.opts.ID {
		codes := map[metadata.TopicPartition]int16{}
		for _, k := range producers {
			for tp, code := range tc.verifyPartitions(id, k.pid, k.epoch, byProducer[k]) {
				codes[tp] = code
			}
		}
		done(codes)
		return
	}
	peer, ok := tc.peer(tc.verifyPeers, br.ID)
	if !ok {
		all(kerr.CoordinatorNotAvailable.Code)
		return
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	for _, k := range producers {
		rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
		rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, k.pid, k.epoch, true
		tps := byProducer[k]
		slices.SortFunc(tps, func(a, b metadata.TopicPartition) int { return a.Compare(b) })
		for _, tp := range tps {
			if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				t.Topic = tp.Topic
				rt.Topics = append(rt.Topics, t)
			}
			rt.Topics[len(rt.Topics)-1].Partitions = append(rt.Topics[len(rt.Topics)-1].Partitions, tp.Partition)
		}
		req.Transactions = append(req.Transactions, rt)
	}
	peer.Do(req, txnRequestTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			all(kerr.CoordinatorNotAvailable.Code)
			return
		}
		r := resp.(*kmsg.AddPartitionsToTxnResponse)
		if r.ErrorCode != 0 {
			all(r.ErrorCode)
			return
		}
		codes := map[metadata.TopicPartition]int16{}
		for _, t := range r.Transactions {
			for _, rt := range t.Topics {
				for _, p := range rt.Partitions {
					codes[metadata.TopicPartition{Topic: rt.Topic, Partition: p.Partition}] = p.ErrorCode
				}
			}
		}
		done(codes)
	})
}
