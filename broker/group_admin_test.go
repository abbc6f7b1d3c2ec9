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

// coordinatorOf asks the running brokers in turn for group's coordinator
// until one names it.
func (c *cluster) coordinatorOf(group string) int {
	var node int32 = -1
	ask := 0
	ok, err := c.w.RunWhile(func() bool {
		for !c.w.Node(c.brokers[ask%len(c.brokers)]).Running() {
			ask++
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		req.CoordinatorKeys = []string{group}
		resp, err := c.call(c.brokers[ask%len(c.brokers)], req)
		ask++
		if err == nil {
			fc := resp.(*kmsg.FindCoordinatorResponse)
			code, id := fc.ErrorCode, fc.NodeID
			if len(fc.Coordinators) > 0 { // v4+
				code, id = fc.Coordinators[0].ErrorCode, fc.Coordinators[0].NodeID
			}
			if code == 0 {
				node = id
				return false
			}
		}
		require.NoError(c.t, c.w.RunFor(200*time.Millisecond))
		return true
	}, 30*time.Second)
	require.NoError(c.t, err)
	require.True(c.t, ok, "no coordinator for %q", group)
	return int(node)
}

func (c *cluster) commitOffset(broker int, group string, tp metadata.TopicPartition, offset int64) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = tp.Partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func (c *cluster) committed(broker int, group string, tp metadata.TopicPartition) int64 {
	req := kmsg.NewPtrOffsetFetchRequest() // v8+: by group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	g := resp.(*kmsg.OffsetFetchResponse).Groups[0]
	require.Zero(c.t, g.ErrorCode)
	return g.Topics[0].Partitions[0].Offset
}

func (c *cluster) listGroups(broker int) map[string]string {
	resp, err := c.call(c.brokers[broker], kmsg.NewPtrListGroupsRequest())
	require.NoError(c.t, err)
	out := map[string]string{}
	for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
		out[g.Group] = g.GroupState
	}
	return out
}

func (c *cluster) describeGroup(broker int, group string) kmsg.DescribeGroupsResponseGroup {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	return resp.(*kmsg.DescribeGroupsResponse).Groups[0]
}

func (c *cluster) deleteGroup(broker int, group string) int16 {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{group}
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	return resp.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
}

// joinGroup makes one member of a consumer group subscribed to topic and
// returns its member id once the group is Stable.
func (c *cluster) joinGroup(broker int, group, topic string) string {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Topics = []string{topic}
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", sub.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		resp, err := c.call(c.brokers[broker], req)
		require.NoError(c.t, err)
		return resp.(*kmsg.JoinGroupResponse)
	}
	first := join("")
	require.Equal(c.t, kerr.MemberIDRequired.Code, first.ErrorCode)
	joined := join(first.MemberID)
	require.Zero(c.t, joined.ErrorCode)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, joined.MemberID, joined.Generation
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = joined.MemberID, []byte{0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	resp, err := c.call(c.brokers[broker], sync)
	require.NoError(c.t, err)
	require.Zero(c.t, resp.(*kmsg.SyncGroupResponse).ErrorCode)
	return joined.MemberID
}

