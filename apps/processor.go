package apps

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/probe"
)

// processorApp is a consume-transform-produce stage, Kafka's exactly-once
// pattern: a group consumer of the input topic (subscribe, isolation.level
// as the scenario says) and a transactional producer. Each poll's records
// become one transaction: begin, one output per input to the output topic
// (a fresh value, header "source" = the input value, the input's key and
// partition), sendOffsetsToTransaction with the consumer's group metadata,
// commit. On an abortable error it aborts and rewinds to the committed
// offsets; when the commit's outcome is unknown or the producer is fatal
// (fenced), it starts a new producer with its transactional.id — which
// settles what the old one left — and rewinds. Processor i's
// transactional.id is "<transactional.id>-<i>", the same for every
// incarnation (so a restart fences the previous one), or with
// workload.transactional.id.per.incarnation a new one per start.
type processorApp struct {
	wl      *Workload
	index   int
	e       env.Env
	rt      *rpcRouter
	c       *client.Consumer
	p       *client.Producer
	process string
	node    string
	txnID   string
	outputs int // outputs of this incarnation, for unique values

	rebalanced  bool    // the assignment changed since the last poll
	assignments int     // assignments received so far
	producers   int     // producers made by this incarnation: callbacks of replaced ones are ignored
	txn         *txnRun // the transaction open across polls, if any
}

// errProcessingFailed is why a processor aborts workload.abort.percent of
// its transactions.
var errProcessingFailed = errors.New("processing failed (workload.abort.percent)")

// errMigrated is why a processor aborts a transaction a rebalance came
// into: its inputs may be another member's now.
var errMigrated = errors.New("a rebalance came while the transaction was open")

// TransactionalID is processor i's transactional.id; n counts the
// producers the processor has made, for a fresh id per producer.
func (s Config) TransactionalID(i, n int) string {
	id := fmt.Sprintf("%s-%d", *s.Producer.TransactionalID, i)
	if s.Workload.TransactionalIDPerIncarnation {
		id = fmt.Sprintf("%s-%d", id, n)
	}
	return id
}

func (a *processorApp) Start(e env.Env) {
	wl := a.wl
	s := wl.cfg
	a.e = e
	a.rt = newRPCRouter(e)
	a.node = ProcessorNode(a.index)
	a.process = wl.process(a.node)
	wl.inTxn[a.index] = false // a predecessor's transaction is settled by this one's InitTransactions

	o := client.DefaultConsumerOptions(wl.cfg.Brokers...)
	o.ConnectionOptions = wl.connection(a.node)
	o.GroupID = GroupID
	o.AutoOffsetReset = s.Consumer.offsetReset()
	o.IsolationLevel = wl.Isolation()
	o.FetchMaxWait = time.Duration(wl.cfg.Consumer.FetchMaxWaitMs) * time.Millisecond
	o.FetchMinBytes = int32(wl.cfg.Consumer.FetchMinBytes)
	o.SessionTimeout = time.Duration(s.Consumer.SessionTimeoutMs) * time.Millisecond
	o.HeartbeatInterval = time.Duration(s.Consumer.HeartbeatIntervalMs) * time.Millisecond
	o.MaxPollInterval = time.Duration(s.Consumer.MaxPollIntervalMs) * time.Millisecond
	o.GroupProtocol = s.Consumer.GroupProtocol
	c, err := client.NewConsumer(e, a.rt.Router, o)
	if err != nil {
		panic(fmt.Sprintf("scenario %q: consumer options: %v", s.Name, err))
	}
	a.c = c
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: a.node, Kind: history.KindSubscribe, Call: wl.now(),
		Subscribe: &history.Subscribe{Group: GroupID, Topics: []string{InputTopic}}})
	err = c.Subscribe([]string{InputTopic}, client.RebalanceListener{OnPartitionsAssigned: a.assigned})
	wl.rec.Complete(id, wl.now(), history.OK, history.Result{Error: errText(err)})
	if err != nil {
		panic(fmt.Sprintf("scenario %q: subscribe: %v", s.Name, err))
	}
	a.newProducer(a.poll)
}

