package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// member is a subscribed consumer polling in a loop on its node, keeping
// what its rebalance callbacks said.
type member struct {
	w        *world
	node     string
	c        *client.Consumer
	records  []client.Record
	assigned [][]client.TopicPartition
	revoked  [][]client.TopicPartition
	lost     [][]client.TopicPartition
	polling  bool
}

func groupOptions(clientID, group string) client.ConsumerOptions {
	o := consumerOptions(group)
	o.ClientID = clientID
	o.SessionTimeout, o.HeartbeatInterval, o.MaxPollInterval = 3*time.Second, 500*time.Millisecond, 10*time.Second
	return o
}

func (w *world) subscribe(node, clientID, group string, topics ...string) *member {
	return w.subscribeWith(node, groupOptions(clientID, group), topics...)
}

// subscribeWith is subscribe with the consumer options o.
func (w *world) subscribeWith(node string, o client.ConsumerOptions, topics ...string) *member {
	w.t.Helper()
	m := &member{w: w, node: node, c: w.newConsumer(node, o)}
	w.exec(node, func(*app) {
		require.NoError(w.t, m.c.Subscribe(topics, client.RebalanceListener{
			OnPartitionsAssigned: func(tps []client.TopicPartition) { m.assigned = append(m.assigned, tps) },
			OnPartitionsRevoked:  func(tps []client.TopicPartition) { m.revoked = append(m.revoked, tps) },
			OnPartitionsLost:     func(tps []client.TopicPartition) { m.lost = append(m.lost, tps) },
		}))
	})
	m.startPolling()
	return m
}

func (m *member) startPolling() {
	m.polling = true
	var poll func()
	poll = func() {
		if !m.polling {
			return
		}
		m.c.Poll(0, 100*time.Millisecond, func(recs []client.Record, _ error) {
			m.records = append(m.records, recs...)
			m.w.app(m.node).e.AfterFunc(10*time.Millisecond, poll)
		})
	}
	m.w.exec(m.node, func(*app) { poll() })
}

// commit commits the member's positions and returns the result.
func (m *member) commit() (map[client.TopicPartition]client.OffsetAndMetadata, error) {
	var offsets map[client.TopicPartition]client.OffsetAndMetadata
	var err error
	done := false
	m.w.exec(m.node, func(*app) {
		m.c.CommitPositions(func(o map[client.TopicPartition]client.OffsetAndMetadata, e error) { offsets, err, done = o, e, true })
	})
	m.w.runUntil(func() bool { return done }, time.Minute, "a commit")
	return offsets, err
}

func (m *member) owns() []client.TopicPartition { return m.c.Assignment() }

// generation is the group's generation at its coordinator.
func (w *world) generation(group string) int32 {
	for _, b := range w.brokers {
		if br := w.broker(b); br != nil {
			if s, ok := br.Group(group); ok {
				return s.Generation
			}
		}
	}
	return -1
}

func tps(topic string, parts ...int32) []client.TopicPartition {
	out := make([]client.TopicPartition, len(parts))
	for i, p := range parts {
		out[i] = client.TopicPartition{Topic: topic, Partition: p}
	}
	return out
}

