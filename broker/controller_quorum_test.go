package broker_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Brokers given three controllers find the active one, and find the next
// one when it crashes: the new active controller, which has every
// registration from the log, fences a broker that then goes silent and
// moves its leadership, as the old one would have.
func TestBrokersFollowTheActiveControllerAcrossAFailover(t *testing.T) {
	q := newQuorumCluster(t, 11)
	w, ctls, brokers, active := q.w, q.ctls, q.brokers, q.active

	// A topic, asked of a broker, which forwards to the active controller.
	d := w.Node("client").Process().(*driver)
	created := false
	for deadline := w.Now().Add(30 * time.Second); !created && w.Now() < deadline; {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders", 3, 3
		req.Topics = append(req.Topics, rt)
		done := false
		w.Node("client").Exec(func() {
			cl := rpc.NewClient(d.Router, brokers[0], rpc.ClientOptions{ClientID: "test"})
			cl.Do(req, 10*time.Second, func(r kmsg.Response, e error) {
				done = true
				created = e == nil && r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode == 0
				cl.Close()
			})
		})
		_, err := w.RunWhile(func() bool { return !done }, 20*time.Second)
		require.NoError(t, err)
		require.NoError(t, w.RunFor(500*time.Millisecond))
	}
	require.True(t, created, "the topic was created through the active controller")

	first := active()
	var firstName string
	for _, n := range ctls {
		if c, _ := w.Node(n).Process().(*controller.Controller); c == first {
			firstName = n
		}
	}
	w.Node(firstName).Crash()
	ok, err := w.RunWhile(func() bool { c := active(); return c == nil || c == first }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "another controller became active")
	second := active()
	require.True(t, second.Registered(0) && second.Registered(1) && second.Registered(2), "the registrations are in the log")

	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	p, _ := second.Partition(tp)
	led := p.Leader
	w.Node(brokers[led]).Crash()
	ok, err = w.RunWhile(func() bool {
		c := active()
		if c == nil {
			return true
		}
		q, _ := c.Partition(tp)
		return q.Leader == led
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the new active controller moved the crashed broker's leadership")
	require.True(t, active().Fenced(led), "and fenced it")
}

// quorumCluster is three controllers and three brokers, every broker
// registered and unfenced at an active controller.
type quorumCluster struct {
	w       *sim.World
	ctls    []string
	brokers []string
}

func newQuorumCluster(t *testing.T, seed uint64) *quorumCluster {
	return newQuorumClusterWith(t, seed, config.Default())
}

func newQuorumClusterWith(t *testing.T, seed uint64, cfg config.Cluster) *quorumCluster {
	o := sim.Options{Seed: seed}
	if path := os.Getenv("KAFKASIM_BROKER_TRACE"); path != "" { // the run's trace, to read a story's failure
		f, err := os.Create(path)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		o.TraceJSON = f
	}
	w := sim.New(o)
	voters := map[int32]string{}
	q := &quorumCluster{w: w}
	for i := range 3 {
		name := fmt.Sprintf("controller-%d", i)
		q.ctls = append(q.ctls, name)
		voters[controller.ID+int32(i)] = name
	}
	for i, name := range q.ctls {
		o := controller.Options{NodeID: controller.ID + int32(i), Voters: voters}
		w.AddNode(name, func() env.Process { return controller.NewVoter(cfg, o) }).Start()
	}
	for i := range 3 {
		name := fmt.Sprintf("broker-%d", i)
		q.brokers = append(q.brokers, name)
		startBroker(w, name, int32(i), voters, cfg)
	}
	w.AddNode("client", func() env.Process { return &driver{} }).Start()
	allLive := func() bool {
		c := q.active()
		return c != nil && !c.Fenced(0) && !c.Fenced(1) && !c.Fenced(2)
	}
	ok, err := w.RunWhile(func() bool { return !allLive() }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "every broker registered and unfenced at an active controller")
	return q
}

// active is the active controller, nil if none.
func (q *quorumCluster) active() *controller.Controller {
	for _, n := range q.ctls {
		if c, ok := q.w.Node(n).Process().(*controller.Controller); ok && c.Active() {
			return c
		}
	}
	return nil
}

func (q *quorumCluster) activeName() string {
	for _, n := range q.ctls {
		if c, ok := q.w.Node(n).Process().(*controller.Controller); ok && c.Active() {
			return n
		}
	}
	return ""
}

// An active controller cut off from the other controllers but not from the
// brokers cannot decide: nothing it proposes commits, so a broker that goes
// silent is not fenced by it. Check quorum makes it resign; the other two
// elect a new active controller, the brokers move on to it, and it fences
// the silent broker.
func TestAnActiveControllerCutFromItsQuorumCannotFenceAndIsReplaced(t *testing.T) {
	q := newQuorumCluster(t, 5)
	old := q.activeName()
	oldCtl := q.active()
	var others []string
	for _, n := range q.ctls {
		if n != old {
			others = append(others, n)
		}
	}
	// Broker 2 goes silent; 5 of its 6 session seconds later the active
	// controller is cut from its voters, so the session expires while it
	// still believes it leads (check quorum takes 1.5 x the 2s fetch
	// timeout to make it resign).
	q.w.Node(q.brokers[2]).Crash()
	require.NoError(t, q.w.RunFor(5*time.Second))
	require.False(t, oldCtl.Fenced(2))
	for _, n := range others {
		q.w.Cut(old, n)
	}
	ok, err := q.w.RunWhile(func() bool { return oldCtl.Active() }, 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the cut-off controller stopped being active")
	require.False(t, oldCtl.Fenced(2), "a controller without its quorum fenced broker 2")
	ok, err = q.w.RunWhile(func() bool {
		c := q.active()
		return c == nil || !c.Fenced(2)
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "a new active controller fenced the silent broker")
	require.NotEqual(t, old, q.activeName())
	require.False(t, oldCtl.Fenced(2), "the cut-off controller never learned it either")
	q.w.Heal()
	require.NoError(t, q.w.RunFor(5*time.Second))
	require.True(t, oldCtl.Fenced(2), "healed, the old controller applies the fence from the log")
}

// DescribeQuorum, asked of a broker, is forwarded to the controllers and
// answered by the quorum's leader: its id and epoch, the high watermark,
// every voter's log end and last fetch, every voter's endpoint, and the
// brokers as observers.
func TestDescribeQuorumThroughABroker(t *testing.T) {
	q := newQuorumCluster(t, 2)
	require.NoError(t, q.w.RunFor(2*time.Second))
	d := q.w.Node("client").Process().(*driver)
	var got *kmsg.DescribeQuorumResponseTopicPartition
	var nodes int
	for attempt := 0; attempt < 5 && got == nil; attempt++ {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		done := false
		q.w.Node("client").Exec(func() {
			cl := rpc.NewClient(d.Router, q.brokers[0], rpc.ClientOptions{ClientID: "test"})
			cl.Do(req, 10*time.Second, func(r kmsg.Response, e error) {
				done = true
				if e == nil {
					resp := r.(*kmsg.DescribeQuorumResponse)
					if p := &resp.Topics[0].Partitions[0]; p.ErrorCode == 0 {
						got, nodes = p, len(resp.Nodes)
					}
				}
				cl.Close()
			})
		})
		_, err := q.w.RunWhile(func() bool { return !done }, 20*time.Second)
		require.NoError(t, err)
	}
	require.NotNil(t, got, "the quorum's leader answered within five asks")
	require.Equal(t, controller.ID+int32(slices.Index(q.ctls, q.activeName())), got.LeaderID)
	require.Positive(t, got.HighWatermark)
	require.Len(t, got.CurrentVoters, 3)
	require.Equal(t, 3, nodes)
	for _, v := range got.CurrentVoters {
		require.GreaterOrEqual(t, v.LogEndOffset, int64(0), "voter %d has fetched", v.ReplicaID)
		require.Positive(t, v.LastFetchTimestamp)
	}
	// The brokers follow the log as observers: the leader lists them apart.
	var observers []int32
	for _, o := range got.Observers {
		require.GreaterOrEqual(t, o.LogEndOffset, int64(0), "observer %d has fetched", o.ReplicaID)
		observers = append(observers, o.ReplicaID)
	}
	require.Equal(t, []int32{0, 1, 2}, observers, "every broker is an observer")
}

// produce sends one acks=all write of v to tp's partition on broker addr
// and returns the partition's error code.
func (q *quorumCluster) produce(t *testing.T, addr string, tp metadata.TopicPartition, v string) int16 {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = tp.Partition
	rp.Records = record.Values(q.w.Now().UnixMilli(), []byte(v))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, ok := q.call(t, addr, req).(*kmsg.ProduceResponse)
	require.True(t, ok, "%s answered", addr)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// call sends req to node addr from the client and runs the world until the
// answer (nil if the call failed).
func (q *quorumCluster) call(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	d := q.w.Node("client").Process().(*driver)
	var resp kmsg.Response
	done := false
	q.w.Node("client").Exec(func() {
		cl := rpc.NewClient(d.Router, addr, rpc.ClientOptions{ClientID: "test"})
		cl.Do(req, 10*time.Second, func(r kmsg.Response, e error) {
			done = true
			if e == nil {
				resp = r
			}
			cl.Close()
		})
	})
	ok, err := q.w.RunWhile(func() bool { return !done }, 20*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	return resp
}

// Produce and fetch need no controller: while the quorum elects a new
// active controller, the partition's leader keeps acknowledging acks=all
// writes from its ISR and serving them.
func TestBrokersKeepServingWhileTheQuorumElects(t *testing.T) {
	q := newQuorumCluster(t, 9)
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	q.createTopic(t, tp.Topic, 1)
	leaderOf := func() int32 {
		for i, n := range q.brokers {
			if b, ok := q.w.Node(n).Process().(*broker.Broker); ok && b.Leads(tp) {
				if s, _ := b.Partition(tp); len(s.ISR) == 3 {
					return int32(i)
				}
			}
		}
		return -1
	}
	ok, err := q.w.RunWhile(func() bool { return leaderOf() < 0 }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "orders/0 has a leader with a full ISR")
	leader := q.brokers[leaderOf()]

	q.w.Node(q.activeName()).Crash()
	produce := func(v string) int16 { return q.produce(t, leader, tp, v) }
	for i := range 5 {
		require.Zero(t, produce(fmt.Sprint("during-", i)), "write %d while the quorum elects", i)
		require.Nil(t, q.active(), "no controller is active yet: the write did not need one")
	}
	ok, err = q.w.RunWhile(func() bool { return q.active() == nil }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "a new active controller")
	require.Zero(t, produce("after"))
	st, _ := q.w.Node(leader).Process().(*broker.Broker).Partition(tp)
	require.Equal(t, int64(6), st.HighWatermark, "all six writes committed")
}

// The active controller crashes while it elects a partition's leader: the
// partition's leader has gone silent, its session runs out, and the active
// controller decides the fence and the new leader — but, cut from its
// voters a moment before, cannot commit it, and then crashes. The decision
// never existed: the next active controller takes it again, once, and the
// partition gets one leader in one new epoch.
func TestTheActiveControllerCrashesWhileItElectsALeader(t *testing.T) {
	q := newQuorumCluster(t, 13)
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	q.createTopic(t, tp.Topic, 1)
	require.NoError(t, q.w.RunFor(2*time.Second))
	first := q.active()
	p, ok := first.Partition(tp)
	require.True(t, ok)
	led, epoch := p.Leader, p.LeaderEpoch
	firstName := q.activeName()

	q.w.Node(q.brokers[led]).Crash()
	require.NoError(t, q.w.RunFor(5500*time.Millisecond)) // the 6 s session nearly over
	for _, n := range q.ctls {
		if n != firstName {
			q.w.Cut(firstName, n)
		}
	}
	require.NoError(t, q.w.RunFor(1500*time.Millisecond)) // expired: decided, not committed
	after, _ := first.Partition(tp)
	require.Equal(t, led, after.Leader, "an uncommitted election changed nothing")
	q.w.Node(firstName).Crash()
	q.w.Heal()

	ok, err := q.w.RunWhile(func() bool {
		c := q.active()
		if c == nil {
			return true
		}
		p, _ := c.Partition(tp)
		return p.Leader == led
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the next active controller elected a new leader")
	now, _ := q.active().Partition(tp)
	require.Equal(t, epoch+1, now.LeaderEpoch, "one new epoch, not two")
	require.NotEqual(t, led, now.Leader)
	require.NoError(t, q.w.RunFor(2*time.Second))
	leaders := 0
	for _, n := range q.brokers {
		if b, ok := q.w.Node(n).Process().(*broker.Broker); ok && b.Leads(tp) {
			leaders++
		}
	}
	require.Equal(t, 1, leaders, "one broker leads orders/0")
}

// createTopic creates a topic of replication factor 3 through broker 0,
// asking again while the broker's controller channel finds the active one.
func (q *quorumCluster) createTopic(t *testing.T, topic string, partitions int32) {
	for range 20 {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 3
		req.Topics = append(req.Topics, rt)
		if r, ok := q.call(t, q.brokers[0], req).(*kmsg.CreateTopicsResponse); ok && r.Topics[0].ErrorCode == 0 {
			return
		}
		require.NoError(t, q.w.RunFor(500*time.Millisecond))
	}
	t.Fatalf("topic %s not created in 20 asks", topic)
}

// A controller and a broker that were down while the metadata log grew
// come back behind the leader's log start: the others snapshotted and
// dropped what they had (metadata.log.max.record.bytes.between.snapshots,
// 300 bytes here). Each is sent the leader's snapshot id, fetches the
// snapshot (FetchSnapshot), installs it and fetches on; both end with the
// whole metadata — every registration and topic — applied as the active
// controller has it, and the broker is back in the ISRs.
func TestAControllerAndABrokerBehindTheLogStartCatchUpFromASnapshot(t *testing.T) {
	cfg := config.Default()
	cfg.MetadataLogMaxRecordBytesBetweenSnapshots = 300
	q := newQuorumClusterWith(t, 12, cfg)
	q.createTopic(t, "orders", 3)
	ctlName := ""
	for _, n := range q.ctls {
		if n != q.activeName() {
			ctlName = n
			break
		}
	}
	ctl := func() *controller.Controller { c, _ := q.w.Node(ctlName).Process().(*controller.Controller); return c }
	brk := func() *broker.Broker { b, _ := q.w.Node(q.brokers[2]).Process().(*broker.Broker); return b }
	ctlEnd, brkEnd := ctl().Applied().End(), brk().MetadataApplied().End()
	q.w.Node(ctlName).Crash()
	q.w.Node(q.brokers[2]).Crash()
	for i := range 6 {
		q.createTopic(t, fmt.Sprintf("more-%d", i), 3)
	}
	require.Greater(t, q.active().LogStart(), max(ctlEnd, brkEnd), "the active controller's log starts past what the two hold")

	q.w.Node(ctlName).Start()
	q.w.Node(q.brokers[2]).Start()
	caughtUp := func() bool {
		a, c, b := q.active(), ctl(), brk()
		if a == nil || c == nil || b == nil {
			return false
		}
		if b.Image() == nil {
			return false
		}
		_, published := b.Image().Partition(metadata.TopicPartition{Topic: "more-5", Partition: 0})
		return c.Applied().End() == a.Applied().End() && b.MetadataApplied().End() == a.Applied().End() && published
	}
	ok, err := q.w.RunWhile(func() bool { return !caughtUp() }, 60*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "both caught up with the active controller, the broker publishing again")
	require.Positive(t, ctl().LogStart(), "the controller started its log at a snapshot")
	require.Positive(t, brk().MetadataLogStart(), "the broker started its log at a snapshot")
	last, _ := q.active().Applied().At(q.active().Applied().End() - 1)
	for _, chain := range []interface{ At(int64) (uint64, bool) }{ctl().Applied(), brk().MetadataApplied()} {
		d, ok := chain.At(q.active().Applied().End() - 1)
		require.True(t, ok)
		require.Equal(t, last, d, "the same metadata, entry for entry")
	}
	for i := range 6 {
		_, ok := ctl().Partition(metadata.TopicPartition{Topic: fmt.Sprintf("more-%d", i), Partition: 0})
		require.True(t, ok, "the controller has topic more-%d", i)
		_, ok = brk().Image().Partition(metadata.TopicPartition{Topic: fmt.Sprintf("more-%d", i), Partition: 0})
		require.True(t, ok, "the broker has topic more-%d", i)
	}
	tp := metadata.TopicPartition{Topic: "more-5", Partition: 0}
	ok, err = q.w.RunWhile(func() bool { p, _ := q.active().Partition(tp); return !p.InISR(2) }, 60*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the broker follows again: back in the ISR of %v", tp)
}

// What losing a majority of the controllers does: nothing. Two of three
// crash; the one left cannot be elected (no majority votes for it), so no
// controller is active, no broker is fenced and no leader elected — a
// partition whose leader then crashes stays leaderless, and writes to it
// fail. Nothing is lost: when the two come back (their logs were fsynced),
// a controller is elected, fences the crashed broker, moves its
// leadership, and every write acknowledged before is still there.
func TestAMajorityOfControllersDownElectsNothingAndLosesNothing(t *testing.T) {
	q := newQuorumCluster(t, 13)
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	q.createTopic(t, tp.Topic, 1)
	ok, err := q.w.RunWhile(func() bool { p, _ := q.active().Partition(tp); return len(p.ISR) < 3 }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "orders/0 has a full ISR")
	p, _ := q.active().Partition(tp)
	leader := q.brokers[p.Leader]
	ok, err = q.w.RunWhile(func() bool { return !q.w.Node(leader).Process().(*broker.Broker).Leads(tp) }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "%s leads %v", leader, tp)
	produce := func(to string, v string) int16 { return q.produce(t, to, tp, v) }
	for i := range 3 {
		require.Zero(t, produce(leader, fmt.Sprint("before-", i)))
	}

	var down []string
	for _, n := range q.ctls {
		if len(down) < 2 {
			q.w.Node(n).Crash()
			down = append(down, n)
		}
	}
	q.w.Node(leader).Crash()
	require.NoError(t, q.w.RunFor(20*time.Second))
	require.Nil(t, q.active(), "a lone controller of three is never active")
	for _, n := range q.brokers {
		if n == leader {
			continue
		}
		b := q.w.Node(n).Process().(*broker.Broker)
		require.False(t, b.Leads(tp), "%s was not elected: no controller decides", n)
		require.NotZero(t, produce(n, "while-down"), "%s does not lead %v: the write fails", n, tp)
	}

	for _, n := range down {
		q.w.Node(n).Start()
	}
	var next int32 = -1
	ok, err = q.w.RunWhile(func() bool {
		a := q.active()
		if a == nil {
			return true
		}
		p, _ := a.Partition(tp)
		next = p.Leader
		return next < 0 || q.brokers[next] == leader || !q.w.Node(q.brokers[next]).Process().(*broker.Broker).Leads(tp)
	}, 60*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "with the majority back, a controller is active and elects a new leader")
	require.Zero(t, produce(q.brokers[next], "after"))
	st, _ := q.w.Node(q.brokers[next]).Process().(*broker.Broker).Partition(tp)
	require.Equal(t, int64(4), st.HighWatermark, "the three writes acknowledged before and the one after, nothing lost")
}

// A leader's ISR expansion that reaches the controller it knew as active,
// just restarted and no longer active, is answered NOT_CONTROLLER, and the
// leader sends it again, to the controller the quorum names, as Kafka's
// NodeToControllerRequestThread requeues a request answered NOT_CONTROLLER
// for the new controller. Taken for a refusal, the proposal stayed pending
// for good: the follower never rejoined the ISR, and with
// min.insync.replicas 2 a second failure stopped every write to the
// partition (the property test of eos-consume-transform-produce on three
// controllers: rebalances forever, as the group coordinator could store no
// assignment).
func TestAnISRExpansionAnsweredNotControllerGoesToTheNewController(t *testing.T) {
	cfg := config.Default()
	cfg.ReplicaLagTimeMax = 2 * time.Second
	q := newQuorumClusterWith(t, 21, cfg)
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	q.createTopic(t, tp.Topic, 1)
	require.NoError(t, q.w.RunFor(2*time.Second))
	p, ok := q.active().Partition(tp)
	require.True(t, ok)
	leader := p.Leader
	follower := p.Replicas[0]
	if follower == leader {
		follower = p.Replicas[1]
	}
	q.w.Node(q.brokers[follower]).Pause()
	ok, err := q.w.RunWhile(func() bool {
		p, _ := q.active().Partition(tp)
		return slices.Contains(p.ISR, follower)
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the paused follower leaves the ISR")

	// The follower fetches again the instant the active controller
	// restarts: the leader proposes it back to the controller it knows.
	old := q.activeName()
	q.w.Node(old).Crash()
	q.w.Node(old).Start()
	q.w.Node(q.brokers[follower]).Resume()
	ok, err = q.w.RunWhile(func() bool {
		c := q.active()
		if c == nil {
			return true
		}
		p, _ := c.Partition(tp)
		return !slices.Contains(p.ISR, follower)
	}, 20*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the follower is back in the ISR")
	p, _ = q.active().Partition(tp)
	require.Equal(t, leader, p.Leader, "under the same leader: its proposal went again")
}
