package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// network carries frames between nodes over TCP-like connections.
//
// Every connection has two pipes, one per direction. A pipe is a FIFO of
// frames with a delivery time each, never earlier than the frame before it,
// so frames on a connection never overtake each other. A frame that cannot
// arrive — a cut between the nodes, a clog, a powered-off receiver — blocks
// its pipe (and everything behind it) until the obstacle lifts; a pipe
// blocked by a cut or by silence for StallTimeout resets its connection, as
// TCP gives up retransmitting.
type network struct {
	w     *World
	rand  *env.Rand
	conns uint64 // last connection id handed out

	// Per ordered pair of node indices.
	cut       [][]bool
	clogUntil [][]env.Time
	latency   [][]latency // zero value: the world's default
	nodeClog  []env.Time  // clog of every link of a node

	blocked []*pipe // pipes waiting for an obstacle to lift, in blocking order
	delays  []frameDelay
}

type latency struct{ min, max time.Duration }

// conn is one connection; ends[0] dialed, ends[1] accepted.
type conn struct {
	id      uint64
	ends    [2]*endpoint
	dialing bool
	failed  bool // reset or refused: no frame moves any more
	// port is the dialed port (0: the main listener); listener, once
	// accepted, the name of the listener there.
	port     int
	listener string
}

// endpoint is one side of a connection, owned by one process incarnation.
type endpoint struct {
	conn   *conn
	node   *Node
	inc    uint64
	out    *pipe // frames this side sends
	closed bool  // this side closed it, was told it closed, or died
}

func (e *endpoint) peer() *endpoint {
	if e.conn.ends[0] == e {
		return e.conn.ends[1]
	}
	return e.conn.ends[0]
}

// alive reports whether the endpoint's process can still be told things.
func (e *endpoint) alive() bool {
	return e != nil && !e.closed && e.node.inc == e.inc && e.node.state == nodeRunning
}

type pipe struct {
	why      string // the obstacle while blocked: "cut", "off" or "clog"
	conn     *conn
	from, to int // node indices
	src      *endpoint
	frames   []frame // head at index 0
	lastAt   env.Time
	gen      uint64 // bumps whenever scheduled arrivals are withdrawn
	blocked  bool
	// stallGen names the armed stall timer; bumping it disarms.
	stallGen   uint64
	stallArmed bool
}

type frame struct {
	data []byte
	fin  bool   // the sender closed the connection after the frames before it
	sum  uint32 // data's checksum when sent: a sender that changed it after is caught on delivery
}

type frameDelay struct {
	from, to int
	match    func([]byte) bool
	delay    time.Duration
	count    int
}

func newNetwork(w *World) *network {
	return &network{w: w, rand: w.Rand("network")}
}

func (net *network) grow(n int) {
	for i := range net.cut {
		net.cut[i] = append(net.cut[i], false)
		net.clogUntil[i] = append(net.clogUntil[i], 0)
		net.latency[i] = append(net.latency[i], latency{})
	}
	net.cut = append(net.cut, make([]bool, n))
	net.clogUntil = append(net.clogUntil, make([]env.Time, n))
	net.latency = append(net.latency, make([]latency, n))
	net.nodeClog = append(net.nodeClog, 0)
}

func (net *network) drawLatency(from, to int) time.Duration {
	l := net.latency[from][to]
	if l == (latency{}) {
		return net.rand.Duration(net.w.opts.LatencyMin, net.w.opts.LatencyMax)
	}
	return net.rand.Duration(l.min, l.max)
}

// obstacle reports why a frame from → to cannot arrive now: "" if it can.
func (net *network) obstacle(from, to int) string {
	now := net.w.now
	switch {
	case net.cut[from][to]:
		return "cut"
	case net.w.nodes[to].state == nodeOff:
		return "off"
	case now < net.clogUntil[from][to] || now < net.nodeClog[from] || now < net.nodeClog[to]:
		return "clog"
	}
	return ""
}

