package client_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnOptions(id string) client.ProducerOptions {
	o := producerOptions()
	o.ClientID = id
	o.TransactionalID = id
	o.TransactionTimeout = 20 * time.Second
	o.MaxBlock = 30 * time.Second
	o.Partitioner = client.PartitionerManual
	return o
}

// await starts an asynchronous call on node and runs the world until it
// reports.
func (w *world) await(node, what string, start func(done func(error))) error {
	w.t.Helper()
	var err error
	fin := false
	w.exec(node, func(*app) { start(func(e error) { err, fin = e, true }) })
	w.runUntil(func() bool { return fin }, 2*time.Minute, what)
	return err
}

// readAll reads every record of tps a consumer at isolation level iso
// sees, from the start, until a second passes without a new one.
func (w *world) readAll(node string, iso client.IsolationLevel, tps ...client.TopicPartition) []client.Record {
	w.t.Helper()
	o := consumerOptions("")
	o.IsolationLevel = iso
	c := w.newConsumer(node, o)
	w.exec(node, func(*app) { c.Assign(tps) })
	var got []client.Record
	for quiet := 0; quiet < 5; {
		n := len(got)
		got = append(got, w.pollUntil(node, c, 1, 200*time.Millisecond)...)
		if len(got) == n {
			quiet++
		} else {
			quiet = 0
		}
	}
	w.exec(node, func(*app) { c.Close(func() {}) })
	return got
}

func sources(recs []client.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
		for _, h := range r.Headers {
			if h.Key == "source" {
				out[i] = string(h.Value)
			}
		}
	}
	return out
}

// A producer that a new instance with the same transactional.id has
// initialized is a zombie: its open transaction was aborted by the new
// instance's InitProducerId, and everything it tries afterwards is
// refused. Its commit is a definite failure, and the producer is fatal.
func TestZombieProducerIsFencedOnceANewInstanceInitializes(t *testing.T) {
	w := newWorld(t, 41, config.Default(), "app-1", "app-2")
	w.createTopic("orders", 1, 3)
	orders := client.TopicPartition{Topic: "orders", Partition: 0}

	zombie := w.newProducer("app-1", txnOptions("billing"))
	require.NoError(t, w.await("app-1", "zombie init", zombie.InitTransactions))
	w.exec("app-1", func(*app) { require.NoError(t, zombie.BeginTransaction()) })
	s := w.sendAndWait("app-1", zombie, client.Record{Topic: "orders", Value: []byte("zombie-1")})
	require.Equal(t, client.OK, s.results["zombie-1"].Outcome, "appended, in a transaction still open")

	fresh := w.newProducer("app-2", txnOptions("billing"))
	require.NoError(t, w.await("app-2", "fresh init", fresh.InitTransactions))
	zpid, zepoch := zombie.ProducerID()
	fpid, fepoch := fresh.ProducerID()
	require.Equal(t, zpid, fpid, "one transactional.id, one producer id")
	require.Greater(t, fepoch, zepoch, "the new instance's epoch fences the old one")

	err := w.await("app-1", "zombie commit", zombie.CommitTransaction)
	require.ErrorIs(t, err, kerr.ProducerFenced)
	require.Equal(t, client.Fail, client.OutcomeOf(err), "a fenced commit certainly did not commit")
	require.ErrorIs(t, zombie.Err(), kerr.ProducerFenced, "fenced is fatal")
	require.Equal(t, "Fatal", zombie.TransactionState())
	s = w.sendAndWait("app-1", zombie, client.Record{Topic: "orders", Value: []byte("zombie-2")})
	require.Equal(t, client.Fail, s.results["zombie-2"].Outcome)

	w.exec("app-2", func(*app) { require.NoError(t, fresh.BeginTransaction()) })
	s = w.sendAndWait("app-2", fresh, client.Record{Topic: "orders", Value: []byte("fresh-1")})
	require.Equal(t, client.OK, s.results["fresh-1"].Outcome)
	require.NoError(t, w.await("app-2", "fresh commit", fresh.CommitTransaction))

	require.Equal(t, []string{"fresh-1"}, values(w.readAll("admin", client.ReadCommitted, orders)))
	require.Equal(t, []string{"zombie-1", "fresh-1"}, values(w.readAll("admin", client.ReadUncommitted, orders)),
		"the zombie's record is in the log, aborted")
}

