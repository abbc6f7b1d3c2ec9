package sim

import "github.com/kafkasim/kafkasim/env"

type eventKind uint8

const (
	evFunc         eventKind = iota + 1 // a world-level function (fault schedule, harness)
	evStart                             // a node's process boots
	evTimer                             // a process timer fires
	evExec                              // a function runs on a node's loop
	evArrive                            // a frame (or FIN) reaches the head of a pipe
	evDial                              // a SYN reaches the dialed node
	evConnected                         // the SYN-ACK reaches the dialer
	evClosed                            // a node learns a connection is gone
	evUnclog                            // a clog ends
	evStallTimeout                      // a pipe blocked by a cut gives up
)

func (k eventKind) String() string {
	switch k {
	case evFunc:
		return "func"
	case evStart:
		return "start"
	case evTimer:
		return "timer"
	case evExec:
		return "exec"
	case evArrive:
		return "deliver"
	case evDial:
		return "dial"
	case evConnected:
		return "connected"
	case evClosed:
		return "closed"
	case evUnclog:
		return "unclog"
	case evStallTimeout:
		return "stall-timeout"
	}
	return "unknown"
}

// event is one entry of the world's queue. It is a value type so the heap
// holds no per-event allocation.
type event struct {
	at   env.Time // world time
	seq  uint64   // insertion order: ties at one instant run first-in first-out
	kind eventKind
	gen  uint64 // node incarnation or pipe generation the event belongs to
	node *node
	pipe *pipe
	id   uint64 // timer id or connection id
	fn   func()
}

// queue is a binary min-heap of events ordered by (at, seq).
type queue struct {
	items []event
	seq   uint64
}

func (q *queue) Len() int { return len(q.items) }

func less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.items = append(q.items, e)
	i := len(q.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !less(&q.items[i], &q.items[parent]) {
			break
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
}

// peek returns the earliest event's time; ok is false when empty.
func (q *queue) peek() (env.Time, bool) {
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].at, true
}

func (q *queue) pop() event {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items[last] = event{}
	q.items = q.items[:last]
	i, n := 0, last
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&q.items[r], &q.items[l]) {
			m = r
		}
		if !less(&q.items[m], &q.items[i]) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}
