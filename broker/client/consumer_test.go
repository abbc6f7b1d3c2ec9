package client_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/stretchr/testify/require"
)

func produceValues(w *world, topic string, from, to int) {
	w.t.Helper()
	p := w.newProducer("client", producerOptions())
	var recs []client.Record
	for i := from; i < to; i++ {
		recs = append(recs, client.Record{Topic: topic, Value: value(i)})
	}
	s := w.sendAndWait("client", p, recs...)
	for _, v := range s.order {
		require.Equal(w.t, client.OK, s.results[v].Outcome, "%s: %v", v, s.results[v].Err)
	}
	w.exec("client", func(*app) { p.Close() })
	w.run(time.Second)
}

func values(recs []client.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func valueRange(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, string(value(i)))
	}
	return out
}

// A partition with no committed offset starts where auto.offset.reset
// says: earliest reads everything, latest only what comes after the first
// poll, and none refuses until the application seeks. A position the log
// does not hold is reset the same way.
func TestAutoOffsetResetDecidesWhereAnUncommittedPartitionStarts(t *testing.T) {
	w := newWorld(t, 5, config.Default())
	w.createTopic("logs", 1, 3)
	tp := client.TopicPartition{Topic: "logs", Partition: 0}
	produceValues(w, "logs", 0, 5)

	t.Run("earliest", func(t *testing.T) {
		c := w.newConsumer("client", consumerOptions(""))
		w.exec("client", func(*app) { c.Assign([]client.TopicPartition{tp}) })
		got := w.pollUntil("client", c, 5, 10*time.Second)
		require.Equal(t, valueRange(0, 5), values(got))
		require.Equal(t, int64(0), got[0].Offset)
		pos, ok := c.Position(tp)
		require.True(t, ok)
		require.Equal(t, int64(5), pos)

		// A position past the log end is out of range: back to earliest.
		w.exec("client", func(*app) { require.NoError(t, c.Seek(tp, 1000)) })
		got = w.pollUntil("client", c, 5, 10*time.Second)
		require.Equal(t, valueRange(0, 5), values(got))
	})
	t.Run("latest", func(t *testing.T) {
		opts := consumerOptions("")
		opts.AutoOffsetReset = client.OffsetResetLatest
		c := w.newConsumer("client", opts)
		w.exec("client", func(*app) { c.Assign([]client.TopicPartition{tp}) })
		require.Empty(t, w.pollUntil("client", c, 1, time.Second), "nothing after the end yet")
		pos, ok := c.Position(tp)
		require.True(t, ok)
		require.Equal(t, int64(5), pos)
		produceValues(w, "logs", 5, 8)
		got := w.pollUntil("client", c, 3, 10*time.Second)
		require.Equal(t, valueRange(5, 8), values(got))
		require.Equal(t, int64(5), got[0].Offset)
	})
	t.Run("none", func(t *testing.T) {
		opts := consumerOptions("")
		opts.AutoOffsetReset = client.OffsetResetNone
		c := w.newConsumer("client", opts)
		w.exec("client", func(*app) { c.Assign([]client.TopicPartition{tp}) })
		var pollErr error
		done := false
		w.exec("client", func(*app) {
			c.Poll(0, time.Second, func(_ []client.Record, err error) { pollErr, done = err, true })
		})
		w.runUntil(func() bool { return done }, 5*time.Second, "the poll")
		require.ErrorIs(t, pollErr, client.ErrNoOffset)
		var pe *client.PartitionError
		require.ErrorAs(t, pollErr, &pe)
		require.Equal(t, tp, pe.TopicPartition)

		w.exec("client", func(*app) { require.NoError(t, c.Seek(tp, 6)) })
		got := w.pollUntil("client", c, 2, 10*time.Second)
		require.Equal(t, valueRange(6, 8), values(got))
	})
}

