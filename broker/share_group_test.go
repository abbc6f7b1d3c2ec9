package broker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-932 share groups: members heartbeat with ShareGroupHeartbeat, and
// fetch, acquire and acknowledge records with ShareFetch and
// ShareAcknowledge at the partitions' leaders.

// shareMember drives one share group member with raw requests.
type shareMember struct {
	*actor
	group, id string
	topics    []string
	epoch     int32
	assigned  []string
	coord     int
	sessions  map[int]int32 // by broker: the epoch its share session expects next
}

func (c *cluster) shareMember(name, group string, topics ...string) *shareMember {
	return &shareMember{actor: c.actor(name, nil), group: group, id: name + "-id", topics: topics, coord: -1, sessions: map[int]int32{}}
}

func (m *shareMember) heartbeat() int16 {
	if m.coord < 0 {
		m.coord = m.findCoordinator(m.group, 0)
	}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.SubscribedTopicNames = m.topics
	}
	resp := m.call(m.coord, req).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.assigned = nil
		for _, t := range resp.Assignment.TopicPartitions {
			for name, ti := range m.c.controllerImage().Topics {
				if ti.ID == t.TopicID {
					m.assigned = append(m.assigned, partitionsOf(name, t.Partitions...)...)
				}
			}
		}
		slices.Sort(m.assigned)
	}
	return 0
}

func (m *shareMember) leave() int16 {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, -1
	return m.call(m.coord, req).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
}

// acks are acknowledgements of one type: offsets.
type acks struct {
	typ     int8
	offsets []int64
}

func (a acks) batches() []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	var out []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	for _, o := range a.offsets {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = o, o, []int8{a.typ}
		out = append(out, b)
	}
	return out
}

// fetch sends one ShareFetch for tp to its leader, with piggy-backed
// acknowledgements, and returns what it acquired (offset → delivery
// count) and the acknowledgement's error code.
func (m *shareMember) fetch(tp metadata.TopicPartition, maxRecords int32, a acks) (map[int64]int16, int16) {
	leader := m.c.leaderOf(tp)
	require.GreaterOrEqual(m.c.t, leader, 0)
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id)
	req.ShareSessionEpoch = m.sessions[leader]
	req.MaxRecords, req.BatchSize, req.MaxBytes = maxRecords, maxRecords, 1<<20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = m.c.topicID(tp.Topic)
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = tp.Partition, 1<<20
	rp.AcknowledgementBatches = a.batches()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := m.call(leader, req).(*kmsg.ShareFetchResponse)
	require.Zero(m.c.t, resp.ErrorCode, "ShareFetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	m.sessions[leader] = m.sessions[leader] + 1
	got, ackCode := map[int64]int16{}, int16(0)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			require.Zero(m.c.t, p.ErrorCode)
			ackCode = p.AcknowledgeErrorCode
			for _, r := range p.AcquiredRecords {
				for o := r.FirstOffset; o <= r.LastOffset; o++ {
					got[o] = r.DeliveryCount
				}
			}
		}
	}
	return got, ackCode
}

// acknowledge sends a ShareAcknowledge for tp; epoch -1 closes the
// session.
func (m *shareMember) acknowledge(tp metadata.TopicPartition, closeSession bool, a acks) int16 {
	leader := m.c.leaderOf(tp)
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id)
	req.ShareSessionEpoch = m.sessions[leader]
	if closeSession {
		req.ShareSessionEpoch = -1
		delete(m.sessions, leader)
	} else {
		m.sessions[leader]++
	}
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = m.c.topicID(tp.Topic)
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.Partition = tp.Partition
	for _, b := range a.batches() {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, AcknowledgeTypes: b.AcknowledgeTypes})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := m.call(leader, req).(*kmsg.ShareAcknowledgeResponse)
	require.Zero(m.c.t, resp.ErrorCode, "ShareAcknowledge: %v", kerr.ErrorForCode(resp.ErrorCode))
	return resp.Topics[0].Partitions[0].ErrorCode
}

// setGroupConfigs sets group configs with IncrementalAlterConfigs and
// lets the metadata reach every broker.
func (c *cluster) setGroupConfigs(group string, kvs ...string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kvs); i += 2 {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, cfg)
	}
	req.Resources = append(req.Resources, res)
	resp, err := c.call(c.brokers[0], req)
	require.NoError(c.t, err)
	require.Zero(c.t, resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode)
	require.NoError(c.t, c.w.RunFor(time.Second))
}

