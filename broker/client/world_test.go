package client_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// app is a client application process: it owns a router and lets tests
// build clients on its loop.
type app struct {
	*rpc.Router
	e env.Env
}

func (a *app) Start(e env.Env) { a.e = e; a.Router = rpc.NewRouter(e, nil) }

// world is a controller, three brokers and client application nodes.
type world struct {
	t       testing.TB
	w       *sim.World
	brokers []string
	admin   map[string]*rpc.Client
}

func newWorld(t testing.TB, seed uint64, cfg config.Cluster, clients ...string) *world {
	t.Helper()
	if len(clients) == 0 {
		clients = []string{"client"}
	}
	o := sim.Options{Seed: seed}
	if path := os.Getenv("KAFKASIM_CLIENT_TRACE"); path != "" {
		f, err := os.Create(path)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		o.TraceJSON = f
	}
	w := &world{t: t, w: sim.New(o), admin: map[string]*rpc.Client{}}
	w.w.AddNode("controller", func() env.Process { return controller.New(cfg) }).Start()
	for i := range 3 {
		name := fmt.Sprintf("broker-%d", i)
		w.brokers = append(w.brokers, name)
		w.w.AddNode(name, func() env.Process {
			return broker.New(broker.Options{ID: int32(i), Controllers: map[int32]string{controller.ID: "controller"}, ClusterID: "sim", Cluster: cfg})
		}).Start()
	}
	w.w.AddNode("admin", func() env.Process { return &app{} }).Start()
	for _, c := range clients {
		w.w.AddNode(c, func() env.Process { return &app{} }).Start()
	}
	require.NoError(t, w.w.RunFor(3*time.Second))
	return w
}

func (w *world) app(node string) *app { return w.w.Node(node).Process().(*app) }

// exec runs f on a client node's loop, now.
func (w *world) exec(node string, f func(a *app)) {
	a := w.app(node)
	w.w.Node(node).Exec(func() { f(a) })
	w.run(0)
}

func (w *world) run(d time.Duration) {
	w.t.Helper()
	require.NoError(w.t, w.w.RunFor(d))
}

// runUntil runs the world until cond holds, failing the test if budget
// (simulated time) runs out first.
func (w *world) runUntil(cond func() bool, budget time.Duration, what string) {
	w.t.Helper()
	ok, err := w.w.RunWhile(func() bool { return !cond() }, budget)
	require.NoError(w.t, err)
	require.True(w.t, ok, "not within %v: %s", budget, what)
}

// call sends a raw request from the admin node and runs until the answer.
func (w *world) call(addr string, req kmsg.Request) kmsg.Response {
	w.t.Helper()
	var resp kmsg.Response
	var err error
	done := false
	a := w.app("admin")
	w.w.Node("admin").Exec(func() {
		cl := w.admin[addr]
		if cl == nil {
			cl = rpc.NewClient(a.Router, addr, rpc.ClientOptions{ClientID: "admin"})
			w.admin[addr] = cl
		}
		cl.Do(req, 10*time.Second, func(r kmsg.Response, e error) { resp, err, done = r, e, true })
	})
	w.runUntil(func() bool { return done }, 20*time.Second, "answer to "+kmsg.NameForKey(req.Key()))
	require.NoError(w.t, err)
	return resp
}

func (w *world) createTopic(name string, partitions int32, rf int16) {
	w.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp := w.call(w.brokers[0], req).(*kmsg.CreateTopicsResponse)
	require.Zero(w.t, resp.Topics[0].ErrorCode)
	for p := range partitions {
		tp := client.TopicPartition{Topic: name, Partition: p}
		w.runUntil(func() bool { return w.leaderOf(tp) != "" }, 10*time.Second, "a leader for "+tp.String())
	}
	w.run(time.Second)
}

func (w *world) broker(name string) *broker.Broker {
	b, _ := w.w.Node(name).Process().(*broker.Broker)
	return b
}

// leaderOf names the broker leading tp, or "".
func (w *world) leaderOf(tp client.TopicPartition) string {
	for _, name := range w.brokers {
		if b := w.broker(name); b != nil && b.Leads(tp) {
			return name
		}
	}
	return ""
}

// logEnd is the log end offset of the leader's replica of tp.
func (w *world) logEnd(tp client.TopicPartition) int64 {
	b := w.broker(w.leaderOf(tp))
	if b == nil {
		return -1
	}
	s, _ := b.Partition(tp)
	return s.LogEndOffset
}

