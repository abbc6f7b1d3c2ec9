package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// electLeaders asks broker via for elections of type typ on tps (nil: on
// every partition) and returns the codes by partition.
func (c *cluster) electLeaders(via int, typ int8, tps ...metadata.TopicPartition) map[metadata.TopicPartition]int16 {
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType, req.TimeoutMillis = typ, 5000
	for _, tp := range tps {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := c.call(c.brokers[via], req)
	require.NoError(c.t, err)
	r := resp.(*kmsg.ElectLeadersResponse)
	require.Zero(c.t, r.ErrorCode)
	out := map[metadata.TopicPartition]int16{}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			out[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
		}
	}
	return out
}

// After a failover the preferred replica, back in the ISR, leads again
// only when asked (kafka-leader-election.sh --election-type preferred);
// asked again, nothing is needed, and asking for every partition answers
// only for those that changed or could not.
func TestAPreferredElectionMovesLeadershipBackToTheFirstReplica(t *testing.T) {
	c := newCluster(t, 71, 3, config.Default())
	c.createTopic("orders", 1, 3)
	first := c.leaderOf(orders)
	ps, _ := c.controllerImage().Partition(orders)
	require.Equal(t, int32(first), ps.Replicas[0], "a new topic is led by its first replica")
	c.w.Node(c.brokers[first]).Crash()
	next := c.waitLeader(orders, first, 30*time.Second)
	c.w.Node(c.brokers[first]).Start()
	ok, err := c.w.RunWhile(func() bool { ps, _ := c.controllerImage().Partition(orders); return len(ps.ISR) < 3 }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the first replica never rejoined the ISR")
	require.Equal(t, next, c.leaderOf(orders), "no automatic preferred election")

	via := 3 - first - next
	require.Equal(t, map[metadata.TopicPartition]int16{orders: 0}, c.electLeaders(via, 0, orders))
	require.NoError(t, c.w.RunFor(time.Second))
	require.Equal(t, first, c.leaderOf(orders))
	require.Zero(t, c.produce(first, orders, -1, "after").ErrorCode)
	require.Equal(t, map[metadata.TopicPartition]int16{orders: kerr.ElectionNotNeeded.Code}, c.electLeaders(via, 0, orders))
	require.Empty(t, c.electLeaders(via, 0), "every partition: the ones not needing an election are left out")
	unknown := metadata.TopicPartition{Topic: "orders", Partition: 5}
	require.Equal(t, map[metadata.TopicPartition]int16{unknown: kerr.UnknownTopicOrPartition.Code}, c.electLeaders(via, 0, unknown))
}

// A partition whose ISR had shrunk to its leader goes offline when that
// leader crashes (unclean elections off). An unclean election asked for by
// an operator gives it the live out-of-sync replica, which then is the
// ISR; a partition that has a leader needs none.
func TestAnUncleanElectionOnRequestBringsAnOfflinePartitionBack(t *testing.T) {
	c := newCluster(t, 72, 3, config.Default())
	c.createTopic("orders", 1, 2)
	leader := c.shrinkToLeader(orders)
	ps, _ := c.controllerImage().Partition(orders)
	require.Equal(t, []int32{int32(leader)}, ps.ISR)
	follower := ps.Replicas[0]
	if follower == int32(leader) {
		follower = ps.Replicas[1]
	}
	require.Equal(t, map[metadata.TopicPartition]int16{orders: kerr.ElectionNotNeeded.Code}, c.electLeaders(int(follower), 1, orders))
	c.w.Node(c.brokers[leader]).Crash()
	c.w.Heal()
	ok, err := c.w.RunWhile(func() bool { ps, _ := c.controllerImage().Partition(orders); return ps.Leader != metadata.NoLeader }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the partition never went offline")
	require.Equal(t, map[metadata.TopicPartition]int16{orders: kerr.PreferredLeaderNotAvailable.Code}, c.electLeaders(int(follower), 0, orders),
		"the preferred replica is either the crashed leader or out of sync")

	require.Equal(t, map[metadata.TopicPartition]int16{orders: 0}, c.electLeaders(int(follower), 1, orders))
	require.NoError(t, c.w.RunFor(time.Second))
	ps, _ = c.controllerImage().Partition(orders)
	require.Equal(t, follower, ps.Leader)
	require.Equal(t, []int32{follower}, ps.ISR)
	require.Equal(t, int(follower), c.leaderOf(orders))
}
