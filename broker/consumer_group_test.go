package broker_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 consumer groups: members heartbeat with ConsumerGroupHeartbeat
// and the coordinator assigns.

// member848 drives one consumer group member with raw heartbeats. It owns
// what it was last assigned, unless the story holds its revocation back.
type member848 struct {
	*actor
	group, id, instance string
	topics              []string
	regex               string // SubscribedTopicRegex, "" for none
	assignor            string
	epoch               int32
	assigned            []string // "topic/partition", sorted
	owned               []string // what it reports owning
	holdRevocation      bool     // keep reporting partitions it was told to give up
	coord               int
}

func (c *cluster) member848(name, group string, topics ...string) *member848 {
	return &member848{actor: c.actor(name, nil), group: group, id: name + "-id", topics: topics}
}

func (m *member848) topicPartitions(tps []string) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, s := range tps {
		i := strings.LastIndex(s, "/")
		p, err := strconv.Atoi(s[i+1:])
		require.NoError(m.c.t, err)
		id := m.c.topicID(s[:i])
		j := slices.IndexFunc(out, func(t kmsg.ConsumerGroupHeartbeatRequestTopic) bool { return t.TopicID == id })
		if j < 0 {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID = id
			out = append(out, t)
			j = len(out) - 1
		}
		out[j].Partitions = append(out[j].Partitions, int32(p))
	}
	return out
}

// heartbeatRequest is a full request when joining, else one with only the
// epoch and the owned partitions.
func (m *member848) heartbeatRequest() *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.instance != "" {
		req.InstanceID = kmsg.StringPtr(m.instance)
	}
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 5000
		req.SubscribedTopicNames = m.topics
		if m.regex != "" {
			req.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
		}
		if m.assignor != "" {
			req.ServerAssignor = kmsg.StringPtr(m.assignor)
		}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return req
	}
	req.Topics = m.topicPartitions(m.owned)
	return req
}

// heartbeat sends one heartbeat and takes in the answer: the epoch, and
// an assignment if one came.
func (m *member848) heartbeat() int16 {
	if m.coord == 0 && m.epoch == 0 {
		m.coord = m.findCoordinator(m.group, 0)
	}
	resp := m.call(m.coord, m.heartbeatRequest()).(*kmsg.ConsumerGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.assigned = nil
		names := m.c.controllerImage().Topics
		for _, t := range resp.Assignment.Topics {
			for name, ti := range names {
				if ti.ID == t.TopicID {
					for _, p := range t.Partitions {
						m.assigned = append(m.assigned, fmt.Sprintf("%s/%d", name, p))
					}
				}
			}
		}
		slices.Sort(m.assigned)
		if !m.holdRevocation {
			m.owned = m.assigned
		} else {
			// Take what is new, keep what should go.
			for _, tp := range m.assigned {
				if !slices.Contains(m.owned, tp) {
					m.owned = append(m.owned, tp)
				}
			}
			slices.Sort(m.owned)
		}
	}
	return 0
}

// leave sends epoch -1 (or -2 for a static member that will be back).
func (m *member848) leave(epoch int32) int16 {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, epoch
	if m.instance != "" {
		req.InstanceID = kmsg.StringPtr(m.instance)
	}
	return m.call(m.coord, req).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
}

// commit commits offset for tp at the member's coordinator, naming epoch.
func (m *member848) commit(epoch int32, tp metadata.TopicPartition, offset int64) int16 {
	return m.commitAt(m.coord, m.group, epoch, m.id, "", tp, offset)
}

// settle makes a, the group's first member, and b, the second, share the
// partitions: b joins, a revokes and acknowledges, b gets its share.
func settle(t *testing.T, a, b *member848) {
	t.Helper()
	for _, m := range []*member848{a, b, a, a, b} {
		require.Zero(t, m.heartbeat())
	}
}

func (c *cluster) describeConsumerGroup(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	a := c.actor("admin", nil)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	return a.call(c.coordinatorOf(group), req).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
}

func partitionsOf(topic string, ps ...int32) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s/%d", topic, p))
	}
	return out
}