// shareStory is a cluster with one topic of one partition holding n
// records, and a share group reading it from the start.
func shareStory(t *testing.T, seed uint64, cfg config.Cluster, n int) (*cluster, metadata.TopicPartition) {
	c := newCluster(t, seed, 3, cfg)
	c.createTopic("orders", 1, 3)
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	var values []string
	for i := range n {
		values = append(values, string(rune('a'+i)))
	}
	require.Zero(t, c.produce(c.leaderOf(tp), tp, -1, values...).ErrorCode)
	c.setGroupConfigs("workers", "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "2000")
	return c, tp
}

func offsets(got map[int64]int16) []int64 {
	out := make([]int64, 0, len(got))
	for o := range got {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

func TestShareMembersAreAssignedTheSamePartitionAndDescribed(t *testing.T) {
	c := newCluster(t, 71, 3, config.Default())
	c.createTopic("orders", 1, 3)
	a, b := c.shareMember("worker-a", "workers", "orders"), c.shareMember("worker-b", "workers", "orders")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
	require.Zero(t, a.heartbeat())
	require.Equal(t, partitionsOf("orders", 0), a.assigned)
	require.Equal(t, partitionsOf("orders", 0), b.assigned, "more members than partitions: they share it")
	require.Equal(t, a.epoch, b.epoch)

	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{"workers"}
	d := c.actor("admin", nil).call(a.coord, req).(*kmsg.ShareGroupDescribeResponse).Groups[0]
	require.Zero(t, d.ErrorCode)
	require.Equal(t, "Stable", d.GroupState)
	require.Equal(t, "simple", d.Assignor)
	require.Len(t, d.Members, 2)
	require.Equal(t, "share", c.listGroupTypes(0)["workers"])

	// A consumer-protocol member cannot join a share group.
	cm := c.member848("consumer", "workers", "orders")
	require.Equal(t, kerr.GroupIDNotFound.Code, cm.heartbeat())
}

func TestRecordsReleasedByOneShareMemberAreDeliveredToAnother(t *testing.T) {
	c, tp := shareStory(t, 72, config.Default(), 4)
	a, b := c.shareMember("worker-a", "workers", "orders"), c.shareMember("worker-b", "workers", "orders")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())

	got, _ := a.fetch(tp, 500, acks{})
	require.Equal(t, []int64{0, 1, 2, 3}, offsets(got), "a acquires all four")
	none, _ := b.fetch(tp, 500, acks{})
	require.Empty(t, none, "a record is acquired by one member at a time")

	_, code := a.fetch(tp, 500, acks{typ: 1, offsets: []int64{0, 1}})
	require.Zero(t, code)
	require.Zero(t, a.acknowledge(tp, false, acks{typ: 2, offsets: []int64{2, 3}}), "a releases 2 and 3")

	got, _ = b.fetch(tp, 500, acks{})
	require.Equal(t, map[int64]int16{2: 2, 3: 2}, got, "b gets what a released, on their second delivery")
	require.Equal(t, kerr.InvalidRecordState.Code, a.acknowledge(tp, false, acks{typ: 1, offsets: []int64{2}}), "a no longer holds 2")
}

func TestAnExpiredAcquisitionLockRedeliversTheRecords(t *testing.T) {
	c, tp := shareStory(t, 73, config.Default(), 3)
	a, b := c.shareMember("worker-a", "workers", "orders"), c.shareMember("worker-b", "workers", "orders")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
	got, _ := a.fetch(tp, 500, acks{})
	require.Len(t, got, 3)

	// a stalls past share.record.lock.duration.ms (2 s here).
	require.NoError(t, c.w.RunFor(2500*time.Millisecond))
	got, _ = b.fetch(tp, 500, acks{})
	require.Equal(t, map[int64]int16{0: 2, 1: 2, 2: 2}, got, "the lock expired: b gets them again")
	_, code := a.fetch(tp, 500, acks{typ: 1, offsets: []int64{0}})
	require.Equal(t, kerr.InvalidRecordState.Code, code, "a's late acknowledgement is refused")
}

func TestTheDeliveryCountLimitArchivesARecord(t *testing.T) {
	cfg := config.Default()
	cfg.GroupShareDeliveryCountLimit = 3
	c, tp := shareStory(t, 74, cfg, 1)
	a := c.shareMember("worker-a", "workers", "orders")
	require.Zero(t, a.heartbeat())
	for delivery := int16(1); delivery <= 3; delivery++ {
		got, _ := a.fetch(tp, 500, acks{})
		require.Equal(t, map[int64]int16{0: delivery}, got)
		require.Zero(t, a.acknowledge(tp, false, acks{typ: 2, offsets: []int64{0}}))
	}
	got, _ := a.fetch(tp, 500, acks{})
	require.Empty(t, got, "released on its third delivery, the record is archived")
	require.Equal(t, int64(1), c.describeShareStart("workers", tp), "and the start offset moved past it")
}

func TestARejectedRecordIsNeverRedelivered(t *testing.T) {
	c, tp := shareStory(t, 75, config.Default(), 3)
	a, b := c.shareMember("worker-a", "workers", "orders"), c.shareMember("worker-b", "workers", "orders")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
	got, _ := a.fetch(tp, 500, acks{})
	require.Len(t, got, 3)
	require.Zero(t, a.acknowledge(tp, false, acks{typ: 3, offsets: []int64{1}}), "a rejects 1")
	require.Zero(t, a.acknowledge(tp, false, acks{typ: 2, offsets: []int64{0, 2}}), "and releases the others")
	require.NoError(t, c.w.RunFor(5*time.Second))
	for range 3 {
		got, _ = b.fetch(tp, 500, acks{})
		require.NotContains(t, got, int64(1))
		var back []int64
		for o := range got {
			back = append(back, o)
		}
		slices.Sort(back)
		require.Zero(t, b.acknowledge(tp, false, acks{typ: 2, offsets: back}))
	}
}

func TestAShareMemberLeavingReleasesItsAcquiredRecords(t *testing.T) {
	c, tp := shareStory(t, 76, config.Default(), 2)
	a, b := c.shareMember("worker-a", "workers", "orders"), c.shareMember("worker-b", "workers", "orders")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
	got, _ := a.fetch(tp, 500, acks{})
	require.Len(t, got, 2)

	// a leaves as a consumer closes: its share session, then the group.
	require.Zero(t, a.acknowledge(tp, true, acks{typ: 1, offsets: []int64{0}}))
	require.Zero(t, a.leave())
	got, _ = b.fetch(tp, 500, acks{})
	require.Equal(t, map[int64]int16{1: 2}, got, "what a still held came back at once, not after its lock")
}

func TestShareGroupOffsetsAreAlteredDescribedAndDeleted(t *testing.T) {
	c, tp := shareStory(t, 77, config.Default(), 5)
	admin := c.actor("admin", nil)
	coord := admin.findCoordinator("workers", 0)
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "workers"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = tp.Topic
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 3}}
	alter.Topics = append(alter.Topics, at)
	resp := admin.call(coord, alter).(*kmsg.AlterShareGroupOffsetsResponse)
	require.Zero(t, resp.ErrorCode)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(3), c.describeShareStart("workers", tp))

	a := c.shareMember("worker-a", "workers", "orders")
	require.Zero(t, a.heartbeat())
	got, _ := a.fetch(tp, 500, acks{})
	require.Equal(t, []int64{3, 4}, offsets(got), "delivery starts at the altered start offset")
	require.Equal(t, kerr.NonEmptyGroup.Code, admin.call(coord, alter).(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode, "not while the group has members")
	require.Zero(t, a.acknowledge(tp, true, acks{typ: 1, offsets: []int64{3, 4}}))
	require.Zero(t, a.leave())
	require.Equal(t, int64(5), c.describeShareStart("workers", tp))

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "workers"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: tp.Topic}}
	dresp := admin.call(coord, del).(*kmsg.DeleteShareGroupOffsetsResponse)
	require.Zero(t, dresp.ErrorCode)
	require.Zero(t, dresp.Topics[0].ErrorCode)
	require.Equal(t, int64(-1), c.describeShareStart("workers", tp), "no state any more")

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"workers"}
	require.Zero(t, admin.call(coord, dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
	_, ok := c.listGroupTypes(0)["workers"]
	require.False(t, ok)
}

func TestAShareGroupSurvivesItsCoordinatorsFailover(t *testing.T) {
	c := newCluster(t, 78, 3, config.Default())
	c.createTopic("orders", 2, 3)
	a, b := c.shareMember("worker-a", "workers", "orders"), c.shareMember("worker-b", "workers", "orders")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
	require.Zero(t, a.heartbeat())
	epoch := a.epoch

	old := a.coord
	c.w.Node(c.brokers[old]).Crash()
	offsets := metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("workers", c.cfg.OffsetsTopicPartitions)}
	successor := c.waitLeader(offsets, old, 30*time.Second)
	a.coord, b.coord = successor, successor
	require.Zero(t, a.heartbeat(), "the next coordinator knows a")
	require.Zero(t, b.heartbeat())
	require.Equal(t, epoch, a.epoch, "at the epoch it had")
	require.ElementsMatch(t, partitionsOf("orders", 0, 1), append(slices.Clone(a.assigned), b.assigned...))
}

