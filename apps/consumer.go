package apps

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/sink"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/probe"
)

// consumerApp is a pipeline stage: it consumes its share of the input
// partitions, writes one output per input message to the sink, and
// commits per the scenario's pattern:
//
//   - commit-before-process: commit the positions the poll reached, then
//     write the outputs (a crash in between loses them);
//   - process-then-commit: write the outputs, then commit (a crash in
//     between writes them again);
//   - atomic-with-output: outputs and the next offsets in one conditional
//     sink write; on start, positions come from the sink, not Kafka;
//   - with enable.auto.commit, the outputs are written asynchronously and
//     the consumer's auto-commit commits what the previous poll reached.
//
// Every output is a fresh sink key, so processing an input twice shows up
// as two outputs with the same source.
type consumerApp struct {
	wl      *Workload
	index   int
	e       env.Env
	rt      *rpcRouter
	c       *client.Consumer
	sink    *sink.Client
	process string
	tps     []metadata.TopicPartition
	outputs int // outputs written by this incarnation, for unique keys
	// unprocessed counts polled batches whose asynchronous processing
	// (enable.auto.commit) has not written its outputs yet.
	unprocessed int
	// versions of the offset keys in the sink (atomic pattern): a write is
	// conditional on them, which fences a zombie incarnation.
	versions map[string]uint64
	// member: the consumer subscribes as a group member (its partitions
	// are the client's Assignment) instead of assigning its share (tps).
	member bool
	// rebalanced: an assignment came since the last poll began;
	// assignments counts them (a member's).
	rebalanced  bool
	assignments int
}

const (
	pollRecordsMax = 20
	sinkTimeout    = 5 * time.Second
	retryBackoff   = 200 * time.Millisecond
)

func offsetKey(tp metadata.TopicPartition) string {
	return fmt.Sprintf("offset/%s/%d", tp.Topic, tp.Partition)
}

func (a *consumerApp) Start(e env.Env) {
	wl := a.wl
	a.e = e
	a.rt = newRPCRouter(e)
	node := ConsumerNode(a.index)
	a.process = wl.process(node)
	a.sink = sink.NewClient(e, SinkNode, sink.DefaultClientOptions)
	a.rt.sink = a.sink
	a.versions = map[string]uint64{}
	o := client.DefaultConsumerOptions(wl.cfg.Brokers...)
	o.ConnectionOptions = wl.connection(node)
	o.GroupID = GroupID
	o.AutoOffsetReset = wl.cfg.Consumer.offsetReset()
	o.IsolationLevel = client.ReadUncommitted
	if wl.cfg.Consumer.IsolationLevel == "read_committed" {
		o.IsolationLevel = client.ReadCommitted
	}
	o.EnableAutoCommit = wl.cfg.Consumer.EnableAutoCommit
	o.AutoCommitInterval = time.Duration(wl.cfg.Consumer.AutoCommitIntervalMs) * time.Millisecond
	o.FetchMaxWait = time.Duration(wl.cfg.Consumer.FetchMaxWaitMs) * time.Millisecond
	o.FetchMinBytes = int32(wl.cfg.Consumer.FetchMinBytes)
	o.OnAutoCommit = a.recordAutoCommit
	m := wl.cfg.Workload.Membership
	a.member = m == MembershipSubscribe || (m == MembershipMixed && a.index == 0)
	if a.member {
		o.SessionTimeout = time.Duration(wl.cfg.Consumer.SessionTimeoutMs) * time.Millisecond
		o.HeartbeatInterval = time.Duration(wl.cfg.Consumer.HeartbeatIntervalMs) * time.Millisecond
		o.MaxPollInterval = time.Duration(wl.cfg.Consumer.MaxPollIntervalMs) * time.Millisecond
		o.GroupProtocol = wl.cfg.Consumer.GroupProtocol
	}
	c, err := client.NewConsumer(e, a.rt.Router, o)
	if err != nil {
		panic(fmt.Sprintf("scenario %q: consumer options: %v", wl.cfg.Name, err))
	}
	a.c = c
	if a.member {
		a.subscribe()
		return
	}
	for p := a.index; p < wl.cfg.Partitions; p += wl.cfg.Workload.Consumers {
		a.tps = append(a.tps, metadata.TopicPartition{Topic: InputTopic, Partition: int32(p)})
	}
	c.Assign(a.tps)
	var parts []history.TopicPartition
	for _, tp := range a.tps {
		parts = append(parts, HTP(tp))
	}
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: node, Kind: history.KindAssign, Call: wl.now(), Assign: &history.Assign{Partitions: parts}})
	wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
	if wl.cfg.Workload.Commit == AtomicWithOutput {
		a.resume()
		return
	}
	a.poll()
}

