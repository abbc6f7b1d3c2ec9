package client_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// A thousand keyed records with acks=all and idempotence reach three
// replicated partitions once each, and a consumer reads every one exactly
// once, each partition in send order, at the offsets the producer was told.
func TestIdempotentThousandRecordsAreConsumedExactlyOnceInOrder(t *testing.T) {
	w := newWorld(t, 1, config.Default())
	w.createTopic("orders", 3, 3)
	p := w.newProducer("client", producerOptions())
	var recs []client.Record
	for i := range 1000 {
		recs = append(recs, client.Record{Topic: "orders", Key: []byte(fmt.Sprintf("k%d", i%17)), Value: value(i)})
	}
	s := w.sendAndWait("client", p, recs...)
	for _, v := range s.order {
		r := s.results[v]
		require.Equal(t, client.OK, r.Outcome, "%s: %v", v, r.Err)
		require.GreaterOrEqual(t, r.Offset, int64(0))
	}
	id, epoch := p.ProducerID()
	require.GreaterOrEqual(t, id, int64(0))
	require.Equal(t, int16(0), epoch)

	c := w.newConsumer("client", consumerOptions(""))
	w.exec("client", func(*app) {
		c.Assign([]client.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}, {Topic: "orders", Partition: 2}})
	})
	got := w.pollUntil("client", c, 1000, time.Minute)
	require.Len(t, got, 1000)
	seen := map[string]bool{}
	last := map[int32]int{0: -1, 1: -1, 2: -1}
	for _, r := range got {
		v := string(r.Value)
		require.False(t, seen[v], "%s consumed twice", v)
		seen[v] = true
		var i int
		_, err := fmt.Sscanf(v, "v%04d", &i)
		require.NoError(t, err)
		require.Greater(t, i, last[r.Partition], "partition %d out of send order", r.Partition)
		last[r.Partition] = i
		res := s.results[v]
		require.Equal(t, res.Partition, r.Partition, v)
		require.Equal(t, res.Offset, r.Offset, v)
		require.Equal(t, client.KeyPartition([]byte(fmt.Sprintf("k%d", i%17)), 3), r.Partition, "murmur2 placement of %s", v)
	}
}

// The leader appends a batch, then the connection resets before its answer
// comes back. The producer cannot know the batch landed and retries: with
// idempotence the leader recognises the retry's sequence and the log holds
// one copy; without, it holds two. Either way the send reports ok.
func TestDroppedProduceResponseDuplicatesWithoutIdempotence(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotence=%v", idempotent), func(t *testing.T) {
			w := newWorld(t, 7, config.Default())
			w.createTopic("payments", 1, 3)
			tp := client.TopicPartition{Topic: "payments", Partition: 0}
			opts := producerOptions()
			opts.EnableIdempotence = idempotent
			p := w.newProducer("client", opts)
			w.sendAndWait("client", p, client.Record{Topic: "payments", Value: []byte("a")})

			leader := w.leaderOf(tp)
			s := newSends()
			w.exec("client", func(*app) { s.send(p, client.Record{Topic: "payments", Value: []byte("b")}) })
			w.runUntil(func() bool { return w.logEnd(tp) == 2 }, 5*time.Second, "the leader appends b")
			w.w.ResetLink("client", leader) // the answer, still waiting for the followers, is lost
			w.runUntil(s.done, time.Minute, "b's result")

			r := s.results["b"]
			require.Equal(t, client.OK, r.Outcome, "%v", r.Err)
			w.run(time.Second)
			if idempotent {
				require.Equal(t, int64(1), r.Offset, "the retry is answered with the first append's offset")
				require.Equal(t, []string{"a", "b"}, w.logValues(tp))
			} else {
				require.Equal(t, int64(2), r.Offset, "the retry is appended again")
				require.Equal(t, []string{"a", "b", "b"}, w.logValues(tp))
			}
		})
	}
}