func TestAConsumerGroupMemberJoinsAndGetsAllPartitions(t *testing.T) {
	c := newCluster(t, 61, 3, config.Default())
	c.createTopic("orders", 3, 3)
	a := c.member848("consumer-a", "etl", "orders")
	require.Zero(t, a.heartbeat())
	require.Equal(t, int32(1), a.epoch, "the join bumped the group epoch to 1, and a is there")
	require.Equal(t, partitionsOf("orders", 0, 1, 2), a.assigned)

	d := c.describeConsumerGroup("etl")
	require.Zero(t, d.ErrorCode)
	require.Equal(t, "Stable", d.State)
	require.Equal(t, int32(1), d.Epoch)
	require.Equal(t, int32(1), d.AssignmentEpoch)
	require.Equal(t, "uniform", d.AssignorName)
	require.Len(t, d.Members, 1)
	require.Equal(t, []string{"orders"}, d.Members[0].SubscribedTopics)
	require.Equal(t, "consumer", c.listGroupTypes(0)["etl"])
}

func (c *cluster) listGroupTypes(broker int) map[string]string {
	out := map[string]string{}
	for i := range c.brokers {
		resp, err := c.call(c.brokers[i], kmsg.NewPtrListGroupsRequest())
		require.NoError(c.t, err)
		for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
			out[g.Group] = g.GroupType
		}
	}
	return out
}

func TestASecondMemberGetsPartitionsOnlyAfterTheFirstRevokesThem(t *testing.T) {
	c := newCluster(t, 62, 3, config.Default())
	c.createTopic("orders", 4, 3)
	a, b := c.member848("consumer-a", "etl", "orders"), c.member848("consumer-b", "etl", "orders")
	require.Zero(t, a.heartbeat())
	require.Equal(t, partitionsOf("orders", 0, 1, 2, 3), a.assigned)

	a.holdRevocation = true
	require.Zero(t, b.heartbeat())
	require.Equal(t, int32(2), b.epoch, "b is at the new epoch")
	require.Empty(t, b.assigned, "but its partitions are a's until a revokes them")

	require.Zero(t, a.heartbeat())
	require.Equal(t, int32(1), a.epoch, "a stays in its epoch until it has revoked")
	require.Len(t, a.assigned, 2, "a is told to keep two")
	require.Len(t, a.owned, 4, "and still owns four")
	d := c.describeConsumerGroup("etl")
	require.Equal(t, "Reconciling", d.State)

	require.Zero(t, b.heartbeat())
	require.Empty(t, b.assigned, "nothing released yet")
	require.Zero(t, a.heartbeat())
	require.Equal(t, int32(1), a.epoch, "still owning them: no progress")

	// a revokes (commits, stops fetching) and says so.
	a.owned = a.assigned
	require.Zero(t, a.heartbeat())
	require.Equal(t, int32(2), a.epoch)
	require.Zero(t, b.heartbeat())
	require.Len(t, b.assigned, 2)
	for _, tp := range b.assigned {
		require.NotContains(t, a.assigned, tp)
	}
	require.Equal(t, "Stable", c.describeConsumerGroup("etl").State)
}

func TestAConsumerGroupMemberIsFencedBySessionTimeout(t *testing.T) {
	c := newCluster(t, 63, 3, config.Default())
	c.createTopic("orders", 2, 3)
	a, b := c.member848("consumer-a", "etl", "orders"), c.member848("consumer-b", "etl", "orders")
	settle(t, a, b)
	require.Len(t, b.assigned, 1)
	orders1 := metadata.TopicPartition{Topic: "orders", Partition: 1}
	require.Zero(t, b.commit(b.epoch, orders1, 3))

	// b falls silent; a keeps heartbeating past b's session.
	for range 12 {
		require.NoError(t, c.w.RunFor(time.Second))
		require.Zero(t, a.heartbeat())
	}
	require.Equal(t, partitionsOf("orders", 0, 1), a.assigned, "b's partition came to a")
	require.Equal(t, kerr.UnknownMemberID.Code, b.heartbeat())
	require.Equal(t, kerr.UnknownMemberID.Code, b.commit(b.epoch, orders1, 4), "a fenced member's commits are refused")
	require.Zero(t, a.commit(a.epoch, orders1, 4))
}