// subscribe makes the consumer a member of the group (workload.membership
// subscribe, or consumer 0 of mixed): its partitions come in rebalances,
// its position from the group's committed offsets (the client's own, as
// KafkaConsumer's), its commits carry the generation.
func (a *consumerApp) subscribe() {
	wl := a.wl
	node := ConsumerNode(a.index)
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: node, Kind: history.KindSubscribe, Call: wl.now(),
		Subscribe: &history.Subscribe{Group: GroupID, Topics: []string{InputTopic}}})
	err := a.c.Subscribe([]string{InputTopic}, client.RebalanceListener{OnPartitionsAssigned: a.assigned})
	wl.rec.Complete(id, wl.now(), history.OK, history.Result{Error: errText(err)})
	if err != nil {
		panic(fmt.Sprintf("scenario %q: subscribe: %v", wl.cfg.Name, err))
	}
	a.poll()
}

// assigned records a member's new share: under the consumer protocol
// the callback names only what was added, and the share is the whole
// assignment.
func (a *consumerApp) assigned(tps []client.TopicPartition) {
	wl := a.wl
	if wl.cfg.Consumer.GroupProtocol == client.GroupProtocolConsumer {
		tps = a.c.Assignment()
	}
	a.rebalanced = true
	a.assignments++
	parts := make([]history.TopicPartition, len(tps))
	for i, tp := range tps {
		parts[i] = HTP(tp)
	}
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindRebalance, Call: wl.now(),
		Rebalance: &history.Rebalance{Group: GroupID, Assigned: parts}})
	wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
}

// resume reads the positions stored with the outputs in the sink and seeks
// there (the atomic pattern's restart).
func (a *consumerApp) resume() {
	keys := make([]string, len(a.tps))
	for i, tp := range a.tps {
		keys[i] = offsetKey(tp)
	}
	a.sink.Get(keys, sinkTimeout, func(r sink.GetResult, err error) {
		if err != nil {
			a.e.AfterFunc(retryBackoff, a.resume)
			return
		}
		var seek []history.PartitionOffset
		for i, entry := range r.Entries {
			tp := a.tps[i]
			a.versions[entry.Key] = entry.Version
			next := int64(0)
			if entry.Present() {
				next, _ = strconv.ParseInt(string(entry.Value), 10, 64)
			}
			if err := a.c.Seek(tp, next); err != nil {
				panic(fmt.Sprintf("seek %v: %v", tp, err))
			}
			seek = append(seek, history.PartitionOffset{TP: HTP(tp), Offset: next})
		}
		wl := a.wl
		id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindSeek, Call: wl.now(), Seek: &history.Seek{Offsets: seek}})
		wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
		a.poll()
	})
}

func (a *consumerApp) poll() {
	wl := a.wl
	tps := a.tps
	if a.member {
		tps = a.c.Assignment()
	}
	before := positions(a.c, tps)
	iso := history.ReadUncommitted
	if wl.cfg.Consumer.IsolationLevel == "read_committed" {
		iso = history.ReadCommitted
	}
	poll := &history.Poll{Isolation: iso}
	if a.member {
		poll.Group, poll.Rebalanced = GroupID, a.rebalanced
		a.rebalanced = false
	}
	assignments := a.assignments
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindPoll, Call: wl.now(), Poll: poll})
	a.c.Poll(pollRecordsMax, 500*time.Millisecond, func(recs []client.Record, err error) {
		outcome := history.OK
		if err != nil && len(recs) == 0 {
			outcome = history.Fail // a poll that returned nothing changed nothing
		}
		// A rebalance during the poll restarted positions from the
		// committed offsets.
		moved := a.assignments != assignments
		wl.rec.Complete(id, wl.now(), outcome, history.Result{Fetched: fetchesOf(recs, before, moved), Rebalanced: a.member && a.rebalanced, Error: errText(err)})
		if pe := (*client.PartitionError)(nil); len(recs) == 0 && errors.As(err, &pe) {
			a.e.AfterFunc(retryBackoff, func() { a.reposition(pe.TopicPartition) })
			return
		}
		if len(recs) == 0 {
			a.e.AfterFunc(10*time.Millisecond, a.poll)
			return
		}
		a.handle(recs)
	})
}