// With acks=0 a send is done once it is on the wire: the producer reports
// ok, without an offset, while the leader is still unreachable behind a
// clogged link.
func TestAcksZeroNeverWaitsForTheBroker(t *testing.T) {
	w := newWorld(t, 3, config.Default())
	w.createTopic("metrics", 1, 3)
	tp := client.TopicPartition{Topic: "metrics", Partition: 0}
	opts := producerOptions()
	opts.Acks, opts.EnableIdempotence, opts.Linger = client.AcksNone, false, 0
	p := w.newProducer("client", opts)
	w.sendAndWait("client", p, client.Record{Topic: "metrics", Value: []byte("warm-up")})
	w.run(time.Second)
	require.Equal(t, []string{"warm-up"}, w.logValues(tp))

	w.w.Clog("client", w.leaderOf(tp), 10*time.Second)
	start := w.w.Now()
	var recs []client.Record
	for i := range 10 {
		recs = append(recs, client.Record{Topic: "metrics", Value: value(i)})
	}
	s := w.sendAndWait("client", p, recs...)
	require.Less(t, w.w.Now().Sub(start), 10*time.Millisecond, "acks=0 waited")
	for _, v := range s.order {
		require.Equal(t, client.SendResult{Partition: 0, Offset: -1, Outcome: client.OK}, s.results[v], v)
	}
	require.Equal(t, []string{"warm-up"}, w.logValues(tp), "nothing has arrived yet")
	w.run(11 * time.Second)
	require.Len(t, w.logValues(tp), 11, "the clog lifted and the records landed")
}

// delivery.timeout.ms ends a record's wait either way, but the outcome says
// what is known: a batch that went out and got no answer may have been
// written (info); a batch that never left cannot have been (fail).
func TestDeliveryTimeoutIsIndefiniteForSentBatchesAndDefiniteForUnsent(t *testing.T) {
	t.Run("sent", func(t *testing.T) {
		w := newWorld(t, 11, config.Default())
		w.createTopic("events", 1, 3)
		opts := producerOptions()
		opts.RequestTimeout, opts.DeliveryTimeout = time.Second, 4*time.Second
		p := w.newProducer("client", opts)
		w.sendAndWait("client", p, client.Record{Topic: "events", Value: []byte("warm-up")})
		w.w.Isolate("client") // the connections stay up: the request goes out into the void
		s := w.sendAndWait("client", p, client.Record{Topic: "events", Value: []byte("lost?")})
		r := s.results["lost?"]
		require.Equal(t, client.Info, r.Outcome, "%v", r.Err)
		require.ErrorIs(t, r.Err, client.ErrDeliveryTimeout)
		require.Equal(t, client.Info, client.OutcomeOf(r.Err))
	})
	t.Run("never sent", func(t *testing.T) {
		w := newWorld(t, 11, config.Default())
		w.createTopic("solo", 1, 1)
		tp := client.TopicPartition{Topic: "solo", Partition: 0}
		opts := producerOptions()
		opts.RequestTimeout, opts.DeliveryTimeout = time.Second, 4*time.Second
		p := w.newProducer("client", opts)
		w.sendAndWait("client", p, client.Record{Topic: "solo", Value: []byte("warm-up")})
		w.w.Node(w.leaderOf(tp)).Crash() // its only replica: no leader to send to
		s := w.sendAndWait("client", p, client.Record{Topic: "solo", Value: []byte("never")})
		r := s.results["never"]
		require.Equal(t, client.Fail, r.Outcome, "%v", r.Err)
		require.ErrorIs(t, r.Err, client.ErrDeliveryTimeout)
	})
}

// reorderSeed is a seed on which a connection reset catches several
// requests in flight (found by TestSearchReorderSeeds).
const reorderSeed = 1

