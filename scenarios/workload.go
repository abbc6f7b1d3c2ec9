package scenarios

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/sink"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/sim"
)

// workload is the outside world of a run: the messages each producer
// application has to send (and how far it got — a restarted application
// carries on from there, as one reading a durable source would), what the
// consumers processed, and the recorder every application reports to.
type workload struct {
	c   *cluster
	s   Scenario
	rec *history.Recorder

	inputs  [][]history.Message // per producer
	cursor  []int               // per producer: the next message to send
	pending []int               // per producer: sends not yet resolved, this incarnation
	incarn  map[string]int      // per node: how many times its application started
	// producersMade counts, per processor, the transactional producers it
	// made (for a fresh transactional.id per producer).
	producersMade map[int]int

	// processed is, per input partition, the next offset some consumer has
	// finished with (processed and, per its pattern, committed).
	processed map[int32]int64
	// inTxn marks the processors (consume-transform-produce) with a
	// transaction begun and not yet settled: the drain waits for them, or
	// stopping the applications would leave that transaction hanging.
	inTxn   map[int]bool
	stopped bool
	// acknowledged is, per input partition, the offset after the last
	// record a producer was told was written: what every later leader must
	// hold (with acks=all).
	acknowledged map[metadata.TopicPartition]int64
}

func newWorkload(c *cluster, rec *history.Recorder) *workload {
	s := c.s
	wl := &workload{c: c, s: s, rec: rec, incarn: map[string]int{}, processed: map[int32]int64{}, producersMade: map[int]int{}, inTxn: map[int]bool{},
		acknowledged: map[metadata.TopicPartition]int64{}}
	w := s.Workload
	for p := range w.Producers {
		var msgs []history.Message
		for i := p; i < w.Messages; i += w.Producers {
			msgs = append(msgs, history.Message{Key: fmt.Sprintf("k%d", i%8), Value: fmt.Sprintf("v%d", i)})
		}
		wl.inputs = append(wl.inputs, msgs)
		wl.cursor = append(wl.cursor, 0)
		wl.pending = append(wl.pending, 0)
	}
	for i := range w.Producers {
		c.clients = append(c.clients, producerNode(i))
	}
	switch w.Kind {
	case ConsumeProcessSink:
		c.hasSink = true
		for i := range w.Consumers {
			c.clients = append(c.clients, consumerNode(i))
		}
	case ConsumeTransformProduce:
		for i := range w.Consumers {
			c.clients = append(c.clients, processorNode(i))
		}
	}
	return wl
}

func (wl *workload) topics() []string {
	if wl.s.Workload.Kind == ConsumeTransformProduce {
		return []string{inputTopic, outputTopic}
	}
	return []string{inputTopic}
}

// isolation is the isolation.level of the consumers downstream.
func (wl *workload) isolation() client.IsolationLevel {
	if wl.s.Consumer.IsolationLevel == "read_committed" {
		return client.ReadCommitted
	}
	return client.ReadUncommitted
}

// now is the history's clock: simulated time since the world began.
func (wl *workload) now() int64 { return int64(wl.c.w.Elapsed()) }

// addNodes adds the applications (and the sink) to the world, not yet
// started, so a fault schedule can name them.
func (wl *workload) addNodes() {
	w := wl.c.w
	if wl.c.hasSink {
		w.AddNode(sinkNode, func() env.Process { return sink.NewServer(sink.DefaultServerOptions) })
	}
	for i := range wl.s.Workload.Producers {
		w.AddNode(producerNode(i), func() env.Process { return &producerApp{wl: wl, index: i} })
	}
	if wl.readerTopic() != "" {
		w.AddNode(readerNode, func() env.Process { return &readerApp{wl: wl} })
	}
	switch wl.s.Workload.Kind {
	case ConsumeProcessSink:
		for i := range wl.s.Workload.Consumers {
			w.AddNode(consumerNode(i), func() env.Process { return &consumerApp{wl: wl, index: i} })
		}
	case ConsumeTransformProduce:
		for i := range wl.s.Workload.Consumers {
			w.AddNode(processorNode(i), func() env.Process { return &processorApp{wl: wl, index: i} })
		}
	}
}

