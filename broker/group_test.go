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

// consumer drives one group member with raw requests.
type consumer struct {
	*actor
	group    string
	id       string
	instance string // group.instance.id: a static member (KIP-345)
	// skipAssignment: the last JoinGroup told this leader to keep the
	// group's assignment (v9+).
	skipAssignment bool
	generation     int32
	leader         string
	members        []string // the leader's view of the generation
	session        time.Duration
	rebalance      time.Duration // max.poll.interval.ms
	coord          int
}

func (c *cluster) consumer(name, group string) *consumer {
	return &consumer{actor: c.actor(name, nil), group: group, generation: -1, session: 3 * time.Second, rebalance: 5 * time.Second}
}

func (m *consumer) joinRequest() *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = m.group, m.id, "consumer"
	req.InstanceID = m.instanceID()
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(m.session.Milliseconds()), int32(m.rebalance.Milliseconds())
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("orders")
	req.Protocols = append(req.Protocols, p)
	return req
}

func (m *consumer) instanceID() *string {
	if m.instance == "" {
		return nil
	}
	return kmsg.StringPtr(m.instance)
}

// startJoin sends JoinGroup; a new dynamic member first learns its id
// (MEMBER_ID_REQUIRED, KIP-394), a static one is given it in the answer.
func (m *consumer) startJoin() *reply {
	m.coord = m.findCoordinator(m.group, 0)
	if m.id == "" && m.instance == "" {
		resp := m.call(m.coord, m.joinRequest()).(*kmsg.JoinGroupResponse)
		require.Equal(m.c.t, kerr.MemberIDRequired.Code, resp.ErrorCode, "a new member of a v4+ group needs an id first")
		require.NotEmpty(m.c.t, resp.MemberID)
		m.id = resp.MemberID
	}
	rep := m.send(m.coord, m.joinRequest())
	require.NoError(m.c.t, m.c.w.RunFor(10*time.Millisecond)) // arrived, parked if others must rejoin
	return rep
}

func (m *consumer) finishJoin(rep *reply) int16 {
	resp := m.wait(rep).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode == 0 {
		m.id, m.skipAssignment = resp.MemberID, resp.SkipAssignment
		m.generation, m.leader, m.members = resp.Generation, resp.LeaderID, nil
		for _, o := range resp.Members {
			m.members = append(m.members, o.MemberID)
		}
	}
	return resp.ErrorCode
}

func (m *consumer) join() int16 { return m.finishJoin(m.startJoin()) }

func (m *consumer) syncSend(assignments map[string]string) *reply {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = m.group, m.generation, m.id
	req.InstanceID = m.instanceID()
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for _, id := range m.members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, []byte(assignments[id])
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	return m.send(m.coord, req)
}

func (m *consumer) finishSync(rep *reply) (int16, string) {
	resp := m.wait(rep).(*kmsg.SyncGroupResponse)
	return resp.ErrorCode, string(resp.MemberAssignment)
}

// sync is SyncGroup; the leader (a client: the range assignor runs there)
// sends the assignment.
func (m *consumer) sync(assignments map[string]string) (int16, string) {
	return m.finishSync(m.syncSend(assignments))
}

func (m *consumer) heartbeat() int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = m.group, m.generation, m.id
	req.InstanceID = m.instanceID()
	return m.call(m.coord, req).(*kmsg.HeartbeatResponse).ErrorCode
}

func (m *consumer) commit(generation int32, tp metadata.TopicPartition, offset int64) int16 {
	return m.actor.commitAs(m.group, generation, m.id, m.instance, tp, offset)
}

// joinAlone makes m a group of one in a new generation.
func (m *consumer) joinAlone(t *testing.T) {
	require.Zero(t, m.join())
	require.Equal(t, m.id, m.leader)
	code, assignment := m.sync(map[string]string{m.id: "orders/0"})
	require.Zero(t, code)
	require.Equal(t, "orders/0", assignment)
}

