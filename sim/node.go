package sim

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/sim/disk"
)

type nodeState uint8

const (
	nodeDown    nodeState = iota // machine up, process not running (never started or crashed)
	nodeRunning                  // process running (possibly paused)
	nodeOff                      // power lost; nothing runs, nothing answers
)

func (s nodeState) String() string {
	return [...]string{"down", "running", "off"}[s]
}

// Node is one machine of the world: a process, its disk, its clock, its
// connections. Its methods are the faults and lifecycle operations that act
// on it.
type Node struct {
	w       *World
	name    string
	index   int
	factory func() env.Process

	state   nodeState
	started bool // the process's Start has run: it listens
	paused  bool
	held    []event // events that arrived while paused, in arrival order

	// inc is the incarnation: it changes on every boot and every crash, and
	// every event and environment belongs to one incarnation, so nothing of
	// a dead process ever runs.
	inc   uint64
	proc  env.Process
	env   *nodeEnv
	disk  *disk.Disk
	rand  *env.Rand
	clock clock

	timers    map[env.TimerID]func()
	timerNext env.TimerID
	conns     map[env.ConnID]*endpoint

	// listeners are the named listeners beside the main one, in the order
	// Listen added them.
	listeners []listener
}

// listener is one named listener of a node, at address name:port.
type listener struct {
	name string
	port int
}

type node = Node

// AddNode adds a machine named name whose process is made by factory at
// every boot. The node starts powered on but not running; call Start.
func (w *World) AddNode(name string, factory func() env.Process) *Node {
	if _, dup := w.byName[name]; dup {
		panic(fmt.Sprintf("sim: node %q added twice", name))
	}
	n := &Node{
		w:       w,
		name:    name,
		index:   len(w.nodes),
		factory: factory,
		disk:    disk.New(),
		rand:    w.Rand("node/" + name),
		timers:  map[env.TimerID]func(){},
		conns:   map[env.ConnID]*endpoint{},
	}
	n.disk.Observe(func(op disk.Op) { w.trace.disk(n, op) })
	w.nodes = append(w.nodes, n)
	w.byName[name] = n
	w.net.grow(len(w.nodes))
	return n
}

// Listen gives the node a listener called name (as a Kafka broker's
// listeners setting names its) at port, and returns its address, node:port,
// for peers to dial; the node's name alone dials its main listener. A
// listener outlives crashes, as a node's configuration does; the process
// finds the address with Env.ListenerAddr and tells a connection's listener
// with Env.Listener.
func (n *Node) Listen(name string, port int) string {
	switch {
	case name == "":
		panic(fmt.Sprintf("sim: node %q: a listener needs a name (the main listener is the node's name)", n.name))
	case port <= 0 || port > 65535:
		panic(fmt.Sprintf("sim: node %q: listener %q port %d is not in 1-65535", n.name, name, port))
	}
	for _, l := range n.listeners {
		if l.name == name || l.port == port {
			panic(fmt.Sprintf("sim: node %q: listener %q port %d clashes with listener %q port %d", n.name, name, port, l.name, l.port))
		}
	}
	n.listeners = append(n.listeners, listener{name, port})
	return n.listenerAddr(name)
}

// listenerAddr is the address of the named listener, "" if there is none.
func (n *Node) listenerAddr(name string) string {
	if name == "" {
		return n.name
	}
	for _, l := range n.listeners {
		if l.name == name {
			return n.name + ":" + strconv.Itoa(l.port)
		}
	}
	return ""
}

// listenerAt names the listener at port: "" and true for the main one (port
// 0), false if nothing listens there.
func (n *Node) listenerAt(port int) (string, bool) {
	if port == 0 {
		return "", true
	}
	for _, l := range n.listeners {
		if l.port == port {
			return l.name, true
		}
	}
	return "", false
}

// Node returns the node named name, or nil.
func (w *World) Node(name string) *Node { return w.byName[name] }

// Nodes returns every node in the order they were added.
func (w *World) Nodes() []*Node { return slices.Clone(w.nodes) }

// Name is the node's address.
func (n *Node) Name() string { return n.name }

// Running reports whether the node's process is up (paused or not).
func (n *Node) Running() bool { return n.state == nodeRunning }

