package broker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCoordinatorsSurviveArbitraryRequests sends the group and transaction
// APIs in random order with random — often wrong — member ids,
// generations, producer ids, epochs and sequences, from several clients at
// once, while brokers crash and restart. The brokers' assertions (state
// machine transitions, monotonic epochs and generations, LSO bounds) must
// hold throughout; afterwards every request has been answered, and with
// transaction.partition.verification.enable no transaction hangs: once
// the coordinators time out what was left open, every partition's last
// stable offset is its high watermark.
func TestCoordinatorsSurviveArbitraryRequests(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { arbitraryRequests(t, seed) })
	}
}

func arbitraryRequests(t *testing.T, seed uint64) {
	cfg := config.Default()
	c := newCluster(t, 40+seed, 3, cfg)
	c.createTopic("orders", 2, 3)
	r := env.NewRand(seed)
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	tps := []metadata.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}
	actors := []*actor{c.actor("a0", speaksTV1), c.actor("a1", speaksTV2), c.actor("a2", speaksTV1), c.actor("a3", speaksTV2)}
	admin := c.actor("admin", nil)
	admin.findCoordinator("g", 0)
	admin.findCoordinator("t0", 1)

	members := []string{"", "bogus"}
	type producer struct {
		pid   int64
		epoch int16
	}
	producers := map[string]producer{"t0": {-1, -1}, "t1": {-1, -1}}
	generation := int32(1)
	type sent struct {
		rep     *reply
		learn   func(kmsg.Response)
		learned bool
	}
	var all []*sent
	groupCoordinator := func() int {
		return max(c.leaderOf(metadata.TopicPartition{Topic: metadata.OffsetsTopic, Partition: metadata.PartitionFor("g", cfg.OffsetsTopicPartitions)}), 0)
	}
	txnCoordinator := func(id string) int { return max(c.leaderOfTxn(id), 0) }

	for step := range 300 {
		a := actors[r.Intn(len(actors))]
		id := pick("t0", "t1")
		pr := producers[id]
		// Mostly right, sometimes stale or made up: right values reach the
		// state machines' deeper states, wrong ones their fences.
		epoch, member, gen := pr.epoch, members[len(members)-1-r.Intn(min(3, len(members)))], generation
		if r.Chance(0.3) {
			epoch += int16(r.Intn(3)) - 1
			member = members[r.Intn(len(members))]
			gen += int32(r.Intn(3)) - 1
		}
		tp := tps[r.Intn(len(tps))]
		s := &sent{}
		switch r.Intn(15) {
		case 13, 14: // members heartbeat more than they do anything else
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = "g", gen, member
			s.rep = a.send(groupCoordinator(), req)
		case 0, 1:
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(2000+r.Intn(3)*5000), int32(1000+r.Intn(4)*2000)
			for _, name := range []string{"range", "sticky"}[:1+r.Intn(2)] {
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name, p.Metadata = name, []byte(pick("x", "y"))
				req.Protocols = append(req.Protocols, p)
			}
			s.rep = a.send(groupCoordinator(), req)
			s.learn = func(resp kmsg.Response) {
				jr := resp.(*kmsg.JoinGroupResponse)
				if (jr.ErrorCode == 0 || jr.ErrorCode == kerr.MemberIDRequired.Code) && !slices.Contains(members, jr.MemberID) {
					members = append(members, jr.MemberID)
				}
				if jr.Generation > 0 {
					generation = jr.Generation
				}
			}
		case 2:
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = "g", gen, member
			for _, m := range members[2:] {
				if r.Chance(0.7) {
					as := kmsg.NewSyncGroupRequestGroupAssignment()
					as.MemberID, as.MemberAssignment = m, []byte(pick("orders/0", "orders/1", ""))
					req.GroupAssignment = append(req.GroupAssignment, as)
				}
			}
			s.rep = a.send(groupCoordinator(), req)
		case 3:
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = "g", gen, member
			s.rep = a.send(groupCoordinator(), req)
		case 4:
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group = "g"
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID = member
			req.Members = append(req.Members, lm)
			s.rep = a.send(groupCoordinator(), req)
		case 5:
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation, req.MemberID = "g", gen, member
			if r.Chance(0.3) {
				req.Generation, req.MemberID = -1, ""
			}
			ot := kmsg.NewOffsetCommitRequestTopic()
			ot.Topic = tp.Topic
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Partition, op.Offset = tp.Partition, int64(step)
			ot.Partitions = append(ot.Partitions, op)
			req.Topics = append(req.Topics, ot)
			s.rep = a.send(groupCoordinator(), req)
		case 6:
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, "g", pr.pid, epoch
			req.Generation, req.MemberID = gen, member
			if r.Chance(0.5) {
				req.Generation, req.MemberID = -1, ""
			}
			ot := kmsg.NewTxnOffsetCommitRequestTopic()
			ot.Topic = tp.Topic
			op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			op.Partition, op.Offset = tp.Partition, int64(step)
			ot.Partitions = append(ot.Partitions, op)
			req.Topics = append(req.Topics, ot)
			s.rep = a.send(groupCoordinator(), req)
		case 7:
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 5000
			if r.Chance(0.3) {
				req.ProducerID, req.ProducerEpoch = pr.pid, epoch
			}
			s.rep = a.send(txnCoordinator(id), req)
			s.learn = func(resp kmsg.Response) {
				if ir := resp.(*kmsg.InitProducerIDResponse); ir.ErrorCode == 0 {
					producers[id] = producer{ir.ProducerID, ir.ProducerEpoch}
				}
			}
		case 8:
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pr.pid, epoch
			at := kmsg.NewAddPartitionsToTxnRequestTopic()
			at.Topic, at.Partitions = tp.Topic, []int32{tp.Partition}
			req.Topics = append(req.Topics, at)
			s.rep = a.send(txnCoordinator(id), req)
		case 9:
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pr.pid, epoch, "g"
			s.rep = a.send(txnCoordinator(id), req)
		case 10:
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pr.pid, epoch, r.Chance(0.6)
			s.rep = a.send(txnCoordinator(id), req)
			s.learn = func(resp kmsg.Response) {
				if er := resp.(*kmsg.EndTxnResponse); er.ErrorCode == 0 && er.Version >= 5 {
					producers[id] = producer{er.ProducerID, er.ProducerEpoch}
				}
			}
		case 11:
			if pr.pid < 0 {
				continue
			}
			p := &txnProducer{actor: a, id: id, pid: pr.pid}
			s.rep = a.send(max(c.leaderOf(tp), 0), p.produceRequest(tp, p.batch(epoch, int32(r.Intn(4)), fmt.Sprintf("s%d", step))))
		case 12:
			if r.Chance(0.3) {
				victim := c.brokers[r.Intn(len(c.brokers))]
				c.w.Node(victim).Crash()
				c.w.After(r.Duration(time.Second, 8*time.Second), func() { c.w.Node(victim).Start() })
			}
			continue
		}
		all = append(all, s)
		require.NoError(t, c.w.RunFor(r.Duration(0, 300*time.Millisecond)))
		for _, s := range all {
			if s.rep.done && !s.learned {
				s.learned = true
				if s.rep.err == nil && s.learn != nil {
					s.learn(s.rep.resp)
				}
			}
		}
	}
	for _, name := range c.brokers {
		c.w.Node(name).Start()
	}
	require.NoError(t, c.w.RunFor(2*time.Minute))
	for i, s := range all {
		require.True(t, s.rep.done, "request %d never answered", i)
	}
	for _, tp := range tps {
		got := c.consume(tp, 1)
		require.Equal(t, got.hw, got.lso, "%v: a transaction hangs", tp)
	}
}