// describeShareStart is the group's share-partition start offset of tp.
func (c *cluster) describeShareStart(group string, tp metadata.TopicPartition) int64 {
	admin := c.actor("admin", nil)
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: tp.Topic, Partitions: []int32{tp.Partition}}}
	req.Groups = append(req.Groups, rg)
	resp := admin.call(admin.findCoordinator(group, 0), req).(*kmsg.DescribeShareGroupOffsetsResponse)
	g := resp.Groups[0]
	require.Zero(c.t, g.ErrorCode)
	p := g.Topics[0].Partitions[0]
	require.Zero(c.t, p.ErrorCode)
	return p.StartOffset
}

func TestAReadCommittedShareGroupArchivesAbortedRecords(t *testing.T) {
	c := newCluster(t, 79, 3, config.Default())
	c.createTopic("orders", 1, 3)
	c.setGroupConfigs("workers", "share.auto.offset.reset", "earliest", "share.isolation.level", "read_committed")
	p := c.txnProducer("app", "pipeline", speaksTV1)
	p.init()
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "aborted-1", "aborted-2").ErrorCode)

	a := c.shareMember("worker-a", "workers", "orders")
	require.Zero(t, a.heartbeat())
	got, _ := a.fetch(orders, 500, acks{})
	require.Empty(t, got, "nothing below the last stable offset yet")

	require.Zero(t, p.end(false))
	p.waitCompleted()
	require.Zero(t, p.add(orders))
	require.Zero(t, p.produce(orders, "committed-1").ErrorCode)
	require.Zero(t, p.end(true))
	p.waitCompleted()

	got, _ = a.fetch(orders, 500, acks{})
	// 0, 1: aborted; 2: the abort marker; 3: committed-1; 4: its marker.
	require.Equal(t, []int64{3}, offsets(got), "only the committed record is delivered")
	require.Zero(t, a.acknowledge(orders, false, acks{typ: 1, offsets: []int64{3}}))
	require.Equal(t, int64(5), c.describeShareStart("workers", orders), "the aborted records and both markers are archived: done with")
}