// A member's heartbeat can bump its epoch while an offset commit it sent
// at the epoch before is on its way (franz-go's TestGroupETL lost its
// commits to exactly this race). KIP-1251 (Kafka 4.3, KAFKA-20066) accepts
// such a commit for every partition the member still owns and was given
// at or before the commit's epoch, and refuses the rest partition by
// partition.
func TestAnOffsetCommitAtAnOlderMemberEpochIsAcceptedForPartitionsTheMemberStillOwns(t *testing.T) {
	c := newCluster(t, 64, 3, config.Default())
	c.createTopic("orders", 2, 3)
	a, b := c.member848("consumer-a", "etl", "orders"), c.member848("consumer-b", "etl", "orders")
	require.Zero(t, a.heartbeat())
	require.Len(t, a.assigned, 2)
	old := a.epoch
	require.Zero(t, b.heartbeat())
	require.Zero(t, a.heartbeat()) // told to revoke one
	require.Zero(t, a.heartbeat()) // revoked
	require.Greater(t, a.epoch, old)
	require.Len(t, a.assigned, 1)
	partitionOf := func(s string) metadata.TopicPartition {
		p, err := strconv.Atoi(s[strings.LastIndex(s, "/")+1:])
		require.NoError(t, err)
		return metadata.TopicPartition{Topic: "orders", Partition: int32(p)}
	}
	kept := partitionOf(a.assigned[0])
	given := metadata.TopicPartition{Topic: "orders", Partition: 1 - kept.Partition}

	require.Zero(t, a.commit(old, kept, 5), "still a's, given to it at the commit's epoch")
	require.Equal(t, kerr.StaleMemberEpoch.Code, a.commit(old, given, 5), "no longer a's")
	require.Equal(t, kerr.StaleMemberEpoch.Code, a.commit(a.epoch+1, kept, 5), "an epoch newer than the member's")
	require.Zero(t, a.commit(a.epoch, kept, 6))
	require.Equal(t, kerr.UnknownMemberID.Code, a.actor.commit("etl", -1, "", kept, 6), "no member epoch while the group has members")

	// One request, both partitions: each answered on its own, and only
	// the accepted one written.
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = "etl", old, a.id
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "orders"
	for _, tp := range []metadata.TopicPartition{kept, given} {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = tp.Partition, 9
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := a.call(a.coord, req).(*kmsg.OffsetCommitResponse)
	require.Equal(t, []int16{0, kerr.StaleMemberEpoch.Code}, []int16{resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[1].ErrorCode})
	for tp, want := range map[metadata.TopicPartition]int64{kept: 9, given: -1} {
		offset, code := a.offsetFetch("etl", tp, false)
		require.Zero(t, code)
		require.Equal(t, want, offset, "%v: only the accepted partition is written", tp)
	}

	// Inside a transaction (sendOffsetsToTransaction with the group's
	// metadata, KIP-447) alike.
	p := c.txnProducer("producer-a", "etl-a", speaksTV1)
	p.init()
	require.Zero(t, p.addOffsets("etl"))
	require.Zero(t, p.txnOffsetCommit("etl", old, a.id, kept, 10))
	require.Equal(t, kerr.StaleMemberEpoch.Code, p.txnOffsetCommit("etl", old, a.id, given, 10))

	// b leaves: a is given the other partition at a newer epoch, and a
	// commit for it at the epoch before is refused.
	before := a.epoch
	require.Zero(t, b.leave(-1))
	require.Zero(t, a.heartbeat())
	require.Greater(t, a.epoch, before)
	require.Len(t, a.assigned, 2)
	require.Equal(t, kerr.StaleMemberEpoch.Code, a.commit(before, given, 7), "given to a after the commit's epoch")
	require.Zero(t, a.commit(before, kept, 7))

	// The assignment epochs live in the member's current-assignment
	// record: the coordinator that loads the group judges alike.
	crashed := a.coord
	c.w.Node(c.brokers[crashed]).Crash()
	offsets := metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("etl", c.cfg.OffsetsTopicPartitions)}
	a.coord = c.waitLeader(offsets, crashed, 30*time.Second)
	require.Equal(t, kerr.StaleMemberEpoch.Code, a.commit(before, given, 8), "loaded: given to a after the commit's epoch")
	require.Zero(t, a.commit(before, kept, 8), "loaded: given to a before")
	require.Zero(t, a.commit(a.epoch, given, 8))
}

