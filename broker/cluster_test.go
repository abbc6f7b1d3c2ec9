package broker_test

import (
	"fmt"
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

// driver is a bare client process: tests speak raw Kafka requests through
// it.
type driver struct {
	*rpc.Router
	e env.Env
}

func (d *driver) Start(e env.Env) { d.e = e; d.Router = rpc.NewRouter(e, nil) }

type cluster struct {
	t       *testing.T
	w       *sim.World
	cfg     config.Cluster
	brokers []string
	d       *driver
	clients map[string]*rpc.Client
}

func newCluster(t *testing.T, seed uint64, brokers int, cfg config.Cluster) *cluster {
	w := sim.New(sim.Options{Seed: seed})
	c := &cluster{t: t, w: w, cfg: cfg, clients: map[string]*rpc.Client{}}
	w.AddNode("controller", func() env.Process { return controller.New(cfg) }).Start()
	for i := range brokers {
		name := fmt.Sprintf("broker-%d", i)
		c.brokers = append(c.brokers, name)
		startBroker(w, name, int32(i), map[int32]string{controller.ID: "controller"}, cfg)
	}
	w.AddNode("client", func() env.Process { return &driver{} }).Start()
	require.NoError(t, w.RunFor(3*time.Second))
	c.d = w.Node("client").Process().(*driver)
	return c
}

// The test clusters' brokers reach each other on an inter-broker listener of
// their own, as the scenarios' do: a client connection (the driver's, at the
// node's name) cannot replicate or write transaction markers.
const (
	interBrokerListener = "INTERNAL"
	interBrokerPort     = 9094
)

// startBroker adds and boots broker id on node name, with its inter-broker
// listener.
func startBroker(w *sim.World, name string, id int32, controllers map[int32]string, cfg config.Cluster) {
	n := w.AddNode(name, func() env.Process {
		return broker.New(broker.Options{ID: id, Controllers: controllers, ClusterID: "sim", Cluster: cfg, InterBrokerListener: interBrokerListener})
	})
	n.Listen(interBrokerListener, interBrokerPort)
	n.Start()
}

func (c *cluster) broker(i int) *broker.Broker {
	p, _ := c.w.Node(c.brokers[i]).Process().(*broker.Broker)
	return p
}

// call sends req to addr and runs the world until the answer.
func (c *cluster) call(addr string, req kmsg.Request) (kmsg.Response, error) {
	var resp kmsg.Response
	var err error
	done := false
	c.w.Node("client").Exec(func() {
		cl := c.clients[addr]
		if cl == nil {
			cl = rpc.NewClient(c.d.Router, addr, rpc.ClientOptions{ClientID: "test"})
			c.clients[addr] = cl
		}
		cl.Do(req, 10*time.Second, func(r kmsg.Response, e error) { resp, err, done = r, e, true })
	})
	ok, werr := c.w.RunWhile(func() bool { return !done }, 20*time.Second)
	require.NoError(c.t, werr)
	require.True(c.t, ok, "no answer to %s", kmsg.NameForKey(req.Key()))
	return resp, err
}

func (c *cluster) createTopic(name string, partitions int32, rf int16) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[0], req)
	require.NoError(c.t, err)
	require.Zero(c.t, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	require.NoError(c.t, c.w.RunFor(time.Second))
}

// leaderOf returns the broker the controller made leader of tp, once that
// broker has taken over, or -1. (A deposed leader cut off from the
// controller may still think it leads: it does not count.)
func (c *cluster) leaderOf(tp metadata.TopicPartition) int {
	ctl, ok := c.w.Node("controller").Process().(*controller.Controller)
	if !ok {
		return -1
	}
	ps, ok := ctl.Image().Partition(tp)
	if !ok || ps.Leader < 0 {
		return -1
	}
	b := c.broker(int(ps.Leader))
	if b == nil || !b.Leads(tp) {
		return -1
	}
	if s, _ := b.Partition(tp); s.LeaderEpoch != ps.LeaderEpoch {
		return -1
	}
	return int(ps.Leader)
}

func (c *cluster) produce(broker int, tp metadata.TopicPartition, acks int16, values ...string) *kmsg.ProduceResponseTopicPartition {
	var vs [][]byte
	for _, v := range values {
		vs = append(vs, []byte(v))
	}
	return c.produceBatch(broker, tp, acks, record.Values(c.w.Now().UnixMilli(), vs...))
}

// produceBatch sends one batch, as it is, to a partition.
func (c *cluster) produceBatch(broker int, tp metadata.TopicPartition, acks int16, batch []byte) *kmsg.ProduceResponseTopicPartition {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = tp.Partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	return &resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// topicID is the topic's id in the controller's image (zero if none).
func (c *cluster) topicID(topic string) [16]byte {
	if t := c.controllerImage().Topics[topic]; t != nil {
		return t.ID
	}
	return [16]byte{}
}

func (c *cluster) fetch(broker int, tp metadata.TopicPartition, offset int64) ([]string, *kmsg.FetchResponseTopicPartition) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = tp.Topic, c.topicID(tp.Topic) // by id from v13
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.call(c.brokers[broker], req)
	require.NoError(c.t, err)
	pr := &resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	batches, err := record.Split(pr.RecordBatches)
	require.NoError(c.t, err)
	var out []string
	for _, b := range batches {
		recs, err := b.DecodeRecords()
		require.NoError(c.t, err)
		for _, r := range recs {
			out = append(out, string(r.Value))
		}
	}
	return out, pr
}

func TestProduceThenConsumeOnThreeBrokers(t *testing.T) {
	c := newCluster(t, 1, 3, config.Default())
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(tp)
	require.GreaterOrEqual(t, leader, 0, "no leader elected")
	pr := c.produce(leader, tp, -1, "a", "b", "c")
	require.Zero(t, pr.ErrorCode)
	require.Equal(t, int64(0), pr.BaseOffset)
	pr = c.produce(leader, tp, -1, "d")
	require.Zero(t, pr.ErrorCode)
	require.Equal(t, int64(3), pr.BaseOffset)
	values, fr := c.fetch(leader, tp, 0)
	require.Zero(t, fr.ErrorCode)
	require.Equal(t, []string{"a", "b", "c", "d"}, values)
	require.Equal(t, int64(4), fr.HighWatermark)
	require.NoError(t, c.w.RunFor(time.Second))
	for i := range 3 {
		s, ok := c.broker(i).Partition(tp)
		require.True(t, ok)
		require.Equal(t, int64(4), s.LogEndOffset, "broker %d", i)
	}
}