func TestConsumerEvictedBySessionTimeoutCannotCommit(t *testing.T) {
	c := newCluster(t, 31, 3, config.Default())
	c.createTopic("orders", 1, 3)
	a, b := c.consumer("consumer-a", "etl"), c.consumer("consumer-b", "etl")
	a.joinAlone(t)
	require.Equal(t, int32(1), a.generation)

	// b joins: a hears of the rebalance on its heartbeat and rejoins.
	joinB := b.startJoin()
	require.Equal(t, kerr.RebalanceInProgress.Code, a.heartbeat())
	require.Zero(t, a.finishJoin(a.startJoin()))
	require.Zero(t, b.finishJoin(joinB))
	require.Equal(t, int32(2), a.generation)
	require.Equal(t, a.generation, b.generation)
	require.Equal(t, a.id, a.leader, "the earliest member leads")
	require.ElementsMatch(t, []string{a.id, b.id}, a.members, "the leader sees every member's subscription")
	require.Empty(t, b.members)
	syncB := b.syncSend(nil)
	code, mine := a.sync(map[string]string{a.id: "orders/0", b.id: ""})
	require.Zero(t, code)
	require.Equal(t, "orders/0", mine)
	code, theirs := b.finishSync(syncB)
	require.Zero(t, code)
	require.Empty(t, theirs, "the coordinator hands out what the leader assigned")
	require.Zero(t, a.commit(a.generation, orders, 1))

	// a stalls (a long GC pause): no heartbeat for its session timeout. b
	// heartbeats on, rejoins when told, and takes over the partition.
	for range 6 {
		require.NoError(t, c.w.RunFor(time.Second))
		if b.heartbeat() == kerr.RebalanceInProgress.Code {
			require.Zero(t, b.join())
			code, _ := b.sync(map[string]string{b.id: "orders/0"})
			require.Zero(t, code)
		}
	}
	require.Equal(t, int32(3), b.generation)
	s, _ := c.broker(b.coord).Group("etl")
	require.Equal(t, []string{b.id}, s.Members)
	require.Equal(t, "Stable", s.State)

	// The zombie wakes up and commits what it processed meanwhile.
	require.Equal(t, kerr.UnknownMemberID.Code, a.commit(a.generation, orders, 7), "an evicted member cannot commit")
	require.Equal(t, kerr.UnknownMemberID.Code, a.heartbeat())
	p := c.txnProducer("producer-a", "etl-a", speaksTV1)
	p.init()
	require.Zero(t, p.addOffsets("etl"))
	require.Equal(t, kerr.UnknownMemberID.Code, p.txnOffsetCommit("etl", a.generation, a.id, orders, 7),
		"nor inside a transaction (KIP-447)")
	require.Equal(t, kerr.IllegalGeneration.Code, b.commit(2, orders, 7), "a stale generation of a live member is fenced too")
	require.Zero(t, b.commit(b.generation, orders, 2))
	off, code := b.offsetFetch("etl", orders, true)
	require.Zero(t, code)
	require.Equal(t, int64(2), off)
}

func TestMemberThatDoesNotRejoinWithinTheRebalanceTimeoutIsEvicted(t *testing.T) {
	c := newCluster(t, 32, 3, config.Default())
	c.createTopic("orders", 1, 3)
	a, b := c.consumer("consumer-a", "etl"), c.consumer("consumer-b", "etl")
	a.session, a.rebalance = 10*time.Second, 4*time.Second
	b.session, b.rebalance = 10*time.Second, 4*time.Second
	a.joinAlone(t)
	joinB := b.startJoin()

	// a keeps heartbeating but is stuck processing: it never calls poll,
	// so it does not rejoin within max.poll.interval.ms.
	start := c.w.Now()
	for !joinB.done {
		require.Equal(t, kerr.RebalanceInProgress.Code, a.heartbeat())
		require.NoError(t, c.w.RunFor(time.Second))
	}
	require.Zero(t, b.finishJoin(joinB))
	require.GreaterOrEqual(t, c.w.Now().Sub(start), 4*time.Second, "the rebalance waited the rebalance timeout")
	require.Equal(t, b.id, b.leader, "the leader left: the next earliest member leads")
	require.Equal(t, []string{b.id}, b.members)
	require.Equal(t, kerr.UnknownMemberID.Code, a.heartbeat())
	require.Equal(t, kerr.UnknownMemberID.Code, a.commit(a.generation, orders, 5))
}

func TestGroupGenerationSurvivesCoordinatorFailover(t *testing.T) {
	c := newCluster(t, 33, 3, config.Default())
	c.createTopic("orders", 1, 3)
	a := c.consumer("consumer-a", "etl")
	a.session = 20 * time.Second
	a.joinAlone(t)
	require.Zero(t, a.commit(a.generation, orders, 3))
	old := a.coord

	c.w.Node(c.brokers[old]).Crash()
	offsets := metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("etl", c.cfg.OffsetsTopicPartitions)}
	successor := c.waitLeader(offsets, old, 30*time.Second)
	a.coord = a.findCoordinator("etl", 0)
	require.Equal(t, successor, a.coord)

	s, ok := c.broker(successor).Group("etl")
	require.True(t, ok)
	require.Equal(t, GroupStateView{"Stable", 1, a.id}, GroupStateView{s.State, s.Generation, s.Leader}, "loaded from __consumer_offsets")
	require.Zero(t, a.heartbeat(), "the member's generation is still current")
	require.Zero(t, a.commit(a.generation, orders, 4))
	off, code := a.offsetFetch("etl", orders, true)
	require.Zero(t, code)
	require.Equal(t, int64(4), off)

	// The next rebalance continues the generation count.
	c.w.Node(c.brokers[old]).Start()
	b := c.consumer("consumer-b", "etl")
	joinB := b.startJoin()
	require.Equal(t, kerr.RebalanceInProgress.Code, a.heartbeat())
	require.Zero(t, a.finishJoin(a.startJoin()))
	require.Zero(t, b.finishJoin(joinB))
	require.Equal(t, int32(2), b.generation)
}

// GroupStateView is the part of a group's state a story compares.
type GroupStateView struct {
	State      string
	Generation int32
	Leader     string
}

func TestSimpleConsumerCommitsOnlyWhileTheGroupIsEmpty(t *testing.T) {
	c := newCluster(t, 34, 3, config.Default())
	c.createTopic("orders", 1, 3)
	simple := c.actor("assign-only", nil)
	require.Zero(t, simple.commit("etl", -1, "", orders, 1), "assign() without membership: unfenced")
	a := c.consumer("consumer-a", "etl")
	a.session = 20 * time.Second
	a.joinAlone(t)
	require.Equal(t, kerr.UnknownMemberID.Code, simple.commit("etl", -1, "", orders, 2), "the group has members now")
	require.Zero(t, a.commit(a.generation, orders, 3))
}