// assigned records the member's new share and reads the group's committed
// offsets for it: what the drain waits on.
func (a *processorApp) assigned(tps []client.TopicPartition) {
	wl := a.wl
	a.rebalanced = true
	a.assignments++
	if wl.inTxn[a.index] {
		a.e.Probe(probe.RebalanceDuringTransaction, a.txnID)
		if a.txn != nil {
			// Its inputs may be another member's now: abort it rather
			// than commit their offsets, as a Kafka Streams task that
			// migrated does.
			a.txn.migrated = true
		}
	}
	share := tps // the consumer protocol's callback names only what was added
	if wl.cfg.Consumer.GroupProtocol == client.GroupProtocolConsumer {
		share = a.c.Assignment()
	}
	parts := make([]history.TopicPartition, len(share))
	for i, tp := range share {
		parts[i] = HTP(tp)
	}
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: a.node, Kind: history.KindRebalance, Call: wl.now(),
		Rebalance: &history.Rebalance{Group: GroupID, Assigned: parts}})
	wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
	if len(tps) > 0 {
		a.fetchCommitted(tps, func(map[client.TopicPartition]client.OffsetAndMetadata, bool) {})
	}
}

// newProducer makes the producer and initializes it (retrying), then
// calls then.
func (a *processorApp) newProducer(then func()) {
	wl := a.wl
	s := wl.cfg.Producer
	o := client.DefaultProducerOptions(wl.cfg.Brokers...)
	o.ConnectionOptions = wl.connection(a.node)
	o.Acks = s.AcksValue()
	o.EnableIdempotence = s.EnableIdempotence
	o.Retries = s.Retries
	o.MaxInFlightRequestsPerConnection = s.MaxInFlightRequestsPerConnection
	o.DeliveryTimeout = time.Duration(s.DeliveryTimeoutMs) * time.Millisecond
	o.Linger = time.Duration(s.LingerMs) * time.Millisecond
	o.Partitioner = client.PartitionerManual
	wl.producersMade[a.index]++
	a.txnID = wl.cfg.TransactionalID(a.index, wl.producersMade[a.index])
	o.TransactionalID = a.txnID
	o.TransactionTimeout = time.Duration(s.TransactionTimeoutMs) * time.Millisecond
	o.MaxBlock = time.Duration(s.MaxBlockMs) * time.Millisecond
	p, err := client.NewProducer(a.e, a.rt.Router, o)
	if err != nil {
		panic(fmt.Sprintf("scenario %q: producer options: %v", wl.cfg.Name, err))
	}
	a.producers++
	gen := a.producers
	a.p = p
	p.InitTransactions(func(err error) {
		if gen != a.producers {
			return
		}
		if err != nil {
			a.e.AfterFunc(retryBackoff, func() { a.replaceProducer(then) })
			return
		}
		then()
	})
}

// replaceProducer closes the producer and starts a new one with the same
// transactional.id: its InitProducerId fences the old one and ends what it
// left open.
func (a *processorApp) replaceProducer(then func()) {
	a.p.Close()
	a.newProducer(then)
}

// recover starts over from the group's committed offsets with a new
// producer: after a commit whose outcome is unknown, or a fatal error.
func (a *processorApp) recover() { a.replaceProducer(a.rewind) }

