package broker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteTopics deletes topics by name, through broker via, at v6 (or, with v5, through a
// client that speaks DeleteTopics v5 at most, as topic_names) and returns
// each answer's error code by name (by id in hex where it has none).
func (c *cluster) deleteTopics(via int, v5 bool, names ...string) map[string]int16 {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 5000
	for _, n := range names {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
	}
	var resp kmsg.Response
	if v5 {
		req.TopicNames, req.Topics = names, nil
		a := c.actor("v5", wire.NewVersions(wire.Range{Key: 18, Min: 0, Max: 3}, wire.Range{Key: 20, Min: 0, Max: 5}))
		rep := a.send(via, req)
		a.wait(rep)
		require.NoError(c.t, rep.err)
		resp = rep.resp
	} else {
		var err error
		resp, err = c.call(c.brokers[via], req)
		require.NoError(c.t, err)
	}
	return deleteAnswers(resp.(*kmsg.DeleteTopicsResponse))
}

func (c *cluster) deleteTopicIDs(ids ...[16]byte) map[string]int16 {
	req := kmsg.NewPtrDeleteTopicsRequest()
	for _, id := range ids {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.TopicID = id
		req.Topics = append(req.Topics, t)
	}
	resp, err := c.call(c.brokers[0], req)
	require.NoError(c.t, err)
	return deleteAnswers(resp.(*kmsg.DeleteTopicsResponse))
}

func deleteAnswers(resp *kmsg.DeleteTopicsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, t := range resp.Topics {
		key := fmt.Sprintf("%x", t.TopicID)
		if t.Topic != nil {
			key = *t.Topic
		}
		out[key] = t.ErrorCode
	}
	return out
}

// logFiles are broker i's files of the partition's directory.
func (c *cluster) logFiles(i int, tp metadata.TopicPartition) []string {
	return c.w.Node(c.brokers[i]).Disk().List(fmt.Sprintf("%s-%d/", tp.Topic, tp.Partition))
}

// Deleting a topic stops its replicas and deletes their logs on every
// broker, drops the offsets groups committed for it, and a topic created
// again under the same name starts empty, with a new id.
func TestDeletingATopicDeletesItsLogsEverywhereAndItsCommittedOffsets(t *testing.T) {
	c := newCluster(t, 51, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	require.Zero(t, c.produce(leader, orders, -1, "a", "b", "c").ErrorCode)
	co := c.coordinatorOf("g")
	require.Zero(t, c.commitOffset(co, "g", orders, 3))
	old := c.controllerImage().Topics["orders"].ID
	for i := range 3 {
		require.NotEmpty(t, c.logFiles(i, orders), "broker %d", i)
	}

	require.Equal(t, map[string]int16{"orders": 0}, c.deleteTopics(0, false, "orders"))
	require.NoError(t, c.w.RunFor(time.Second))
	for i := range 3 {
		_, ok := c.broker(i).Partition(orders)
		require.False(t, ok, "broker %d still has a replica", i)
		require.Empty(t, c.logFiles(i, orders), "broker %d", i)
		require.Nil(t, c.broker(i).Image().Topics["orders"])
	}
	require.Equal(t, int64(-1), c.committed(co, "g", orders), "the group's offset for the deleted topic is gone")
	require.Equal(t, map[string]int16{"orders": kerr.UnknownTopicOrPartition.Code}, c.deleteTopics(0, false, "orders"))

	c.createTopic("orders", 1, 3)
	require.NotEqual(t, old, c.controllerImage().Topics["orders"].ID)
	leader = c.leaderOf(orders)
	vs, fr := c.fetch(leader, orders, 0)
	require.Zero(t, fr.ErrorCode)
	require.Empty(t, vs, "the new topic starts empty")
	require.Equal(t, int64(0), fr.HighWatermark)
}

// A broker that was down while its topic was deleted and created again
// finds its old log naming the old topic id when it comes back: it
// deletes that stray instead of serving its records as the new topic's.
// Here the new topic is assigned to that broker alone (before its session
// ran out), so it comes back as its leader: without the check it would
// serve "old-1" and "old-2".
func TestABrokerBackAfterATopicWasRecreatedDeletesItsStrayLog(t *testing.T) {
	c := newCluster(t, 52, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	require.Zero(t, c.produce(leader, orders, -1, "old-1", "old-2").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	away := 3 - leader // a follower, not broker 0 (the helpers' way in)
	if leader == 0 {
		away = 1
	}
	c.w.Node(c.brokers[away]).Crash()
	require.Equal(t, map[string]int16{"orders": 0}, c.deleteTopics(leader, true, "orders"), "v5: by topic_names")
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{int32(away)}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[0], req)
	require.NoError(t, err)
	require.Zero(t, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	require.NotEmpty(t, c.logFiles(away, orders), "the stray is still on the disk of the broker that was away")

	c.w.Node(c.brokers[away]).Start()
	require.NoError(t, c.w.RunFor(10*time.Second))
	require.Equal(t, away, c.leaderOf(orders))
	vs, fr := c.fetch(away, orders, 0)
	require.Zero(t, fr.ErrorCode)
	require.Empty(t, vs, "the stray's records are gone")
	require.Equal(t, int64(0), fr.HighWatermark)
}

// DeleteTopics refuses what Kafka's controller refuses, each entry on its
// own: an unknown name or id, a topic named twice (every copy), an
// internal topic; a topic given by id is deleted like one given by name.
func TestDeleteTopicsRefusals(t *testing.T) {
	c := newCluster(t, 53, 3, config.Default())
	c.createTopic("a", 1, 1)
	c.createTopic("b", 1, 1)
	c.coordinatorOf("g") // creates __consumer_offsets
	got := c.deleteTopics(0, false, "nope", "a", "a", metadata.OffsetsTopic)
	require.Equal(t, map[string]int16{
		"nope":                kerr.UnknownTopicOrPartition.Code,
		"a":                   kerr.InvalidRequest.Code,
		metadata.OffsetsTopic: kerr.InvalidRequest.Code,
	}, got)
	require.NotNil(t, c.controllerImage().Topics["a"], "a duplicated name deletes nothing")

	id := c.controllerImage().Topics["b"].ID
	unknown := [16]byte{1, 2, 3}
	got = c.deleteTopicIDs(id, unknown)
	require.Equal(t, map[string]int16{"b": 0, fmt.Sprintf("%x", unknown): kerr.UnknownTopicID.Code}, got)
	require.NoError(t, c.w.RunFor(time.Second))
	require.Nil(t, c.controllerImage().Topics["b"])
}

func (c *cluster) createPartitions(topic string, count int32, validateOnly bool, assignment ...[]int32) (int16, string) {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis, req.ValidateOnly = 5000, validateOnly
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, replicas := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = replicas
		rt.Assignment = append(rt.Assignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[1], req)
	require.NoError(c.t, err)
	tr := resp.(*kmsg.CreatePartitionsResponse).Topics[0]
	msg := ""
	if tr.ErrorMessage != nil {
		msg = *tr.ErrorMessage
	}
	return tr.ErrorCode, msg
}

// CreatePartitions adds partitions that every replica opens and that take
// records at once; validate_only and every refusal leave the topic as it
// was.
func TestCreatePartitionsGrowsATopic(t *testing.T) {
	c := newCluster(t, 54, 3, config.Default())
	c.createTopic("orders", 1, 2)

	code, _ := c.createPartitions("orders", 3, true)
	require.Zero(t, code)
	require.NoError(t, c.w.RunFor(time.Second))
	require.Len(t, c.controllerImage().Topics["orders"].Partitions, 1, "validate_only writes nothing")

	for _, tc := range []struct {
		count      int32
		assignment [][]int32
		code       int16
		says       string
	}{
		{1, nil, kerr.InvalidPartitions.Code, "already has 1"},
		{0, nil, kerr.InvalidPartitions.Code, "not be an increase"},
		{3, [][]int32{{0, 1}}, kerr.InvalidReplicaAssignment.Code, "2 new partition(s) but 1 assignment"},
		{2, [][]int32{{0}}, kerr.InvalidReplicaAssignment.Code, "replication factor is 2"},
		{2, [][]int32{{1, 1}}, kerr.InvalidReplicaAssignment.Code, "twice"},
		{2, [][]int32{{1, 7}}, kerr.InvalidReplicaAssignment.Code, "broker 7 is not registered"},
	} {
		code, msg := c.createPartitions("orders", tc.count, false, tc.assignment...)
		require.Equal(t, tc.code, code, "count %d %v: %s", tc.count, tc.assignment, msg)
		require.True(t, strings.Contains(msg, tc.says), "%q does not say %q", msg, tc.says)
	}
	code, _ = c.createPartitions("nope", 2, false)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, code)

	code, msg := c.createPartitions("orders", 2, false, []int32{2, 0})
	require.Zero(t, code, msg)
	code, msg = c.createPartitions("orders", 4, false)
	require.Zero(t, code, msg)
	require.NoError(t, c.w.RunFor(time.Second))
	parts := c.controllerImage().Topics["orders"].Partitions
	require.Len(t, parts, 4)
	require.Equal(t, []int32{2, 0}, parts[1].Replicas)
	require.Equal(t, int32(2), parts[1].Leader)
	for p := range int32(4) {
		tp := metadata.TopicPartition{Topic: "orders", Partition: p}
		leader := c.leaderOf(tp)
		require.GreaterOrEqual(t, leader, 0, "partition %d has a leader", p)
		require.Zero(t, c.produce(leader, tp, -1, fmt.Sprintf("v%d", p)).ErrorCode)
		vs, _ := c.fetch(leader, tp, 0)
		require.Equal(t, []string{fmt.Sprintf("v%d", p)}, vs)
	}
}

// delete.topic.enable=false refuses every deletion, as Kafka does:
// TOPIC_DELETION_DISABLED from v3, INVALID_REQUEST before.
func TestDeleteTopicEnableFalseRefusesDeletion(t *testing.T) {
	cfg := config.Default()
	cfg.DeleteTopicEnable = false
	c := newCluster(t, 55, 3, cfg)
	c.createTopic("orders", 1, 3)
	require.Equal(t, map[string]int16{"orders": kerr.TopicDeletionDisabled.Code}, c.deleteTopics(0, false, "orders"))
	a := c.actor("v2", wire.NewVersions(wire.Range{Key: 18, Min: 0, Max: 3}, wire.Range{Key: 20, Min: 0, Max: 2}))
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"orders"}
	rep := a.send(0, req)
	a.wait(rep)
	require.NoError(t, rep.err)
	require.Equal(t, kerr.InvalidRequest.Code, rep.resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	require.NotNil(t, c.controllerImage().Topics["orders"])
}