// start boots the sink and the applications.
func (wl *workload) start() {
	if wl.c.hasSink {
		wl.c.w.Node(sinkNode).Start()
	}
	for _, n := range wl.c.clients {
		wl.c.w.Node(n).Start()
	}
	if wl.readerTopic() != "" {
		wl.c.w.Node(readerNode).Start()
	}
}

// stop ends the applications before the final reads.
func (wl *workload) stop() {
	wl.stopped = true
	for _, n := range wl.c.clients {
		wl.c.w.Node(n).Crash()
	}
	if wl.readerTopic() != "" {
		wl.c.w.Node(readerNode).Crash()
	}
}

func (wl *workload) process(node string) string {
	wl.incarn[node]++
	return fmt.Sprintf("%s#%d", node, wl.incarn[node])
}

// produced reports whether every producer sent everything and heard back.
func (wl *workload) produced() bool {
	for p := range wl.inputs {
		if wl.cursor[p] < len(wl.inputs[p]) || wl.pending[p] > 0 {
			return false
		}
	}
	return true
}

// drained reports whether the system has finished: everything sent, and
// in a pipeline, every input partition processed to its end.
func (wl *workload) drained() bool {
	if !wl.produced() {
		return false
	}
	if wl.s.Workload.Kind == ProduceOnly {
		return true
	}
	for p := range wl.s.Cluster.Partitions {
		tp := metadata.TopicPartition{Topic: inputTopic, Partition: int32(p)}
		end, ok := wl.c.highWatermark(tp)
		// A new leader's high watermark lags until its followers fetch:
		// what producers were told was written must be processed too.
		if !ok || wl.processed[int32(p)] < max(end, wl.acknowledged[tp]) {
			return false
		}
	}
	for _, busy := range wl.inTxn {
		if busy {
			return false
		}
	}
	if wl.s.Workload.Kind == ConsumeTransformProduce {
		// Every transaction on the output decided: a final read_committed
		// read can see all of it.
		for p := range wl.s.Cluster.Partitions {
			s, ok := wl.c.leaderState(metadata.TopicPartition{Topic: outputTopic, Partition: int32(p)})
			if !ok || s.LastStableOffset < s.HighWatermark {
				return false
			}
		}
	}
	return true
}

// highWatermark is the leader's high watermark of tp, as the cluster knows
// it now.
func (c *cluster) highWatermark(tp metadata.TopicPartition) (int64, bool) {
	s, ok := c.leaderState(tp)
	return s.HighWatermark, ok
}

// leaderState is tp's leader replica's state, as the cluster knows it now.
func (c *cluster) leaderState(tp metadata.TopicPartition) (broker.PartitionState, bool) {
	img := c.image()
	if img == nil {
		return broker.PartitionState{}, false
	}
	p, ok := img.Partition(tp)
	if !ok || p.Leader < 0 || int(p.Leader) >= len(c.brokers) {
		return broker.PartitionState{}, false
	}
	b, ok := c.w.Node(c.brokers[p.Leader]).Process().(*broker.Broker)
	if !ok {
		return broker.PartitionState{}, false
	}
	s, ok := b.Partition(tp)
	if !ok || s.Role != "leader" {
		return broker.PartitionState{}, false
	}
	return s, true
}

func (wl *workload) checkOptions() checkers.Options {
	// Group members' assignments move in rebalances.
	return checkers.Options{Order: wl.s.CheckedOrder(), Rebalancing: wl.s.Workload.Kind == ConsumeTransformProduce}
}