// dial opens a connection from n to addr; the answer comes as events.
func (net *network) dial(n *Node, addr string) env.ConnID {
	net.conns++
	c := &conn{id: net.conns, dialing: true}
	src := &endpoint{conn: c, node: n, inc: n.inc}
	c.ends[0] = src
	n.conns[env.ConnID(c.id)] = src
	w := net.w
	host, port := splitAddr(addr)
	c.port = port
	target := w.byName[host]
	if target == nil || port < 0 {
		// No such host: the dialer hears so after one round of name lookup.
		w.trace.conn(traceRefused, n, nil, c.id, 0)
		w.queue.push(event{at: w.now.Add(net.drawLatency(n.index, n.index)), kind: evClosed, node: n, gen: n.inc, id: c.id})
		return env.ConnID(c.id)
	}
	src.out = &pipe{conn: c, from: n.index, to: target.index, src: src}
	w.trace.conn(traceDial, n, target, c.id, 0)
	if net.cut[n.index][target.index] || target.state == nodeOff {
		// The SYN is lost; the dialer gives up after the connect timeout.
		c.failed = true
		w.queue.push(event{at: w.now.Add(w.opts.ConnectTimeout), kind: evClosed, node: n, gen: n.inc, id: c.id})
		return env.ConnID(c.id)
	}
	at := w.now.Add(net.drawLatency(n.index, target.index))
	src.out.lastAt = at // data sent before the handshake follows the SYN
	w.queue.push(event{at: at, kind: evDial, node: target, id: c.id, fn: nil, pipe: src.out})
	return env.ConnID(c.id)
}

// arriveDial is the SYN reaching the dialed node's kernel.
func (net *network) arriveDial(n *Node, e event) {
	w := net.w
	c := e.pipe.conn
	src := c.ends[0]
	if c.failed || !src.alive() {
		return // the dialer is gone or gave up
	}
	back := net.drawLatency(n.index, src.node.index)
	switch {
	case n.state == nodeOff || net.cut[src.node.index][n.index]:
		c.failed = true
		w.queue.push(event{at: w.now.Add(w.opts.ConnectTimeout), kind: evClosed, node: src.node, gen: src.inc, id: c.id})
		net.drop(src.out)
	case n.state == nodeDown || !n.started || !listens(n, c.port):
		// Nobody listens: the kernel answers with a reset.
		c.failed = true
		w.trace.conn(traceRefused, src.node, n, c.id, 0)
		w.queue.push(event{at: w.now.Add(back), kind: evClosed, node: src.node, gen: src.inc, id: c.id})
		net.drop(src.out)
	default:
		c.listener, _ = n.listenerAt(c.port)
		dst := &endpoint{conn: c, node: n, inc: n.inc}
		dst.out = &pipe{conn: c, from: n.index, to: src.node.index, src: dst, lastAt: w.now.Add(back)}
		c.ends[1] = dst
		n.conns[env.ConnID(c.id)] = dst
		w.trace.conn(traceAccept, n, src.node, c.id, 0)
		// The accepting process hears of it like any event: held while paused.
		n.dispatch(event{at: w.now, kind: evConnected, node: n, gen: n.inc, id: c.id})
		w.queue.push(event{at: w.now.Add(back), kind: evConnected, node: src.node, gen: src.inc, id: c.id})
	}
}

// splitAddr reads a dialed address: a node's name alone (its main listener,
// port 0) or name:port. A port that does not parse is -1: nobody is there.
func splitAddr(addr string) (node string, port int) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, 0
	}
	p, err := strconv.Atoi(addr[i+1:])
	if err != nil || p <= 0 || p > 65535 {
		return addr[:i], -1
	}
	return addr[:i], p
}

func listens(n *Node, port int) bool {
	_, ok := n.listenerAt(port)
	return ok
}

// dispatchNode delivers connection news to a process.
func (net *network) dispatchNode(n *Node, e event) {
	ep := n.conns[env.ConnID(e.id)]
	if ep == nil || ep.closed {
		return
	}
	switch e.kind {
	case evConnected:
		if ep.conn.failed {
			return
		}
		ep.conn.dialing = false
		inbound := ep.conn.ends[1] == ep
		net.w.trace.conn(traceConnected, n, ep.peer().node, e.id, 0)
		peer := ep.peer().node.name
		n.deliver(func() { n.proc.Connected(env.ConnID(e.id), peer, inbound) })
	case evClosed:
		ep.closed = true
		delete(n.conns, env.ConnID(e.id))
		net.w.trace.conn(traceClosed, n, nil, e.id, 0)
		n.deliver(func() { n.proc.Closed(env.ConnID(e.id)) })
	}
}