func TestConsumerGroupEpochsAndAssignmentSurviveCoordinatorFailover(t *testing.T) {
	c := newCluster(t, 65, 3, config.Default())
	c.createTopic("orders", 3, 3)
	a := c.member848("consumer-a", "etl", "orders")
	b := c.member848("consumer-b", "etl", "orders")
	settle(t, a, b)
	before := c.describeConsumerGroup("etl")
	require.Equal(t, "Stable", before.State)

	old := a.coord
	c.w.Node(c.brokers[old]).Crash()
	offsets := metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("etl", c.cfg.OffsetsTopicPartitions)}
	successor := c.waitLeader(offsets, old, 30*time.Second)
	a.coord, b.coord = successor, successor

	after := c.describeConsumerGroup("etl")
	require.Equal(t, before.Epoch, after.Epoch, "loaded from __consumer_offsets")
	require.Equal(t, before.AssignmentEpoch, after.AssignmentEpoch)
	require.Equal(t, before.Members, after.Members, "same members, epochs and assignments")
	aAssigned := a.assigned
	require.Zero(t, a.heartbeat(), "a's epoch is still current")
	require.Zero(t, b.heartbeat())
	require.Equal(t, aAssigned, a.owned)
	require.Zero(t, a.commit(a.epoch, metadata.TopicPartition{Topic: "orders", Partition: 0}, 7))
}

// A heartbeat's change is made in memory and written to
// __consumer_offsets. When the offsets partition's leader refuses the
// records (its ISR is below min.insync.replicas), the change must be
// undone, as Kafka's CoordinatorRuntime reverts it: kept, a member's
// release of a partition the log never held lets the coordinator give
// that partition to another member, and the next coordinator loads a log
// in which two members own it (pipeline-process-then-commit-848, seed
// 797 of 10,000: "input/1 owned by members ... and ...").
func TestAHeartbeatWhoseRecordsTheLogRefusesLeavesTheGroupAsItWas(t *testing.T) {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	cfg.ReplicaLagTimeMax = 2 * time.Second // the ISR shrinks within a's rebalance timeout (5 s)
	c := newCluster(t, 67, 3, cfg)
	c.createTopic("orders", 2, 3)
	a, b := c.member848("consumer-a", "etl", "orders"), c.member848("consumer-b", "etl", "orders")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
	require.Empty(t, b.assigned)
	a.holdRevocation = true
	require.Zero(t, a.heartbeat()) // told to revoke one
	require.Len(t, a.assigned, 1)
	revoking := c.describeConsumerGroup("etl")
	require.Equal(t, "Reconciling", revoking.State)

	// The coordinator is cut off from its followers until the offsets
	// partition's ISR is the coordinator alone; heartbeats that change
	// nothing write nothing, and keep both members' sessions alive.
	offsets := metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("etl", c.cfg.OffsetsTopicPartitions)}
	c.isolateFromFollowers(a.coord)
	for i := 0; ; i++ {
		require.Less(t, i, 4, "the offsets partition's ISR never shrank")
		if s, _ := c.broker(a.coord).Partition(offsets); len(s.ISR) == 1 {
			break
		}
		require.NoError(t, c.w.RunFor(time.Second))
		require.Zero(t, a.heartbeat())
		require.Zero(t, b.heartbeat())
	}
	a.owned = a.assigned // a revokes, and says so
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, a.heartbeat(), "a's release is refused: NOT_ENOUGH_REPLICAS")
	require.Equal(t, revoking.Members, c.describeConsumerGroup("etl").Members, "and undone: a still revoking")

	c.w.Heal()
	ok, err := c.w.RunWhile(func() bool { s, _ := c.broker(a.coord).Partition(offsets); return len(s.ISR) < 2 }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the offsets partition's ISR never grew back")
	require.Zero(t, b.heartbeat())
	require.Empty(t, b.assigned, "the partition is still a's: its release was not written")
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
	require.Len(t, b.assigned, 1)
	require.NotEqual(t, a.assigned, b.assigned)

	// The next coordinator loads a log that agrees (its invariants would
	// panic on a partition owned twice).
	before := c.describeConsumerGroup("etl")
	crashed := a.coord
	c.w.Node(c.brokers[crashed]).Crash()
	a.coord = c.waitLeader(offsets, crashed, 30*time.Second)
	b.coord = a.coord
	require.Equal(t, before.Members, c.describeConsumerGroup("etl").Members)
	require.Zero(t, a.heartbeat())
	require.Zero(t, b.heartbeat())
}

