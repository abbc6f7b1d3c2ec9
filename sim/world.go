package sim

import (
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// Options describe a world. The zero value of every field has a sensible
// default (see DefaultOptions), so Options{Seed: s} is a complete world.
type Options struct {
	// Seed is the root of every random stream in the world.
	Seed uint64
	// Epoch is the world clock's reading at the start, in Unix nanoseconds.
	Epoch env.Time

	// LatencyMin and LatencyMax bound the one-way latency of a link, drawn
	// uniformly per frame. SetLatency overrides them per link.
	LatencyMin, LatencyMax time.Duration
	// ConnectTimeout is how long a dial that gets no answer (the peer is
	// powered off or cut off) waits before it fails.
	ConnectTimeout time.Duration
	// StallTimeout is how long a connection whose frames cannot cross a
	// network cut keeps retransmitting before it is reset, as TCP gives up.
	StallTimeout time.Duration

	// TraceRing is how many recent events the trace keeps for display.
	TraceRing int
	// TraceJSON, when set, receives every trace event as one JSON line.
	TraceJSON io.Writer

	// InstantEventsMax bounds events processed without the clock moving; a
	// process that keeps scheduling zero-delay work past it is in a livelock.
	InstantEventsMax int
}

// DefaultOptions are the values used for zero fields of Options.
var DefaultOptions = Options{
	Epoch:            env.Time(1_767_225_600 * int64(time.Second)), // 2026-01-01T00:00:00Z
	LatencyMin:       200 * time.Microsecond,
	LatencyMax:       2 * time.Millisecond,
	ConnectTimeout:   3 * time.Second,
	StallTimeout:     30 * time.Second,
	TraceRing:        256,
	InstantEventsMax: 1_000_000,
}

func (o Options) withDefaults() Options {
	d := DefaultOptions
	if o.Epoch == 0 {
		o.Epoch = d.Epoch
	}
	if o.LatencyMin == 0 && o.LatencyMax == 0 {
		o.LatencyMin, o.LatencyMax = d.LatencyMin, d.LatencyMax
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = d.ConnectTimeout
	}
	if o.StallTimeout == 0 {
		o.StallTimeout = d.StallTimeout
	}
	if o.TraceRing == 0 {
		o.TraceRing = d.TraceRing
	}
	if o.InstantEventsMax == 0 {
		o.InstantEventsMax = d.InstantEventsMax
	}
	return o
}

// World is one deterministic simulation: clock, queue, nodes, network and
// trace. It is not safe for concurrent use; run many worlds in parallel
// instead.
type World struct {
	opts   Options
	now    env.Time // world time since Epoch began
	queue  queue
	rand   *env.Rand // root stream; only forked, never drawn from
	net    *network
	trace  *Trace
	probes probes

	nodes  []*node
	byName map[string]*node

	failure error // first panic or livelock; the world stops
	current *node // the node whose code is running, for panic reports
	events  uint64
	instant int // events run since the clock last moved
}

// New returns a world at its epoch with no nodes.
func New(opts Options) *World {
	opts = opts.withDefaults()
	w := &World{
		opts:   opts,
		now:    opts.Epoch,
		rand:   env.NewRand(opts.Seed),
		byName: map[string]*node{},
	}
	w.trace = newTrace(w, opts.TraceRing, opts.TraceJSON)
	w.net = newNetwork(w)
	return w
}

// Seed is the world's root seed.
func (w *World) Seed() uint64 { return w.opts.Seed }

// Now is the world's clock (nodes see it through their own skew).
func (w *World) Now() env.Time { return w.now }

// Elapsed is the simulated time since the world began.
func (w *World) Elapsed() time.Duration { return w.now.Sub(w.opts.Epoch) }

// Events is the number of events processed so far.
func (w *World) Events() uint64 { return w.events }

// Rand returns the named random stream. Streams are independent: drawing
// from one never moves another, so adding a fault does not reshuffle every
// latency. The same name always gives a fresh stream from the same seed.
func (w *World) Rand(name string) *env.Rand { return w.rand.Fork(name) }

// Trace is the world's trace.
func (w *World) Trace() *Trace { return w.trace }

// Err is the failure that stopped the world: a panic in process code (with
// the node and stack), or a livelock. Nil while the world is healthy.
func (w *World) Err() error { return w.failure }

// At runs f at world time t (or now, if t has passed) outside any node: the
// way fault schedules and test harnesses act on the world.
func (w *World) At(t env.Time, f func()) {
	w.queue.push(event{at: max(t, w.now), kind: evFunc, fn: f})
}

// After runs f after d of world time, outside any node.
func (w *World) After(d time.Duration, f func()) { w.At(w.now.Add(d), f) }

// Step runs the earliest event. It reports false when the queue is empty or
// the world has failed.
func (w *World) Step() bool {
	if w.failure != nil || w.queue.Len() == 0 {
		return false
	}
	w.runGuarded(func() { w.dispatch(w.queue.pop()) })
	return w.failure == nil
}

// RunUntil runs every event up to and including time t, then sets the clock
// to t. It returns the world's failure, if any.
func (w *World) RunUntil(t env.Time) error {
	w.runGuarded(func() {
		for w.failure == nil {
			at, ok := w.queue.peek()
			if !ok || at > t {
				break
			}
			w.dispatch(w.queue.pop())
		}
	})
	if w.failure == nil && t > w.now {
		w.now = t
	}
	return w.failure
}

// RunFor runs the world for d of simulated time.
func (w *World) RunFor(d time.Duration) error { return w.RunUntil(w.now.Add(d)) }

// RunWhile runs events while cond holds, for at most budget of simulated
// time. It reports whether cond became false (the wait ended) before the
// budget ran out.
func (w *World) RunWhile(cond func() bool, budget time.Duration) (bool, error) {
	deadline := w.now.Add(budget)
	done := false
	w.runGuarded(func() {
		for w.failure == nil {
			if !cond() {
				done = true
				return
			}
			at, ok := w.queue.peek()
			if !ok || at > deadline {
				return
			}
			w.dispatch(w.queue.pop())
		}
	})
	if !done && w.failure == nil && w.now < deadline {
		w.now = deadline
	}
	return done, w.failure
}

// runGuarded turns a panic in process or harness code into the world's
// failure, named with the node it happened on, so the seed can be reported
// instead of the test binary dying.
func (w *World) runGuarded(f func()) {
	defer func() {
		if r := recover(); r != nil {
			where := "world"
			if w.current != nil {
				where = "node " + w.current.name
			}
			w.failure = &PanicError{Where: where, At: w.Elapsed(), Value: r, Stack: string(debug.Stack())}
			w.trace.fault(w.current, "panic", fmt.Sprint(r))
		}
	}()
	f()
}

// PanicError is a panic of code running in the world.
type PanicError struct {
	Where string
	At    time.Duration // since the world began
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("panic on %s at %v: %v", e.Where, e.At, e.Value)
}

// LivelockError reports a clock that stopped moving.
type LivelockError struct {
	At     time.Duration // since the world began
	Events int
}

func (e *LivelockError) Error() string {
	return fmt.Sprintf("livelock: %d events at one instant (%v) without the clock moving", e.Events, e.At)
}

func (w *World) dispatch(e event) {
	if e.at > w.now {
		w.now = e.at
		w.instant = 0
	} else if w.instant++; w.instant > w.opts.InstantEventsMax {
		w.failure = &LivelockError{At: w.Elapsed(), Events: w.instant}
		return
	}
	w.events++
	switch e.kind {
	case evFunc:
		w.trace.world(e.kind)
		e.fn()
	case evUnclog, evStallTimeout, evArrive:
		w.net.dispatch(e)
	default:
		e.node.dispatch(e)
	}
}