// A consumer commits the position it reached; the group's committed
// offset reads back the same, and a new consumer of the group starts
// there.
func TestCommittedOffsetIsWhereTheGroupsNextConsumerStarts(t *testing.T) {
	w := newWorld(t, 9, config.Default())
	w.createTopic("jobs", 2, 3)
	tps := []client.TopicPartition{{Topic: "jobs", Partition: 0}, {Topic: "jobs", Partition: 1}}
	produceValues(w, "jobs", 0, 20)

	c := w.newConsumer("client", consumerOptions("workers"))
	w.exec("client", func(*app) { c.Assign(tps) })
	got := w.pollUntil("client", c, 7, 10*time.Second)
	require.GreaterOrEqual(t, len(got), 7)
	// Both partitions positioned (one may still be resetting when the
	// other has given seven records), so the commit covers both.
	for len(c.Positions()) < len(tps) {
		got = append(got, w.pollUntil("client", c, 1, 10*time.Second)...)
	}

	var committed map[client.TopicPartition]client.OffsetAndMetadata
	var commitErr error
	done := false
	w.exec("client", func(*app) {
		c.CommitPositions(func(o map[client.TopicPartition]client.OffsetAndMetadata, err error) {
			committed, commitErr, done = o, err, true
		})
	})
	w.runUntil(func() bool { return done }, 10*time.Second, "the commit")
	require.NoError(t, commitErr)
	require.Equal(t, client.OK, client.OutcomeOf(commitErr))
	require.Equal(t, c.Positions(), committed)

	var fetched map[client.TopicPartition]client.OffsetAndMetadata
	done = false
	w.exec("client", func(*app) {
		c.Committed(tps, func(o map[client.TopicPartition]client.OffsetAndMetadata, err error) {
			require.NoError(t, err)
			fetched, done = o, true
		})
	})
	w.runUntil(func() bool { return done }, 10*time.Second, "the offset fetch")
	require.Equal(t, committed, fetched)

	next := w.newConsumer("client", consumerOptions("workers"))
	w.exec("client", func(*app) { next.Assign(tps) })
	rest := w.pollUntil("client", next, 20-len(got), 10*time.Second)
	require.Len(t, rest, 20-len(got))
	for _, r := range rest {
		tp := client.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		require.GreaterOrEqual(t, r.Offset, committed[tp].Offset, "read below the committed offset")
	}
	require.ElementsMatch(t, valueRange(0, 20), append(values(got), values(rest)...))

	// Another group has committed nothing.
	other := w.newConsumer("client", consumerOptions("auditors"))
	done = false
	w.exec("client", func(*app) {
		other.Committed(tps, func(o map[client.TopicPartition]client.OffsetAndMetadata, err error) {
			require.NoError(t, err)
			require.Empty(t, o)
			done = true
		})
	})
	w.runUntil(func() bool { return done }, 10*time.Second, "the other group's offset fetch")
}

// enable.auto.commit commits at a poll the position the previous poll
// reached, never the one the current poll is about to return: records
// handed to the application by the last poll count as processed.
func TestAutoCommitCommitsThePositionOfThePreviousPoll(t *testing.T) {
	w := newWorld(t, 13, config.Default())
	w.createTopic("tasks", 1, 3)
	tp := client.TopicPartition{Topic: "tasks", Partition: 0}
	produceValues(w, "tasks", 0, 10)

	opts := consumerOptions("auto")
	opts.EnableAutoCommit, opts.AutoCommitInterval = true, time.Second
	var commits []client.OffsetAndMetadata
	opts.OnAutoCommit = func(o map[client.TopicPartition]client.OffsetAndMetadata, err error) {
		require.NoError(t, err)
		commits = append(commits, o[tp])
	}
	c := w.newConsumer("client", opts)
	w.exec("client", func(*app) { c.Assign([]client.TopicPartition{tp}) })

	poll := func() []client.Record {
		var got []client.Record
		done := false
		w.exec("client", func(*app) {
			c.Poll(3, 5*time.Second, func(recs []client.Record, err error) {
				require.NoError(t, err)
				got, done = recs, true
			})
		})
		w.runUntil(func() bool { return done }, 10*time.Second, "a poll")
		return got
	}
	require.Equal(t, valueRange(0, 3), values(poll()))
	require.Empty(t, commits, "the interval has not passed")
	w.run(1100 * time.Millisecond)
	require.Equal(t, valueRange(3, 6), values(poll()))
	w.run(time.Second)
	require.Len(t, commits, 1)
	require.Equal(t, int64(3), commits[0].Offset, "the position after the previous poll, not 6")

	var fetched map[client.TopicPartition]client.OffsetAndMetadata
	done := false
	w.exec("client", func(*app) {
		c.Committed([]client.TopicPartition{tp}, func(o map[client.TopicPartition]client.OffsetAndMetadata, err error) {
			require.NoError(t, err)
			fetched, done = o, true
		})
	})
	w.runUntil(func() bool { return done }, 10*time.Second, "the offset fetch")
	require.Equal(t, int64(3), fetched[tp].Offset)

	// Closing commits the current position, as Kafka's close does.
	closed := false
	w.exec("client", func(*app) { c.Close(func() { closed = true }) })
	w.runUntil(func() bool { return closed }, 10*time.Second, "close")
	check := w.newConsumer("client", consumerOptions("auto"))
	done = false
	w.exec("client", func(*app) {
		check.Committed([]client.TopicPartition{tp}, func(o map[client.TopicPartition]client.OffsetAndMetadata, err error) {
			require.NoError(t, err)
			fetched, done = o, true
		})
	})
	w.runUntil(func() bool { return done }, 10*time.Second, "the offset fetch")
	require.Equal(t, int64(6), fetched[tp].Offset)
}