// A member fenced by its session timeout while the log refuses the fence
// stays in the group, and the fence is tried again every 500 ms until it
// is written (Kafka's coordinator timers retry a failed write after their
// retry backoff).
func TestASessionFenceTheLogRefusesIsTriedAgainUntilWritten(t *testing.T) {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	cfg.ReplicaLagTimeMax = 2 * time.Second
	c := newCluster(t, 68, 3, cfg)
	c.createTopic("orders", 2, 3)
	a, b := c.member848("consumer-a", "etl", "orders"), c.member848("consumer-b", "etl", "orders")
	settle(t, a, b)
	require.Len(t, b.assigned, 1)

	// b falls silent; the offsets partition's ISR shrinks to the
	// coordinator; b's session expires with the log refusing its fence.
	offsets := metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("etl", c.cfg.OffsetsTopicPartitions)}
	c.isolateFromFollowers(a.coord)
	silence := c.cfg.GroupConsumerSessionTimeout + 3*time.Second
	for elapsed := time.Duration(0); elapsed < silence; elapsed += time.Second {
		require.NoError(t, c.w.RunFor(time.Second))
		require.Zero(t, a.heartbeat())
	}
	s, _ := c.broker(a.coord).Partition(offsets)
	require.Len(t, s.ISR, 1)
	d := c.describeConsumerGroup("etl")
	require.Len(t, d.Members, 2, "b's fence was refused, and undone")

	c.w.Heal()
	ok, err := c.w.RunWhile(func() bool { s, _ := c.broker(a.coord).Partition(offsets); return len(s.ISR) < 2 }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the offsets partition's ISR never grew back")
	require.NoError(t, c.w.RunFor(time.Second))
	d = c.describeConsumerGroup("etl")
	require.Len(t, d.Members, 1, "the fence was tried again, and written")
	require.Equal(t, "consumer-a-id", d.Members[0].MemberID)
	require.Zero(t, a.heartbeat())
	require.Zero(t, a.heartbeat())
	require.Equal(t, partitionsOf("orders", 0, 1), a.assigned)
	require.Equal(t, kerr.UnknownMemberID.Code, b.heartbeat())
}

func TestAStaticMemberThatLeftIsReplacedByItsNextIncarnation(t *testing.T) {
	c := newCluster(t, 66, 3, config.Default())
	c.createTopic("orders", 2, 3)
	a, b := c.member848("consumer-a", "etl", "orders"), c.member848("consumer-b", "etl", "orders")
	a.instance, b.instance = "host-a", "host-b"
	settle(t, a, b)
	mine := b.assigned
	require.Len(t, mine, 1)

	// While b lives, its instance is not free.
	b2 := c.member848("consumer-b2", "etl", "orders")
	b2.instance = "host-b"
	require.Equal(t, kerr.UnreleasedInstanceID.Code, b2.heartbeat())

	require.Zero(t, b.leave(-2), "a temporary leave")
	require.Zero(t, b2.heartbeat())
	require.Equal(t, mine, b2.assigned, "the next incarnation takes the assignment over")
	require.Zero(t, a.heartbeat())
	require.Len(t, a.assigned, 1, "no rebalance: a keeps its partition")
	require.Equal(t, kerr.FencedInstanceID.Code, b.heartbeat(), "the old incarnation is fenced")
}

