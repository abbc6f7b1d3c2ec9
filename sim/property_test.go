package sim

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"pgregory.net/rapid"
)

// prober keeps a connection to every other node and streams numbered frames
// over each; on every callback it checks the world's promises against what
// the world says is true right now.
type prober struct {
	w     *World
	fail  func(format string, args ...any)
	e     env.Env
	peers []string
	out   map[string]env.ConnID // our dialed connection per peer
	sent  map[env.ConnID]uint64
	recv  map[env.ConnID]uint64 // next expected sequence
	from  map[env.ConnID]string
	done  map[env.ConnID]bool // Closed delivered
	got   int

	resumedAt map[string]env.Time // shared: when each node last resumed
}

func (p *prober) self() *Node { return p.w.Node(p.e.Name()) }

func (p *prober) check(what string) {
	n := p.self()
	if n.Process() != env.Process(p) {
		p.fail("%s ran in a dead process on %s", what, n.Name())
	}
	if n.Paused() {
		p.fail("%s ran on paused node %s", what, n.Name())
	}
}

func (p *prober) Start(e env.Env) {
	p.e = e
	p.out, p.sent, p.recv, p.from, p.done = map[string]env.ConnID{}, map[env.ConnID]uint64{}, map[env.ConnID]uint64{}, map[env.ConnID]string{}, map[env.ConnID]bool{}
	p.check("Start")
	e.AfterFunc(time.Millisecond, p.tick)
}

func (p *prober) tick() {
	p.check("timer")
	for _, peer := range p.peers {
		c, ok := p.out[peer]
		if !ok {
			c = p.e.Dial(peer)
			p.out[peer] = c
			p.from[c] = peer
			continue
		}
		for range 1 + p.e.Rand().Intn(3) {
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], p.sent[c])
			p.sent[c]++
			p.e.Send(c, b[:])
		}
	}
	p.e.AfterFunc(time.Duration(1+p.e.Rand().Intn(20))*time.Millisecond, p.tick)
}

func (p *prober) Connected(c env.ConnID, peer string, inbound bool) {
	p.check("Connected")
	if p.done[c] {
		p.fail("connection %d connected after it closed", c)
	}
	p.from[c] = peer
}

func (p *prober) Received(c env.ConnID, frame []byte) {
	p.check("Received")
	if p.done[c] {
		p.fail("frame on connection %d after Closed", c)
	}
	peer := p.from[c]
	// Frames that reached a paused node's kernel before a cut are handed to
	// the process at resume; only frames arriving at other times must not
	// have crossed a cut.
	if !p.w.Reachable(peer, p.e.Name()) && p.resumedAt[p.e.Name()] != p.w.Now() {
		p.fail("frame crossed a cut %s→%s", peer, p.e.Name())
	}
	seq := binary.BigEndian.Uint64(frame)
	if seq != p.recv[c] {
		p.fail("connection %d from %s: got frame %d, want %d (reordered, duplicated or skipped)", c, peer, seq, p.recv[c])
	}
	p.recv[c] = seq + 1
	p.got++
}

func (p *prober) Closed(c env.ConnID) {
	p.check("Closed")
	if p.done[c] {
		p.fail("connection %d closed twice", c)
	}
	p.done[c] = true
	for peer, oc := range p.out {
		if oc == c {
			delete(p.out, peer) // redial on the next tick
		}
	}
}

func TestWorldKeepsItsPromisesUnderRandomFaults(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := []string{"n0", "n1", "n2"}
		w := New(Options{Seed: rapid.Uint64().Draw(t, "seed"), StallTimeout: 5 * time.Second, ConnectTimeout: time.Second})
		failure := ""
		resumedAt := map[string]env.Time{}
		fail := func(format string, args ...any) {
			if failure == "" {
				failure = fmt.Sprintf(format, args...)
			}
		}
		for _, name := range names {
			var peers []string
			for _, o := range names {
				if o != name {
					peers = append(peers, o)
				}
			}
			w.AddNode(name, func() env.Process { return &prober{w: w, fail: fail, peers: peers, resumedAt: resumedAt} }).Start()
		}
		node := rapid.SampledFrom(names)
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 13).Draw(t, "op") {
			case 0:
				w.Node(node.Draw(t, "node")).Crash()
			case 1:
				w.Node(node.Draw(t, "node")).PowerLoss(rapid.Bool().Draw(t, "torn"))
			case 2:
				w.Node(node.Draw(t, "node")).Start()
			case 3:
				w.Node(node.Draw(t, "node")).Pause()
			case 4:
				name := node.Draw(t, "node")
				if w.Node(name).Paused() {
					resumedAt[name] = w.Now()
				}
				w.Node(name).Resume()
			case 5:
				alone := node.Draw(t, "alone")
				w.Partition([]string{alone})
			case 6:
				w.CutOneWay(node.Draw(t, "from"), node.Draw(t, "to"))
			case 7:
				w.Heal()
			case 8:
				w.Clog(node.Draw(t, "a"), node.Draw(t, "b"), time.Duration(rapid.IntRange(1, 5000).Draw(t, "ms"))*time.Millisecond)
			case 9:
				w.ResetLink(node.Draw(t, "a"), node.Draw(t, "b"))
			case 10:
				w.DelayFrame(node.Draw(t, "from"), node.Draw(t, "to"), nil, time.Duration(rapid.IntRange(1, 2000).Draw(t, "ms"))*time.Millisecond, 1)
			case 11:
				w.Node(node.Draw(t, "node")).SkewClock(time.Duration(rapid.IntRange(-5000, 5000).Draw(t, "ms")) * time.Millisecond)
			case 13:
				w.SetLatency(node.Draw(t, "from"), node.Draw(t, "to"), 0, time.Duration(rapid.IntRange(0, 100).Draw(t, "max ms"))*time.Millisecond)
			case 12:
				w.ClogNode(node.Draw(t, "node"), time.Duration(rapid.IntRange(1, 3000).Draw(t, "ms"))*time.Millisecond)
			}
			if err := w.RunFor(time.Duration(rapid.IntRange(0, 3000).Draw(t, "run ms")) * time.Millisecond); err != nil {
				logTail(t, w)
				t.Fatalf("world failed: %v", err)
			}
			if failure != "" {
				logTail(t, w)
				t.Fatalf("%s", failure)
			}
		}
		// Heal everything; a correct world then carries frames between all.
		w.Heal()
		for _, name := range names {
			if w.Node(name).Paused() {
				resumedAt[name] = w.Now()
			}
			w.Node(name).Resume()
			w.Node(name).Start()
		}
		if err := w.RunFor(10 * time.Second); err != nil {
			t.Fatalf("world failed: %v", err)
		}
		before := make([]int, len(names))
		for i, name := range names {
			before[i] = w.Node(name).Process().(*prober).got
		}
		if err := w.RunFor(time.Second); err != nil {
			t.Fatalf("world failed: %v", err)
		}
		for i, name := range names {
			if got := w.Node(name).Process().(*prober).got; got <= before[i] {
				t.Fatalf("after heal, %s received nothing in a second", name)
			}
		}
		if failure != "" {
			t.Fatalf("%s", failure)
		}
	})
}

func logTail(t *rapid.T, w *World) {
	for _, e := range w.Trace().Tail() {
		t.Log(e)
	}
}
