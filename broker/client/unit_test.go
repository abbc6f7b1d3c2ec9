package client_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/stretchr/testify/require"
)

// Golden vectors from Kafka's UtilsTest.testMurmur2: a key lands where a
// Java producer would put it.
func TestMurmur2MatchesKafka(t *testing.T) {
	for in, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		require.Equal(t, want, client.Murmur2([]byte(in)), in)
	}
	require.Equal(t, int32((479470107&0x7fffffff)%7), client.KeyPartition([]byte("abc"), 7))
}

func TestOptionsRefuseImpossibleSettings(t *testing.T) {
	ok := client.DefaultProducerOptions("b")
	require.NoError(t, ok.Validate())
	for name, mutate := range map[string]func(*client.ProducerOptions){
		"no bootstrap":                     func(o *client.ProducerOptions) { o.BootstrapServers = nil },
		"acks 2":                           func(o *client.ProducerOptions) { o.Acks = 2 },
		"idempotence with acks 1":          func(o *client.ProducerOptions) { o.Acks = 1 },
		"idempotence with 6 in flight":     func(o *client.ProducerOptions) { o.MaxInFlightRequestsPerConnection = 6 },
		"idempotence without retries":      func(o *client.ProducerOptions) { o.Retries = 0 },
		"delivery timeout below request":   func(o *client.ProducerOptions) { o.DeliveryTimeout = o.RequestTimeout },
		"zero request timeout":             func(o *client.ProducerOptions) { o.RequestTimeout = 0 },
		"zero batch size":                  func(o *client.ProducerOptions) { o.BatchSize = 0 },
		"transactions without idempotence": func(o *client.ProducerOptions) { o.TransactionalID, o.EnableIdempotence = "tx", false },
		"zero transaction timeout":         func(o *client.ProducerOptions) { o.TransactionalID, o.TransactionTimeout = "tx", 0 },
		"no partitioner":                   func(o *client.ProducerOptions) { o.Partitioner = 0 },
		"codec 5":                          func(o *client.ProducerOptions) { o.CompressionType = record.Compression(5) },
		"no in flight":                     func(o *client.ProducerOptions) { o.MaxInFlightRequestsPerConnection = 0 },
		"buffer smaller than one batch":    func(o *client.ProducerOptions) { o.BufferMemory = o.BatchSize - 1 },
		"reconnect backoff max below base": func(o *client.ProducerOptions) { o.ReconnectBackoffMax = time.Millisecond },
	} {
		o := client.DefaultProducerOptions("b")
		mutate(&o)
		require.Error(t, o.Validate(), name)
	}
	c := client.DefaultConsumerOptions("b")
	require.NoError(t, c.Validate())
	c.EnableAutoCommit = true
	require.Error(t, c.Validate(), "auto-commit without group.id")
	c.GroupID = "g"
	require.NoError(t, c.Validate())
	c.FetchMaxWait = c.RequestTimeout
	require.Error(t, c.Validate(), "fetch.max.wait.ms must stay below request.timeout.ms")
	c = client.DefaultConsumerOptions("b")
	c.GroupID = "g"
	c.HeartbeatInterval = c.SessionTimeout
	require.Error(t, c.Validate(), "heartbeat.interval.ms must stay below session.timeout.ms")
}

// The range assignor gives each subscriber of a topic a consecutive range,
// the first members one partition more when they do not divide evenly, as
// Kafka's RangeAssignor does.
func TestRangeAssignorSplitsEachTopicInMemberOrder(t *testing.T) {
	got := client.RangeAssign(map[string][]string{
		"b": {"orders", "logs"},
		"a": {"orders"},
		"c": {"orders"},
	}, map[string]int{"orders": 7, "logs": 2})
	tp := func(topic string, ps ...int32) []client.TopicPartition {
		var out []client.TopicPartition
		for _, p := range ps {
			out = append(out, client.TopicPartition{Topic: topic, Partition: p})
		}
		return out
	}
	require.Equal(t, tp("orders", 0, 1, 2), got["a"])
	require.Equal(t, append(tp("logs", 0, 1), tp("orders", 3, 4)...), got["b"])
	require.Equal(t, tp("orders", 5, 6), got["c"])
}

func TestOutcomeOfClassifiesErrors(t *testing.T) {
	require.Equal(t, client.OK, client.OutcomeOf(nil))
	require.Equal(t, client.Fail, client.OutcomeOf(&client.Error{Outcome: client.Fail, Err: client.ErrBufferFull}))
	require.Equal(t, client.Info, client.OutcomeOf(&client.Error{Outcome: client.Info, Err: client.ErrDeliveryTimeout}))
	require.Equal(t, client.Info, client.OutcomeOf(client.ErrNoGroup), "an unclassified error is never a failure")
}