// An unclean election makes a replica that missed the last records leader,
// and the new leader's log takes other records at those offsets. A
// consumer that had read past the divergence sends the epoch of the last
// record it read with its fetch; the new leader answers that its log ends
// that epoch earlier (KIP-320), and the consumer goes back to the
// divergence point instead of skipping what the new leader wrote there.
// With auto.offset.reset none it stops with ErrLogTruncation instead.
func TestConsumerDetectsLogTruncationAfterUncleanElection(t *testing.T) {
	for _, reset := range []client.OffsetReset{client.OffsetResetEarliest, client.OffsetResetNone} {
		t.Run(reset.String(), func(t *testing.T) {
			cfg := config.Default()
			cfg.UncleanLeaderElection = true
			w := newWorld(t, 23, cfg)
			w.createTopic("unsafe", 1, 2)
			tp := client.TopicPartition{Topic: "unsafe", Partition: 0}
			leader := w.leaderOf(tp)
			var follower string
			for _, b := range w.brokers {
				if s, ok := w.broker(b).Partition(tp); ok && b != leader && s.Role == "follower" {
					follower = b
				}
			}
			require.NotEmpty(t, follower)
			produceValues(w, "unsafe", 0, 2)
			w.w.Node(follower).Crash()
			w.runUntil(func() bool {
				s, _ := w.broker(leader).Partition(tp)
				return len(s.ISR) == 1
			}, time.Minute, "the ISR shrinks to the leader")
			produceValues(w, "unsafe", 2, 4) // only on the leader

			opts := consumerOptions("")
			opts.AutoOffsetReset = reset
			c := w.newConsumer("client", opts)
			w.exec("client", func(*app) {
				c.Assign([]client.TopicPartition{tp})
				require.NoError(t, c.Seek(tp, 0))
			})
			got := w.pollUntil("client", c, 4, 10*time.Second)
			require.Equal(t, valueRange(0, 4), values(got))

			w.w.Node(leader).Crash()
			w.w.Node(follower).Start()
			w.runUntil(func() bool { return w.leaderOf(tp) == follower }, time.Minute, "the unclean election")
			produceValues(w, "unsafe", 100, 101) // lands at offset 2 on the new leader
			require.Equal(t, []string{string(value(0)), string(value(1)), string(value(100))}, w.logValues(tp))

			var recs []client.Record
			var pollErr error
			done := false
			w.exec("client", func(*app) {
				c.Poll(0, 5*time.Second, func(r []client.Record, err error) { recs, pollErr, done = r, err, true })
			})
			w.runUntil(func() bool { return done }, time.Minute, "the poll")
			if reset == client.OffsetResetNone {
				require.ErrorIs(t, pollErr, client.ErrLogTruncation)
				return
			}
			require.NoError(t, pollErr)
			require.Equal(t, []string{string(value(100))}, values(recs))
			require.Equal(t, int64(2), recs[0].Offset)
		})
	}
}

// compression.type gzip: batches travel and sit in the log compressed;
// the consumer reads the same records back, headers and keys included.
func TestGzipBatchesRoundTrip(t *testing.T) {
	w := newWorld(t, 29, config.Default())
	w.createTopic("zipped", 1, 3)
	tp := client.TopicPartition{Topic: "zipped", Partition: 0}
	opts := producerOptions()
	opts.CompressionType = record.CompressionGzip
	p := w.newProducer("client", opts)
	var recs []client.Record
	for i := range 50 {
		recs = append(recs, client.Record{Topic: "zipped", Key: []byte("k"), Value: value(i), Headers: []client.Header{{Key: "n", Value: value(i)}}})
	}
	s := w.sendAndWait("client", p, recs...)
	for _, v := range s.order {
		require.Equal(t, client.OK, s.results[v].Outcome)
	}
	c := w.newConsumer("client", consumerOptions(""))
	w.exec("client", func(*app) { c.Assign([]client.TopicPartition{tp}) })
	got := w.pollUntil("client", c, 50, 10*time.Second)
	require.Equal(t, valueRange(0, 50), values(got))
	for _, r := range got {
		require.Equal(t, []byte("k"), r.Key)
		require.Equal(t, []client.Header{{Key: "n", Value: r.Value}}, r.Headers)
		require.GreaterOrEqual(t, r.LeaderEpoch, int32(0))
	}
}
