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

// Static membership (KIP-345): a consumer with a group.instance.id keeps
// its place in the group across a restart, and whatever its previous
// incarnation still sends is fenced.

// static is a consumer with group.instance.id instance.
func (c *cluster) static(name, group, instance string) *consumer {
	m := c.consumer(name, group)
	m.instance = instance
	return m
}

// restart is the same static member's next incarnation: same instance,
// no member id, nothing remembered.
func (m *consumer) restart(name string) *consumer {
	return m.c.static(name, m.group, m.instance)
}

// twoStatic makes static members a (the leader) and b a group in
// generation 2, both joined; what they sync is the story's.
func (c *cluster) twoStatic(t *testing.T) (a, b *consumer) {
	a, b = c.static("consumer-a", "etl", "host-a"), c.static("consumer-b", "etl", "host-b")
	a.session, b.session = 20*time.Second, 20*time.Second
	a.joinAlone(t)
	require.Contains(t, a.id, "host-a-", "a static member's id starts with its instance id")
	joinB := b.startJoin()
	require.Equal(t, kerr.RebalanceInProgress.Code, a.heartbeat())
	require.Zero(t, a.finishJoin(a.startJoin()))
	require.Zero(t, b.finishJoin(joinB))
	require.Equal(t, int32(2), b.generation)
	return a, b
}

func (m *consumer) leave(members ...kmsg.LeaveGroupRequestMember) []kmsg.LeaveGroupResponseMember {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.Members = m.group, members
	return m.call(m.findCoordinator(m.group, 0), req).(*kmsg.LeaveGroupResponse).Members
}

func TestStaticMemberRestartKeepsItsAssignmentWithoutARebalance(t *testing.T) {
	c := newCluster(t, 41, 3, config.Default())
	c.createTopic("orders", 2, 3)
	a, b := c.twoStatic(t)
	syncB := b.syncSend(nil)
	code, _ := a.sync(map[string]string{a.id: "orders/0", b.id: "orders/1"})
	require.Zero(t, code)
	code, mine := b.finishSync(syncB)
	require.Zero(t, code)
	require.Equal(t, "orders/1", mine)
	require.Equal(t, int32(2), b.generation)

	// b's process dies without leaving (static members do not send
	// LeaveGroup on close) and comes back before its session times out.
	b2 := b.restart("consumer-b2")
	require.Zero(t, b2.join())
	require.NotEqual(t, b.id, b2.id, "the new incarnation has its own member id")
	require.Equal(t, int32(2), b2.generation, "no rebalance: the generation stands")
	require.Equal(t, a.id, b2.leader)
	code, mine = b2.sync(nil)
	require.Zero(t, code)
	require.Equal(t, "orders/1", mine, "the new incarnation inherits the old one's assignment")
	require.Zero(t, a.heartbeat(), "the leader never heard of it")
	require.Zero(t, b2.commit(b2.generation, metadata.TopicPartition{Topic: "orders", Partition: 1}, 5))

	// The old incarnation was only paused: everything it sends is fenced.
	require.Equal(t, kerr.FencedInstanceID.Code, b.heartbeat())
	require.Equal(t, kerr.FencedInstanceID.Code, b.commit(b.generation, metadata.TopicPartition{Topic: "orders", Partition: 1}, 9))
	code, _ = b.sync(nil)
	require.Equal(t, kerr.FencedInstanceID.Code, code)
	require.Equal(t, kerr.FencedInstanceID.Code, b.join(), "rejoining with its old member id")
	off, code := b2.offsetFetch("etl", metadata.TopicPartition{Topic: "orders", Partition: 1}, true)
	require.Zero(t, code)
	require.Equal(t, int64(5), off)
}