// Records of an aborted transaction stay in the log: read_uncommitted
// consumers return them, read_committed consumers never do, and see a
// committed transaction whole once it is committed.
func TestReadCommittedNeverReturnsAbortedRecords(t *testing.T) {
	w := newWorld(t, 42, config.Default())
	w.createTopic("ledger", 2, 3)
	tps := []client.TopicPartition{{Topic: "ledger", Partition: 0}, {Topic: "ledger", Partition: 1}}
	p := w.newProducer("client", txnOptions("ledger-writer"))
	require.NoError(t, w.await("client", "init", p.InitTransactions))
	txn := func(commit bool, vals ...string) {
		t.Helper()
		w.exec("client", func(*app) { require.NoError(t, p.BeginTransaction()) })
		var recs []client.Record
		for i, v := range vals {
			recs = append(recs, client.Record{Topic: "ledger", Partition: int32(i % 2), Value: []byte(v)})
		}
		s := w.sendAndWait("client", p, recs...)
		for _, v := range vals {
			require.Equal(t, client.OK, s.results[v].Outcome, v)
		}
		end := p.AbortTransaction
		if commit {
			end = p.CommitTransaction
		}
		require.NoError(t, w.await("client", "end", end))
	}
	txn(true, "x1", "x2", "x3", "x4")
	txn(false, "y1", "y2", "y3", "y4")
	txn(true, "z1", "z2")

	committed := values(w.readAll("admin", client.ReadCommitted, tps...))
	require.ElementsMatch(t, []string{"x1", "x2", "x3", "x4", "z1", "z2"}, committed)
	all := values(w.readAll("admin", client.ReadUncommitted, tps...))
	require.ElementsMatch(t, []string{"x1", "x2", "x3", "x4", "y1", "y2", "y3", "y4", "z1", "z2"}, all)

	// An abortable error: a send to a partition the topic does not have
	// fails, the commit is refused, and only an abort goes on.
	w.exec("client", func(*app) { require.NoError(t, p.BeginTransaction()) })
	s := w.sendAndWait("client", p, client.Record{Topic: "ledger", Partition: 0, Value: []byte("w1")},
		client.Record{Topic: "ledger", Partition: 7, Value: []byte("w2")})
	require.Equal(t, client.Fail, s.results["w2"].Outcome)
	err := w.await("client", "commit", p.CommitTransaction)
	require.Error(t, err)
	require.Equal(t, client.Fail, client.OutcomeOf(err), "the commit was never requested")
	require.NoError(t, p.Err(), "abortable, not fatal")
	require.Equal(t, "AbortableError", p.TransactionState())
	require.NoError(t, w.await("client", "abort", p.AbortTransaction))
	txn(true, "v1")
	require.ElementsMatch(t, []string{"x1", "x2", "x3", "x4", "z1", "z2", "v1"}, values(w.readAll("admin", client.ReadCommitted, tps...)))
}

// processor is a consume-transform-produce application: a group consumer
// (read_committed) and a transactional producer whose transactional.id
// survives restarts. Each poll's records become one transaction: an output
// per input (header "source" names it), the input offsets, commit. On an
// abortable error it aborts and rewinds to the committed offsets; on a
// fatal one it starts a new producer.
type processor struct {
	e       env.Env
	rt      *rpc.Router
	id      string
	c       *client.Consumer
	p       *client.Producer
	outputs int
	stats   *processorStats
}

type processorStats struct {
	commits, aborts, unknown, incarnations int
}

func (a *processor) Start(e env.Env) {
	a.e, a.rt = e, rpc.NewRouter(e, nil)
	a.stats.incarnations++
	o := consumerOptions("etl")
	o.ClientID = a.id
	o.IsolationLevel = client.ReadCommitted
	o.SessionTimeout, o.HeartbeatInterval, o.MaxPollInterval = 3*time.Second, 500*time.Millisecond, 10*time.Second
	c, err := client.NewConsumer(e, a.rt, o)
	if err != nil {
		panic(err)
	}
	a.c = c
	if err := c.Subscribe([]string{"input"}, client.RebalanceListener{}); err != nil {
		panic(err)
	}
	a.newProducer()
}

