package sim

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// nodeEnv is the env.Env one process incarnation sees. Once the incarnation
// dies every method is inert, so a stale reference can do no harm.
type nodeEnv struct {
	n   *Node
	inc uint64
}

var _ env.Env = (*nodeEnv)(nil)

func (e *nodeEnv) live() bool { return e.n.inc == e.inc && e.n.state == nodeRunning }

func (e *nodeEnv) Name() string                    { return e.n.name }
func (e *nodeEnv) ListenerAddr(name string) string { return e.n.listenerAddr(name) }

func (e *nodeEnv) Listener(c env.ConnID) string {
	if ep := e.n.conns[c]; e.live() && ep != nil && ep.conn.ends[1] == ep {
		return ep.conn.listener
	}
	return ""
}
func (e *nodeEnv) Now() env.Time       { return e.n.now() }
func (e *nodeEnv) WallClock() env.Time { return e.n.wallClock() }

func (e *nodeEnv) AfterFunc(d time.Duration, f func()) env.TimerID {
	n := e.n
	n.timerNext++
	id := n.timerNext
	if !e.live() {
		return id
	}
	if d < 0 {
		d = 0
	}
	n.timers[id] = f
	n.w.queue.push(event{at: n.w.now.Add(n.clock.worldDuration(d)), kind: evTimer, node: n, gen: n.inc, id: uint64(id)})
	return id
}

func (e *nodeEnv) Cancel(id env.TimerID) bool {
	if !e.live() {
		return false
	}
	_, ok := e.n.timers[id]
	delete(e.n.timers, id)
	return ok
}

func (e *nodeEnv) Dial(addr string) env.ConnID {
	if !e.live() {
		return 0
	}
	return e.n.w.net.dial(e.n, addr)
}

func (e *nodeEnv) Send(c env.ConnID, frame []byte) {
	if e.live() {
		e.n.w.net.send(e.n, c, frame, false)
	}
}

func (e *nodeEnv) Close(c env.ConnID) {
	if e.live() {
		e.n.w.net.close(e.n, c)
	}
}

// Disk is the node's disk while the process lives; a dead process gets a
// disk that fails everything, so nothing it does lands after its death.
func (e *nodeEnv) Disk() env.Disk {
	if !e.live() {
		return env.FailedDisk{Err: errDead}
	}
	return e.n.disk
}
func (e *nodeEnv) Rand() *env.Rand { return e.n.rand }

func (e *nodeEnv) Log(msg string, kv ...any) {
	if e.live() {
		e.n.w.trace.log(e.n, msg, kv)
	}
}

func (e *nodeEnv) Probe(name, subject string) {
	if e.live() {
		e.n.w.probes.hit(ProbeHit{Name: name, Subject: subject, Node: e.n.name})
	}
}

func (e *nodeEnv) Halt(reason string) {
	if !e.live() {
		return
	}
	e.n.w.trace.fault(e.n, "halt", reason)
	e.n.Crash()
}

var errDead = fmt.Errorf("process is dead: %w", env.ErrIO)
