package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

var orders = metadata.TopicPartition{Topic: "orders", Partition: 0}

// followersOf returns the broker indices other than the leader.
func (c *cluster) followersOf(leader int) []int {
	var fs []int
	for i := range c.brokers {
		if i != leader {
			fs = append(fs, i)
		}
	}
	return fs
}

// waitLeader runs the world until some broker leads tp (other than not).
func (c *cluster) waitLeader(tp metadata.TopicPartition, not int, budget time.Duration) int {
	ok, err := c.w.RunWhile(func() bool { l := c.leaderOf(tp); return l < 0 || l == not }, budget)
	require.NoError(c.t, err)
	require.True(c.t, ok, "no new leader for %v within %v", tp, budget)
	return c.leaderOf(tp)
}

func (c *cluster) values(tp metadata.TopicPartition) []string {
	l := c.waitLeader(tp, -1, 30*time.Second)
	vs, fr := c.fetch(l, tp, 0)
	require.Zero(c.t, fr.ErrorCode)
	return vs
}

// isolateLeaderFromFollowers cuts the leader off from its followers only:
// clients and the controller still reach it.
func (c *cluster) isolateFromFollowers(leader int) {
	for _, f := range c.followersOf(leader) {
		c.w.Cut(c.brokers[leader], c.brokers[f])
	}
}