func TestStaticLeaderRestartIsToldToSkipTheAssignment(t *testing.T) {
	c := newCluster(t, 42, 3, config.Default())
	c.createTopic("orders", 1, 3)
	a := c.static("consumer-a", "etl", "host-a")
	a.session = 20 * time.Second
	a.joinAlone(t)
	a2 := a.restart("consumer-a2")
	require.Zero(t, a2.join())
	require.Equal(t, a2.id, a2.leader, "the new incarnation leads in the old one's place")
	require.True(t, a2.skipAssignment, "JoinGroup v9: the group keeps its assignment")
	require.Equal(t, []string{a2.id}, a2.members, "the leader still gets the members")
	require.Equal(t, int32(1), a2.generation)
	s, _ := c.broker(a2.coord).Group("etl")
	require.Equal(t, []string{a2.id}, s.Members)
}

func TestStaticMemberRejoiningWhileTheLeaderAssignsForcesARebalance(t *testing.T) {
	c := newCluster(t, 43, 3, config.Default())
	c.createTopic("orders", 2, 3)
	a, b := c.twoStatic(t)
	syncB := b.syncSend(nil) // parked: the leader has not assigned yet

	// b restarts before the leader's SyncGroup: the leader may be assigning
	// to b's old member id, so the coordinator starts over.
	b2 := b.restart("consumer-b2")
	joinB2 := b2.startJoin()
	code, _ := b.finishSync(syncB)
	require.Equal(t, kerr.FencedInstanceID.Code, code, "the old incarnation's parked sync is fenced")
	code, _ = a.sync(map[string]string{a.id: "orders/0", b.id: "orders/1"})
	require.Equal(t, kerr.RebalanceInProgress.Code, code)
	require.Zero(t, a.finishJoin(a.startJoin()))
	require.Zero(t, b2.finishJoin(joinB2))
	require.Equal(t, int32(3), b2.generation)
	require.ElementsMatch(t, []string{a.id, b2.id}, a.members, "the leader sees the new incarnation, not the old")
}

func TestAdministratorRemovesAStaticMemberByItsInstanceID(t *testing.T) {
	c := newCluster(t, 44, 3, config.Default())
	c.createTopic("orders", 1, 3)
	a := c.static("consumer-a", "etl", "host-a")
	a.session = 20 * time.Second
	a.joinAlone(t)
	admin := c.consumer("admin", "etl")
	gone := kmsg.NewLeaveGroupRequestMember()
	gone.InstanceID = kmsg.StringPtr("host-a")
	unknown := kmsg.NewLeaveGroupRequestMember()
	unknown.InstanceID = kmsg.StringPtr("host-z")
	wrong := kmsg.NewLeaveGroupRequestMember()
	wrong.MemberID, wrong.InstanceID = "host-a-stale", kmsg.StringPtr("host-a")
	got := admin.leave(wrong, gone, unknown)
	require.Equal(t, kerr.FencedInstanceID.Code, got[0].ErrorCode, "a member id the instance is not mapped to")
	require.Zero(t, got[1].ErrorCode)
	require.Equal(t, kerr.UnknownMemberID.Code, got[2].ErrorCode)
	s, _ := c.broker(a.coord).Group("etl")
	require.Equal(t, "Empty", s.State)
	require.Equal(t, kerr.UnknownMemberID.Code, a.heartbeat())
}

func TestStaticMembershipSurvivesCoordinatorFailover(t *testing.T) {
	c := newCluster(t, 45, 3, config.Default())
	c.createTopic("orders", 1, 3)
	a := c.static("consumer-a", "etl", "host-a")
	a.session = 30 * time.Second
	a.joinAlone(t)
	old := a.coord
	c.w.Node(c.brokers[old]).Crash()
	offsets := metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("etl", c.cfg.OffsetsTopicPartitions)}
	c.waitLeader(offsets, old, 30*time.Second)

	// The new coordinator loaded the instance mapping from the group's
	// record: a restarted incarnation replaces the stored member.
	a2 := a.restart("consumer-a2")
	require.Zero(t, a2.join())
	require.Equal(t, int32(1), a2.generation)
	code, mine := a2.sync(nil)
	require.Zero(t, code)
	require.Equal(t, "orders/0", mine)
	a.coord = a2.coord
	require.Equal(t, kerr.FencedInstanceID.Code, a.heartbeat())
}