// burstWithReset sends 100 one-record batches, one per millisecond, with
// max.in.flight.requests.per.connection 5, and resets the link to the
// leader at a moment drawn from the seed. It returns the results in send
// order and the partition's log.
func burstWithReset(t testing.TB, seed uint64, idempotent bool) ([]client.SendResult, []string) {
	w := newWorld(t, seed, config.Default())
	w.createTopic("clicks", 1, 3)
	tp := client.TopicPartition{Topic: "clicks", Partition: 0}
	opts := producerOptions()
	opts.EnableIdempotence = idempotent
	opts.MaxInFlightRequestsPerConnection = 5
	opts.Linger, opts.BatchSize, opts.RetryBackoff = 0, 64, 20*time.Millisecond
	p := w.newProducer("client", opts)
	w.sendAndWait("client", p, client.Record{Topic: "clicks", Value: []byte("warm-up")})
	s := newSends()
	start := w.w.Now()
	for i := range 100 {
		w.w.At(start.Add(time.Duration(i)*time.Millisecond), func() {
			w.w.Node("client").Exec(func() { s.send(p, client.Record{Topic: "clicks", Value: value(i)}) })
		})
	}
	faultAt := start.Add(w.w.Rand("test").Duration(10*time.Millisecond, 90*time.Millisecond))
	w.w.At(faultAt, func() { w.w.ResetLink("client", w.leaderOf(tp)) })
	w.run(100 * time.Millisecond)
	w.runUntil(s.done, time.Minute, "every send's result")
	w.run(time.Second)
	results := make([]client.SendResult, len(s.order))
	for i, v := range s.order {
		results[i] = s.results[v]
	}
	return results, w.logValues(tp)
}

