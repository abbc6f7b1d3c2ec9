package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An operator looking for a hanging transaction (kafka-transactions.sh):
// ListTransactions at the coordinator finds it by state and by how long it
// has run, DescribeTransactions tells its producer, timeout, start and
// partitions; after it commits it is listed as CompleteCommit. Other
// brokers do not coordinate it.
func TestTransactionsAreListedAndDescribedAtTheirCoordinator(t *testing.T) {
	c := newCluster(t, 61, 3, config.Default())
	c.createTopic("orders", 2, 3)
	p := c.txnProducer("app", "pipeline", speaksTV1)
	p.init()
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "a").ErrorCode)
	began := c.w.Now()
	require.NoError(t, c.w.RunFor(3*time.Second))

	list := func(broker int, durationMs int64, states ...string) *kmsg.ListTransactionsResponse {
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters, req.DurationFilterMillis = states, durationMs
		return p.call(broker, req).(*kmsg.ListTransactionsResponse)
	}
	describe := func(broker int, ids ...string) []kmsg.DescribeTransactionsResponseTransactionState {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = ids
		return p.call(broker, req).(*kmsg.DescribeTransactionsResponse).TransactionStates
	}

	co := p.coordinator
	got := list(co, -1, "Ongoing", "Hanging")
	require.Zero(t, got.ErrorCode)
	require.Equal(t, []string{"Hanging"}, got.UnknownStateFilters)
	require.Len(t, got.TransactionStates, 1)
	require.Equal(t, "pipeline", got.TransactionStates[0].TransactionalID)
	require.Equal(t, p.pid, got.TransactionStates[0].ProducerID)
	require.Len(t, list(co, 2000).TransactionStates, 1, "running for 3 s: longer than 2 s")
	require.Empty(t, list(co, 5000).TransactionStates, "not longer than 5 s")
	require.Empty(t, list(co, -1, "PrepareCommit").TransactionStates)

	d := describe(co, "pipeline", "nope", "")
	require.Len(t, d, 3)
	require.Zero(t, d[0].ErrorCode)
	require.Equal(t, "Ongoing", d[0].State)
	require.Equal(t, p.pid, d[0].ProducerID)
	require.Equal(t, p.epoch, d[0].ProducerEpoch)
	require.Equal(t, int32(time.Minute.Milliseconds()), d[0].TimeoutMillis)
	require.InDelta(t, began.UnixMilli(), d[0].StartTimestamp, 1000)
	require.Len(t, d[0].Topics, 1)
	require.Equal(t, "orders", d[0].Topics[0].Topic)
	require.Equal(t, []int32{0}, d[0].Topics[0].Partitions)
	require.Equal(t, kerr.TransactionalIDNotFound.Code, d[1].ErrorCode)
	require.Equal(t, kerr.InvalidRequest.Code, d[2].ErrorCode)
	for b := range 3 {
		if b != co {
			require.Equal(t, kerr.NotCoordinator.Code, describe(b, "pipeline")[0].ErrorCode, "broker %d", b)
			require.Empty(t, list(b, -1).TransactionStates, "broker %d", b)
		}
	}

	require.Zero(t, p.end(true))
	p.waitCompleted()
	got = list(co, -1, "CompleteCommit")
	require.Len(t, got.TransactionStates, 1)
	require.Equal(t, "CompleteCommit", got.TransactionStates[0].TransactionState)
}
