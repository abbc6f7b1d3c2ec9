package apps

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
)

// The reader's fetch.max.wait.ms and fetch.min.bytes.
const (
	readerFetchMaxWait  = 150 * time.Millisecond
	readerFetchMinBytes = 4096
)

// readerApp is the downstream reader, on ReaderNode: it reads the
// workload's output topic throughout the run, as a downstream application
// would, so the checkers see what a read_committed consumer is served while
// transactions are open and leaders change, not only the settled end state
// (G1a, precommitted-read, read-past-lso). It polls every partition of the
// output topic (the input topic of a produce-only workload) from offset 0
// with the downstream consumers' isolation.level until the workload stops,
// recording each poll. It is not a fault target: what it judges is the
// brokers, and it only reads.
type readerApp struct {
	wl      *Workload
	e       env.Env
	rt      *rpcRouter
	c       *client.Consumer
	process string
	tps     []metadata.TopicPartition
	iso     history.Isolation
}

// ReaderTopic is the topic the downstream reader follows, "" if none: the
// output of a consume-transform-produce pipeline, the input of a
// produce-only workload. A sink pipeline's output is the sink's.
func (wl *Workload) ReaderTopic() string {
	switch wl.cfg.Workload.Kind {
	case ConsumeTransformProduce:
		return OutputTopic
	case ProduceOnly:
		return InputTopic
	}
	return ""
}

func (a *readerApp) Start(e env.Env) {
	wl := a.wl
	a.e = e
	a.rt = newRPCRouter(e)
	a.process = wl.process(ReaderNode)
	o := client.DefaultConsumerOptions(wl.cfg.Brokers...)
	o.ConnectionOptions = wl.connection(ReaderNode)
	o.AutoOffsetReset = client.OffsetResetEarliest
	o.IsolationLevel, a.iso = client.ReadCommitted, history.ReadCommitted
	if wl.cfg.Workload.Kind == ConsumeTransformProduce && wl.Isolation() != client.ReadCommitted {
		o.IsolationLevel, a.iso = client.ReadUncommitted, history.ReadUncommitted
	}
	// Polls in batches, a few a second, as a downstream application
	// would: each fetch response is still judged whole (its LSO, its
	// records), and the history stays small.
	o.FetchMaxWait, o.FetchMinBytes = readerFetchMaxWait, readerFetchMinBytes
	c, err := client.NewConsumer(e, a.rt.Router, o)
	if err != nil {
		panic(fmt.Sprintf("scenario %q: reader options: %v", wl.cfg.Name, err))
	}
	a.c = c
	var parts []history.TopicPartition
	for p := range wl.cfg.Partitions {
		tp := metadata.TopicPartition{Topic: wl.ReaderTopic(), Partition: int32(p)}
		a.tps = append(a.tps, tp)
		parts = append(parts, HTP(tp))
	}
	c.Assign(a.tps)
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ReaderNode, Kind: history.KindAssign, Call: wl.now(), Assign: &history.Assign{Partitions: parts}})
	wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
	a.poll()
}

func (a *readerApp) poll() {
	wl := a.wl
	before := positions(a.c, a.tps)
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ReaderNode, Kind: history.KindPoll, Call: wl.now(), Poll: &history.Poll{Isolation: a.iso}})
	a.c.Poll(pollRecordsMax, 500*time.Millisecond, func(recs []client.Record, err error) {
		outcome := history.OK
		if err != nil && len(recs) == 0 {
			outcome = history.Fail
		}
		wl.rec.Complete(id, wl.now(), outcome, history.Result{Fetched: fetchesOf(recs, before, false), Error: errText(err)})
		if len(recs) == 0 {
			a.e.AfterFunc(10*time.Millisecond, a.poll)
			return
		}
		a.poll()
	})
}

func (a *readerApp) Connected(c env.ConnID, peer string, in bool) { a.rt.Connected(c, peer, in) }
func (a *readerApp) Received(c env.ConnID, f []byte)              { a.rt.Received(c, f) }
func (a *readerApp) Closed(c env.ConnID)                          { a.rt.Closed(c) }
