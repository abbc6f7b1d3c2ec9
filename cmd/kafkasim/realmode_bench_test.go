package main

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The same produce→consume workload, on the same broker code, in
// simulation and in real mode (three brokers and a controller in this
// process via host.Start on loopback, real files, the wall clock).
// BenchmarkProduceConsumeRealVsSim reports the wall time of each and their
// ratio (real/sim): what the simulator saves on a fault-free run, before
// it also compresses timeouts and waits.
//
//	go test -run '^$' -bench RealVsSim -benchtime 3x ./cmd/kafkasim

// benchWorkload is the workload: an env.Process that creates nothing,
// finds the leader of benchTopic/0, produces Records records in batches of
// BatchRecords with acks=all and at most Inflight requests outstanding,
// then fetches from offset 0 until it has read them all back.
type benchWorkload struct {
	Records, BatchRecords, Inflight int
	Seeds                           []string // broker addresses to ask for metadata

	e        env.Env
	rt       *rpc.Router
	leader   *rpc.Client
	sent     int // records handed to produce requests
	acked    int
	inflight int
	read     int
	err      error
	over     bool
	done     chan struct{} // closed when every record was read back, or on error
}

const benchTopic = "bench"

func (w *benchWorkload) Start(e env.Env) { w.e = e; w.rt = rpc.NewRouter(e, nil) }
func (w *benchWorkload) Connected(c env.ConnID, peer string, inbound bool) {
	w.rt.Connected(c, peer, inbound)
}
func (w *benchWorkload) Received(c env.ConnID, f []byte) { w.rt.Received(c, f) }
func (w *benchWorkload) Closed(c env.ConnID)             { w.rt.Closed(c) }

// run starts the workload; it must be called on the process's loop.
func (w *benchWorkload) run() {
	cl := rpc.NewClient(w.rt, w.Seeds[0], rpc.ClientOptions{ClientID: "bench"})
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(benchTopic)
	req.Topics = append(req.Topics, rt)
	cl.Do(req, 10*time.Second, func(r kmsg.Response, err error) {
		if err != nil {
			w.fail(err)
			return
		}
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 || resp.Topics[0].Partitions[0].Leader < 0 {
			w.fail(fmt.Errorf("no leader for %s/0", benchTopic))
			return
		}
		id := resp.Topics[0].Partitions[0].Leader
		for _, b := range resp.Brokers {
			if b.NodeID == id {
				w.leader = rpc.NewClient(w.rt, metadata.JoinAddr(b.Host, b.Port), rpc.ClientOptions{ClientID: "bench"})
			}
		}
		if w.leader == nil {
			w.fail(fmt.Errorf("leader %d not among the brokers", id))
			return
		}
		w.produce()
	})
}

func (w *benchWorkload) fail(err error) {
	if !w.over {
		w.err, w.over = err, true
		close(w.done)
	}
}

func (w *benchWorkload) produce() {
	for w.err == nil && w.inflight < w.Inflight && w.sent < w.Records {
		n := min(w.BatchRecords, w.Records-w.sent)
		values := make([][]byte, n)
		for i := range values {
			values[i] = fmt.Appendf(nil, "record-%06d", w.sent+i)
		}
		w.sent += n
		w.inflight++
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = benchTopic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = record.Values(w.e.Now().UnixMilli(), values...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		w.leader.Do(req, 30*time.Second, func(r kmsg.Response, err error) {
			w.inflight--
			if err == nil {
				if code := r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
					err = fmt.Errorf("produce: error code %d", code)
				}
			}
			if err != nil {
				w.fail(err)
				return
			}
			w.acked += n
			if w.acked == w.Records {
				w.fetch()
				return
			}
			w.produce()
		})
	}
}

func (w *benchWorkload) fetch() {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = benchTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = int64(w.read), 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	w.leader.Do(req, 10*time.Second, func(r kmsg.Response, err error) {
		if err != nil {
			w.fail(err)
			return
		}
		pr := r.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if pr.ErrorCode != 0 {
			w.fail(fmt.Errorf("fetch: error code %d", pr.ErrorCode))
			return
		}
		batches, err := record.Split(pr.RecordBatches)
		if err != nil {
			w.fail(err)
			return
		}
		for _, b := range batches {
			recs, err := b.DecodeRecords()
			if err != nil {
				w.fail(err)
				return
			}
			for i, rec := range recs {
				if off := b.BaseOffset() + int64(i); off == int64(w.read) {
					if want := fmt.Sprintf("record-%06d", w.read); string(rec.Value) != want {
						w.fail(fmt.Errorf("offset %d holds %q, want %q", off, rec.Value, want))
						return
					}
					w.read++
				}
			}
		}
		if w.read == w.Records {
			w.over = true
			close(w.done)
			return
		}
		w.fetch()
	})
}

func newBenchWorkload(seeds ...string) *benchWorkload {
	return &benchWorkload{Records: 10_000, BatchRecords: 100, Inflight: 5, Seeds: seeds, done: make(chan struct{})}
}

// benchCluster is config.Default with three replicas and acks=all needing
// two: the standard durable configuration.
func benchCluster() config.Cluster {
	cfg := config.Default()
	cfg.MinInsyncReplicas = 2
	return cfg
}

// createBenchTopic creates benchTopic with replication factor 3 from
// inside the client process and calls done once the call returns.
func createBenchTopic(rt *rpc.Router, addr string, done func(error)) {
	cl := rpc.NewClient(rt, addr, rpc.ClientOptions{ClientID: "bench-setup"})
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = benchTopic, 1, 3
	req.Topics = append(req.Topics, t)
	cl.Do(req, 10*time.Second, func(r kmsg.Response, err error) {
		if err == nil {
			if code := r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
				err = fmt.Errorf("CreateTopics: error code %d", code)
			}
		}
		done(err)
	})
}