func (a *processorApp) poll() {
	wl := a.wl
	before := positions(a.c, a.c.Assignment())
	iso := history.ReadUncommitted
	if wl.Isolation() == client.ReadCommitted {
		iso = history.ReadCommitted
	}
	rebalanced := a.rebalanced
	a.rebalanced = false
	assignments := a.assignments
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: a.node, Kind: history.KindPoll, Call: wl.now(),
		Poll: &history.Poll{Group: GroupID, Isolation: iso, Rebalanced: rebalanced}})
	a.c.Poll(pollRecordsMax, 500*time.Millisecond, func(recs []client.Record, err error) {
		moved := a.assignments != assignments // a rebalance during the poll: positions restarted from committed offsets
		fs := fetchesOf(recs, before, moved)
		outcome := history.OK
		if err != nil && len(recs) == 0 {
			outcome = history.Fail
		}
		wl.rec.Complete(id, wl.now(), outcome, history.Result{Fetched: fs, Rebalanced: a.rebalanced, Error: errText(err)})
		if pe := (*client.PartitionError)(nil); len(recs) == 0 && errors.As(err, &pe) {
			// auto.offset.reset none: the consumer stopped a partition
			// whose position the log does not have. Back to the committed
			// offsets, through an abort if a transaction is open.
			if t := a.txn; t != nil {
				a.abort(t, err)
				return
			}
			a.rewind()
			return
		}
		if len(recs) == 0 {
			if t := a.txn; t != nil && a.due(t) {
				a.endTxn(t)
				return
			}
			a.e.AfterFunc(10*time.Millisecond, a.poll)
			return
		}
		a.transform(recs)
	})
}

// txnRun is one transaction of the processor, as the history records it.
type txnRun struct {
	op        history.ID
	began     env.Time                          // on the processor's clock
	positions map[metadata.TopicPartition]int64 // the next offset of every input it holds
	offsets   []history.PartitionOffset
	sent      bool // sendOffsetsToTransaction succeeded: the offsets are in it
	migrated  bool // a rebalance came while it was open: abort it
	end       int64
}

// due reports whether t has been open for the commit interval.
func (a *processorApp) due(t *txnRun) bool {
	return a.e.Now().Sub(t.began) >= time.Duration(a.wl.cfg.Workload.CommitIntervalMs)*time.Millisecond
}

// transform writes one output per polled record into the open
// transaction, beginning one if none is, then commits it once it has been
// open for workload.commit.interval.ms (at once, with 0) — or polls again.
func (a *processorApp) transform(recs []client.Record) {
	wl := a.wl
	t := a.txn
	if t == nil {
		if err := a.p.BeginTransaction(); err != nil {
			a.e.Log("processor-begin-failed", "error", err.Error())
			a.recover()
			return
		}
		wl.inTxn[a.index] = true
		t = &txnRun{began: a.e.Now(), positions: map[metadata.TopicPartition]int64{}}
		a.txn = t
		t.op = wl.rec.Invoke(history.Op{Process: a.process, Node: a.node, Kind: history.KindTxn, Call: wl.now(),
			Txn: &history.Txn{TransactionalID: a.txnID, Group: GroupID}})
	}
	for tp, off := range next(recs) {
		t.positions[tp] = max(t.positions[tp], off)
	}
	for _, r := range recs {
		a.outputs++
		out := history.Message{Key: string(r.Key), Value: fmt.Sprintf("%s/%06d", a.process, a.outputs), Source: string(r.Value)}
		tp := metadata.TopicPartition{Topic: OutputTopic, Partition: r.Partition}
		id := wl.rec.Invoke(history.Op{Process: a.process, Node: a.node, Kind: history.KindSend, Call: wl.now(),
			Send: &history.Send{TP: HTP(tp), Messages: []history.Message{out}, Offset: history.NoOffset, Txn: t.op}})
		a.p.Send(client.Record{Topic: OutputTopic, Partition: r.Partition, Key: r.Key, Value: []byte(out.Value),
			Headers: []record.RecordHeader{{Key: "source", Value: r.Value}}}, func(res client.SendResult) {
			offset := history.NoOffset
			if res.Outcome == client.OK && res.Offset >= 0 {
				offset = res.Offset
				wl.acknowledged[tp] = max(wl.acknowledged[tp], offset+1)
			}
			wl.rec.Complete(id, wl.now(), outcomeOf(res.Outcome), history.Result{Offset: offset, Error: errText(res.Err)})
		})
	}
	work := time.Duration(wl.cfg.Workload.ProcessingMs) * time.Millisecond
	gen := a.producers
	a.e.AfterFunc(work, func() {
		if gen != a.producers || a.txn != t {
			return
		}
		if !a.due(t) {
			a.poll()
			return
		}
		a.endTxn(t)
	})
}