func TestAShareSessionRefusesAStaleEpoch(t *testing.T) {
	c, tp := shareStory(t, 80, config.Default(), 2)
	a := c.shareMember("worker-a", "workers", "orders")
	require.Zero(t, a.heartbeat())
	got, _ := a.fetch(tp, 1, acks{})
	require.Len(t, got, 1, "MaxRecords bounds the acquisition")

	leader := c.leaderOf(tp)
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("workers"), kmsg.StringPtr(a.id), 7
	require.Equal(t, kerr.InvalidShareSessionEpoch.Code, a.call(leader, req).(*kmsg.ShareFetchResponse).ErrorCode)
	req.MemberID = kmsg.StringPtr("stranger")
	require.Equal(t, kerr.ShareSessionNotFound.Code, a.call(leader, req).(*kmsg.ShareFetchResponse).ErrorCode)

	got, _ = a.fetch(tp, 1, acks{typ: 1, offsets: []int64{0}})
	require.Equal(t, []int64{1}, offsets(got), "the session goes on at its epoch")
}

// A share group's run is the same run every time: two members, releases,
// a lock expiry, a leave — the same trace hash twice.
func TestAShareGroupRunIsDeterministic(t *testing.T) {
	run := func() (string, uint64) {
		c, tp := shareStory(t, 81, config.Default(), 6)
		a, b := c.shareMember("worker-a", "workers", "orders"), c.shareMember("worker-b", "workers", "orders")
		require.Zero(t, a.heartbeat())
		require.Zero(t, b.heartbeat())
		got, _ := a.fetch(tp, 3, acks{})
		require.Len(t, got, 3)
		got, _ = b.fetch(tp, 3, acks{})
		require.Len(t, got, 3)
		require.Zero(t, a.acknowledge(tp, false, acks{typ: 2, offsets: []int64{0}}))
		require.NoError(t, c.w.RunFor(3*time.Second))
		_, _ = b.fetch(tp, 500, acks{})
		require.Zero(t, a.acknowledge(tp, true, acks{}))
		require.Zero(t, a.leave())
		require.NoError(t, c.w.RunFor(time.Second))
		return c.w.Trace().HashString(), c.w.Events()
	}
	h1, n1 := run()
	h2, n2 := run()
	require.Equal(t, h1, h2)
	require.Equal(t, n1, n2)
}