// reposition seeks a partition the consumer stopped (auto.offset.reset
// none: its position is not in the log, as when a zombie leader's log ends
// below it) back to where the application keeps its offsets: the sink for
// the atomic pattern, the group's committed offset otherwise (the log
// start when there is none). An automatic reset would move it without the
// application knowing, past or back over what it already wrote.
func (a *consumerApp) reposition(tp client.TopicPartition) {
	if a.wl.cfg.Workload.Commit == AtomicWithOutput {
		a.resume()
		return
	}
	a.c.Committed([]client.TopicPartition{tp}, func(got map[client.TopicPartition]client.OffsetAndMetadata, err error) {
		if err != nil {
			a.e.AfterFunc(retryBackoff, func() { a.reposition(tp) })
			return
		}
		offset := int64(0)
		if o, ok := got[tp]; ok {
			offset = o.Offset
		}
		if a.c.Seek(tp, offset) == nil {
			wl := a.wl
			id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindSeek, Call: wl.now(),
				Seek: &history.Seek{Offsets: []history.PartitionOffset{{TP: HTP(tp), Offset: offset}}}})
			wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
		}
		a.poll()
	})
}

func decodeClientRecord(r client.Record) history.Message {
	m := history.Message{Key: string(r.Key), Value: string(r.Value)}
	for _, h := range r.Headers {
		if h.Key == "source" {
			m.Source = string(h.Value)
		}
	}
	return m
}

// next returns, per partition, the offset after the last record of recs.
func next(recs []client.Record) map[metadata.TopicPartition]int64 {
	out := map[metadata.TopicPartition]int64{}
	for _, r := range recs {
		out[metadata.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
	}
	return out
}

func (a *consumerApp) handle(recs []client.Record) {
	positions := next(recs)
	work := time.Duration(a.wl.cfg.Workload.ProcessingMs) * time.Millisecond
	switch {
	case a.wl.cfg.Consumer.EnableAutoCommit:
		// Processing is asynchronous: the next poll (and its auto-commit)
		// does not wait for the outputs.
		a.unprocessed++
		a.e.AfterFunc(work, func() { a.writeOutputs(recs, nil, func(bool) { a.unprocessed-- }) })
		a.done(positions)
		a.poll()
	case a.wl.cfg.Workload.Commit == CommitBeforeProcess:
		a.commit(positions, func(ok bool) {
			if !ok {
				a.rewind(recs)
				return
			}
			a.e.Probe(probe.CommittedBeforeProcessing, GroupID)
			a.e.AfterFunc(work, func() {
				a.writeOutputs(recs, nil, func(bool) {
					a.done(positions)
					a.poll()
				})
			})
		})
	case a.wl.cfg.Workload.Commit == ProcessThenCommit:
		a.e.AfterFunc(work, func() {
			a.writeOutputsUntilOK(recs, func() {
				// The commit goes out in an event of its own: the window
				// the probe marks is open until then.
				a.e.Probe(probe.ProcessedBeforeCommit, GroupID)
				a.e.AfterFunc(0, func() {
					a.commit(positions, func(bool) {
						a.done(positions)
						a.poll()
					})
				})
			})
		})
	case a.wl.cfg.Workload.Commit == AtomicWithOutput:
		a.e.AfterFunc(work, func() {
			a.writeOutputs(recs, positions, func(ok bool) {
				if !ok {
					a.resume() // the sink, not Kafka, says where we are
					return
				}
				a.done(positions)
				a.poll()
			})
		})
	}
}

// done tells the outside world how far processing got.
func (a *consumerApp) done(positions map[metadata.TopicPartition]int64) {
	for tp, off := range positions {
		a.wl.processed[tp.Partition] = max(a.wl.processed[tp.Partition], off)
	}
}

// rewind seeks back to the first record of recs in each partition, so they
// are fetched again.
func (a *consumerApp) rewind(recs []client.Record) {
	first := map[metadata.TopicPartition]int64{}
	for _, r := range recs {
		tp := metadata.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		if _, ok := first[tp]; !ok {
			first[tp] = r.Offset
		}
	}
	var seek []history.PartitionOffset
	for _, tp := range slices.SortedFunc(maps.Keys(first), metadata.TopicPartition.Compare) {
		_ = a.c.Seek(tp, first[tp])
		seek = append(seek, history.PartitionOffset{TP: HTP(tp), Offset: first[tp]})
	}
	wl := a.wl
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindSeek, Call: wl.now(), Seek: &history.Seek{Offsets: seek}})
	wl.rec.Complete(id, wl.now(), history.OK, history.Result{})
	a.e.AfterFunc(retryBackoff, a.poll)
}