// send queues a frame from n on connection id.
func (net *network) send(n *Node, id env.ConnID, data []byte, fin bool) {
	ep := n.conns[id]
	if ep == nil || ep.closed || ep.conn.failed || ep.out == nil {
		return
	}
	w := net.w
	p := ep.out
	at := w.now.Add(net.drawLatency(p.from, p.to))
	if !fin {
		// No copy: env.Env's contract leaves the frame to the network
		// once sent (every sender builds a fresh one); delivery checks it
		// was left alone.
		at = at.Add(net.matchDelay(p, data))
	}
	at = max(at, p.lastAt)
	p.lastAt = at
	sum := w.trace.frame(traceSend, n, w.nodes[p.to], uint64(id), data)
	p.frames = append(p.frames, frame{data: data, fin: fin, sum: sum})
	if !p.blocked {
		w.queue.push(event{at: at, kind: evArrive, pipe: p, gen: p.gen})
	}
}

func (net *network) matchDelay(p *pipe, data []byte) time.Duration {
	for i := range net.delays {
		d := &net.delays[i]
		if d.count > 0 && d.from == p.from && d.to == p.to && (d.match == nil || d.match(data)) {
			delay := d.delay
			d.count--
			net.w.trace.fault(net.w.nodes[p.from], "frame-delayed", fmt.Sprintf("conn %d to %s by %v", p.conn.id, net.w.nodes[p.to].name, delay))
			if d.count == 0 {
				net.delays = slices.Delete(net.delays, i, i+1)
			}
			return delay
		}
	}
	return 0
}

// close is a process closing its side: a FIN follows the frames in flight.
func (net *network) close(n *Node, id env.ConnID) {
	ep := n.conns[id]
	if ep == nil {
		return
	}
	if !ep.closed && !ep.conn.failed && ep.out != nil {
		net.send(n, id, nil, true)
	}
	ep.closed = true
	delete(n.conns, id)
}

// closeAll ends every connection of a dying process: with fin (the process
// crashed, the kernel closes its sockets) peers learn of it after the frames
// in flight; without (the power went) they learn nothing.
func (net *network) closeAll(n *Node, fin bool) {
	ids := make([]env.ConnID, 0, len(n.conns))
	for id := range n.conns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ep := n.conns[id]
		if fin && !ep.closed && !ep.conn.failed && ep.out != nil {
			p := ep.out
			at := max(net.w.now.Add(net.drawLatency(p.from, p.to)), p.lastAt)
			p.lastAt = at
			p.frames = append(p.frames, frame{fin: true})
			if !p.blocked {
				net.w.queue.push(event{at: at, kind: evArrive, pipe: p, gen: p.gen})
			}
		}
		ep.closed = true
	}
	clear(n.conns)
}

func (net *network) dispatch(e event) {
	switch e.kind {
	case evArrive:
		if e.gen != e.pipe.gen {
			return // withdrawn: the pipe was blocked or dropped since
		}
		net.arrive(e.pipe)
	case evStallTimeout:
		p := e.pipe
		if p.blocked && p.stallArmed && p.stallGen == e.gen && !p.conn.failed {
			net.w.trace.conn(traceStall, net.w.nodes[p.from], net.w.nodes[p.to], p.conn.id, 0)
			net.reset(p.conn)
		}
	case evUnclog:
		net.unblock()
	}
}

// arrive moves the head frame of p to its receiver, or blocks p.
func (net *network) arrive(p *pipe) {
	if len(p.frames) == 0 {
		panic(fmt.Sprintf("sim: arrival on empty pipe of connection %d", p.conn.id))
	}
	w := net.w
	if why := net.obstacle(p.from, p.to); why != "" {
		net.block(p, why)
		return
	}
	// Shift down rather than reslice, so the queue keeps its array: a
	// connection has a few frames in flight, and reslicing made every
	// append after a drain allocate anew.
	f := p.frames[0]
	n := copy(p.frames, p.frames[1:])
	p.frames[n] = frame{}
	p.frames = p.frames[:n]
	dst := p.src.peer()
	to := w.nodes[p.to]
	if !dst.alive() || !to.started {
		// The receiving socket is gone. A closed socket or a fresh kernel
		// answers data with a reset; a FIN into a dead socket is just lost.
		net.drop(p)
		if !f.fin && p.src.alive() {
			net.resetEnd(p.src, w.now.Add(net.drawLatency(p.to, p.from)))
		}
		return
	}
	id := env.ConnID(p.conn.id)
	if f.fin {
		net.drop(p)
		dst.closed = true
		delete(to.conns, id)
		w.trace.conn(traceClosed, to, w.nodes[p.from], p.conn.id, 0)
		to.deliver(func() { to.proc.Closed(id) })
		return
	}
	if w.trace.frame(traceDeliver, to, w.nodes[p.from], p.conn.id, f.data) != f.sum {
		panic(fmt.Sprintf("sim: a frame %s sent on connection %d changed before it arrived: env.Env leaves a sent frame to the network, the sender must not touch it", w.nodes[p.from].name, p.conn.id))
	}
	if to.paused {
		to.hold(func() { to.proc.Received(id, f.data) })
		return
	}
	w.current = to
	to.proc.Received(id, f.data)
	w.current = nil
}

