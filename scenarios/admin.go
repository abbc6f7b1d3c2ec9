package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/apps"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/broker/sink"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/history"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// admin is the harness's own client node: it creates topics before the
// workload and reads the final state after the drain. Faults never touch
// it, and its requests are raw Kafka requests, independent of the client
// library under test.
type admin struct {
	e       env.Env
	rt      *rpc.Router
	clients map[string]*rpc.Client
	sink    *sink.Client
}

func (a *admin) Start(e env.Env) {
	a.e = e
	a.rt = rpc.NewRouter(e, nil)
	a.clients = map[string]*rpc.Client{}
}
func (a *admin) Connected(c env.ConnID, peer string, inbound bool) {
	if a.sink != nil && a.sink.Connected(c, peer, inbound) {
		return
	}
	a.rt.Connected(c, peer, inbound)
}

func (a *admin) Received(c env.ConnID, f []byte) {
	if a.sink != nil && a.sink.Received(c, f) {
		return
	}
	a.rt.Received(c, f)
}

func (a *admin) Closed(c env.ConnID) {
	if a.sink != nil && a.sink.Closed(c) {
		return
	}
	a.rt.Closed(c)
}

func (a *admin) client(addr string) *rpc.Client {
	cl := a.clients[addr]
	if cl == nil {
		cl = rpc.NewClient(a.rt, addr, rpc.ClientOptions{ClientID: "kafkasim-admin"})
		a.clients[addr] = cl
	}
	return cl
}

// call runs one request to completion on the admin node.
func (c *cluster) call(addr string, req kmsg.Request, budget time.Duration) (kmsg.Response, error) {
	n := c.w.Node(adminNode)
	a := n.Process().(*admin)
	var resp kmsg.Response
	var err error
	done := false
	n.Exec(func() {
		a.client(addr).Do(req, budget, func(r kmsg.Response, e error) { resp, err, done = r, e, true })
	})
	if _, werr := c.w.RunWhile(func() bool { return !done }, budget+time.Second); werr != nil {
		return nil, werr
	}
	if !done {
		return nil, fmt.Errorf("%s to %s: no answer in %v", kmsg.NameForKey(req.Key()), addr, budget)
	}
	return resp, err
}

// createTopics creates the workload's topics and waits until every
// partition has a leader.
func (c *cluster) createTopics(topics []string, budget time.Duration) error {
	deadline := c.w.Now().Add(budget)
	for _, topic := range topics {
		for {
			if c.w.Now() > deadline {
				return fmt.Errorf("bootstrap: topic %q not created within %v", topic, budget)
			}
			req := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, int32(c.s.Cluster.Partitions), int16(c.s.Cluster.ReplicationFactor)
			cfgs := c.s.Cluster.TopicConfigs[topic]
			for _, name := range slices.Sorted(maps.Keys(cfgs)) {
				tc := kmsg.NewCreateTopicsRequestTopicConfig()
				tc.Name, tc.Value = name, kmsg.StringPtr(cfgs[name])
				rt.Configs = append(rt.Configs, tc)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := c.call(c.brokers[0], req, 5*time.Second)
			if c.w.Err() != nil {
				return c.w.Err()
			}
			if err == nil {
				code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
				if code == 0 || code == kerr.TopicAlreadyExists.Code {
					break
				}
			}
			if err := c.w.RunFor(500 * time.Millisecond); err != nil {
				return err
			}
		}
	}
	ok, err := c.w.RunWhile(func() bool { return !c.allLed(topics) }, max(deadline.Sub(c.w.Now()), time.Second))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("bootstrap: topics %v have no leaders within %v", topics, budget)
	}
	return nil
}

// topicID is the topic's id in the controller's image (zero if none).
func (c *cluster) topicID(topic string) [16]byte {
	if img := c.image(); img != nil && img.Topics[topic] != nil {
		return img.Topics[topic].ID
	}
	return [16]byte{}
}