// endTxn sends the transaction's offsets and commits it (or aborts it: a
// rebalance came, or workload.abort.percent says processing failed).
func (a *processorApp) endTxn(t *txnRun) {
	wl := a.wl
	if t.migrated {
		a.abort(t, errMigrated)
		return
	}
	positions := t.positions
	offsets := map[client.TopicPartition]client.OffsetAndMetadata{}
	for _, tp := range slices.SortedFunc(maps.Keys(positions), metadata.TopicPartition.Compare) {
		offsets[tp] = client.OffsetAndMetadata{Offset: positions[tp], LeaderEpoch: -1}
		t.offsets = append(t.offsets, history.PartitionOffset{TP: HTP(tp), Offset: positions[tp]})
	}
	// The offsets are on the operation from here on: if the processor
	// crashes after sending them, the transaction (info) may still commit.
	wl.rec.SetTxnOffsets(t.op, t.offsets)
	gen := a.producers
	a.p.SendOffsetsToTransaction(offsets, a.c.GroupMetadata(), func(err error) {
		if gen != a.producers {
			return
		}
		if err != nil {
			a.abort(t, err)
			return
		}
		t.sent = true
		if p := wl.cfg.Workload.AbortPercent; p > 0 && a.e.Rand().Intn(100) < p {
			a.abort(t, errProcessingFailed)
			return
		}
		// The commit goes out in an event of its own: until then the
		// transaction holds outputs and offsets, undecided.
		a.e.Probe(probe.TransactionAwaitingCommit, a.txnID)
		a.e.AfterFunc(0, func() {
			if gen != a.producers {
				return
			}
			t.end = wl.now()
			a.p.CommitTransaction(func(err error) { a.committed(t, positions, err) })
		})
	})
}

// committed settles a transaction from CommitTransaction's answer.
func (a *processorApp) committed(t *txnRun, positions map[metadata.TopicPartition]int64, err error) {
	wl := a.wl
	wl.inTxn[a.index] = false
	a.txn = nil
	switch {
	case err == nil:
		wl.rec.Complete(t.op, wl.now(), history.OK, history.Result{Offsets: t.offsets, EndCall: t.end})
		a.done(positions)
		a.poll()
	case client.OutcomeOf(err) == client.Info:
		// It may have committed: a new producer settles it either way.
		wl.rec.Complete(t.op, wl.now(), history.Info, history.Result{Offsets: t.offsets, EndCall: t.end, Error: errText(err)})
		a.recover()
	case a.p.Err() != nil:
		wl.rec.Complete(t.op, wl.now(), history.Fail, history.Result{Offsets: t.offsets, EndCall: t.end, Error: errText(err)})
		a.recover()
	default:
		a.abort(t, err)
	}
}

// abort aborts the transaction (it never asked to commit, or the commit
// was refused) and rewinds.
func (a *processorApp) abort(t *txnRun, cause error) {
	wl := a.wl
	a.txn = nil
	finish := func() {
		wl.inTxn[a.index] = false
		res := history.Result{EndCall: t.end, Error: errText(cause)}
		if t.sent {
			res.Offsets = t.offsets
		}
		wl.rec.Complete(t.op, wl.now(), history.Fail, res)
	}
	if a.p.Err() != nil {
		finish()
		a.recover()
		return
	}
	gen := a.producers
	a.p.AbortTransaction(func(err error) {
		finish()
		switch {
		case gen != a.producers:
		case err != nil:
			a.recover()
		case !wl.cfg.Workload.RewindOnAbort:
			// The habit of workload.rewind.on.abort false: carry on from
			// the position past the aborted transaction's inputs.
			a.poll()
		default:
			a.rewind()
		}
	})
}

