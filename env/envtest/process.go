package envtest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kafkasim/kafkasim/env"
)

// proc is a process assembled from the reactions a case cares about; a nil
// reaction ignores the call.
type proc struct {
	e         env.Env
	start     func(e env.Env)
	connected func(e env.Env, c env.ConnID, peer string, inbound bool)
	received  func(e env.Env, c env.ConnID, frame []byte)
	closed    func(e env.Env, c env.ConnID)
}

func (p *proc) Start(e env.Env) {
	p.e = e
	if p.start != nil {
		p.start(e)
	}
}

func (p *proc) Connected(c env.ConnID, peer string, inbound bool) {
	if p.connected != nil {
		p.connected(p.e, c, peer, inbound)
	}
}

func (p *proc) Received(c env.ConnID, frame []byte) {
	if p.received != nil {
		p.received(p.e, c, frame)
	}
}

func (p *proc) Closed(c env.ConnID) {
	if p.closed != nil {
		p.closed(p.e, c)
	}
}

// factory returns a process factory making copies of p, so that a restart
// gets a fresh process as the contract demands.
func factory(p proc) func() env.Process {
	return func() env.Process {
		q := p
		return &q
	}
}

// journal is what the processes of a case saw, line by line, in the order
// each saw it. Processes write it from their loops while the test reads it
// between steps; on real hardware those are different goroutines, hence the
// mutex.
type journal struct {
	mu    sync.Mutex
	lines []string
}

// add records one line, formatted as by fmt.Sprintf.
func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

// has reports whether line was recorded.
func (j *journal) has(line string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Contains(j.lines, line)
}

// of returns the lines starting with prefix, in order: one node's story when
// every node prefixes its lines with its role.
func (j *journal) of(prefix string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, l := range j.lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// len is the number of lines recorded.
func (j *journal) len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.lines)
}

// all returns every line, in order.
func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.lines)
}

// guarded is one value shared between processes and the test.
type guarded[T any] struct {
	mu sync.Mutex
	v  T
}

func (g *guarded[T]) set(v T) {
	g.mu.Lock()
	g.v = v
	g.mu.Unlock()
}

func (g *guarded[T]) get() T {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.v
}

func (g *guarded[T]) update(f func(*T)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(&g.v)
}