// simRun runs the workload once in a fresh simulated world; it returns the
// wall time of the workload and the simulated time it took.
func simRun(b *testing.B) (wall, simulated time.Duration) {
	cfg := benchCluster()
	w := sim.New(sim.Options{Seed: 1})
	w.AddNode("controller", func() env.Process { return controller.New(cfg) }).Start()
	for i := range 3 {
		w.AddNode(fmt.Sprintf("broker-%d", i), func() env.Process {
			return broker.New(broker.Options{ID: int32(i), Controllers: map[int32]string{controller.ID: "controller"}, ClusterID: "bench", Cluster: cfg})
		}).Start()
	}
	wl := newBenchWorkload("broker-0")
	w.AddNode("client", func() env.Process { return wl }).Start()
	if err := w.RunFor(3 * time.Second); err != nil {
		b.Fatal(err)
	}
	var created error
	done := false
	w.Node("client").Exec(func() { createBenchTopic(wl.rt, "broker-0", func(err error) { created, done = err, true }) })
	if ok, err := w.RunWhile(func() bool { return !done }, time.Minute); err != nil || !ok || created != nil {
		b.Fatalf("create topic: %v %v", err, created)
	}
	if err := w.RunFor(2 * time.Second); err != nil { // leaders elected, followers fetching
		b.Fatal(err)
	}
	start, simStart := time.Now(), w.Elapsed()
	w.Node("client").Exec(wl.run)
	finished := func() bool {
		select {
		case <-wl.done:
			return true
		default:
			return false
		}
	}
	ok, err := w.RunWhile(func() bool { return !finished() }, 10*time.Minute)
	wall = time.Since(start)
	if err != nil || !ok || wl.err != nil {
		b.Fatalf("simulated workload: ok %v, world %v, workload %v", ok, err, wl.err)
	}
	return wall, w.Elapsed() - simStart
}

// inProcessCluster is a controller and brokers 0..n-1 started with
// host.Start on loopback in this process, stopped when the test ends.
type inProcessCluster struct {
	controller *host.Node
	brokers    []*host.Node
}

func startInProcessCluster(tb testing.TB, n int, cfg config.Cluster) *inProcessCluster {
	tb.Helper()
	c := &inProcessCluster{controller: startNode(tb, func() env.Process { return controller.New(cfg) })}
	for i := range n {
		c.brokers = append(c.brokers, startNode(tb, func() env.Process {
			return broker.New(broker.Options{ID: int32(i), Controllers: map[int32]string{controller.ID: c.controller.Addr()}, ClusterID: "in-process", Cluster: cfg})
		}))
	}
	return c
}

func (c *inProcessCluster) stop() {
	for _, n := range append([]*host.Node{c.controller}, c.brokers...) {
		n.Stop()
	}
}

// startNode starts a process on a free loopback port with a fresh data
// directory.
func startNode(tb testing.TB, factory func() env.Process) *host.Node {
	tb.Helper()
	n, err := host.Start(host.Options{Listen: "127.0.0.1:0", DataDir: tb.TempDir(), Log: io.Discard}, factory)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(n.Stop)
	return n
}

// realRun runs the workload once on a fresh real-mode cluster in this
// process and returns its wall time.
func realRun(b *testing.B) time.Duration {
	c := startInProcessCluster(b, 3, benchCluster())
	defer c.stop()
	wl := newBenchWorkload(c.brokers[0].Addr())
	client := startNode(b, func() env.Process { return wl })
	defer client.Stop()
	// Topic creation fails until the brokers have registered: retry.
	deadline := time.Now().Add(30 * time.Second)
	for {
		created := make(chan error, 1)
		if err := client.Do(func() { createBenchTopic(wl.rt, c.brokers[0].Addr(), func(err error) { created <- err }) }); err != nil {
			b.Fatal(err)
		}
		err := <-created
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("create topic: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // leaders elected, followers fetching, as in the simulation
	t0 := time.Now()
	if err := client.Do(wl.run); err != nil {
		b.Fatal(err)
	}
	select {
	case <-wl.done:
	case <-time.After(2 * time.Minute):
		b.Fatal("real-mode workload not done in 2 minutes")
	}
	wall := time.Since(t0)
	var werr error
	_ = client.Do(func() { werr = wl.err })
	if werr != nil {
		b.Fatalf("real-mode workload: %v", werr)
	}
	return wall
}

// BenchmarkProduceConsumeRealVsSim: 10,000 records, batches of 100, at most
// 5 requests in flight, acks=all, replication factor 3, min.insync.replicas
// 2, then read back; once per iteration in each mode.
func BenchmarkProduceConsumeRealVsSim(b *testing.B) {
	var realWall, simWall, simulated time.Duration
	for range b.N {
		w, s := simRun(b)
		simWall += w
		simulated += s
		realWall += realRun(b)
	}
	n := float64(b.N)
	b.ReportMetric(float64(realWall.Milliseconds())/n, "real-ms/op")
	b.ReportMetric(float64(simWall.Milliseconds())/n, "sim-ms/op")
	b.ReportMetric(float64(simulated.Milliseconds())/n, "simulated-ms/op")
	b.ReportMetric(float64(realWall)/float64(simWall), "real/sim")
	b.ReportMetric(float64(simulated)/float64(simWall), "sim-speedup")
}
