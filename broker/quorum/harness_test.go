package quorum_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/quorum"
	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
)

// harness is a world of N voters ("v1".."vN", ids 1..N) running proc, and
// what the test side records across their lives: every committed entry
// by offset, the leader of every epoch, the elections.
type harness struct {
	t     testing.TB
	w     *sim.World
	names []string
	addrs map[int32]string

	committed map[int64]string // offset → the entry first delivered there
	leaders   map[int32]string // epoch → the node that led it
	elections []election
	failures  []string
	proposeOn bool
	// flushDelay is the voters' FlushDelay: with it, a power loss drops
	// appended entries not yet synced.
	flushDelay time.Duration
}

type election struct {
	at    time.Duration
	node  string
	epoch int32
}

func newHarness(t testing.TB, seed uint64, n int) *harness {
	opts := sim.Options{Seed: seed}
	if os.Getenv("QUORUM_TRACE") != "" {
		opts.TraceJSON = os.Stderr
	}
	h := &harness{t: t, w: sim.New(opts), addrs: map[int32]string{},
		committed: map[int64]string{}, leaders: map[int32]string{}, proposeOn: true}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("v%d", i)
		h.names = append(h.names, name)
		h.addrs[int32(i)] = name
	}
	for i, name := range h.names {
		h.w.AddNode(name, func() env.Process { return &proc{h: h, name: name, id: int32(i + 1)} }).Start()
	}
	return h
}

func (h *harness) fail(format string, args ...any) {
	msg := fmt.Sprintf("at %v: ", h.w.Elapsed()) + fmt.Sprintf(format, args...)
	if len(h.failures) < 10 {
		h.failures = append(h.failures, msg)
	}
}

// check fails the test with the world's error or the first recorded
// failure.
func (h *harness) check(err error) {
	h.t.Helper()
	if err == nil {
		err = h.w.Err()
	}
	if err != nil {
		h.t.Fatalf("seed %d: %v", h.w.Seed(), err)
	}
	if len(h.failures) > 0 {
		h.t.Fatalf("seed %d: %v", h.w.Seed(), h.failures)
	}
}

func (h *harness) run(d time.Duration) { h.t.Helper(); h.check(h.w.RunFor(d)) }

// until runs until cond holds, at most budget; it reports whether it did.
func (h *harness) until(cond func() bool, budget time.Duration) bool {
	h.t.Helper()
	ok, err := h.w.RunWhile(func() bool { return !cond() }, budget)
	h.check(err)
	return ok
}

func (h *harness) proc(name string) *proc {
	p, _ := h.w.Node(name).Process().(*proc)
	if p == nil || p.v == nil {
		return nil
	}
	return p
}

// leader is the running node that leads the highest epoch, or "".
func (h *harness) leader() string {
	best, epoch := "", int32(-1)
	for _, name := range h.names {
		if p := h.proc(name); p != nil && p.v.Role() == raft.Leader {
			if _, e := p.v.Leader(); e > epoch {
				best, epoch = name, e
			}
		}
	}
	return best
}

// leaderAbove is a running leader of an epoch above epoch, or "".
func (h *harness) leaderAbove(epoch int32) string {
	l := h.leader()
	if l == "" {
		return ""
	}
	if _, e := h.proc(l).v.Leader(); e > epoch {
		return l
	}
	return ""
}

func (h *harness) epochOf(name string) int32 {
	_, e := h.proc(name).v.Leader()
	return e
}

// maxHW is the highest high watermark among running nodes.
func (h *harness) maxHW() int64 {
	var hw int64
	for _, name := range h.names {
		if p := h.proc(name); p != nil {
			hw = max(hw, p.v.HighWatermark())
		}
	}
	return hw
}

// agree checks that every running node's committed prefix is what the
// harness recorded.
func (h *harness) agree() {
	h.t.Helper()
	for _, name := range h.names {
		p := h.proc(name)
		if p == nil {
			continue
		}
		for _, en := range p.v.Entries(0, p.v.HighWatermark()) {
			if got, want := entryString(en), h.committed[en.Offset]; got != want {
				h.t.Fatalf("seed %d: %s holds %s committed at %d, recorded %s", h.w.Seed(), name, got, en.Offset, want)
			}
		}
	}
}

