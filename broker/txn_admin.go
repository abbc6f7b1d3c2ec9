package broker

import (
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction admin: what a coordinator tells of the transactional ids it
// coordinates (KIP-664, kafka-transactions.sh describe and list).

// txnStateNames are Kafka's TransactionState names. Dead and
// PrepareEpochFence never occur here (ids do not expire; fencing bumps the
// epoch in one write) but are names a ListTransactions filter may give.
var txnStateNames = map[string]txnState{
	"Empty": txnEmpty, "Ongoing": txnOngoing, "PrepareCommit": txnPrepareCommit, "PrepareAbort": txnPrepareAbort,
	"CompleteCommit": txnCompleteCommit, "CompleteAbort": txnCompleteAbort, "Dead": txnNone, "PrepareEpochFence": txnNone,
}

// startTimeMs is the open transaction's start on the wall clock, or -1
// (Kafka's txnStartTimestamp before the first transaction).
func (t *txnMeta) startTimeMs() int64 {
	if t.Started == 0 {
		return -1
	}
	return t.Started.UnixMilli()
}

// handleDescribeTransactions describes transactional ids as Kafka's
// TransactionCoordinator.handleDescribeTransactions does: an empty id is
// INVALID_REQUEST, one this broker does not coordinate NOT_COORDINATOR (or
// COORDINATOR_LOAD_IN_PROGRESS while its partition loads), an unknown one
// TRANSACTIONAL_ID_NOT_FOUND; else its state, producer, timeout, start and
// partitions.
func (tc *txnCoordinator) handleDescribeTransactions(req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		_, code := tc.serving(id)
		t := tc.txns[id]
		switch {
		case id == "":
			st.ErrorCode = kerr.InvalidRequest.Code
		case code != 0:
			st.ErrorCode = code
		case t == nil:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			st.State, st.ProducerID, st.ProducerEpoch = t.State.String(), t.ProducerID, t.ProducerEpoch
			st.TimeoutMillis, st.StartTimestamp = int32(t.Timeout.Milliseconds()), t.startTimeMs()
			for _, tp := range t.Partitions { // sorted: by topic, then partition
				if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
					td := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					td.Topic = tp.Topic
					st.Topics = append(st.Topics, td)
				}
				td := &st.Topics[len(st.Topics)-1]
				td.Partitions = append(td.Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

// handleListTransactions lists the transactional ids this broker
// coordinates, as Kafka's TransactionStateManager.listTransactionStates
// does: COORDINATOR_LOAD_IN_PROGRESS while any partition it leads is still
// loading; filters by state name (unknown names are returned, and match
// nothing), by producer id and (v1, KIP-994) by running longer than a
// duration.
func (tc *txnCoordinator) handleListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := kmsg.NewPtrListTransactionsResponse()
	if tc.loading() {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp
	}
	states := map[txnState]bool{}
	for _, name := range req.StateFilters {
		if s, ok := txnStateNames[name]; ok {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	now := tc.b.e.WallClock().UnixMilli()
	for _, id := range slices.Sorted(maps.Keys(tc.txns)) {
		t := tc.txns[id]
		switch {
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.ProducerID):
		case len(req.StateFilters) > 0 && !states[t.State]:
		case req.DurationFilterMillis >= 0 && now-t.startTimeMs() <= req.DurationFilterMillis:
		default:
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = id, t.ProducerID, t.State.String()
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	return resp
}

// loading reports whether a __transaction_state partition this broker
// leads has not been loaded in its leader epoch yet.
func (tc *txnCoordinator) loading() bool {
	for part := range tc.b.cfg.TransactionTopicPartitions {
		p := tc.b.partitions[metadata.TopicPartition{Topic: metadata.TransactionTopic, Partition: int32(part)}]
		if p == nil || !p.leading() {
			continue
		}
		if epoch, ok := tc.loaded[int32(part)]; !ok || epoch != p.epoch() {
			return true
		}
	}
	return false
}