// finalReads read what the system holds after heal and drain: the input
// topic (the output, for produce-only), the sink, a
// consume-transform-produce pipeline's output topic, read as its
// downstream consumers read it (consumer isolation.level), and the
// pipeline group's committed offsets (unless the sink stores them).
//
// A read that gets stuck is recorded as far as it got (the checkers report
// final-read-stuck); the others go on. The error is the world's failure
// (a panic, a livelock), which ends the run.
func (wl *workload) finalReads() error {
	read := func(tp metadata.TopicPartition, iso history.Isolation, output bool) error {
		err := wl.c.finalRead(wl.rec, tp, iso, output, finalReadBudget, wl.acknowledged[tp])
		if werr := wl.c.w.Err(); werr != nil {
			return werr
		}
		if err != nil {
			wl.c.w.Trace().Note("final-read-stuck: " + err.Error())
		}
		return nil
	}
	output := wl.s.Workload.Kind == ProduceOnly
	for p := range wl.s.Cluster.Partitions {
		if err := read(metadata.TopicPartition{Topic: inputTopic, Partition: int32(p)}, history.ReadCommitted, output); err != nil {
			return err
		}
	}
	if wl.s.Workload.Kind == ConsumeTransformProduce {
		iso := history.ReadUncommitted
		if wl.isolation() == client.ReadCommitted {
			iso = history.ReadCommitted
		}
		for p := range wl.s.Cluster.Partitions {
			if err := read(metadata.TopicPartition{Topic: outputTopic, Partition: int32(p)}, iso, true); err != nil {
				return err
			}
		}
	}
	if wl.s.Workload.Kind != ProduceOnly && wl.s.Workload.Commit != AtomicWithOutput {
		// The group's committed offsets: the other half of what a
		// transaction commits, and where the pipeline would resume.
		var tps []metadata.TopicPartition
		for p := range wl.s.Cluster.Partitions {
			tps = append(tps, metadata.TopicPartition{Topic: inputTopic, Partition: int32(p)})
		}
		err := wl.c.finalOffsets(wl.rec, groupID, tps, finalReadBudget)
		if werr := wl.c.w.Err(); werr != nil {
			return werr
		}
		if err != nil {
			wl.c.w.Trace().Note("final-read-stuck: " + err.Error())
		}
	}
	if wl.c.hasSink {
		err := wl.c.finalReadSink(wl.rec, finalReadBudget)
		if werr := wl.c.w.Err(); werr != nil {
			return werr
		}
		if err != nil {
			wl.c.w.Trace().Note("final-read-stuck: " + err.Error())
		}
	}
	return nil
}

func (wl *workload) connection(node string) client.ConnectionOptions {
	o := client.DefaultConnectionOptions(wl.c.brokers...)
	o.ClientID = node
	o.RequestTimeout = time.Duration(wl.s.Producer.RequestTimeoutMs) * time.Millisecond
	o.MetadataMaxAge = 10 * time.Second
	return o
}

