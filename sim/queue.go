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

// event is one entry of the world's queue.
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

// queue is a binary min-heap of events ordered by (at, seq). The heap
// itself holds pointer-free keys; each event's payload waits in a slot of
// a slab that is written once when pushed and cleared once when popped, so
// sifting moves 24 bytes the collector never scans and no write barrier
// guards (issue 17). Freed slots are reused, so a run allocates for its
// largest queue, not for every event.
type queue struct {
	heap  []queueKey
	slots []event
	free  []uint32
	seq   uint64
}

type queueKey struct {
	at   env.Time
	seq  uint64
	slot uint32
}

func (q *queue) Len() int { return len(q.heap) }

func less(a, b *queueKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	var slot uint32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.slots[slot] = e
	} else {
		slot = uint32(len(q.slots))
		q.slots = append(q.slots, e)
	}
	h := append(q.heap, queueKey{at: e.at, seq: e.seq, slot: slot})
	i := len(h) - 1
	k := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !less(&k, &h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = k
	q.heap = h
}

// peek returns the earliest event's time; ok is false when empty.
func (q *queue) peek() (env.Time, bool) {
	if len(q.heap) == 0 {
		return 0, false
	}
	return q.heap[0].at, true
}

func (q *queue) pop() event {
	h := q.heap
	top := h[0]
	last := len(h) - 1
	k := h[last]
	h = h[:last]
	i, n := 0, last
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &k) {
			break
		}
		h[i] = h[m]
		i = m
	}
	if n > 0 {
		h[i] = k
	}
	q.heap = h
	e := q.slots[top.slot]
	q.slots[top.slot] = event{}
	q.free = append(q.free, top.slot)
	return e
}