func (a *consumerApp) commit(positions map[metadata.TopicPartition]int64, done func(ok bool)) {
	wl := a.wl
	offsets := map[client.TopicPartition]client.OffsetAndMetadata{}
	var hos []history.PartitionOffset
	for _, tp := range slices.SortedFunc(maps.Keys(positions), metadata.TopicPartition.Compare) {
		offsets[tp] = client.OffsetAndMetadata{Offset: positions[tp], LeaderEpoch: -1}
		hos = append(hos, history.PartitionOffset{TP: HTP(tp), Offset: positions[tp]})
	}
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindCommit, Call: wl.now(), Commit: &history.Commit{Group: GroupID, Offsets: hos}})
	a.c.CommitOffsets(offsets, func(err error) {
		wl.rec.Complete(id, wl.now(), outcomeOf(client.OutcomeOf(err)), history.Result{Error: errText(err)})
		done(err == nil)
	})
}

func (a *consumerApp) recordAutoCommit(offsets map[client.TopicPartition]client.OffsetAndMetadata, err error) {
	wl := a.wl
	var hos []history.PartitionOffset
	for _, tp := range slices.SortedFunc(maps.Keys(offsets), metadata.TopicPartition.Compare) {
		hos = append(hos, history.PartitionOffset{TP: HTP(tp), Offset: offsets[tp].Offset})
	}
	now := wl.now()
	if err == nil && a.unprocessed > 0 {
		a.e.Probe(probe.CommittedBeforeProcessing, GroupID)
	}
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindCommit, Call: now, Commit: &history.Commit{Group: GroupID, Offsets: hos}})
	wl.rec.Complete(id, now, outcomeOf(client.OutcomeOf(err)), history.Result{Error: errText(err)})
}

// writeOutputs writes one output per record (and, if positions is set,
// the offsets, conditional on their versions) in one sink write.
func (a *consumerApp) writeOutputs(recs []client.Record, positions map[metadata.TopicPartition]int64, done func(ok bool)) {
	wl := a.wl
	var puts []sink.Put
	var outs []history.Message
	for _, r := range recs {
		a.outputs++
		key := fmt.Sprintf("out/%s/%06d", a.process, a.outputs)
		src := string(r.Value)
		puts = append(puts, sink.Put{Key: key, Value: []byte(src)})
		outs = append(outs, history.Message{Key: key, Value: key, Source: src})
	}
	var conds []sink.Condition
	var hos []history.PartitionOffset
	for _, tp := range slices.SortedFunc(maps.Keys(positions), metadata.TopicPartition.Compare) {
		k := offsetKey(tp)
		puts = append(puts, sink.Put{Key: k, Value: []byte(strconv.FormatInt(positions[tp], 10))})
		conds = append(conds, sink.IfVersion(k, a.versions[k]))
		hos = append(hos, history.PartitionOffset{TP: HTP(tp), Offset: positions[tp]})
	}
	id := wl.rec.Invoke(history.Op{Process: a.process, Node: ConsumerNode(a.index), Kind: history.KindSinkWrite, Call: wl.now(),
		SinkWrite: &history.SinkWrite{Sink: SinkNode, Outputs: outs, Offsets: hos}})
	a.sink.Write(puts, conds, sinkTimeout, func(r sink.Result, err error) {
		outcome := history.OK
		switch {
		case err == nil:
			for _, tp := range slices.SortedFunc(maps.Keys(positions), metadata.TopicPartition.Compare) {
				a.versions[offsetKey(tp)] = r.Revision
			}
		case sink.Definite(err):
			outcome = history.Fail
		default:
			outcome = history.Info
		}
		wl.rec.Complete(id, wl.now(), outcome, history.Result{Error: errText(err)})
		done(err == nil)
	})
}

// writeOutputsUntilOK retries the outputs until a write succeeds: the
// at-least-once pattern's processing.
func (a *consumerApp) writeOutputsUntilOK(recs []client.Record, then func()) {
	a.writeOutputs(recs, nil, func(ok bool) {
		if ok {
			then()
			return
		}
		a.e.AfterFunc(retryBackoff, func() { a.writeOutputsUntilOK(recs, then) })
	})
}

func (a *consumerApp) Connected(c env.ConnID, peer string, in bool) { a.rt.Connected(c, peer, in) }
func (a *consumerApp) Received(c env.ConnID, f []byte)              { a.rt.Received(c, f) }
func (a *consumerApp) Closed(c env.ConnID)                          { a.rt.Closed(c) }