func TestAClassicGroupAndAConsumerGroupRefuseTheOtherProtocol(t *testing.T) {
	c := newCluster(t, 67, 3, config.Default())
	c.createTopic("orders", 1, 3)
	classic := c.consumer("classic-a", "etl")
	classic.session = 20 * time.Second
	classic.joinAlone(t)
	m := c.member848("consumer-a", "etl", "orders")
	require.Equal(t, kerr.GroupIDNotFound.Code, m.heartbeat(), "a classic group with members is not a consumer group")

	n := c.member848("consumer-b", "kip848", "orders")
	require.Zero(t, n.heartbeat())
	j := c.consumer("classic-b", "kip848")
	j.coord = j.findCoordinator("kip848", 0)
	req := j.joinRequest()
	resp := j.call(j.coord, req).(*kmsg.JoinGroupResponse)
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, resp.ErrorCode)

	// Once empty, a consumer group can become a classic one.
	require.Zero(t, n.leave(-1))
	require.Equal(t, "Empty", c.describeConsumerGroup("kip848").State)
	j.session = 20 * time.Second
	require.Zero(t, j.join())
}

func TestTheHeartbeatIsValidatedAsKafkaValidatesIt(t *testing.T) {
	c := newCluster(t, 68, 3, config.Default())
	c.createTopic("orders", 1, 3)
	m := c.member848("consumer-a", "etl", "orders")
	m.assignor = "sticky"
	require.Equal(t, kerr.UnsupportedAssignor.Code, m.heartbeat())
	m.assignor = ""
	m.epoch = 5
	m.coord = m.findCoordinator("etl", 0)
	require.Equal(t, kerr.GroupIDNotFound.Code, m.heartbeat(), "no such group, and only a join creates one")
	m.epoch = 0
	require.Zero(t, m.heartbeat())
	m.epoch = 7
	require.Equal(t, kerr.FencedMemberEpoch.Code, m.heartbeat(), "ahead of the coordinator")
	m.epoch = -3
	require.Equal(t, kerr.InvalidRequest.Code, m.heartbeat())
}

func TestTheRangeAssignorIsChosenByTheMembers(t *testing.T) {
	c := newCluster(t, 69, 3, config.Default())
	c.createTopic("orders", 3, 3)
	c.createTopic("payments", 3, 3)
	a, b := c.member848("consumer-a", "etl", "orders", "payments"), c.member848("consumer-b", "etl", "orders", "payments")
	a.assignor, b.assignor = "range", "range"
	settle(t, a, b)
	require.Equal(t, "range", c.describeConsumerGroup("etl").AssignorName)
	require.Equal(t, append(partitionsOf("orders", 0, 1), partitionsOf("payments", 0, 1)...), a.assigned)
	require.Equal(t, append(partitionsOf("orders", 2), partitionsOf("payments", 2)...), b.assigned)
}

func TestAMemberThatDoesNotRevokeWithinItsRebalanceTimeoutIsFenced(t *testing.T) {
	c := newCluster(t, 70, 3, config.Default())
	c.createTopic("orders", 2, 3)
	a, b := c.member848("consumer-a", "etl", "orders"), c.member848("consumer-b", "etl", "orders")
	require.Zero(t, a.heartbeat())
	a.holdRevocation = true
	require.Zero(t, b.heartbeat())
	require.Zero(t, a.heartbeat())
	require.Len(t, a.assigned, 1, "a is told to revoke one")

	// a heartbeats on, still owning both, past its rebalance timeout (5 s).
	var code int16
	for range 7 {
		require.NoError(t, c.w.RunFor(time.Second))
		if code = a.heartbeat(); code != 0 {
			break
		}
	}
	require.Equal(t, kerr.UnknownMemberID.Code, code, "fenced: it did not revoke in time")
	require.Zero(t, b.heartbeat())
	require.Equal(t, partitionsOf("orders", 0, 1), b.assigned, "b gets both")
}

func TestARegexSubscriptionMatchesWholeTopicNames(t *testing.T) {
	c := newCluster(t, 71, 3, config.Default())
	c.createTopic("orders", 1, 3)
	c.createTopic("orders-v2", 1, 3)
	c.createTopic("new-orders", 1, 3)
	m := c.member848("consumer-a", "etl")
	m.regex = "orders.*"
	require.Zero(t, m.heartbeat())
	require.Equal(t, []string{"orders-v2/0", "orders/0"}, m.assigned, "new-orders does not match as a whole")
	require.Equal(t, "orders.*", *c.describeConsumerGroup("etl").Members[0].SubscribedTopicRegex)

	bad := c.member848("consumer-b", "etl")
	bad.regex = "orders("
	require.Equal(t, kerr.InvalidRegularExpression.Code, bad.heartbeat())
}