func outcomeOf(o client.Outcome) history.Outcome {
	switch o {
	case client.OK:
		return history.OK
	case client.Fail:
		return history.Fail
	}
	return history.Info
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func htp(tp metadata.TopicPartition) history.TopicPartition {
	return history.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
}

// producerApp sends its producer's messages, one every interval, each to
// partition i mod partitions, and records every send.
type producerApp struct {
	wl      *workload
	index   int
	e       env.Env
	rt      *rpcRouter
	p       *client.Producer
	process string
}

func (a *producerApp) Start(e env.Env) {
	wl := a.wl
	a.e = e
	a.rt = newRPCRouter(e)
	node := producerNode(a.index)
	a.process = wl.process(node)
	wl.pending[a.index] = 0 // what the last incarnation had in flight is lost with it
	s := wl.s.Producer
	o := client.DefaultProducerOptions(wl.c.brokers...)
	o.ConnectionOptions = wl.connection(node)
	o.Acks = s.AcksValue()
	o.EnableIdempotence = s.EnableIdempotence
	o.Retries = s.Retries
	o.MaxInFlightRequestsPerConnection = s.MaxInFlightRequestsPerConnection
	o.DeliveryTimeout = time.Duration(s.DeliveryTimeoutMs) * time.Millisecond
	o.Linger = time.Duration(s.LingerMs) * time.Millisecond
	o.Partitioner = client.PartitionerManual
	if wl.s.Workload.Kind == ConsumeTransformProduce {
		// The producer section configures the processors' transactional
		// producers, the code under test; the input comes from an upstream
		// idempotent producer with the defaults' timeouts, so what the
		// processors are judged on is not thinned by a source that gives
		// up after the processors' short delivery timeout.
		d := Defaults().Producer
		o.ConnectionOptions.RequestTimeout = time.Duration(d.RequestTimeoutMs) * time.Millisecond
		o.DeliveryTimeout = time.Duration(d.DeliveryTimeoutMs) * time.Millisecond
	}
	p, err := client.NewProducer(e, a.rt.Router, o)
	if err != nil {
		panic(fmt.Sprintf("scenario %q: producer options: %v", wl.s.Name, err))
	}
	a.p = p
	e.AfterFunc(a.interval(), a.tick)
}

// interval spreads a producer's messages over the first 95% of the
// workload's duration, so most faults land while messages are in flight.
func (a *producerApp) interval() time.Duration {
	w := a.wl.s.Workload
	per := max(1, (w.Messages+w.Producers-1)/w.Producers)
	return max(time.Millisecond, time.Duration(w.DurationMs)*time.Millisecond*95/100/time.Duration(per))
}

func (a *producerApp) tick() {
	wl := a.wl
	i := a.index
	if wl.cursor[i] >= len(wl.inputs[i]) {
		return
	}
	n := wl.cursor[i]
	msg := wl.inputs[i][n]
	wl.cursor[i]++
	seq := i + n*wl.s.Workload.Producers
	tp := metadata.TopicPartition{Topic: inputTopic, Partition: int32(seq % wl.s.Cluster.Partitions)}
	id := wl.rec.Invoke(history.Op{
		Process: a.process, Node: producerNode(i), Kind: history.KindSend, Call: wl.now(),
		Send: &history.Send{TP: htp(tp), Messages: []history.Message{msg}, Offset: history.NoOffset},
	})
	wl.pending[i]++
	a.p.Send(client.Record{Topic: tp.Topic, Partition: tp.Partition, Key: []byte(msg.Key), Value: []byte(msg.Value)}, func(r client.SendResult) {
		wl.pending[i]--
		offset := history.NoOffset
		if r.Outcome == client.OK && r.Offset >= 0 {
			offset = r.Offset
			wl.acknowledged[tp] = max(wl.acknowledged[tp], offset+1)
		}
		wl.rec.Complete(id, wl.now(), outcomeOf(r.Outcome), history.Result{Offset: offset, Error: errText(r.Err)})
	})
	a.e.AfterFunc(a.interval(), a.tick)
}

func (a *producerApp) Connected(c env.ConnID, peer string, in bool) { a.rt.Connected(c, peer, in) }
func (a *producerApp) Received(c env.ConnID, f []byte)              { a.rt.Received(c, f) }
func (a *producerApp) Closed(c env.ConnID)                          { a.rt.Closed(c) }

// deriveProbes hits the probes the harness sees and no single process
// does: a broker that becomes leader of an input partition without every
// record producers were told was written there
// (acknowledged-missing-on-new-leader, what acks=1 and unclean elections
// lose).
func (wl *workload) deriveProbes(h sim.ProbeHit) {
	if h.Name != probe.LeaderElected {
		return
	}
	for tp, acked := range wl.acknowledged {
		if tp.String() != h.Subject {
			continue
		}
		b, ok := wl.c.w.Node(h.Node).Process().(*broker.Broker)
		if !ok {
			return
		}
		if s, ok := b.Partition(tp); ok && s.LogEndOffset < acked {
			wl.c.w.Probe(probe.AcknowledgedMissingOnNewLeader, h.Subject)
		}
		return
	}
}
