package host_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/env/envtest"
	"github.com/kafkasim/kafkasim/host"
)

// The real-mode runtime passes the same conformance suite as the simulator.
func TestConformance(t *testing.T) {
	envtest.Run(t, newHarness)
}

// harness runs host nodes on loopback, each with its own data directory.
// Node seeds derive from the world's seed and the order nodes start in, as
// the simulator derives them from its seed and the nodes' names.
type harness struct {
	t     *testing.T
	seeds *env.Rand
	mu    sync.Mutex
	nodes map[string]*harnessNode
}

type harnessNode struct {
	node    *host.Node
	opts    host.Options
	newProc func() env.Process
}

func newHarness(t *testing.T, seed uint64) envtest.Harness {
	h := &harness{t: t, seeds: env.NewRand(seed), nodes: map[string]*harnessNode{}}
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, n := range h.nodes {
			n.node.Stop()
		}
	})
	return h
}

func (h *harness) Start(newProc func() env.Process, listeners ...string) string {
	h.t.Helper()
	h.mu.Lock()
	seed := h.seeds.Uint64()
	h.mu.Unlock()
	opts := host.Options{
		Listen:  "127.0.0.1:0",
		DataDir: h.t.TempDir(),
		Seed:    &seed,
		Log:     io.Discard,
	}
	if len(listeners) > 0 {
		opts.Listeners = map[string]string{}
		for _, l := range listeners {
			opts.Listeners[l] = "127.0.0.1:0"
		}
	}
	n, err := host.Start(opts, newProc)
	if err != nil {
		h.t.Fatalf("starting a node: %v", err)
	}
	opts.Listen = n.Addr() // a restart comes back at the same addresses
	for l := range opts.Listeners {
		opts.Listeners[l] = n.ListenerAddr(l)
	}
	h.mu.Lock()
	h.nodes[n.Addr()] = &harnessNode{node: n, opts: opts, newProc: newProc}
	h.mu.Unlock()
	return n.Addr()
}

func (h *harness) Restart(addr string) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	hn := h.nodes[addr]
	if hn == nil {
		h.t.Fatalf("restart %s: no such node", addr)
	}
	hn.node.Stop()
	// The port was just ours, but another process could grab it in between;
	// retry briefly rather than flake.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := host.Start(hn.opts, hn.newProc)
		if err == nil {
			hn.node = n
			return
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			h.t.Fatalf("restart %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) RunUntil(cond func() bool, budget time.Duration) bool {
	deadline := time.Now().Add(budget)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

func (h *harness) Unreachable() string {
	h.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatalf("finding a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
