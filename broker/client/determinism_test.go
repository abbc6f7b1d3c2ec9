package client_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
)

// story is a produce/consume run with a leader crash and a reset link:
// enough retries, metadata refreshes and redials that any nondeterminism in
// the clients would show in the trace.
func story(t testing.TB, seed uint64) string {
	w := newWorld(t, seed, config.Default())
	w.createTopic("audit", 2, 3)
	tps := []client.TopicPartition{{Topic: "audit", Partition: 0}, {Topic: "audit", Partition: 1}}
	p := w.newProducer("client", producerOptions())
	c := w.newConsumer("client", consumerOptions("auditors"))
	w.exec("client", func(*app) { c.Assign(tps) })
	s := newSends()
	start := w.w.Now()
	for i := range 200 {
		w.w.At(start.Add(time.Duration(i)*time.Millisecond), func() {
			w.w.Node("client").Exec(func() { s.send(p, client.Record{Topic: "audit", Key: value(i % 7), Value: value(i)}) })
		})
	}
	leader := w.leaderOf(tps[0])
	w.w.At(start.Add(50*time.Millisecond), func() { w.w.Node(leader).Crash() })
	w.w.At(start.Add(120*time.Millisecond), func() { w.w.ResetNode("client") })
	w.w.At(start.Add(8*time.Second), func() { w.w.Node(leader).Start() })
	got := w.pollUntil("client", c, 200, time.Minute)
	require.Len(t, got, 200)
	w.runUntil(s.done, time.Minute, "every send's result")
	committed := false
	w.exec("client", func(*app) {
		c.CommitPositions(func(_ map[client.TopicPartition]client.OffsetAndMetadata, err error) {
			require.NoError(t, err)
			committed = true
		})
	})
	w.runUntil(func() bool { return committed }, time.Minute, "the commit")
	return w.w.Trace().HashString()
}

// The same seed gives the same run, event for event, whatever GOMAXPROCS.
func TestSameSeedSameTraceHash(t *testing.T) {
	first := story(t, 42)
	prev := runtime.GOMAXPROCS(1)
	second := story(t, 42)
	runtime.GOMAXPROCS(prev)
	require.Equal(t, first, second)
	require.NotEqual(t, first, story(t, 43), "another seed, another run")
}