func (net *network) block(p *pipe, why string) {
	p.blocked = true
	p.gen++
	net.blocked = append(net.blocked, p)
	net.w.trace.conn(traceBlocked, net.w.nodes[p.from], net.w.nodes[p.to], p.conn.id, 0)
	net.obstruct(p, why)
}

// obstruct records why p waits and arms what ends the wait: the end of a
// clog, or — for a cut or a silent peer — the stall timeout that resets the
// connection. A clog never resets one.
func (net *network) obstruct(p *pipe, why string) {
	if why == p.why {
		return
	}
	p.why = why
	if why == "clog" {
		p.stallGen++ // disarm
		p.stallArmed = false
		until := max(net.clogUntil[p.from][p.to], net.nodeClog[p.from], net.nodeClog[p.to])
		net.w.queue.push(event{at: until, kind: evUnclog})
		return
	}
	if !p.stallArmed {
		p.stallArmed = true
		p.stallGen++
		net.w.queue.push(event{at: net.w.now.Add(net.w.opts.StallTimeout), kind: evStallTimeout, pipe: p, gen: p.stallGen})
	}
}

// unblock lets every blocked pipe whose obstacle has lifted move again:
// its frames are rescheduled in order, each after a fresh latency.
func (net *network) unblock() {
	still := net.blocked[:0]
	var free []*pipe
	for _, p := range net.blocked {
		if !p.blocked || p.conn.failed {
			continue
		}
		if why := net.obstacle(p.from, p.to); why != "" {
			net.obstruct(p, why)
			still = append(still, p)
		} else {
			free = append(free, p)
		}
	}
	clear(net.blocked[len(still):])
	net.blocked = still
	for _, p := range free {
		p.blocked = false
		p.why = ""
		p.gen++
		p.stallGen++
		p.stallArmed = false
		p.lastAt = net.w.now
		for range p.frames {
			at := max(net.w.now.Add(net.drawLatency(p.from, p.to)), p.lastAt)
			p.lastAt = at
			net.w.queue.push(event{at: at, kind: evArrive, pipe: p, gen: p.gen})
		}
	}
}

// rescheduleDelayed brings frames held back by DelayFrame (or a latency
// spike) forward: every moving pipe's frames are rescheduled from now with
// fresh latencies, in order.
func (net *network) rescheduleDelayed() {
	for _, n := range net.w.nodes {
		ids := make([]env.ConnID, 0, len(n.conns))
		for id := range n.conns {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			p := n.conns[id].out
			if p == nil || p.blocked || len(p.frames) == 0 || p.conn.failed {
				continue
			}
			p.gen++
			p.lastAt = net.w.now
			for range p.frames {
				at := max(net.w.now.Add(net.drawLatency(p.from, p.to)), p.lastAt)
				p.lastAt = at
				net.w.queue.push(event{at: at, kind: evArrive, pipe: p, gen: p.gen})
			}
		}
	}
}

// drop discards everything in flight on p.
func (net *network) drop(p *pipe) {
	clear(p.frames)
	p.frames = p.frames[:0]
	p.gen++
	p.blocked = false
}

// reset breaks a connection: frames in flight both ways are lost, and both
// ends, if their processes still live, are told.
func (net *network) reset(c *conn) {
	if c.failed {
		return
	}
	c.failed = true
	for _, ep := range c.ends {
		if ep == nil {
			continue
		}
		if ep.out != nil {
			net.drop(ep.out)
		}
		if ep.alive() {
			net.w.queue.push(event{at: net.w.now, kind: evClosed, node: ep.node, gen: ep.inc, id: c.id})
		}
	}
}

// resetEnd tells one live end its connection was reset.
func (net *network) resetEnd(ep *endpoint, at env.Time) {
	ep.conn.failed = true
	if ep.out != nil {
		net.drop(ep.out)
	}
	net.w.queue.push(event{at: at, kind: evClosed, node: ep.node, gen: ep.inc, id: ep.conn.id})
}