// Paused reports whether the node is frozen.
func (n *Node) Paused() bool { return n.paused }

// PoweredOff reports whether the node has lost power and not restarted.
func (n *Node) PoweredOff() bool { return n.state == nodeOff }

// Process is the node's current process instance, or nil when it is not
// running. Tests use it to look inside; process code never does.
func (n *Node) Process() env.Process { return n.proc }

// Disk is the node's disk.
func (n *Node) Disk() *disk.Disk { return n.disk }

// Incarnation counts boots and crashes; it changes whenever the process
// instance does.
func (n *Node) Incarnation() uint64 { return n.inc }

// Start boots the node's process: a fresh instance from the factory, whose
// Start recovers from the disk. Starting a running node is a no-op.
func (n *Node) Start() {
	if n.state == nodeRunning {
		return
	}
	wasOff := n.state == nodeOff
	n.inc++
	n.state = nodeRunning
	n.proc = n.factory()
	n.env = &nodeEnv{n: n, inc: n.inc}
	n.w.trace.node(traceStart, n, nil, 0)
	n.w.queue.push(event{at: n.w.now, kind: evStart, node: n, gen: n.inc})
	if wasOff {
		n.w.net.unblock()
	}
}

// Crash kills the process: its memory, timers and connections are gone; its
// disk's page cache survives (the operating system did not crash). Peers see
// the connections close after the frames already sent arrive.
func (n *Node) Crash() {
	if n.state != nodeRunning {
		return
	}
	n.w.trace.node(traceCrash, n, nil, 0)
	n.kill()
	n.w.net.closeAll(n, true)
	n.state = nodeDown
}

// PowerLoss cuts the machine's power: like Crash, but every byte not synced
// to disk is lost (with torn, a random prefix of the unsynced writes lands,
// the last of them torn), and the machine goes silent — peers get no close;
// their frames to it go unanswered until they give up or it restarts.
func (n *Node) PowerLoss(torn bool) {
	if n.state == nodeOff {
		return
	}
	lost := n.disk.PowerLoss(torn, n.rand)
	n.w.trace.node(tracePowerLoss, n, nil, uint64(lost))
	if lost > 0 {
		n.w.probes.hit(ProbeHit{Name: probe.PowerLossDroppedUnsynced, Subject: n.name})
	}
	if n.state == nodeRunning {
		n.kill()
		n.w.net.closeAll(n, false)
	}
	n.state = nodeOff
}

// Restart crashes the node if it is running, then starts it: a bounce.
func (n *Node) Restart() {
	n.Crash()
	n.Start()
}

func (n *Node) kill() {
	n.inc++
	n.started = false
	n.proc = nil
	n.env = nil
	n.paused = false
	n.held = nil
	clear(n.timers)
}

// Pause freezes the node, as a stop-the-world GC pause or SIGSTOP does:
// its timers and incoming frames queue up and run, in order, at Resume. Its
// connections stay open.
func (n *Node) Pause() {
	if n.state != nodeRunning || n.paused {
		return
	}
	n.paused = true
	n.w.trace.node(tracePause, n, nil, 0)
}

// Resume unfreezes the node; everything that queued up while it was paused
// runs now, in arrival order.
func (n *Node) Resume() {
	if !n.paused {
		return
	}
	n.paused = false
	n.w.trace.node(traceResume, n, nil, uint64(len(n.held)))
	for _, e := range n.held {
		e.at = n.w.now
		n.w.queue.push(e)
	}
	n.held = nil
}

// SkewClock steps the node's wall clock by d (forward or back) at once, as
// a misconfigured NTP step does. Its monotonic clock, and so its timers,
// are unaffected.
func (n *Node) SkewClock(d time.Duration) {
	n.clock.skew += d
	n.w.trace.node(traceSkew, n, nil, uint64(d))
}

// DriftClock makes the node's clocks (monotonic and wall alike) run fast
// (ppm > 0) or slow (ppm < 0) by ppm parts per million from now on; its
// timers stretch or shrink with it.
// |ppm| is capped at 100,000 (10%).
func (n *Node) DriftClock(ppm int64) {
	n.clock.setDrift(n.w.now, max(-100_000, min(100_000, ppm)))
	n.w.trace.node(traceDrift, n, nil, uint64(ppm))
}