// A group's coordinator lists and describes it; OffsetDelete removes one
// partition's committed offset but not while a member subscribes to its
// topic; DeleteGroups refuses a group with members and deletes an empty
// one, and what was deleted stays deleted when another broker takes the
// offsets partition over and loads it from the log.
func TestGroupsAreListedDescribedAndDeletedByTheirCoordinator(t *testing.T) {
	c := newCluster(t, 31, 3, config.Default())
	c.createTopic("orders", 2, 3)
	o0, o1 := metadata.TopicPartition{Topic: "orders", Partition: 0}, metadata.TopicPartition{Topic: "orders", Partition: 1}
	co := c.coordinatorOf("readers")
	ok, err := c.w.RunWhile(func() bool {
		// The offsets partitions are created on first use: retry, as a
		// client does, until the coordinator has loaded its partition.
		if c.commitOffset(co, "readers", o0, 5) == 0 {
			return false
		}
		require.NoError(t, c.w.RunFor(200*time.Millisecond))
		co = c.coordinatorOf("readers")
		return true
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, c.commitOffset(co, "readers", o1, 7))
	require.Equal(t, "Empty", c.listGroups(co)["readers"])
	require.Equal(t, "Empty", c.describeGroup(co, "readers").State)
	require.Equal(t, kerr.NotCoordinator.Code, c.describeGroup((co+1)%3, "readers").ErrorCode)
	require.Equal(t, "Dead", c.describeGroup(c.coordinatorOf("nobody"), "nobody").State)

	member := c.joinGroup(co, "readers", "orders")
	d := c.describeGroup(co, "readers")
	require.Equal(t, "Stable", d.State)
	require.Equal(t, "range", d.Protocol)
	require.Len(t, d.Members, 1)
	require.Equal(t, member, d.Members[0].MemberID)
	require.Equal(t, kerr.NonEmptyGroup.Code, c.deleteGroup(co, "readers"))

	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "readers"
	dt := kmsg.NewOffsetDeleteRequestTopic()
	dt.Topic = "orders"
	dp := kmsg.NewOffsetDeleteRequestTopicPartition()
	dp.Partition = 1
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	resp, err := c.call(c.brokers[co], del)
	require.NoError(t, err)
	require.Equal(t, kerr.GroupSubscribedToTopic.Code, resp.(*kmsg.OffsetDeleteResponse).Topics[0].Partitions[0].ErrorCode)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "readers"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = member
	leave.Members = append(leave.Members, lm) // v3+
	_, err = c.call(c.brokers[co], leave)
	require.NoError(t, err)
	require.NoError(t, c.w.RunFor(time.Second))
	resp, err = c.call(c.brokers[co], del)
	require.NoError(t, err)
	require.Zero(t, resp.(*kmsg.OffsetDeleteResponse).Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(-1), c.committed(co, "readers", o1))
	require.Equal(t, int64(5), c.committed(co, "readers", o0))

	require.Zero(t, c.deleteGroup(co, "readers"))
	require.NotContains(t, c.listGroups(co), "readers")
	require.Equal(t, "Dead", c.describeGroup(co, "readers").State)
	require.Equal(t, kerr.GroupIDNotFound.Code, c.deleteGroup(co, "readers"))

	c.w.Node(c.brokers[co]).Crash()
	next := co
	ok, err = c.w.RunWhile(func() bool {
		// Until the controller fences the crashed broker, its
		// partitions have no other leader.
		if next = c.coordinatorOf("readers"); next == co {
			require.NoError(t, c.w.RunFor(500*time.Millisecond))
			return true
		}
		return false
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "another broker took the offsets partition over")
	require.Equal(t, int64(-1), c.committed(next, "readers", o0), "the new coordinator loaded the tombstones")
	require.NotContains(t, c.listGroups(next), "readers")
}

// DescribeCluster names the brokers at the listener asked, with a live
// broker as the controller clients should send admin requests to.
func TestDescribeClusterNamesTheBrokersOnTheListenerAsked(t *testing.T) {
	c := newCluster(t, 32, 3, config.Default())
	resp, err := c.call(c.brokers[1], kmsg.NewPtrDescribeClusterRequest())
	require.NoError(t, err)
	r := resp.(*kmsg.DescribeClusterResponse)
	require.Zero(t, r.ErrorCode)
	require.Equal(t, "sim", r.ClusterID)
	require.Equal(t, int32(1), r.ControllerID)
	require.Len(t, r.Brokers, 3)
	for _, b := range r.Brokers {
		require.Equal(t, c.brokers[b.NodeID], metadata.JoinAddr(b.Host, b.Port))
	}
	ctl := kmsg.NewPtrDescribeClusterRequest()
	ctl.EndpointType = 2
	resp, err = c.call(c.brokers[1], ctl)
	require.NoError(t, err)
	require.Equal(t, kerr.UnsupportedEndpointType.Code, resp.(*kmsg.DescribeClusterResponse).ErrorCode)
}
