// Package historytest generates histories of a correct Kafka-style log for
// tests and benchmarks, and injects single, named defects into them.
//
// The generator simulates one linearizable log per partition: each client
// runs its operations one after another; every operation takes effect at a
// point between its call and its return, and those points are applied in
// time order. Randomness comes only from the Choices passed in (a
// *rand.Rand of math/rand/v2, or a rapid adapter in tests), so a history is a
// pure function of its config and choices.
package historytest

import (
	"fmt"
	"slices"
	"sort"

	"github.com/kafkasim/kafkasim/history"
)

// Choices is a source of random choices: IntN returns a value in [0, n).
type Choices interface {
	IntN(n int) int
}

// LogConfig shapes a generated produce/poll history.
type LogConfig struct {
	Partitions int // topic "t" partitions 0..Partitions-1
	Clients    int // concurrent clients, each running its ops in sequence
	Ops        int // client operations to generate (sends and polls)

	PollPercent       int // share of operations that are polls
	IndefinitePercent int // sends whose outcome is info (applied or not)
	FailPercent       int // sends that definitely fail (not applied)
	TxnPercent        int // sends made in transactions of 1-3 sends
	CommittedPercent  int // clients whose polls are read_committed
	SeekPercent       int // polls preceded by a seek to a random offset
	BatchMax          int // messages per send, at least 1

	LatencyMax int64 // max ns from call to effect and from effect to return
	GapMax     int64 // max ns a client idles between operations
}

// DefaultLogConfig is a moderately concurrent mix of every feature.
func DefaultLogConfig(ops, partitions, clients int) LogConfig {
	return LogConfig{Partitions: partitions, Clients: clients, Ops: ops, PollPercent: 45,
		IndefinitePercent: 5, FailPercent: 3, TxnPercent: 15, CommittedPercent: 50, SeekPercent: 3,
		BatchMax: 3, LatencyMax: 2000, GapMax: 500}
}

// Topic is the topic the log generator writes.
const Topic = "t"

type txnState struct {
	id        int // op index in gen.ops
	decided   bool
	committed bool
	failed    bool // a send failed definitely: must abort
}

type entry struct {
	offset int64
	value  string
	marker bool
	txn    *txnState
}

type pending struct {
	seq      int
	op       history.Op
	effectAt int64
	apply    func(g *gen) // computes results at the effect point
}

type gen struct {
	cfg      LogConfig
	c        Choices
	logs     [][]entry
	ops      []*pending
	nextVal  int
	position map[string][]int64 // client → partition → next offset
}

func (g *gen) rand(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return int64(g.c.IntN(int(n)))
}

func (g *gen) pct(p int) bool { return p > 0 && g.c.IntN(100) < p }

func (g *gen) value() string {
	g.nextVal++
	return fmt.Sprintf("v%d", g.nextVal)
}

func (g *gen) end(p int) int64 {
	l := g.logs[p]
	if len(l) == 0 {
		return 0
	}
	return l[len(l)-1].offset + 1
}

func (g *gen) add(op history.Op, effectAt int64, apply func(*gen)) *pending {
	p := &pending{seq: len(g.ops), op: op, effectAt: effectAt, apply: apply}
	g.ops = append(g.ops, p)
	return p
}