// logValues reads tp's committed log from its leader with raw fetches,
// independently of the consumer under test.
func (w *world) logValues(tp client.TopicPartition) []string {
	w.t.Helper()
	leader := w.leaderOf(tp)
	require.NotEmpty(w.t, leader, "no leader for %v", tp)
	var out []string
	offset := int64(0)
	for {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = tp.Topic, w.broker(leader).Image().Topics[tp.Topic].ID // by id from v13
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		pr := w.call(leader, req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Zero(w.t, pr.ErrorCode)
		batches, err := record.Split(pr.RecordBatches)
		require.NoError(w.t, err)
		for _, b := range batches {
			recs, err := b.DecodeRecords()
			require.NoError(w.t, err)
			for _, r := range recs {
				if off := b.BaseOffset() + int64(r.OffsetDelta); off >= offset {
					out = append(out, string(r.Value))
				}
			}
			offset = b.NextOffset()
		}
		if offset >= pr.HighWatermark || len(batches) == 0 {
			return out
		}
	}
}

// producerOptions are the knobs the stories start from: Kafka's defaults
// with timeouts scaled to a simulated run.
func producerOptions() client.ProducerOptions {
	o := client.DefaultProducerOptions("broker-0", "broker-1", "broker-2")
	o.ClientID = "producer"
	o.RequestTimeout = 2 * time.Second
	o.DeliveryTimeout = 30 * time.Second
	o.SocketConnectionSetupTimeout = time.Second
	return o
}

func consumerOptions(group string) client.ConsumerOptions {
	o := client.DefaultConsumerOptions("broker-0", "broker-1", "broker-2")
	o.ClientID = "consumer"
	o.GroupID = group
	o.EnableAutoCommit = false
	o.AutoOffsetReset = client.OffsetResetEarliest
	o.RequestTimeout = 2 * time.Second
	o.FetchMaxWait = 100 * time.Millisecond
	o.SocketConnectionSetupTimeout = time.Second
	return o
}

func (w *world) newProducer(node string, opts client.ProducerOptions) *client.Producer {
	w.t.Helper()
	var p *client.Producer
	var err error
	w.exec(node, func(a *app) { p, err = client.NewProducer(a.e, a.Router, opts) })
	require.NoError(w.t, err)
	return p
}

func (w *world) newConsumer(node string, opts client.ConsumerOptions) *client.Consumer {
	w.t.Helper()
	var c *client.Consumer
	var err error
	w.exec(node, func(a *app) { c, err = client.NewConsumer(a.e, a.Router, opts) })
	require.NoError(w.t, err)
	return c
}

// sends tracks the results of many Sends.
type sends struct {
	results map[string]client.SendResult
	order   []string
}

func newSends() *sends { return &sends{results: map[string]client.SendResult{}} }

// send queues one record with value v from the producer's node.
func (s *sends) send(p *client.Producer, rec client.Record) {
	v := string(rec.Value)
	s.order = append(s.order, v)
	p.Send(rec, func(r client.SendResult) {
		if _, dup := s.results[v]; dup {
			panic("two results for " + v)
		}
		s.results[v] = r
	})
}

func (s *sends) done() bool { return len(s.results) == len(s.order) }

// sendAndWait sends records from node and runs until every one has its
// result.
func (w *world) sendAndWait(node string, p *client.Producer, recs ...client.Record) *sends {
	w.t.Helper()
	s := newSends()
	w.exec(node, func(*app) {
		for _, r := range recs {
			s.send(p, r)
		}
	})
	w.runUntil(s.done, time.Minute, "send results")
	return s
}

// pollUntil polls from node until n records have come (or budget runs
// out) and returns them.
func (w *world) pollUntil(node string, c *client.Consumer, n int, budget time.Duration) []client.Record {
	w.t.Helper()
	var got []client.Record
	var pollErr error
	pending := false
	deadline := w.w.Now().Add(budget)
	for len(got) < n && pollErr == nil && w.w.Now() < deadline {
		pending = true
		w.exec(node, func(*app) {
			c.Poll(0, 200*time.Millisecond, func(recs []client.Record, err error) {
				got = append(got, recs...)
				pollErr = err
				pending = false
			})
		})
		w.runUntil(func() bool { return !pending }, budget, "a poll")
	}
	require.NoError(w.t, pollErr)
	return got
}

func value(i int) []byte { return []byte(fmt.Sprintf("v%04d", i)) }
