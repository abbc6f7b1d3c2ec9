package client_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
)

// chaos sends records under random broker crashes, connection resets and
// clogged links, heals, and holds the outcomes against the final logs:
// what was acknowledged is there at its offset, what failed is not there,
// and with idempotence nothing is there twice.
func chaos(t *testing.T, seed uint64, idempotent bool) {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	w := newWorld(t, seed, cfg)
	w.createTopic("chaos", 2, 3)
	opts := producerOptions()
	opts.EnableIdempotence = idempotent
	opts.RequestTimeout, opts.DeliveryTimeout, opts.Linger = time.Second, 10*time.Second, 2*time.Millisecond
	p := w.newProducer("client", opts)
	copts := consumerOptions("chaos")
	copts.DefaultAPITimeout = 2 * time.Second // some commits give up under faults
	c := w.newConsumer("client", copts)
	consumed := map[int32][]client.Record{}
	var pollErrs []error
	var poll func()
	poll = func() {
		c.Poll(0, 100*time.Millisecond, func(recs []client.Record, err error) {
			for _, r := range recs {
				consumed[r.Partition] = append(consumed[r.Partition], r)
			}
			if err != nil {
				pollErrs = append(pollErrs, err)
			}
			poll()
		})
	}
	// Commit the positions every 50 ms, one commit at a time, whenever
	// they moved: each commit's offsets are new, so the final committed
	// offset names the commit that took effect.
	type commit struct {
		offsets map[client.TopicPartition]client.OffsetAndMetadata
		outcome client.Outcome
	}
	var commits []commit
	committing, inflight := true, false
	var last map[client.TopicPartition]client.OffsetAndMetadata
	var commitLoop func()
	commitLoop = func() {
		if !committing {
			return
		}
		pos := c.Positions()
		if len(pos) < 2 || fmt.Sprint(pos) == fmt.Sprint(last) {
			w.app("client").e.AfterFunc(50*time.Millisecond, commitLoop)
			return
		}
		last = pos
		inflight = true
		c.CommitOffsets(pos, func(err error) {
			inflight = false
			commits = append(commits, commit{offsets: pos, outcome: client.OutcomeOf(err)})
			w.app("client").e.AfterFunc(50*time.Millisecond, commitLoop)
		})
	}
	w.exec("client", func(*app) {
		c.Assign([]client.TopicPartition{{Topic: "chaos", Partition: 0}, {Topic: "chaos", Partition: 1}})
		poll()
		commitLoop()
	})
	s := newSends()
	start := w.w.Now()
	const n = 400
	for i := range n {
		w.w.At(start.Add(time.Duration(i)*5*time.Millisecond), func() {
			w.w.Node("client").Exec(func() { s.send(p, client.Record{Topic: "chaos", Key: value(i % 13), Value: value(i)}) })
		})
	}
	rng := w.w.Rand("chaos")
	for at := 50 * time.Millisecond; at < 2500*time.Millisecond; at += rng.Duration(50*time.Millisecond, 300*time.Millisecond) {
		b := w.brokers[rng.Intn(len(w.brokers))]
		switch rng.Intn(4) {
		case 0:
			down := rng.Duration(200*time.Millisecond, 8*time.Second)
			w.w.At(start.Add(at), func() { w.w.Node(b).Crash() })
			w.w.At(start.Add(at+down), func() { w.w.Node(b).Start() })
		case 1:
			w.w.At(start.Add(at), func() { w.w.ResetLink("client", b) })
		case 2:
			d := rng.Duration(100*time.Millisecond, 2*time.Second)
			w.w.At(start.Add(at), func() { w.w.Clog("client", b, d) })
		case 3:
			d := rng.Duration(100*time.Millisecond, 2*time.Second)
			other := w.brokers[rng.Intn(len(w.brokers))]
			if other != b {
				w.w.At(start.Add(at), func() { w.w.Clog(other, b, d) })
			}
		}
	}
	w.runUntil(s.done, 2*time.Minute, "every send's result")
	for _, b := range w.brokers {
		w.w.Node(b).Start()
	}
	w.w.Heal()
	w.run(20 * time.Second)

	where := map[string][]string{} // value → "partition/offset" it is at
	for part := range int32(2) {
		tp := client.TopicPartition{Topic: "chaos", Partition: part}
		log := w.logValues(tp)
		for off, v := range log {
			where[v] = append(where[v], fmt.Sprintf("%d/%d", part, off))
		}
		// The consumer read the log as it is, from the start, in order,
		// without gaps or repeats, whatever happened meanwhile.
		require.Len(t, consumed[part], len(log), "seed %d: partition %d consumed %d of %d", seed, part, len(consumed[part]), len(log))
		for i, r := range consumed[part] {
			require.Equal(t, int64(i), r.Offset, "seed %d: partition %d", seed, part)
			require.Equal(t, log[i], string(r.Value), "seed %d: partition %d offset %d", seed, part, i)
		}
	}
	require.Empty(t, pollErrs)

	// The committed offsets are those of a commit that did not fail, and
	// no older than the last acknowledged one.
	committing = false
	w.runUntil(func() bool { return !inflight }, time.Minute, "the last commit")
	var final map[client.TopicPartition]client.OffsetAndMetadata
	fetched := false
	w.exec("client", func(*app) {
		c.Committed([]client.TopicPartition{{Topic: "chaos", Partition: 0}, {Topic: "chaos", Partition: 1}}, func(o map[client.TopicPartition]client.OffsetAndMetadata, err error) {
			require.NoError(t, err)
			final, fetched = o, true
		})
	})
	w.runUntil(func() bool { return fetched }, time.Minute, "the committed offsets")
	var outcomes [4]int
	for _, cm := range commits {
		outcomes[cm.outcome]++
	}
	for tp, got := range final {
		okBelow := int64(-1)
		took := false
		for _, cm := range commits {
			if cm.outcome == client.OK {
				okBelow = max(okBelow, cm.offsets[tp].Offset)
			}
			if cm.outcome != client.Fail && cm.offsets[tp].Offset == got.Offset {
				took = true
			}
		}
		require.True(t, took, "seed %d: %v committed at %d by no commit that could have", seed, tp, got.Offset)
		require.GreaterOrEqual(t, got.Offset, okBelow, "seed %d: %v committed offset regressed", seed, tp)
	}
	t.Logf("seed %d: commits ok %d, fail %d, info %d", seed, outcomes[client.OK], outcomes[client.Fail], outcomes[client.Info])
	var ok, failed, info int
	for _, v := range s.order {
		r := s.results[v]
		switch r.Outcome {
		case client.OK:
			ok++
			require.Contains(t, where[v], fmt.Sprintf("%d/%d", r.Partition, r.Offset), "seed %d: acknowledged %s not at its offset", seed, v)
		case client.Fail:
			failed++
			require.Empty(t, where[v], "seed %d: %s failed definitely (%v) but is in the log", seed, v, r.Err)
		case client.Info:
			info++
		}
		if idempotent {
			require.LessOrEqual(t, len(where[v]), 1, "seed %d: %s written twice: %v", seed, v, where[v])
		}
	}
	t.Logf("seed %d idempotent=%v: ok %d, fail %d, info %d", seed, idempotent, ok, failed, info)
	why := map[string]int{}
	for _, v := range s.order {
		if r := s.results[v]; r.Err != nil {
			why[r.Outcome.String()+" "+r.Err.Error()]++
		}
	}
	for k, n := range why {
		t.Logf("  %4d %s", n, k)
	}
}

func TestOutcomesHoldAgainstTheLogUnderFaults(t *testing.T) {
	for seed := uint64(1); seed <= chaosSeeds; seed++ {
		for _, idempotent := range []bool{true, false} {
			t.Run(fmt.Sprintf("seed=%d/idempotence=%v", seed, idempotent), func(t *testing.T) { chaos(t, seed, idempotent) })
		}
	}
}

var chaosSeeds = uint64(envInt("KAFKASIM_CHAOS_SEEDS", 20))

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