// Members come and go: every rebalance revokes the partitions (eager
// protocol), bumps the generation and hands the range assignor's shares
// out; each member's commits carry its generation, and a transaction's
// offsets sent with an older generation are refused (KIP-447).
func TestRebalanceMovesPartitionsBetweenMembersAndCommitsCarryGenerations(t *testing.T) {
	w := newWorld(t, 44, config.Default(), "client", "app-1", "app-2")
	w.createTopic("tasks", 4, 3)
	produceValues(w, "tasks", 0, 40)

	a := w.subscribe("app-1", "consumer-a", "workers", "tasks")
	w.runUntil(func() bool { return len(a.owns()) == 4 }, 30*time.Second, "a owns every partition")
	require.Equal(t, a.c.GroupMetadata().GenerationID, w.generation("workers"))
	gen1 := a.c.GroupMetadata()
	w.runUntil(func() bool { return len(a.records) == 40 }, 30*time.Second, "a reads everything")
	_, err := a.commit()
	require.NoError(t, err)

	b := w.subscribe("app-2", "consumer-b", "workers", "tasks")
	w.runUntil(func() bool { return len(a.owns()) == 2 && len(b.owns()) == 2 }, 30*time.Second, "the partitions split")
	require.Equal(t, tps("tasks", 0, 1), a.owns(), "the range assignor: member ids in order, a range each")
	require.Equal(t, tps("tasks", 2, 3), b.owns())
	require.Equal(t, [][]client.TopicPartition{tps("tasks", 0, 1, 2, 3)}, a.revoked, "eager: a gave up everything to rejoin")
	require.Equal(t, tps("tasks", 0, 1), a.assigned[len(a.assigned)-1])
	gen2 := a.c.GroupMetadata()
	require.Greater(t, gen2.GenerationID, gen1.GenerationID)
	require.Equal(t, gen2.GenerationID, b.c.GroupMetadata().GenerationID)
	require.Equal(t, gen2.GenerationID, w.generation("workers"))
	require.Empty(t, b.records, "b starts at the committed offsets: nothing left")

	produceValues(w, "tasks", 40, 48)
	w.runUntil(func() bool { return len(a.records)+len(b.records) == 48 }, 30*time.Second, "the new records")
	offsets, err := a.commit()
	require.NoError(t, err, "a commit of the current generation")
	require.Len(t, offsets, 2)
	_, err = b.commit()
	require.NoError(t, err)

	// A transaction committing offsets for a's old generation is fenced.
	p := w.newProducer("app-1", txnOptions("workers-a"))
	require.NoError(t, w.await("app-1", "init", p.InitTransactions))
	w.exec("app-1", func(*app) { require.NoError(t, p.BeginTransaction()) })
	err = w.await("app-1", "stale offsets", func(done func(error)) {
		p.SendOffsetsToTransaction(map[client.TopicPartition]client.OffsetAndMetadata{tps("tasks", 0)[0]: {Offset: 1, LeaderEpoch: -1}}, gen1, done)
	})
	require.ErrorIs(t, err, kerr.IllegalGeneration)
	require.NoError(t, p.Err(), "a zombie consumer's offsets make the transaction abortable, not the producer fatal")
	require.NoError(t, w.await("app-1", "abort", p.AbortTransaction))

	// b leaves: a owns everything again, in the next generation.
	b.polling = false
	w.exec("app-2", func(*app) { b.c.Close(func() {}) })
	w.runUntil(func() bool { return len(a.owns()) == 4 }, 30*time.Second, "a owns everything again")
	require.Greater(t, a.c.GroupMetadata().GenerationID, gen2.GenerationID)
}