func (a *processor) newProducer() {
	o := txnOptions(a.id)
	o.RequestTimeout, o.DeliveryTimeout = time.Second, 5*time.Second
	p, err := client.NewProducer(a.e, a.rt, o)
	if err != nil {
		panic(err)
	}
	a.p = p
	p.InitTransactions(func(err error) {
		if err != nil {
			a.e.AfterFunc(100*time.Millisecond, a.restartProducer)
			return
		}
		a.poll()
	})
}

func (a *processor) restartProducer() {
	a.p.Close()
	a.newProducer()
}

func (a *processor) poll() {
	a.c.Poll(20, 200*time.Millisecond, func(recs []client.Record, err error) {
		if len(recs) == 0 {
			a.e.AfterFunc(time.Millisecond, a.poll)
			return
		}
		a.process(recs)
	})
}

func (a *processor) process(recs []client.Record) {
	if err := a.p.BeginTransaction(); err != nil {
		panic(err)
	}
	offsets := map[client.TopicPartition]client.OffsetAndMetadata{}
	for _, r := range recs {
		a.outputs++
		a.p.Send(client.Record{Topic: "output", Partition: r.Partition, Key: r.Key,
			Value:   []byte(fmt.Sprintf("%s/%d/%d", a.id, a.stats.incarnations, a.outputs)),
			Headers: []record.RecordHeader{{Key: "source", Value: r.Value}}}, func(client.SendResult) {})
		offsets[client.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = client.OffsetAndMetadata{Offset: r.Offset + 1, LeaderEpoch: -1}
	}
	// The work takes a while: a crash now leaves outputs in the log.
	a.e.AfterFunc(50*time.Millisecond, func() { a.commit(offsets) })
}

func (a *processor) commit(offsets map[client.TopicPartition]client.OffsetAndMetadata) {
	a.p.SendOffsetsToTransaction(offsets, a.c.GroupMetadata(), func(err error) {
		if err != nil {
			a.abort()
			return
		}
		a.p.CommitTransaction(func(err error) {
			switch {
			case err == nil:
				a.stats.commits++
				a.poll()
			case client.OutcomeOf(err) == client.Info || a.p.Err() != nil:
				a.stats.unknown++
				a.restartProducer() // a new InitProducerId settles the transaction
				a.rewind()
			default:
				a.abort()
			}
		})
	})
}

func (a *processor) abort() {
	a.stats.aborts++
	a.p.AbortTransaction(func(err error) {
		if err != nil {
			a.restartProducer()
		}
		a.rewind()
	})
}

// rewind seeks to the committed offsets: the aborted transaction's inputs
// are read again.
func (a *processor) rewind() {
	tps := a.c.Assignment()
	a.c.Committed(tps, func(got map[client.TopicPartition]client.OffsetAndMetadata, err error) {
		if err != nil {
			a.e.AfterFunc(100*time.Millisecond, a.rewind)
			return
		}
		for _, tp := range tps {
			if o, ok := got[tp]; ok {
				_ = a.c.Seek(tp, o.Offset)
			} else {
				_ = a.c.SeekToReset(tp, client.OffsetResetEarliest)
			}
		}
		if a.p.TransactionState() == "Ready" {
			a.poll()
		}
	})
}

func (a *processor) Connected(c env.ConnID, peer string, in bool) { a.rt.Connected(c, peer, in) }
func (a *processor) Received(c env.ConnID, f []byte)              { a.rt.Received(c, f) }
func (a *processor) Closed(c env.ConnID)                          { a.rt.Closed(c) }

// committedOffsets asks the group coordinator for a group's committed
// offsets with a raw OffsetFetch (require_stable).
func (w *world) committedOffsets(group string, tps []client.TopicPartition) map[client.TopicPartition]int64 {
	w.t.Helper()
	out := map[client.TopicPartition]int64{}
	for _, b := range w.brokers {
		br := w.broker(b)
		if br == nil {
			continue
		}
		if _, ok := br.Group(group); !ok {
			continue
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = true
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic = tps[0].Topic
		for _, tp := range tps {
			gt.Partitions = append(gt.Partitions, tp.Partition)
		}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := w.call(b, req).(*kmsg.OffsetFetchResponse)
		require.Len(w.t, resp.Groups, 1, "OffsetFetch v8+ answers by group")
		for _, t := range resp.Groups[0].Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && p.Offset >= 0 {
					out[client.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
				}
			}
		}
	}
	return out
}

// Consume-transform-produce, exactly once: a processor crashes again and
// again mid-stream — with transactions open, outputs written, offsets
// sent — and restarts with its transactional.id, fencing its previous
// incarnation and aborting what it left open. The output, read
// read_committed, holds every input exactly once; read_uncommitted shows
// the aborted attempts.
func TestConsumeTransformProduceWithCrashingProcessorGivesEveryInputExactlyOnce(t *testing.T) {
	// Every seed must give every input exactly once; some seed of the
	// first 30 must also have a crash land inside a transaction that wrote
	// outputs (a few of every dozen do), so that the aborted attempts are
	// there to be skipped.
	for seed := uint64(1); ; seed++ {
		if crashingProcessor(t, seed) {
			return
		}
		require.Less(t, seed, uint64(30), "no crash of seeds 1-30 left aborted outputs behind")
	}
}

// crashingProcessor runs the story on seed and reports whether the crashes
// left aborted outputs in the log.
func crashingProcessor(t *testing.T, seed uint64) bool {
	w := newWorld(t, seed, config.Default())
	w.createTopic("input", 2, 3)
	w.createTopic("output", 2, 3)
	inputs := []client.TopicPartition{{Topic: "input", Partition: 0}, {Topic: "input", Partition: 1}}
	outputs := []client.TopicPartition{{Topic: "output", Partition: 0}, {Topic: "output", Partition: 1}}
	const n = 200
	stats := &processorStats{}
	node := w.w.AddNode("processor", func() env.Process { return &processor{id: "etl-0", stats: stats} })
	node.Start()

	p := w.newProducer("client", producerOptions())
	s := newSends()
	for i := range n {
		w.w.After(time.Duration(i)*100*time.Millisecond, func() {
			w.w.Node("client").Exec(func() { s.send(p, client.Record{Topic: "input", Value: value(i)}) })
		})
	}
	// Crash the processor every few seconds while the inputs flow.
	for _, at := range []time.Duration{2300, 6900, 11100, 15700} {
		w.w.After(at*time.Millisecond, func() { node.Crash() })
		w.w.After((at+400)*time.Millisecond, func() { node.Start() })
	}
	w.runUntil(func() bool { return len(s.order) == n && s.done() }, time.Minute, "inputs sent")
	for _, v := range s.order {
		require.Equal(t, client.OK, s.results[v].Outcome, v)
	}
	ends := map[client.TopicPartition]int64{}
	for _, tp := range inputs {
		ends[tp] = w.logEnd(tp)
	}
	for deadline := w.w.Now().Add(2 * time.Minute); ; {
		got := w.committedOffsets("etl", inputs)
		if got[inputs[0]] == ends[inputs[0]] && got[inputs[1]] == ends[inputs[1]] {
			break
		}
		require.True(t, w.w.Now() < deadline, "the group never committed every input: %v of %v", got, ends)
		w.run(time.Second)
	}
	require.Equal(t, 5, stats.incarnations)
	require.Positive(t, stats.commits)

	committed := sources(w.readAll("admin", client.ReadCommitted, outputs...))
	want := valueRange(0, n)
	slices.Sort(committed)
	require.Equal(t, want, committed, "seed %d: every input exactly once in the committed output", seed)
	all := sources(w.readAll("admin", client.ReadUncommitted, outputs...))
	t.Logf("seed %d: commits %d, aborts %d, unknown %d; %d outputs in the log, %d committed", seed, stats.commits, stats.aborts, stats.unknown, len(all), len(committed))
	return len(all) > n
}
