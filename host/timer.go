package host

import (
	"container/heap"

	"github.com/kafkasim/kafkasim/env"
)

// timerQueue holds a node's pending timers, earliest deadline first, ties
// in the order they were set. It belongs to the loop: one runtime timer
// (Node.clock) wakes the loop for the earliest deadline, and the loop runs
// what is due itself. So a timer fires only from the loop, in deadline order,
// and Cancel, also on the loop, can always still stop it — there is no
// callback already on its way that Cancel would race with.
type timerQueue struct {
	seq   env.TimerID
	heap  timerHeap
	index map[env.TimerID]*timer
}

type timer struct {
	id       env.TimerID
	deadline env.Time
	f        func()
	pos      int // in the heap
}

func (q *timerQueue) add(deadline env.Time, f func()) env.TimerID {
	if q.index == nil {
		q.index = map[env.TimerID]*timer{}
	}
	q.seq++
	t := &timer{id: q.seq, deadline: deadline, f: f}
	q.index[t.id] = t
	heap.Push(&q.heap, t)
	return t.id
}

func (q *timerQueue) cancel(id env.TimerID) bool {
	t, ok := q.index[id]
	if !ok {
		return false
	}
	delete(q.index, id)
	heap.Remove(&q.heap, t.pos)
	return true
}

// next is the earliest pending timer, or nil.
func (q *timerQueue) next() *timer {
	if len(q.heap) == 0 {
		return nil
	}
	return q.heap[0]
}

// armClock sets the runtime timer for the earliest deadline.
func (n *Node) armClock() {
	t := n.timers.next()
	if t == nil {
		n.clock.Stop()
		return
	}
	n.clock.Reset(max(t.deadline.Sub(n.now()), 0))
}

// fireTimers runs the timers due now, in deadline order. Timers set by those
// functions wait for the next wake-up even when already due, so that a
// timer re-arming itself with zero delay cannot starve the network.
func (n *Node) fireTimers() {
	now := n.now()
	last := n.timers.seq
	for {
		t := n.timers.next()
		if t == nil || t.deadline > now || t.id > last {
			return
		}
		n.timers.cancel(t.id)
		t.f()
		n.runLater()
	}
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos = i
	h[j].pos = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.pos = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