// Log generates a correct history: every read is consistent with a single
// append-only log per partition, and a final read_committed read of each
// partition (marked as the output) follows the last operation.
func Log(cfg LogConfig, c Choices) history.History {
	if cfg.Partitions < 1 || cfg.Clients < 1 || cfg.BatchMax < 1 || cfg.LatencyMax < 1 {
		panic(fmt.Sprintf("historytest: config needs partitions, clients, batch and latency ≥ 1: %+v", cfg))
	}
	g := &gen{cfg: cfg, c: c, logs: make([][]entry, cfg.Partitions), position: map[string][]int64{}}
	clock := make([]int64, cfg.Clients)
	for n := 0; n < cfg.Ops; {
		ci := c.IntN(cfg.Clients)
		proc := fmt.Sprintf("c%d", ci)
		node := fmt.Sprintf("n%d", ci%3)
		t := clock[ci] + g.rand(cfg.GapMax)
		if g.pct(cfg.PollPercent) {
			t = g.poll(proc, node, t)
			n++
		} else if g.pct(cfg.TxnPercent) {
			var k int
			t, k = g.txn(proc, node, t)
			n += k
		} else {
			t = g.send(proc, node, t, nil)
			n++
		}
		clock[ci] = t
	}
	// Apply effects in time order; ties by creation order.
	order := slices.Clone(g.ops)
	slices.SortFunc(order, func(a, b *pending) int {
		if a.effectAt != b.effectAt {
			if a.effectAt < b.effectAt {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	last := int64(0)
	for _, p := range order {
		if p.apply != nil {
			p.apply(g)
		}
		last = max(last, p.effectAt, p.op.Call)
		if p.op.Return != history.Never {
			last = max(last, p.op.Return)
		}
	}
	for p := 0; p < cfg.Partitions; p++ {
		call := last + 1 + int64(p)*2
		f := &history.FinalRead{TP: history.TopicPartition{Topic: Topic, Partition: int32(p)},
			Isolation: history.ReadCommitted, From: 0, Output: true}
		for _, e := range g.logs[p] {
			if !e.marker && (e.txn == nil || e.txn.committed) {
				f.Records = append(f.Records, history.Record{Offset: e.offset, Message: history.Message{Value: e.value}})
			}
		}
		g.add(history.Op{Process: "final", Node: "n0", Kind: history.KindFinalRead, Call: call, Return: call + 1,
			Outcome: history.OK, FinalRead: f}, call, nil)
	}
	return g.history()
}

func (g *gen) history() history.History {
	sorted := slices.Clone(g.ops)
	slices.SortFunc(sorted, func(a, b *pending) int {
		if a.op.Call != b.op.Call {
			if a.op.Call < b.op.Call {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	ids := make(map[int]history.ID, len(sorted))
	for i, p := range sorted {
		ids[p.seq] = history.ID(i + 1)
	}
	h := make(history.History, len(sorted))
	for i, p := range sorted {
		op := p.op
		op.ID = ids[p.seq]
		if op.Send != nil && op.Send.Txn != 0 {
			s := *op.Send
			s.Txn = ids[int(s.Txn)-1]
			op.Send = &s
		}
		h[i] = op
	}
	return h
}

func (g *gen) latency() int64 { return 1 + g.rand(g.cfg.LatencyMax) }

// send generates one send at time t (in txn tx if not nil) and returns when
// the client is free again.
func (g *gen) send(proc, node string, t int64, tx *txnState) int64 {
	p := g.c.IntN(g.cfg.Partitions)
	n := 1 + g.c.IntN(g.cfg.BatchMax)
	msgs := make([]history.Message, n)
	for i := range msgs {
		msgs[i] = history.Message{Key: fmt.Sprintf("k%d", g.c.IntN(8)), Value: g.value()}
	}
	effect := t + g.latency()
	ret := effect + g.latency()
	s := &history.Send{TP: history.TopicPartition{Topic: Topic, Partition: int32(p)}, Messages: msgs, Offset: history.NoOffset}
	if tx != nil {
		s.Txn = history.ID(tx.id + 1) // creation index + 1; remapped in history()
	}
	op := history.Op{Process: proc, Node: node, Kind: history.KindSend, Call: t, Return: ret, Outcome: history.OK, Send: s}
	applied := true
	acked := true
	switch {
	case g.pct(g.cfg.FailPercent):
		op.Outcome, op.Error, applied, acked = history.Fail, "NOT_ENOUGH_REPLICAS", false, false
		if tx != nil {
			tx.failed = true
		}
	case g.pct(g.cfg.IndefinitePercent):
		op.Outcome, op.Error, acked = history.Info, "request timed out", false
		applied = g.c.IntN(2) == 0
		if tx != nil && !applied {
			tx.failed = true // a transaction missing a write must abort
		}
		if applied && g.c.IntN(2) == 0 {
			effect = ret + g.latency() // lands after the client gave up
		}
		if g.c.IntN(3) == 0 {
			op.Return = history.Never
		}
	}
	pp := g.add(op, effect, nil)
	if applied {
		pp.apply = func(g *gen) {
			base := g.end(p) + g.rand(2) // an occasional gap, as control records leave
			for i, m := range msgs {
				g.logs[p] = append(g.logs[p], entry{offset: base + int64(i), value: m.Value, txn: tx})
			}
			if acked {
				s.Offset = base
			}
		}
	}
	if op.Return == history.Never {
		return effect + g.latency()
	}
	return ret
}

// txn generates a transaction of 1-3 sends and returns the time the client
// is free again and the number of sends.
func (g *gen) txn(proc, node string, t int64) (int64, int) {
	tx := &txnState{id: len(g.ops)}
	tp := &history.Txn{TransactionalID: "tx-" + proc}
	top := g.add(history.Op{Process: proc, Node: node, Kind: history.KindTxn, Call: t, Outcome: history.OK, Txn: tp}, 0, nil)
	k := 1 + g.c.IntN(3)
	touched := map[int]bool{}
	now := t
	for i := 0; i < k; i++ {
		now = g.send(proc, node, now+g.rand(g.cfg.GapMax), tx)
		touched[int(g.ops[len(g.ops)-1].op.Send.TP.Partition)] = true
	}
	endCall := now + g.rand(g.cfg.GapMax)
	decide := endCall + g.latency()
	ret := decide + g.latency()
	tp.EndCall = endCall
	top.op.Return = ret
	top.effectAt = decide
	commit := g.c.IntN(4) != 0
	switch {
	case g.c.IntN(8) == 0:
		top.op.Outcome, top.op.Error = history.Info, "coordinator unreachable"
	case commit:
		top.op.Outcome = history.OK
	default:
		top.op.Outcome = history.Fail
	}
	parts := make([]int, 0, len(touched))
	for p := range touched {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	top.apply = func(g *gen) {
		tx.decided = true
		tx.committed = commit && !tx.failed
		for _, p := range parts {
			g.logs[p] = append(g.logs[p], entry{offset: g.end(p), marker: true, txn: tx})
		}
	}
	if tx.failed && top.op.Outcome == history.OK {
		top.op.Outcome, top.op.Error = history.Fail, "abortable error"
	}
	return ret, k
}

// poll generates an optional seek and one poll at time t.
func (g *gen) poll(proc, node string, t int64) int64 {
	pos := g.position[proc]
	if pos == nil {
		pos = make([]int64, g.cfg.Partitions)
		g.position[proc] = pos
	}
	parts := []int{g.c.IntN(g.cfg.Partitions)}
	if g.cfg.Partitions > 1 && g.c.IntN(4) == 0 {
		q := g.c.IntN(g.cfg.Partitions)
		if q != parts[0] {
			parts = append(parts, q)
		}
	}
	slices.Sort(parts)
	var ci int
	fmt.Sscanf(proc, "c%d", &ci)
	committed := (ci*37+11)%100 < g.cfg.CommittedPercent // a consumer's isolation level is fixed
	iso := history.ReadUncommitted
	if committed {
		iso = history.ReadCommitted
	}
	if g.pct(g.cfg.SeekPercent) {
		p := parts[0]
		seek := &history.Seek{Offsets: []history.PartitionOffset{{TP: history.TopicPartition{Topic: Topic, Partition: int32(p)}}}}
		sp := g.add(history.Op{Process: proc, Node: node, Kind: history.KindSeek, Call: t, Return: t + 1, Outcome: history.OK, Seek: seek}, t, nil)
		sp.apply = func(g *gen) {
			to := g.rand(g.end(p) + 1)
			seek.Offsets[0].Offset = to
			pos[p] = to
		}
		t += 2
	}
	effect := t + g.latency()
	ret := effect + g.latency()
	poll := &history.Poll{Group: "g-" + proc, Isolation: iso}
	g.add(history.Op{Process: proc, Node: node, Kind: history.KindPoll, Call: t, Return: ret, Outcome: history.OK, Poll: poll}, effect,
		func(g *gen) {
			for _, p := range parts {
				f := history.Fetch{TP: history.TopicPartition{Topic: Topic, Partition: int32(p)}, From: history.NoOffset}
				if g.c.IntN(2) == 0 {
					f.From = pos[p]
				}
				want := 1 + g.c.IntN(5)
				log := g.logs[p]
				start := sort.Search(len(log), func(i int) bool { return log[i].offset >= pos[p] })
				for _, e := range log[start:] {
					if e.marker {
						continue
					}
					if committed && e.txn != nil && !e.txn.decided {
						break // the last stable offset
					}
					if committed && e.txn != nil && !e.txn.committed {
						continue
					}
					f.Records = append(f.Records, history.Record{Offset: e.offset, Message: history.Message{Value: e.value}})
					if len(f.Records) == want {
						break
					}
				}
				if n := len(f.Records); n > 0 {
					pos[p] = f.Records[n-1].Offset + 1
				}
				poll.Fetched = append(poll.Fetched, f)
			}
		})
	return ret
}