func (c *cluster) allLed(topics []string) bool {
	img := c.image()
	if img == nil {
		return false
	}
	for _, t := range topics {
		top := img.Topics[t]
		if top == nil {
			return false
		}
		for _, p := range top.Partitions {
			if p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

// finalRead reads one partition from offset 0 to its end (the high
// watermark, or the last stable offset for read_committed) from whoever
// leads it, filtering aborted transactions and control batches as a
// read_committed consumer does, and records it as a final-read operation.
// The end must reach want — the offset after the last record a producer
// was told was written — as a consumer waiting for it would: a new
// leader's high watermark lags until its followers fetch, so the read
// waits up to finalReadSettle for it. A read that cannot finish within
// budget is recorded as it got (outcome info, the records read so far, the
// error saying where it stopped): the checkers report final-read-stuck and
// judge what was read.
func (c *cluster) finalRead(rec *history.Recorder, tp metadata.TopicPartition, isolation history.Isolation, output bool, budget time.Duration, want int64) error {
	op := history.Op{
		Process: "final-reader", Node: adminNode, Kind: history.KindFinalRead, Call: int64(c.w.Elapsed()),
		FinalRead: &history.FinalRead{TP: history.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}, Isolation: isolation, From: 0, Output: output},
	}
	id := rec.Invoke(op)
	if isolation == history.ReadCommitted {
		// Let transactions decided before the read finish their markers:
		// a read_committed consumer reading now would wait for them too.
		if err := c.awaitStable(tp, finalReadSettle); err != nil {
			return err
		}
	}
	var out []history.Record
	offset, end := int64(0), int64(-1)
	deadline := c.w.Now().Add(budget)
	settle := c.w.Now().Add(finalReadSettle)
	aborted := newAbortFilter()
	stuck := func(err error) error {
		rec.Complete(id, int64(c.w.Elapsed()), history.Info, history.Result{Records: out, Error: err.Error()})
		return err
	}
	for end < 0 || offset < end || (end < want && c.w.Now() < settle) {
		if c.w.Now() > deadline {
			return stuck(fmt.Errorf("final read of %v stuck at offset %d (end %d) after %v", tp, offset, end, budget))
		}
		if end >= 0 && offset >= end {
			// Caught up with an end short of what was acknowledged: wait
			// for the high watermark, then ask again.
			if err := c.w.RunFor(200 * time.Millisecond); err != nil {
				return err
			}
		}
		p, ok := c.partition(tp)
		if !ok || p.Leader < 0 {
			if err := c.w.RunFor(500 * time.Millisecond); err != nil {
				return err
			}
			continue
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 0, 1<<24
		if isolation == history.ReadCommitted {
			req.IsolationLevel = 1
		}
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = tp.Topic, c.topicID(tp.Topic) // by id from Fetch v13
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, offset, 1<<24
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.call(c.brokers[p.Leader], req, 5*time.Second)
		if c.w.Err() != nil {
			return c.w.Err()
		}
		if err != nil || resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			if err := c.w.RunFor(500 * time.Millisecond); err != nil {
				return err
			}
			continue
		}
		pr := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		end = pr.HighWatermark
		if isolation == history.ReadCommitted {
			end = pr.LastStableOffset
		}
		aborted.add(pr.AbortedTransactions)
		batches, err := record.Split(pr.RecordBatches)
		if err != nil {
			return stuck(fmt.Errorf("final read of %v: %w", tp, err))
		}
		for _, b := range batches {
			next := b.NextOffset()
			if b.BaseOffset() >= end {
				break
			}
			skip := isolation == history.ReadCommitted && aborted.skip(b)
			if !skip && !b.IsControl() {
				recs, err := b.DecodeRecords()
				if err != nil {
					return stuck(fmt.Errorf("final read of %v at %d: %w", tp, b.BaseOffset(), err))
				}
				for _, r := range recs {
					out = append(out, history.Record{Offset: b.BaseOffset() + int64(r.OffsetDelta), Message: decodeMessage(r)})
				}
			}
			offset = next
		}
		if len(batches) == 0 && offset < end {
			return stuck(fmt.Errorf("final read of %v: no progress at offset %d below end %d", tp, offset, end))
		}
	}
	rec.Complete(id, int64(c.w.Elapsed()), history.OK, history.Result{Records: out})
	return nil
}

// finalReadSettle bounds how long a read_committed final read waits for
// a partition's last stable offset to reach its high watermark; a
// transaction still open then (hanging) keeps its records, and every
// later one, out of the read.
const finalReadSettle = 10 * time.Second

// awaitStable waits, up to budget, until tp has no transaction in doubt:
// its last stable offset equals its high watermark.
func (c *cluster) awaitStable(tp metadata.TopicPartition, budget time.Duration) error {
	deadline := c.w.Now().Add(budget)
	for c.w.Now() < deadline {
		if p, ok := c.partition(tp); ok && p.Leader >= 0 {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = -1, 0, 0, 1, 1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = tp.Topic, c.topicID(tp.Topic) // by id from Fetch v13
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, 0, 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := c.call(c.brokers[p.Leader], req, 5*time.Second)
			if c.w.Err() != nil {
				return c.w.Err()
			}
			if err == nil {
				if pr := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; pr.ErrorCode == 0 && pr.LastStableOffset >= pr.HighWatermark {
					return nil
				}
			}
		}
		if err := c.w.RunFor(200 * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// abortFilter is a read_committed consumer's bookkeeping: a producer's
// batches are skipped from the first offset of an aborted transaction until
// its abort marker.
type abortFilter struct {
	pending []kmsg.FetchResponseTopicPartitionAbortedTransaction // by first offset
	active  map[int64]bool
}

func newAbortFilter() *abortFilter { return &abortFilter{active: map[int64]bool{}} }

func (f *abortFilter) add(ts []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	for _, t := range ts {
		if !slices.ContainsFunc(f.pending, func(p kmsg.FetchResponseTopicPartitionAbortedTransaction) bool {
			return p.ProducerID == t.ProducerID && p.FirstOffset == t.FirstOffset
		}) {
			f.pending = append(f.pending, t)
		}
	}
	slices.SortFunc(f.pending, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return int(a.FirstOffset - b.FirstOffset)
	})
}

func (f *abortFilter) skip(b record.Batch) bool {
	for len(f.pending) > 0 && f.pending[0].FirstOffset <= b.LastOffset() {
		f.active[f.pending[0].ProducerID] = true
		f.pending = f.pending[1:]
	}
	if b.IsControl() {
		if m, err := b.EndTxnMarker(); err == nil && !m.Commit() {
			delete(f.active, b.ProducerID())
		}
		return true
	}
	return b.IsTransactional() && f.active[b.ProducerID()]
}

// Messages travel as key = the message key, value = the value, and a
// header "source" naming the input value an output derives from.
func decodeMessage(r record.Record) history.Message {
	m := history.Message{Key: string(r.Key), Value: string(r.Value)}
	for _, h := range r.Headers {
		if h.Key == "source" {
			m.Source = string(h.Value)
		}
	}
	return m
}

// finalReadSink reads every output and stored offset from the sink.
func (c *cluster) finalReadSink(rec *history.Recorder, budget time.Duration) error {
	n := c.w.Node(adminNode)
	a := n.Process().(*admin)
	if a.sink == nil {
		a.sink = sink.NewClient(a.e, sinkNode, sink.DefaultClientOptions)
	}
	id := rec.Invoke(history.Op{Process: "final-reader", Node: adminNode, Kind: history.KindFinalRead, Call: int64(c.w.Elapsed()),
		FinalRead: &history.FinalRead{Sink: sinkNode, Output: true}})
	var entries []sink.Entry
	after := ""
	deadline := c.w.Now().Add(budget)
	for {
		var res sink.ScanResult
		var err error
		done := false
		n.Exec(func() {
			a.sink.Scan(sink.ScanRange{After: after, Limit: 500}, 5*time.Second, func(r sink.ScanResult, e error) { res, err, done = r, e, true })
		})
		if _, werr := c.w.RunWhile(func() bool { return !done }, 10*time.Second); werr != nil {
			return werr
		}
		if !done || err != nil {
			if c.w.Now() > deadline {
				err := fmt.Errorf("final read of the sink failed after %v: %v", budget, err)
				rec.Complete(id, int64(c.w.Elapsed()), history.Info, history.Result{Error: err.Error()})
				return err
			}
			if err := c.w.RunFor(500 * time.Millisecond); err != nil {
				return err
			}
			continue
		}
		entries = append(entries, res.Entries...)
		if !res.More || len(res.Entries) == 0 {
			break
		}
		after = res.Entries[len(res.Entries)-1].Key
	}
	var items []history.Message
	var offsets []history.PartitionOffset
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Key, "out/"):
			items = append(items, history.Message{Key: e.Key, Value: e.Key, Source: string(e.Value)})
		case strings.HasPrefix(e.Key, "offset/"):
			parts := strings.Split(e.Key, "/")
			p, _ := strconv.ParseInt(parts[len(parts)-1], 10, 32)
			off, _ := strconv.ParseInt(string(e.Value), 10, 64)
			offsets = append(offsets, history.PartitionOffset{TP: history.TopicPartition{Topic: parts[1], Partition: int32(p)}, Offset: off})
		}
	}
	rec.Complete(id, int64(c.w.Elapsed()), history.OK, history.Result{Items: items, Offsets: offsets})
	return nil
}

// finalOffsets reads group's committed offsets for the input partitions
// after the drain, as a read_committed consumer's committed() does
// (OffsetFetch with require_stable, KIP-447), and records them as the
// final offset fetch: where the group would resume, judged with every
// commit (one register per partition) and against the transactions that
// committed them (torn-transaction). A coordinator that keeps failing the
// read leaves it indefinite.
func (c *cluster) finalOffsets(rec *history.Recorder, group string, tps []metadata.TopicPartition, budget time.Duration) error {
	id := rec.Invoke(history.Op{Process: "final-reader", Node: adminNode, Kind: history.KindOffsetFetch, Call: int64(c.w.Elapsed()),
		OffsetFetch: &history.OffsetFetch{Group: group, Final: true}})
	deadline := c.w.Now().Add(budget)
	var why error
	for c.w.Now() <= deadline {
		if why != nil {
			if err := c.w.RunFor(200 * time.Millisecond); err != nil {
				return err
			}
		}
		coordinator, ok := c.Resolve(faults.GroupCoordinator(group), nil)
		if !ok {
			why = fmt.Errorf("group %s has no coordinator", group)
			continue
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = group, true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = tps[0].Topic
		for _, tp := range tps {
			rt.Partitions = append(rt.Partitions, tp.Partition)
		}
		req.Topics = append(req.Topics, rt)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = rt.Topic, rt.Partitions
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g) // v8+: the same ask, batched
		resp, err := c.call(coordinator, req, 5*time.Second)
		if c.w.Err() != nil {
			return c.w.Err()
		}
		if err != nil {
			why = err
			continue
		}
		got, err := offsetFetchResult(resp.(*kmsg.OffsetFetchResponse), group)
		if err != nil {
			why = err
			continue
		}
		var offs []history.PartitionOffset
		for _, tp := range tps {
			off, ok := got[tp.Partition]
			if !ok || off < 0 {
				off = history.NoOffset
			}
			offs = append(offs, history.PartitionOffset{TP: apps.HTP(tp), Offset: off})
		}
		rec.Complete(id, int64(c.w.Elapsed()), history.OK, history.Result{Offsets: offs})
		return nil
	}
	err := fmt.Errorf("final offset fetch of group %s failed after %v: %v", group, budget, why)
	rec.Complete(id, int64(c.w.Elapsed()), history.Info, history.Result{Error: err.Error()})
	return err
}

// offsetFetchResult reads the partitions' offsets from either shape of an
// OffsetFetch answer (per group from v8), or the first error.
func offsetFetchResult(r *kmsg.OffsetFetchResponse, group string) (map[int32]int64, error) {
	code, topics := r.ErrorCode, r.Topics
	if r.Version >= 8 {
		if len(r.Groups) != 1 || r.Groups[0].Group != group {
			return nil, fmt.Errorf("OffsetFetch: no answer for group %s", group)
		}
		code = r.Groups[0].ErrorCode
		topics = nil
		for _, t := range r.Groups[0].Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p.Partition, p.Offset, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			topics = append(topics, rt)
		}
	}
	if code != 0 {
		return nil, fmt.Errorf("OffsetFetch: %w", kerr.ErrorForCode(code))
	}
	out := map[int32]int64{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return nil, fmt.Errorf("OffsetFetch %s-%d: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}