func TestAcks1LeaderCrashBeforeFollowerFetchLosesWrite(t *testing.T) {
	c := newCluster(t, 11, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	c.isolateFromFollowers(leader)

	pr := c.produce(leader, orders, 1, "acked-but-doomed")
	require.Zero(t, pr.ErrorCode, "acks=1 answers after the leader's own append")

	c.w.Node(c.brokers[leader]).Crash()
	next := c.waitLeader(orders, leader, 30*time.Second)
	c.w.Heal()
	c.w.Node(c.brokers[leader]).Start()
	require.NoError(t, c.w.RunFor(10*time.Second))

	require.NotContains(t, c.values(orders), "acked-but-doomed", "the acknowledged write survived on new leader %d", next)
	pr = c.produce(c.leaderOf(orders), orders, 1, "later")
	require.Equal(t, int64(0), pr.BaseOffset, "the lost write's offset is reused")
	require.NoError(t, c.w.RunFor(2*time.Second))
	s, _ := c.broker(leader).Partition(orders)
	require.Equal(t, "follower", s.Role)
	require.Equal(t, int64(1), s.LogEndOffset, "the old leader truncated its unreplicated write")
}

func TestAcksAllLeaderCrashBeforeFollowerFetchLosesNothingAcknowledged(t *testing.T) {
	c := newCluster(t, 11, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	c.isolateFromFollowers(leader)

	pr := c.produce(leader, orders, -1, "never-acknowledged")
	require.Equal(t, kerr.RequestTimedOut.Code, pr.ErrorCode, "without replication, acks=all cannot answer ok")

	c.w.Node(c.brokers[leader]).Crash()
	c.waitLeader(orders, leader, 30*time.Second)
	c.w.Heal()
	c.w.Node(c.brokers[leader]).Start()
	require.NoError(t, c.w.RunFor(10*time.Second))
	pr = c.produce(c.leaderOf(orders), orders, -1, "committed")
	require.Zero(t, pr.ErrorCode)
	require.Equal(t, []string{"committed"}, c.values(orders))
}

// shrinkToLeader cuts the followers off until the leader drops them from the
// ISR.
func (c *cluster) shrinkToLeader(tp metadata.TopicPartition) int {
	leader := c.leaderOf(tp)
	c.isolateFromFollowers(leader)
	ok, err := c.w.RunWhile(func() bool {
		s, _ := c.broker(leader).Partition(tp)
		return len(s.ISR) > 1
	}, 2*c.cfg.ReplicaLagTimeMax)
	require.NoError(c.t, err)
	require.True(c.t, ok, "ISR never shrank")
	return leader
}

func TestMinInsyncReplicas2RefusesWritesWhileISRIsTheLeaderAlone(t *testing.T) {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	c := newCluster(t, 12, 3, cfg)
	c.createTopic("orders", 1, 3)
	leader := c.shrinkToLeader(orders)

	pr := c.produce(leader, orders, -1, "refused")
	require.Equal(t, kerr.NotEnoughReplicas.Code, pr.ErrorCode, "refused before append: a definite failure")
	pr = c.produce(leader, orders, 1, "acks-1-still-allowed")
	require.Zero(t, pr.ErrorCode, "min.insync.replicas binds acks=all only")

	c.w.Heal()
	ok, err := c.w.RunWhile(func() bool { s, _ := c.broker(leader).Partition(orders); return len(s.ISR) < 3 }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "ISR never expanded after heal")
	pr = c.produce(leader, orders, -1, "accepted")
	require.Zero(t, pr.ErrorCode)
	require.Equal(t, []string{"acks-1-still-allowed", "accepted"}, c.values(orders))
}

func TestUncleanElectionLosesCommittedData(t *testing.T) {
	cfg := config.Default()
	cfg.UncleanLeaderElection = true
	c := newCluster(t, 13, 3, cfg)
	c.createTopic("orders", 1, 3)
	leader := c.shrinkToLeader(orders)
	pr := c.produce(leader, orders, -1, "committed-by-isr-of-one")
	require.Zero(t, pr.ErrorCode, "with min.insync.replicas=1 the leader alone commits")

	c.w.Node(c.brokers[leader]).Crash()
	c.w.Heal()
	next := c.waitLeader(orders, leader, 30*time.Second)
	require.NotEqual(t, leader, next, "an out-of-sync replica was elected")
	c.w.Node(c.brokers[leader]).Start()
	require.NoError(t, c.w.RunFor(10*time.Second))
	require.NotContains(t, c.values(orders), "committed-by-isr-of-one")
}

func TestCleanElectionWaitsForTheLastInSyncReplica(t *testing.T) {
	c := newCluster(t, 13, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.shrinkToLeader(orders)
	pr := c.produce(leader, orders, -1, "committed-by-isr-of-one")
	require.Zero(t, pr.ErrorCode)

	c.w.Node(c.brokers[leader]).Crash()
	c.w.Heal()
	require.NoError(t, c.w.RunFor(30*time.Second))
	require.Equal(t, -1, c.leaderOf(orders), "the partition stays offline rather than elect an out-of-sync replica")

	c.w.Node(c.brokers[leader]).Start()
	back := c.waitLeader(orders, -1, 30*time.Second)
	require.Equal(t, leader, back)
	require.Equal(t, []string{"committed-by-isr-of-one"}, c.values(orders))
}

func TestPowerLossWithoutFsyncLosesTheReplicasTailAndReplicationRestoresIt(t *testing.T) {
	c := newCluster(t, 14, 3, config.Default()) // log.flush.interval.messages unset: never fsync
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	for _, v := range []string{"a", "b", "c"} {
		require.Zero(t, c.produce(leader, orders, -1, v).ErrorCode)
	}
	f := c.followersOf(leader)[0]
	node := c.w.Node(c.brokers[f])
	require.Positive(t, node.Disk().UnsyncedBytes())
	node.PowerLoss(false)
	seg := node.Disk().List("orders-0/")
	for _, name := range seg {
		if size, _ := node.Disk().Size(name); len(name) > 4 && name[len(name)-4:] == ".log" {
			require.Zero(t, size, "%s kept unsynced bytes through a power loss", name)
		}
	}
	node.Start()
	ok, err := c.w.RunWhile(func() bool {
		s, ok := c.broker(f).Partition(orders)
		return !ok || s.LogEndOffset < 3
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "replication did not restore the follower's log")
	require.Equal(t, []string{"a", "b", "c"}, c.values(orders))
}

func TestFsyncEveryMessageKeepsTheTailThroughPowerLoss(t *testing.T) {
	cfg := config.Default()
	cfg.LogFlushIntervalMessages = 1
	c := newCluster(t, 14, 3, cfg)
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	require.Zero(t, c.produce(leader, orders, -1, "a").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	for i := range c.brokers {
		n := c.w.Node(c.brokers[i])
		for _, name := range n.Disk().List("orders-0/") {
			if len(name) > 4 && name[len(name)-4:] == ".log" {
				size, _ := n.Disk().Size(name)
				n.PowerLoss(false)
				after, _ := n.Disk().Size(name)
				require.Equal(t, size, after, "broker %d lost synced log bytes", i)
				n.Start()
			}
		}
	}
}

// KIP-101's first scenario, in a cluster whose controller fences restarted
// brokers: a follower that truncates to its stale high watermark on
// becoming follower, and is then elected before it refetches, loses a write
// every replica had and that was acknowledged with acks=all.
func hwTruncationScenario(t *testing.T, epochTruncation bool) []string {
	cfg := config.Default()
	cfg.LeaderEpochTruncation = epochTruncation
	c := newCluster(t, 15, 3, cfg)
	c.createTopic("orders", 1, 3)
	a := c.leaderOf(orders)
	require.Zero(t, c.produce(a, orders, -1, "m1").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second)) // followers learn HW=1
	require.Zero(t, c.produce(a, orders, -1, "m2").ErrorCode, "m2 acknowledged: every replica has it")
	// At this instant the followers still believe HW=1: their next fetch
	// response, long-polled, would tell them 2. Cut the leader off.
	c.w.Isolate(c.brokers[a])
	b := c.waitLeader(orders, a, 30*time.Second)
	var cc int
	for _, f := range c.followersOf(a) {
		if f != b {
			cc = f
		}
	}
	// C follows B but cannot reach it; then B dies before C refetches.
	c.w.Cut(c.brokers[b], c.brokers[cc])
	require.NoError(t, c.w.RunFor(time.Second))
	c.w.Node(c.brokers[b]).Crash()
	got := c.waitLeader(orders, b, 30*time.Second)

	require.Equal(t, cc, got)
	c.w.Heal()
	c.w.Node(c.brokers[b]).Start()
	require.NoError(t, c.w.RunFor(10*time.Second))
	return c.values(orders)
}

func TestHighWatermarkTruncationLosesAnAcknowledgedWrite(t *testing.T) {
	require.Equal(t, []string{"m1"}, hwTruncationScenario(t, false), "kip101.leader.epoch.truncation=false")
}

func TestLeaderEpochTruncationKeepsTheAcknowledgedWrite(t *testing.T) {
	require.Equal(t, []string{"m1", "m2"}, hwTruncationScenario(t, true))
}

func TestSameSeedSameClusterTraceHash(t *testing.T) {
	run := func() string {
		c := newCluster(t, 99, 3, config.Default())
		c.createTopic("orders", 1, 3)
		leader := c.leaderOf(orders)
		for _, v := range []string{"a", "b", "c"} {
			require.Zero(t, c.produce(leader, orders, -1, v).ErrorCode)
		}
		c.w.Node(c.brokers[leader]).Crash()
		c.waitLeader(orders, leader, 30*time.Second)
		c.w.Node(c.brokers[leader]).Start()
		require.NoError(t, c.w.RunFor(10*time.Second))
		require.Equal(t, []string{"a", "b", "c"}, c.values(orders))
		return c.w.Trace().HashString()
	}
	first := run()
	require.Equal(t, first, run())
}