// Exec runs f on the node's loop at the current time, as if the process had
// set a zero timer: the harness's way to make a client act. It is dropped if
// the process dies first.
func (n *Node) Exec(f func()) {
	if n.state != nodeRunning {
		return
	}
	n.w.queue.push(event{at: n.w.now, kind: evExec, node: n, gen: n.inc, fn: f})
}

// FailSyncs makes the node's next k disk syncs fail.
func (n *Node) FailSyncs(k int) {
	n.disk.FailSyncs(k)
	n.w.trace.fault(n, "disk-fail-sync", fmt.Sprint(k))
}

// FailReads makes the next k reads of files under prefix fail.
func (n *Node) FailReads(prefix string, k int) {
	n.disk.FailReads(prefix, k)
	n.w.trace.fault(n, "disk-fail-read", fmt.Sprintf("%s x%d", prefix, k))
}

// CorruptByte flips a bit in a random file under prefix; it reports false
// if there was no such file.
func (n *Node) CorruptByte(prefix string) bool {
	name, off, ok := n.disk.Corrupt(prefix, n.rand)
	if ok {
		n.w.trace.fault(n, "disk-corrupt", fmt.Sprintf("%s@%d", name, off))
	}
	return ok
}

// dispatch runs one event that belongs to this node.
func (n *Node) dispatch(e event) {
	if e.kind == evDial {
		// The kernel answers a SYN whatever the process is doing.
		n.w.net.arriveDial(n, e)
		return
	}
	if e.gen != n.inc {
		return // belongs to a process instance that is gone
	}
	if e.kind == evConnected || e.kind == evClosed {
		// Connection state changes in the kernel now; the process hears of
		// it in order, when it runs (see deliver).
		n.w.net.dispatchNode(n, e)
		return
	}
	if n.paused {
		n.held = append(n.held, e)
		return
	}
	w := n.w
	switch e.kind {
	case evStart:
		n.started = true
		w.trace.node(traceBoot, n, nil, n.inc)
		n.run(func() { n.proc.Start(n.env) })
	case evTimer:
		f, ok := n.timers[env.TimerID(e.id)]
		if !ok {
			return // cancelled
		}
		delete(n.timers, env.TimerID(e.id))
		w.trace.node(traceTimer, n, nil, e.id)
		n.run(f)
	case evExec:
		w.trace.node(traceExec, n, nil, 0)
		n.run(e.fn)
	default:
		panic(fmt.Sprintf("sim: node %s got event kind %v", n.name, e.kind))
	}
}

// deliver runs process code for a network event now, or, while the node is
// paused, keeps it for Resume: either way the process sees every event of a
// connection, in the order the kernel saw them.
func (n *Node) deliver(f func()) {
	if n.paused {
		n.hold(f)
		return
	}
	n.run(f)
}

// hold keeps process work that arrived while the node is paused for Resume.
func (n *Node) hold(f func()) {
	n.held = append(n.held, event{at: n.w.now, kind: evExec, node: n, gen: n.inc, fn: f})
}

// run calls into the process, marking whose code is running.
func (n *Node) run(f func()) {
	n.w.current = n
	f()
	n.w.current = nil
}

// now is the node's monotonic clock reading; wallClock its wall clock's.
func (n *Node) now() env.Time       { return n.clock.monotonic(n.w.now) }
func (n *Node) wallClock() env.Time { return n.clock.wall(n.w.now) }

// ResetClock puts the node's wall clock back on world time and stops its
// drift. Its monotonic clock stops drifting but keeps what it gained: a
// monotonic clock never steps.
func (n *Node) ResetClock() {
	n.clock.setDrift(n.w.now, 0)
	n.clock.skew = -n.clock.drift
	n.w.trace.node(traceSkew, n, nil, 0)
}

// ClockOffset is how far the node's wall clock is from world time now.
func (n *Node) ClockOffset() time.Duration { return n.wallClock().Sub(n.w.now) }

// ClearDiskFaults disarms the node's pending sync and read failures.
func (n *Node) ClearDiskFaults() {
	n.disk.ClearFaults()
	n.w.trace.fault(n, "disk-faults-cleared", "")
}
