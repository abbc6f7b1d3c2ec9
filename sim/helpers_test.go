package sim

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// peer is a test process that records everything that happens to it and
// does what the test tells it through Exec.
type peer struct {
	e         env.Env
	started   int
	connected []env.ConnID
	inbound   map[env.ConnID]string
	received  map[env.ConnID][][]byte
	closed    []env.ConnID
	echo      bool // send every frame back
}

func newPeer() *peer {
	return &peer{inbound: map[env.ConnID]string{}, received: map[env.ConnID][][]byte{}}
}

func (p *peer) Start(e env.Env) { p.e = e; p.started++ }

func (p *peer) Connected(c env.ConnID, from string, inbound bool) {
	p.connected = append(p.connected, c)
	if inbound {
		p.inbound[c] = from
	}
}

func (p *peer) Received(c env.ConnID, frame []byte) {
	p.received[c] = append(p.received[c], frame)
	if p.echo {
		p.e.Send(c, frame)
	}
}

func (p *peer) Closed(c env.ConnID) { p.closed = append(p.closed, c) }

func (p *peer) frames() int {
	n := 0
	for _, fs := range p.received {
		n += len(fs)
	}
	return n
}

// twoNodes is a world with nodes "a" and "b" running peers; the returned
// accessors give the current process of each (a fresh one after restarts).
func twoNodes(seed uint64) (w *World, a, b func() *peer) {
	w = New(Options{Seed: seed})
	for _, name := range []string{"a", "b"} {
		w.AddNode(name, func() env.Process { return newPeer() }).Start()
	}
	get := func(name string) func() *peer {
		return func() *peer {
			p, _ := w.Node(name).Process().(*peer)
			return p
		}
	}
	must(w.RunFor(time.Millisecond))
	return w, get("a"), get("b")
}

// dial makes from dial to and runs until both sides are connected.
func dial(w *World, from func() *peer, to string) env.ConnID {
	var c env.ConnID
	f := from()
	w.Node(f.e.Name()).Exec(func() { c = f.e.Dial(to) })
	must(w.RunFor(100 * time.Millisecond))
	return c
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func seqFrame(i int) []byte { return []byte(fmt.Sprintf("frame-%06d", i)) }