// rewind moves the consumer back to the group's committed offsets: after
// an abort the inputs of the aborted transaction are read again (Kafka
// leaves this to the application).
func (a *processorApp) rewind() {
	tps := a.c.Assignment()
	if len(tps) == 0 {
		a.poll()
		return
	}
	a.fetchCommitted(tps, func(got map[client.TopicPartition]client.OffsetAndMetadata, ok bool) {
		if !ok {
			a.e.AfterFunc(retryBackoff, a.rewind)
			return
		}
		var seek []history.PartitionOffset
		for _, tp := range tps {
			if o, ok := got[tp]; ok {
				if a.c.Seek(tp, o.Offset) == nil {
					seek = append(seek, history.PartitionOffset{TP: HTP(tp), Offset: o.Offset})
				}
				continue
			}
			// No committed offset: back to auto.offset.reset.
			if a.wl.cfg.Consumer.AutoOffsetReset == "latest" {
				_ = a.c.SeekToReset(tp, client.OffsetResetLatest)
			} else if a.c.SeekToReset(tp, client.OffsetResetEarliest) == nil {
				seek = append(seek, history.PartitionOffset{TP: HTP(tp), Offset: 0})
			}
		}
		wl := a.wl
		id := wl.rec.Invoke(history.Op{Process: a.process, Node: a.node, Kind: history.KindSeek, Call: wl.now(), Seek: &history.Seek{Offsets: seek}})
		wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
		a.poll()
	})
}

// fetchCommitted reads the group's committed offsets for tps (stable,
// with read_committed), records the read and what it tells the drain.
func (a *processorApp) fetchCommitted(tps []client.TopicPartition, done func(map[client.TopicPartition]client.OffsetAndMetadata, bool)) {
	wl := a.wl
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: a.node, Kind: history.KindOffsetFetch, Call: wl.now(),
		OffsetFetch: &history.OffsetFetch{Group: GroupID}})
	a.c.Committed(tps, func(got map[client.TopicPartition]client.OffsetAndMetadata, err error) {
		if err != nil {
			wl.rec.Complete(id, wl.now(), history.Fail, history.Result{Error: errText(err)})
			done(nil, false)
			return
		}
		var offs []history.PartitionOffset
		for _, tp := range slices.SortedFunc(maps.Keys(tpSet(tps)), metadata.TopicPartition.Compare) {
			off := history.NoOffset
			if o, ok := got[tp]; ok {
				off = o.Offset
				wl.processed[tp.Partition] = max(wl.processed[tp.Partition], off)
			}
			offs = append(offs, history.PartitionOffset{TP: HTP(tp), Offset: off})
		}
		wl.rec.Complete(id, wl.now(), history.OK, history.Result{Offsets: offs})
		done(got, true)
	})
}

func tpSet(tps []client.TopicPartition) map[metadata.TopicPartition]bool {
	m := make(map[metadata.TopicPartition]bool, len(tps))
	for _, tp := range tps {
		m[tp] = true
	}
	return m
}

// done tells the outside world how far the committed processing got.
func (a *processorApp) done(positions map[metadata.TopicPartition]int64) {
	for tp, off := range positions {
		a.wl.processed[tp.Partition] = max(a.wl.processed[tp.Partition], off)
	}
}

func (a *processorApp) Connected(c env.ConnID, peer string, in bool) { a.rt.Connected(c, peer, in) }
func (a *processorApp) Received(c env.ConnID, f []byte)              { a.rt.Received(c, f) }
func (a *processorApp) Closed(c env.ConnID)                          { a.rt.Closed(c) }
