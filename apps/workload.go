package apps

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
)

// Workload is the outside world of a run's applications: the messages each
// producer application has to send (and how far it got — a restarted
// application carries on from there, as one reading a durable source
// would), what the consumers processed, and the recorder every application
// reports to. The harness reads it to know when the run has drained.
type Workload struct {
	cfg   Config
	rec   *history.Recorder
	clock func() int64

	inputs  [][]history.Message // per producer
	cursor  []int               // per producer: the next message to send
	pending []int               // per producer: sends not yet resolved, this incarnation
	// resend is, per producer, the failed sends its application will send
	// again (workload.resend.on.error): this incarnation's memory.
	resend [][]resend
	incarn map[string]int // per node: how many times its application started
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

// NewWorkload returns the workload of cfg; its applications record to rec,
// stamping operations with clock (the history's time: simulated time since
// the world began).
func NewWorkload(cfg Config, rec *history.Recorder, clock func() int64) *Workload {
	wl := &Workload{cfg: cfg, rec: rec, clock: clock, incarn: map[string]int{}, processed: map[int32]int64{}, producersMade: map[int]int{}, inTxn: map[int]bool{},
		acknowledged: map[metadata.TopicPartition]int64{}}
	w := cfg.Workload
	for p := range w.Producers {
		var msgs []history.Message
		for i := p; i < w.Messages; i += w.Producers {
			msgs = append(msgs, history.Message{Key: fmt.Sprintf("k%d", i%8), Value: fmt.Sprintf("v%d", i)})
		}
		wl.inputs = append(wl.inputs, msgs)
		wl.cursor = append(wl.cursor, 0)
		wl.pending = append(wl.pending, 0)
		wl.resend = append(wl.resend, nil)
	}
	return wl
}

// Clients are the nodes of the applications under the workload's control
// (the reader aside): producers, then consumers or processors.
func (wl *Workload) Clients() []string {
	var nodes []string
	w := wl.cfg.Workload
	for i := range w.Producers {
		nodes = append(nodes, ProducerNode(i))
	}
	switch w.Kind {
	case ConsumeProcessSink:
		for i := range w.Consumers {
			nodes = append(nodes, ConsumerNode(i))
		}
	case ConsumeTransformProduce:
		for i := range w.Consumers {
			nodes = append(nodes, ProcessorNode(i))
		}
	}
	return nodes
}

// Process returns the application that runs on node, one of Clients or
// ReaderNode; the world calls it at every start.
func (wl *Workload) Process(node string) func() env.Process {
	var i int
	switch {
	case node == ReaderNode:
		return func() env.Process { return &readerApp{wl: wl} }
	case scan(node, "producer-%d", &i):
		return func() env.Process { return &producerApp{wl: wl, index: i} }
	case scan(node, "consumer-%d", &i):
		return func() env.Process { return &consumerApp{wl: wl, index: i} }
	case scan(node, "processor-%d", &i):
		return func() env.Process { return &processorApp{wl: wl, index: i} }
	}
	panic(fmt.Sprintf("apps: no application runs on %q", node))
}

func scan(node, format string, i *int) bool {
	_, err := fmt.Sscanf(node, format, i)
	return err == nil
}

// Topics are the topics the applications use.
func (wl *Workload) Topics() []string {
	if wl.cfg.Workload.Kind == ConsumeTransformProduce {
		return []string{InputTopic, OutputTopic}
	}
	return []string{InputTopic}
}

// Produced reports whether every producer sent everything and heard back.
func (wl *Workload) Produced() bool {
	for p := range wl.inputs {
		if wl.cursor[p] < len(wl.inputs[p]) || wl.pending[p] > 0 || len(wl.resend[p]) > 0 {
			return false
		}
	}
	return true
}

// Processed is the next offset of input partition p some consumer has
// finished with.
func (wl *Workload) Processed(p int32) int64 { return wl.processed[p] }

// Acknowledged is the offset after the last record of tp a producer was
// told was written.
func (wl *Workload) Acknowledged(tp metadata.TopicPartition) int64 { return wl.acknowledged[tp] }

// InTransaction reports whether some processor has a transaction begun and
// not yet settled.
func (wl *Workload) InTransaction() bool {
	for _, busy := range wl.inTxn {
		if busy {
			return true
		}
	}
	return false
}

// Stop tells the applications the run is over: what they do from now on
// is not the workload's.
func (wl *Workload) Stop() { wl.stopped = true }

// Isolation is the isolation.level of the consumers downstream.
func (wl *Workload) Isolation() client.IsolationLevel {
	if wl.cfg.Consumer.IsolationLevel == "read_committed" {
		return client.ReadCommitted
	}
	return client.ReadUncommitted
}

// now is the history's clock.
func (wl *Workload) now() int64 { return wl.clock() }

// process names node's new incarnation, as the history knows it.
func (wl *Workload) process(node string) string {
	wl.incarn[node]++
	return fmt.Sprintf("%s#%d", node, wl.incarn[node])
}

func (wl *Workload) connection(node string) client.ConnectionOptions {
	o := client.DefaultConnectionOptions(wl.cfg.Brokers...)
	o.ClientID = node
	o.RequestTimeout = time.Duration(wl.cfg.Producer.RequestTimeoutMs) * time.Millisecond
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

// HTP is tp as the history names it.
func HTP(tp metadata.TopicPartition) history.TopicPartition {
	return history.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
}
