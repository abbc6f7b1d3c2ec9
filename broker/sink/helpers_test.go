package sink

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
)

// app is a client application: a sink client sharing the process's
// connection callbacks with whatever else the process runs (here: raw
// connections the test opens, which the app records).
type app struct {
	e      env.Env
	sink   *Client
	other  map[env.ConnID][]string // events of connections that are not the sink client's
	frames map[env.ConnID][][]byte // frames received on them
}

func (a *app) Start(e env.Env) {
	a.e = e
	a.sink = NewClient(e, "sink", ClientOptions{})
	a.other = map[env.ConnID][]string{}
	a.frames = map[env.ConnID][][]byte{}
}

func (a *app) Connected(c env.ConnID, peer string, inbound bool) {
	if !a.sink.Connected(c, peer, inbound) {
		a.other[c] = append(a.other[c], "connected")
	}
}

func (a *app) Received(c env.ConnID, frame []byte) {
	if !a.sink.Received(c, frame) {
		a.other[c] = append(a.other[c], "received")
		a.frames[c] = append(a.frames[c], frame)
	}
}

func (a *app) Closed(c env.ConnID) {
	if !a.sink.Closed(c) {
		a.other[c] = append(a.other[c], "closed")
	}
}

// tb is what tests and rapid's checks have in common.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

var _ tb = (testing.TB)(nil)

// world is a sim world with a sink node "sink" and a client node "app".
type world struct {
	*sim.World
	t     tb
	trace *strings.Builder // every trace event as JSON lines, if kept
}

// newWorld is a world whose trace tests can search.
func newWorld(t tb, seed uint64, opts ServerOptions) *world {
	return makeWorld(t, seed, opts, true)
}

func makeWorld(t tb, seed uint64, opts ServerOptions, traced bool) *world {
	o := sim.Options{Seed: seed}
	w := &world{t: t, trace: &strings.Builder{}}
	if traced {
		o.TraceJSON = w.trace
	}
	w.World = sim.New(o)
	w.AddNode("sink", func() env.Process { return NewServer(opts) }).Start()
	w.AddNode("app", func() env.Process { return &app{} }).Start()
	w.run(time.Millisecond)
	return w
}

func (w *world) sink() *sim.Node { return w.Node("sink") }

// server is the sink node's current process (nil while it is down).
func (w *world) server() *Server {
	s, _ := w.sink().Process().(*Server)
	return s
}

func (w *world) app() *app { return w.Node("app").Process().(*app) }

func (w *world) client() *Client { return w.app().sink }

// checkInvariants is run before every event.
func (w *world) checkInvariants() {
	if s := w.server(); s != nil {
		s.checkInvariants()
	}
}

// run runs the world for d, checking the server's invariants before every
// event.
func (w *world) run(d time.Duration) {
	w.t.Helper()
	_, err := w.RunWhile(func() bool { w.checkInvariants(); return true }, d)
	require.NoError(w.t, err)
}

// await runs the world until o is done, for at most budget.
func (w *world) await(o interface{ finished() bool }, budget time.Duration) {
	w.t.Helper()
	done, err := w.RunWhile(func() bool { w.checkInvariants(); return !o.finished() }, budget)
	require.NoError(w.t, err)
	require.True(w.t, done, "call still outstanding after %v", budget)
}

// outcome is the end of one client call.
type outcome[T any] struct {
	done bool
	val  T
	err  error
}

func (o *outcome[T]) finished() bool { return o.done }

func (o *outcome[T]) set(v T, err error) {
	if o.done {
		panic("sink test: a call finished twice")
	}
	o.done, o.val, o.err = true, v, err
}

// write starts a write on the app node.
func (w *world) write(puts []Put, conds []Condition, timeout time.Duration) *outcome[Result] {
	o := &outcome[Result]{}
	w.Node("app").Exec(func() { w.client().Write(puts, conds, timeout, o.set) })
	return o
}

func (w *world) get(keys []string, timeout time.Duration) *outcome[GetResult] {
	o := &outcome[GetResult]{}
	w.Node("app").Exec(func() { w.client().Get(keys, timeout, o.set) })
	return o
}

func (w *world) scan(r ScanRange, timeout time.Duration) *outcome[ScanResult] {
	o := &outcome[ScanResult]{}
	w.Node("app").Exec(func() { w.client().Scan(r, timeout, o.set) })
	return o
}

// mustWrite writes and requires an acknowledgement.
func (w *world) mustWrite(puts []Put, conds ...Condition) Result {
	w.t.Helper()
	o := w.write(puts, conds, 5*time.Second)
	w.await(o, 10*time.Second)
	require.NoError(w.t, o.err)
	return o.val
}

// read returns the values of keys ("" for absent), retrying through
// definite failures (a server still recovering) for a while.
func (w *world) read(keys ...string) map[string]string {
	w.t.Helper()
	for range 50 {
		o := w.get(keys, time.Second)
		w.await(o, 5*time.Second)
		if o.err != nil {
			w.run(100 * time.Millisecond)
			continue
		}
		out := map[string]string{}
		for _, e := range o.val.Entries {
			if e.Present() {
				out[e.Key] = string(e.Value)
			}
		}
		return out
	}
	w.t.Fatalf("reading %v kept failing", keys)
	return nil
}

// logged reports whether some node logged a line starting with msg.
func (w *world) logged(msg string) bool {
	return strings.Contains(w.trace.String(), `"text":"`+msg)
}

// puts makes puts of key=value pairs.
func puts(kv ...string) []Put {
	if len(kv)%2 != 0 {
		panic("puts: odd number of arguments")
	}
	var ps []Put
	for i := 0; i < len(kv); i += 2 {
		ps = append(ps, Put{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return ps
}

// kv makes the map read returns, for comparisons.
func kv(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func keysN(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return ks
}
