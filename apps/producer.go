package apps

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
)

// producerApp sends its producer's messages, one every interval, each to
// partition i mod partitions, and records every send.
type producerApp struct {
	wl      *Workload
	index   int
	e       env.Env
	rt      *rpcRouter
	p       *client.Producer
	process string
	ticking bool // a tick is armed
}

func (a *producerApp) Start(e env.Env) {
	wl := a.wl
	a.e = e
	a.rt = newRPCRouter(e)
	node := ProducerNode(a.index)
	a.process = wl.process(node)
	wl.pending[a.index] = 0  // what the last incarnation had in flight is lost with it
	wl.resend[a.index] = nil // and what it meant to send again
	s := wl.cfg.Producer
	o := client.DefaultProducerOptions(wl.cfg.Brokers...)
	o.ConnectionOptions = wl.connection(node)
	o.Acks = s.AcksValue()
	o.EnableIdempotence = s.EnableIdempotence
	o.Retries = s.Retries
	o.MaxInFlightRequestsPerConnection = s.MaxInFlightRequestsPerConnection
	o.DeliveryTimeout = time.Duration(s.DeliveryTimeoutMs) * time.Millisecond
	o.Linger = time.Duration(s.LingerMs) * time.Millisecond
	o.Partitioner = client.PartitionerManual
	if wl.cfg.Workload.Kind == ConsumeTransformProduce {
		// The producer section configures the processors' transactional
		// producers, the code under test; the input comes from an upstream
		// idempotent producer with the defaults' timeouts, so what the
		// processors are judged on is not thinned by a source that gives
		// up after the processors' short delivery timeout.
		d := wl.cfg.Upstream
		o.ConnectionOptions.RequestTimeout = time.Duration(d.RequestTimeoutMs) * time.Millisecond
		o.DeliveryTimeout = time.Duration(d.DeliveryTimeoutMs) * time.Millisecond
	}
	p, err := client.NewProducer(e, a.rt.Router, o)
	if err != nil {
		panic(fmt.Sprintf("scenario %q: producer options: %v", wl.cfg.Name, err))
	}
	a.p = p
	a.schedule()
}

// interval spreads a producer's messages over the first 95% of the
// workload's duration, so most faults land while messages are in flight.
func (a *producerApp) interval() time.Duration {
	w := a.wl.cfg.Workload
	per := max(1, (w.Messages+w.Producers-1)/w.Producers)
	return max(time.Millisecond, time.Duration(w.DurationMs)*time.Millisecond*95/100/time.Duration(per))
}

// resend is a failed send the application will send again.
type resend struct {
	msg history.Message
	tp  metadata.TopicPartition
}

// tick sends the next message — a failed one to send again first — and
// schedules the next tick while there is something to send.
func (a *producerApp) tick() {
	wl := a.wl
	i := a.index
	var msg history.Message
	var tp metadata.TopicPartition
	switch {
	case len(wl.resend[i]) > 0:
		msg, tp = wl.resend[i][0].msg, wl.resend[i][0].tp
		wl.resend[i] = wl.resend[i][1:]
	case wl.cursor[i] < len(wl.inputs[i]):
		n := wl.cursor[i]
		msg = wl.inputs[i][n]
		wl.cursor[i]++
		seq := i + n*wl.cfg.Workload.Producers
		tp = metadata.TopicPartition{Topic: InputTopic, Partition: int32(seq % wl.cfg.Partitions)}
	default:
		a.ticking = false
		return
	}
	id := wl.rec.Invoke(history.Op{
		Process: a.process, Node: ProducerNode(i), Kind: history.KindSend, Call: wl.now(),
		Send: &history.Send{TP: HTP(tp), Messages: []history.Message{msg}, Offset: history.NoOffset},
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
		if r.Outcome != client.OK && wl.cfg.Workload.ResendOnError && !wl.stopped {
			wl.resend[i] = append(wl.resend[i], resend{msg, tp})
			a.schedule()
		}
	})
	a.ticking = false
	a.schedule()
}

// schedule arms the next tick unless one is armed.
func (a *producerApp) schedule() {
	if !a.ticking {
		a.ticking = true
		a.e.AfterFunc(a.interval(), a.tick)
	}
}

func (a *producerApp) Connected(c env.ConnID, peer string, in bool) { a.rt.Connected(c, peer, in) }
func (a *producerApp) Received(c env.ConnID, f []byte)              { a.rt.Received(c, f) }
func (a *producerApp) Closed(c env.ConnID)                          { a.rt.Closed(c) }