// A member that stops heartbeating (a long pause) is evicted after
// session.timeout.ms; the others take its partitions. When it wakes up
// its commit is refused — a definite failure — and its next poll reports
// the partitions lost and rejoins.
func TestConsumerEvictedBySessionTimeoutCannotCommit(t *testing.T) {
	w := newWorld(t, 45, config.Default(), "client", "app-1", "app-2")
	w.createTopic("jobs", 2, 3)
	produceValues(w, "jobs", 0, 20)
	a := w.subscribe("app-1", "consumer-a", "crew", "jobs")
	b := w.subscribe("app-2", "consumer-b", "crew", "jobs")
	w.runUntil(func() bool { return len(a.owns()) == 1 && len(b.owns()) == 1 && len(a.records)+len(b.records) == 20 }, 30*time.Second, "one partition each, all read")
	stale := a.c.GroupMetadata()

	w.w.Node("app-1").Pause()
	w.runUntil(func() bool { return len(b.owns()) == 2 }, 30*time.Second, "b takes over")
	require.Greater(t, w.generation("crew"), stale.GenerationID)

	w.w.Node("app-1").Resume()
	var err error
	done := false
	w.exec("app-1", func(*app) {
		a.c.CommitOffsets(map[client.TopicPartition]client.OffsetAndMetadata{tps("jobs", 0)[0]: {Offset: 10, LeaderEpoch: -1}},
			func(e error) { err, done = e, true })
	})
	w.runUntil(func() bool { return done }, time.Minute, "the zombie's commit")
	require.Error(t, err)
	require.Equal(t, client.Fail, client.OutcomeOf(err), "refused: certainly not committed")
	if !errorsIsAny(err, kerr.UnknownMemberID, kerr.IllegalGeneration, client.ErrCommitFailed) {
		t.Fatalf("commit refused with %v, want UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or a local refusal", err)
	}
	t.Logf("the zombie's commit: %v", err)
	w.runUntil(func() bool { return len(a.lost) == 1 }, 30*time.Second, "a hears it lost its partition")
	require.Equal(t, [][]client.TopicPartition{tps("jobs", 0)}, a.lost)
	w.runUntil(func() bool { return len(a.owns()) == 1 && len(b.owns()) == 1 }, 30*time.Second, "a rejoins")
	require.Equal(t, w.generation("crew"), a.c.GroupMetadata().GenerationID)
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// A member evicted while its transaction is open still reports the
// generation it joined (Kafka's groupMetadata changes only when a join
// completes): the offsets its transaction sends are refused, and the
// transaction aborts. Reporting generation -1 instead passed as a consumer
// without membership, which the coordinator accepts for transactional
// commits: the zombie's stale offsets committed over its successor's
// (eos-consume-transform-produce under a cut between a processor and the
// group coordinator; TestPropertyExactlyOnceThroughTransactions seeds
// 11057323676222700805 and 12965566268290946207).
func TestAMemberEvictedMidTransactionKeepsItsGenerationAndIsFenced(t *testing.T) {
	w := newWorld(t, 46, config.Default(), "client", "app-1", "app-2")
	w.createTopic("jobs", 2, 3)
	produceValues(w, "jobs", 0, 20)
	a := w.subscribe("app-1", "consumer-a", "crew", "jobs")
	b := w.subscribe("app-2", "consumer-b", "crew", "jobs")
	w.runUntil(func() bool { return len(a.owns()) == 1 && len(b.owns()) == 1 && len(a.records)+len(b.records) == 20 }, 30*time.Second, "one partition each, all read")
	joined := a.c.GroupMetadata()
	require.GreaterOrEqual(t, joined.GenerationID, int32(1))

	p := w.newProducer("app-1", txnOptions("crew-a"))
	require.NoError(t, w.await("app-1", "init", p.InitTransactions))
	w.exec("app-1", func(*app) { require.NoError(t, p.BeginTransaction()) })

	w.w.Node("app-1").Pause()
	w.runUntil(func() bool { return len(b.owns()) == 2 }, 30*time.Second, "b takes over")
	w.w.Node("app-1").Resume()
	w.runUntil(func() bool { return len(a.lost) == 1 }, 30*time.Second, "a hears it lost its partition")
	require.Equal(t, joined, a.c.GroupMetadata(), "the generation lost, the metadata is still the last join's")

	err := w.await("app-1", "the zombie's offsets", func(done func(error)) {
		p.SendOffsetsToTransaction(map[client.TopicPartition]client.OffsetAndMetadata{tps("jobs", 0)[0]: {Offset: 1, LeaderEpoch: -1}}, a.c.GroupMetadata(), done)
	})
	if !errorsIsAny(err, kerr.UnknownMemberID, kerr.IllegalGeneration) {
		t.Fatalf("the zombie's transactional offsets: %v, want UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION", err)
	}
	require.NoError(t, p.Err(), "abortable, not fatal")
	require.NoError(t, w.await("app-1", "abort", p.AbortTransaction))
}
