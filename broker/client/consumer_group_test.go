package client_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Members under the consumer protocol of KIP-848 (group.protocol=consumer).

func (w *world) subscribe848(node, clientID, group string, topics ...string) *member {
	o := groupOptions(clientID, group)
	o.GroupProtocol = client.GroupProtocolConsumer
	return w.subscribeWith(node, o, topics...)
}

// The coordinator assigns; a second member's partitions come out of the
// first's share, revoked first, and only those: the first keeps consuming
// the rest throughout.
func TestAConsumerProtocolMemberRevokesOnlyWhatMovesBeforeTheOtherGetsIt(t *testing.T) {
	w := newWorld(t, 47, config.Default(), "client", "app-1", "app-2")
	w.createTopic("tasks", 4, 3)
	produceValues(w, "tasks", 0, 40)

	a := w.subscribe848("app-1", "consumer-a", "workers", "tasks")
	w.runUntil(func() bool { return len(a.owns()) == 4 }, 30*time.Second, "a owns every partition")
	require.Equal(t, [][]client.TopicPartition{tps("tasks", 0, 1, 2, 3)}, a.assigned)
	w.runUntil(func() bool { return len(a.records) == 40 }, 30*time.Second, "a reads everything")
	_, err := a.commit()
	require.NoError(t, err, "a commit at the member epoch")
	epoch := a.c.GroupMetadata().GenerationID
	require.Positive(t, epoch)

	b := w.subscribe848("app-2", "consumer-b", "workers", "tasks")
	w.runUntil(func() bool { return len(a.owns()) == 2 && len(b.owns()) == 2 }, 30*time.Second, "the partitions split")
	require.Len(t, a.revoked, 1, "a revoked once")
	require.Len(t, a.revoked[0], 2, "only what moved")
	for _, tp := range a.revoked[0] {
		require.Contains(t, b.owns(), tp)
	}
	require.Empty(t, b.records, "b starts at the committed offsets: nothing left")
	require.Greater(t, a.c.GroupMetadata().GenerationID, epoch)
	_, err = a.commit()
	require.NoError(t, err)

	produceValues(w, "tasks", 40, 48)
	w.runUntil(func() bool { return len(a.records)+len(b.records) == 48 }, 30*time.Second, "the new records")

	// b leaves: a owns everything again.
	b.polling = false
	w.exec("app-2", func(*app) { b.c.Close(func() {}) })
	w.runUntil(func() bool { return len(a.owns()) == 4 }, 30*time.Second, "a owns everything again")
}

// A member that stops heartbeating is fenced after the broker's
// group.consumer.session.timeout.ms; when it wakes up its commit is
// refused, it hears it lost its partitions, and rejoins.
func TestAConsumerProtocolMemberFencedBySessionTimeoutRejoins(t *testing.T) {
	w := newWorld(t, 48, config.Default(), "client", "app-1", "app-2")
	w.createTopic("jobs", 2, 3)
	produceValues(w, "jobs", 0, 20)
	a := w.subscribe848("app-1", "consumer-a", "crew", "jobs")
	b := w.subscribe848("app-2", "consumer-b", "crew", "jobs")
	w.runUntil(func() bool { return len(a.owns()) == 1 && len(b.owns()) == 1 && len(a.records)+len(b.records) == 20 }, 30*time.Second, "one partition each, all read")
	mine := a.owns()

	w.w.Node("app-1").Pause()
	w.runUntil(func() bool { return len(b.owns()) == 2 }, 30*time.Second, "b takes over")

	w.w.Node("app-1").Resume()
	var err error
	done := false
	w.exec("app-1", func(*app) {
		a.c.CommitOffsets(map[client.TopicPartition]client.OffsetAndMetadata{mine[0]: {Offset: 10, LeaderEpoch: -1}},
			func(e error) { err, done = e, true })
	})
	w.runUntil(func() bool { return done }, time.Minute, "the zombie's commit")
	require.Equal(t, client.Fail, client.OutcomeOf(err), "refused: certainly not committed")
	if !errorsIsAny(err, kerr.UnknownMemberID, kerr.StaleMemberEpoch, client.ErrCommitFailed) {
		t.Fatalf("commit refused with %v, want UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH or a local refusal", err)
	}
	w.runUntil(func() bool { return len(a.lost) == 1 }, 30*time.Second, "a hears it lost its partition")
	require.Equal(t, [][]client.TopicPartition{mine}, a.lost)
	w.runUntil(func() bool { return len(a.owns()) == 1 && len(b.owns()) == 1 }, 30*time.Second, "a rejoins and gets a partition back")
}

// A member reports the partitions it owns by the topic ids they were
// assigned by, whatever its metadata says of the topic now: a broker just
// restarted answered Metadata before its image caught up (topic unknown),
// the member left the partition out of its heartbeat, and the coordinator
// took it for revoked and gave it to another member while this one still
// processed it (eos-consume-transform-produce-848, seed 9469 of 10,000,
// committed an output twice).
func TestAMemberReportsWhatItOwnsWhileItsMetadataSaysTheTopicIsUnknown(t *testing.T) {
	w := newWorld(t, 50, config.Default(), "client", "app-1")
	w.createTopic("jobs", 2, 3)
	a := w.subscribe848("app-1", "consumer-a", "crew", "jobs")
	w.runUntil(func() bool { return len(a.owns()) == 2 }, 30*time.Second, "a owns both partitions")
	owned := -1
	w.exec("app-1", func(*app) {
		a.c.ForgetTopic("jobs")
		owned = a.c.HeartbeatOwned()
	})
	require.Equal(t, 2, owned, "the heartbeat still reports both partitions")
}

// A fenced member that rejoins into an empty assignment still hears
// OnPartitionsAssigned (with none), as Kafka's consumer reconciles the
// first assignment after a join from none: the application learns its
// membership is new, and a transaction it opened before it was fenced
// must not commit offsets under the new epoch (eos-consume-transform-
// produce-848, seed 371 of 10,000, committed one twice).
func TestAFencedMemberThatRejoinsToNothingHearsAnEmptyAssignment(t *testing.T) {
	w := newWorld(t, 49, config.Default(), "client", "app-1", "app-2")
	w.createTopic("jobs", 1, 3)
	a := w.subscribe848("app-1", "consumer-a", "crew", "jobs")
	w.runUntil(func() bool { return len(a.owns()) == 1 }, 30*time.Second, "a owns the partition")
	b := w.subscribe848("app-2", "consumer-b", "crew", "jobs")
	w.runUntil(func() bool { return len(b.assigned) == 1 }, 30*time.Second, "b joined, to nothing")
	require.Empty(t, b.assigned[0], "b's first assignment is empty, and b heard it")

	w.w.Node("app-1").Pause()
	w.runUntil(func() bool { return len(b.owns()) == 1 }, 30*time.Second, "b takes over")
	calls := len(a.assigned)
	w.w.Node("app-1").Resume()
	w.runUntil(func() bool { return len(a.lost) == 1 && len(a.assigned) > calls }, 30*time.Second, "a rejoins")
	require.Empty(t, a.assigned[len(a.assigned)-1], "a hears its new, empty assignment")
	require.Empty(t, a.owns())
}