func entryString(en raft.Entry) string { return en.String() }

// proc is a controller stand-in: one Voter, proposing an entry every 100ms
// while it leads, recording what OnCommitted delivers.
type proc struct {
	h    *harness
	name string
	id   int32
	e    env.Env
	rt   *rpc.Router
	v    *quorum.Voter

	seq    int
	next   int64 // the offset OnCommitted must deliver next
	lastHW int64
	got    []raft.Entry // delivered this life
}

func (p *proc) Start(e env.Env) {
	p.e = e
	srv := rpc.NewServer(quorum.Versions, func(r *rpc.Request) {
		if p.v == nil || !p.v.Handle(r) {
			r.CloseConn()
		}
	})
	p.rt = rpc.NewRouter(e, srv)
	v, err := quorum.Start(e, p.rt, quorum.Config{ID: p.id, Voters: p.h.addrs, ClientID: p.name,
		FlushDelay: p.h.flushDelay, OnCommitted: p.committed, OnRoleChange: p.roleChanged})
	if err != nil {
		p.h.fail("%s: start: %v", p.name, err)
		e.Halt(err.Error())
		return
	}
	p.v = v
	e.AfterFunc(100*time.Millisecond, p.tick)
}

func (p *proc) Connected(c env.ConnID, peer string, inbound bool) { p.rt.Connected(c, peer, inbound) }
func (p *proc) Received(c env.ConnID, frame []byte)               { p.rt.Received(c, frame) }
func (p *proc) Closed(c env.ConnID)                               { p.rt.Closed(c) }

func (p *proc) tick() {
	if hw := p.v.HighWatermark(); hw < p.lastHW {
		p.h.fail("%s: high watermark moved back from %d to %d", p.name, p.lastHW, hw)
	} else {
		p.lastHW = hw
	}
	if p.h.proposeOn && p.v.Role() == raft.Leader {
		_, epoch := p.v.Leader()
		p.seq++
		if _, err := p.v.Propose([]byte(fmt.Sprintf("%s/e%d/%d", p.name, epoch, p.seq))); err != nil {
			p.h.fail("%s: propose as leader: %v", p.name, err)
		}
	}
	p.e.AfterFunc(100*time.Millisecond, p.tick)
}

func (p *proc) committed(en raft.Entry) {
	if en.Offset != p.next {
		p.h.fail("%s: delivered offset %d, expected %d", p.name, en.Offset, p.next)
	}
	p.next = en.Offset + 1
	p.got = append(p.got, en)
	s := entryString(en)
	if prev, ok := p.h.committed[en.Offset]; !ok {
		p.h.committed[en.Offset] = s
	} else if prev != s {
		p.h.fail("%s: committed %s at offset %d, another node committed %s", p.name, s, en.Offset, prev)
	}
	if hw := p.v.HighWatermark(); hw < p.lastHW {
		p.h.fail("%s: high watermark moved back from %d to %d", p.name, p.lastHW, hw)
	} else {
		p.lastHW = hw
	}
}

func (p *proc) roleChanged(role raft.Role, epoch, leader int32) {
	if role != raft.Leader {
		return
	}
	if prev, ok := p.h.leaders[epoch]; ok && prev != p.name {
		p.h.fail("two leaders in epoch %d: %s and %s", epoch, prev, p.name)
	}
	p.h.leaders[epoch] = p.name
	p.h.elections = append(p.h.elections, election{at: p.h.w.Elapsed(), node: p.name, epoch: epoch})
}

// electedAbove is the first election recorded in an epoch above epoch.
func (h *harness) electedAbove(epoch int32) (election, bool) {
	for _, e := range h.elections {
		if e.epoch > epoch {
			return e, true
		}
	}
	return election{}, false
}

// durations summarizes election times.
func summarize(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("n=%d median=%v p90=%v worst=%v", len(s), s[len(s)/2], s[len(s)*9/10], s[len(s)-1])
}
