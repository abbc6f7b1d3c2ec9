package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/env/envtest"
)

// envHarness runs the environment conformance suite on a simulated world,
// the same suite package host runs on TCP, so the two cannot drift.
type envHarness struct {
	t *testing.T
	w *World
	n int
}

func (h *envHarness) Start(newProc func() env.Process, listeners ...string) string {
	h.n++
	name := fmt.Sprintf("node%d", h.n)
	n := h.w.AddNode(name, newProc)
	for i, l := range listeners {
		n.Listen(l, 9093+i)
	}
	n.Start()
	return name
}

func (h *envHarness) Restart(addr string) { h.w.Node(addr).Restart() }

func (h *envHarness) RunUntil(cond func() bool, budget time.Duration) bool {
	ok, err := h.w.RunWhile(func() bool { return !cond() }, budget)
	if err != nil {
		h.t.Fatalf("world: %v", err)
	}
	return ok
}

func (h *envHarness) Unreachable() string { return "nobody" }

func TestEnvironmentConformance(t *testing.T) {
	envtest.Run(t, func(t *testing.T, seed uint64) envtest.Harness {
		return &envHarness{t: t, w: New(Options{Seed: seed})}
	})
}
