package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Partition splits the network: nodes in different groups cannot reach each
// other, both ways. Nodes named in no group form one more group together.
// It replaces any earlier cuts. Connections across the split are not closed:
// their frames wait, as TCP retransmits, and the connection resets if the
// split outlasts StallTimeout.
func (w *World) Partition(groups ...[]string) {
	group := make([]int, len(w.nodes)) // 0: the group of the unnamed
	for gi, g := range groups {
		for _, name := range g {
			n := w.mustNode(name)
			group[n.index] = gi + 1
		}
	}
	for i := range w.nodes {
		for j := range w.nodes {
			w.net.cut[i][j] = group[i] != group[j]
		}
	}
	desc := make([]string, len(groups))
	for i, g := range groups {
		desc[i] = "[" + strings.Join(g, " ") + "]"
	}
	w.trace.fault(nil, "partition", strings.Join(desc, " "))
}

// Isolate cuts one node off from every other, both ways.
func (w *World) Isolate(name string) {
	n := w.mustNode(name)
	for i := range w.nodes {
		if i != n.index {
			w.net.cut[n.index][i] = true
			w.net.cut[i][n.index] = true
		}
	}
	w.trace.fault(n, "isolate", "")
}

// CutOneWay stops frames from → to; frames to → from still flow.
func (w *World) CutOneWay(from, to string) {
	a, b := w.mustNode(from), w.mustNode(to)
	w.net.cut[a.index][b.index] = true
	w.trace.fault(a, "cut-one-way", "to "+b.name)
}

// Cut stops frames between a and b, both ways.
func (w *World) Cut(a, b string) {
	w.CutOneWay(a, b)
	w.CutOneWay(b, a)
}

// Heal lifts every cut; waiting frames move again.
func (w *World) Heal() {
	for i := range w.net.cut {
		clear(w.net.cut[i])
	}
	w.trace.fault(nil, "heal", "")
	w.net.unblock()
}

// HealLink lifts the cuts between a and b, both ways.
func (w *World) HealLink(a, b string) {
	x, y := w.mustNode(a), w.mustNode(b)
	w.net.cut[x.index][y.index] = false
	w.net.cut[y.index][x.index] = false
	w.trace.fault(x, "heal-link", y.name)
	w.net.unblock()
}

// Reachable reports whether frames from → to can cross the network now.
func (w *World) Reachable(from, to string) bool {
	return !w.net.cut[w.mustNode(from).index][w.mustNode(to).index]
}

// Clog holds every frame between a and b, both ways, for d, then lets them
// through in order. Connections stay open.
func (w *World) Clog(a, b string, d time.Duration) {
	x, y := w.mustNode(a), w.mustNode(b)
	until := w.now.Add(d)
	w.net.clogUntil[x.index][y.index] = max(w.net.clogUntil[x.index][y.index], until)
	w.net.clogUntil[y.index][x.index] = max(w.net.clogUntil[y.index][x.index], until)
	w.trace.fault(x, "clog", fmt.Sprintf("%s for %v", y.name, d))
	w.queue.push(event{at: until, kind: evUnclog})
}

// ClogNode holds every frame to or from the node for d.
func (w *World) ClogNode(name string, d time.Duration) {
	n := w.mustNode(name)
	until := w.now.Add(d)
	w.net.nodeClog[n.index] = max(w.net.nodeClog[n.index], until)
	w.trace.fault(n, "clog-node", d.String())
	w.queue.push(event{at: until, kind: evUnclog})
}

// SetLatency sets the one-way latency range of the link from → to.
func (w *World) SetLatency(from, to string, min, max time.Duration) {
	if min > max || min < 0 {
		panic(fmt.Sprintf("sim: latency range [%v, %v] of %s→%s is empty or negative", min, max, from, to))
	}
	a, b := w.mustNode(from), w.mustNode(to)
	w.net.latency[a.index][b.index] = latency{min, max}
	w.trace.fault(a, "latency", fmt.Sprintf("to %s %v-%v", b.name, min, max))
}

// ResetLink resets every connection between a and b: frames in flight are
// lost and both ends are told.
func (w *World) ResetLink(a, b string) {
	x, y := w.mustNode(a), w.mustNode(b)
	w.trace.fault(x, "reset", y.name)
	for _, c := range w.connsBetween(x, y) {
		w.net.reset(c)
	}
}

// ResetNode resets every connection of a node.
func (w *World) ResetNode(name string) {
	n := w.mustNode(name)
	w.trace.fault(n, "reset-node", "")
	for _, c := range w.connsBetween(n, nil) {
		w.net.reset(c)
	}
}

// connsBetween lists the live connections of x (to y, or to anyone if y is
// nil), in connection order.
func (w *World) connsBetween(x, y *Node) []*conn {
	var cs []*conn
	for _, ep := range x.conns {
		if p := ep.peer(); y == nil || (p != nil && p.node == y) {
			cs = append(cs, ep.conn)
		}
	}
	slices.SortFunc(cs, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
	return cs
}

// DelayFrame holds back the next count frames sent from → to for which
// match reports true (every frame if match is nil) by an extra d. Frames
// behind a delayed one on its connection wait for it: a connection never
// reorders. This is how a late produce request is made to arrive after the
// transaction it belonged to has ended.
func (w *World) DelayFrame(from, to string, match func(frame []byte) bool, d time.Duration, count int) {
	a, b := w.mustNode(from), w.mustNode(to)
	w.net.delays = append(w.net.delays, frameDelay{from: a.index, to: b.index, match: match, delay: d, count: count})
	w.trace.fault(a, "delay-frame", fmt.Sprintf("to %s by %v x%d", b.name, d, count))
}

func (w *World) mustNode(name string) *Node {
	n := w.byName[name]
	if n == nil {
		panic(fmt.Sprintf("sim: no node named %q", name))
	}
	return n
}

// Unclog ends every clog now; held frames move again.
func (w *World) Unclog() {
	for i := range w.net.clogUntil {
		clear(w.net.clogUntil[i])
	}
	clear(w.net.nodeClog)
	w.trace.fault(nil, "unclog", "")
	w.net.unblock()
}

// ResetLatency restores every link's latency to the world's default.
func (w *World) ResetLatency() {
	for i := range w.net.latency {
		clear(w.net.latency[i])
	}
	w.trace.fault(nil, "latency-reset", "")
}

// ClearDelays disarms every pending DelayFrame.
func (w *World) ClearDelays() {
	w.net.delays = nil
	w.trace.fault(nil, "delays-cleared", "")
}

// HealNetwork lifts every network fault at once: cuts, clogs, latency
// overrides and pending frame delays.
func (w *World) HealNetwork() {
	w.ClearDelays()
	w.ResetLatency()
	for i := range w.net.cut {
		clear(w.net.cut[i])
	}
	for i := range w.net.clogUntil {
		clear(w.net.clogUntil[i])
	}
	clear(w.net.nodeClog)
	w.trace.fault(nil, "heal", "network")
	w.net.unblock()
	w.net.rescheduleDelayed()
}