// reordered reports the first pair of acknowledged sends whose offsets go
// backwards against send order (Jepsen's nonmonotonic-send).
func reordered(results []client.SendResult) (int, int, bool) {
	for i := range results {
		for j := i + 1; j < len(results); j++ {
			if results[i].Outcome == client.OK && results[j].Outcome == client.OK && results[i].Offset > results[j].Offset {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// Without idempotence, max.in.flight.requests.per.connection 5 lets a
// reset connection fail several requests at once; Kafka puts each failed
// batch back at the front of its partition's queue, so they go out again
// in reverse and land after one another the wrong way round. With
// idempotence the retries go in sequence order and the log keeps send
// order, once each.
func TestMaxInFlightFiveWithoutIdempotenceReordersUnderRetries(t *testing.T) {
	results, _ := burstWithReset(t, reorderSeed, false)
	i, j, ok := reordered(results)
	require.True(t, ok, "no reordering on seed %d", reorderSeed)
	t.Logf("send %d acknowledged at offset %d, after send %d at offset %d", i, results[i].Offset, j, results[j].Offset)

	results, log := burstWithReset(t, reorderSeed, true)
	_, _, ok = reordered(results)
	require.False(t, ok)
	want := []string{"warm-up"}
	for i, r := range results {
		require.Equal(t, client.OK, r.Outcome, "send %d: %v", i, r.Err)
		want = append(want, string(value(i)))
	}
	require.Equal(t, want, log)
}

func TestSearchReorderSeeds(t *testing.T) {
	if os.Getenv("KAFKASIM_SEARCH") == "" {
		t.Skip("set KAFKASIM_SEARCH=1 to look for seeds")
	}
	for seed := uint64(1); seed <= 30; seed++ {
		results, log := burstWithReset(t, seed, false)
		i, j, ok := reordered(results)
		t.Logf("seed %d: reordered=%v (%d,%d) log=%d", seed, ok, i, j, len(log))
	}
}

// The leader of a partition crashes in the middle of a stream. The
// controller fences it and elects a follower; the idempotent producer
// finds the new leader through metadata and retries what was in flight
// with the same sequences, and the consumer follows the leadership too:
// every record is in the log once, in send order, and read once.
func TestIdempotentProducerAndConsumerRideOutALeaderCrash(t *testing.T) {
	w := newWorld(t, 21, config.Default())
	w.createTopic("ledger", 1, 3)
	tp := client.TopicPartition{Topic: "ledger", Partition: 0}
	p := w.newProducer("client", producerOptions())
	c := w.newConsumer("client", consumerOptions(""))
	w.exec("client", func(*app) { c.Assign([]client.TopicPartition{tp}) })

	s := newSends()
	start := w.w.Now()
	for i := range 300 {
		w.w.At(start.Add(time.Duration(i)*time.Millisecond), func() {
			w.w.Node("client").Exec(func() { s.send(p, client.Record{Topic: "ledger", Value: value(i)}) })
		})
	}
	leader := w.leaderOf(tp)
	w.w.At(start.Add(100*time.Millisecond), func() { w.w.Node(leader).Crash() })
	w.w.At(start.Add(10*time.Second), func() { w.w.Node(leader).Start() })

	got := w.pollUntil("client", c, 300, time.Minute)
	w.runUntil(s.done, time.Minute, "every send's result")
	require.NotEqual(t, leader, w.leaderOf(tp), "a follower took over")
	for i, v := range s.order {
		r := s.results[v]
		require.Equal(t, client.OK, r.Outcome, "send %d: %v", i, r.Err)
		require.Equal(t, int64(i), r.Offset, "send %d", i)
	}
	require.Equal(t, valueRange(0, 300), values(got))
	require.Equal(t, valueRange(0, 300), w.logValues(tp))
}

// min.insync.replicas=2 with both followers gone: the leader refuses every
// acks=all attempt before appending (NOT_ENOUGH_REPLICAS). The producer
// retries until delivery.timeout.ms and then reports a definite failure —
// no attempt could have landed.
func TestNotEnoughReplicasUntilDeliveryTimeoutIsADefiniteFailure(t *testing.T) {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	w := newWorld(t, 17, cfg)
	w.createTopic("strict", 1, 3)
	tp := client.TopicPartition{Topic: "strict", Partition: 0}
	opts := producerOptions()
	opts.RequestTimeout, opts.DeliveryTimeout = time.Second, 5*time.Second
	p := w.newProducer("client", opts)
	w.sendAndWait("client", p, client.Record{Topic: "strict", Value: []byte("warm-up")})
	leader := w.leaderOf(tp)
	for _, b := range w.brokers {
		if b != leader {
			w.w.Node(b).Crash()
		}
	}
	w.runUntil(func() bool {
		s, _ := w.broker(leader).Partition(tp)
		return len(s.ISR) == 1
	}, time.Minute, "the ISR shrinks to the leader")

	s := w.sendAndWait("client", p, client.Record{Topic: "strict", Value: []byte("refused")})
	r := s.results["refused"]
	require.Equal(t, client.Fail, r.Outcome, "%v", r.Err)
	require.ErrorIs(t, r.Err, kerr.NotEnoughReplicas)
	require.ErrorIs(t, r.Err, client.ErrDeliveryTimeout)
	require.Equal(t, []string{"warm-up"}, w.logValues(tp))
}

// Flush sends what linger.ms would hold back and returns once every record
// sent before it has its outcome.
func TestFlushSendsLingeringBatchesAtOnce(t *testing.T) {
	w := newWorld(t, 19, config.Default())
	w.createTopic("lazy", 1, 3)
	opts := producerOptions()
	opts.Linger, opts.DeliveryTimeout = 20*time.Second, time.Minute
	p := w.newProducer("client", opts)
	s := newSends()
	flushed := false
	start := w.w.Now()
	w.exec("client", func(*app) {
		for i := range 3 {
			s.send(p, client.Record{Topic: "lazy", Value: value(i)})
		}
		p.Flush(func() { flushed = true })
	})
	w.runUntil(func() bool { return flushed }, 10*time.Second, "the flush")
	require.True(t, s.done(), "flush returned before its records")
	require.Less(t, w.w.Now().Sub(start), time.Second, "flush waited for linger.ms")
	for _, v := range s.order {
		require.Equal(t, client.OK, s.results[v].Outcome)
	}
}
