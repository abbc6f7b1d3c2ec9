package host

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// Defaults for the zero values of Options' bounds.
const (
	// DefaultFrameBytesMax is Kafka's own default for socket.request.max.bytes
	// rounded up: 100 MiB.
	DefaultFrameBytesMax = 100 << 20
	// DefaultSendQueueBytesMax bounds what one connection may have queued and
	// unwritten: a peer that stops reading gets reset, not buffered forever.
	DefaultSendQueueBytesMax = 256 << 20
	// DefaultDialTimeout bounds one connection attempt.
	DefaultDialTimeout = 10 * time.Second
	// DefaultCloseLinger bounds how long a closed connection keeps flushing
	// frames queued before Close to a peer that does not read.
	DefaultCloseLinger = 5 * time.Second
)

// eventsMax bounds a node's event queue. When the loop falls behind, readers
// block on it and TCP flow control slows the peers down.
const eventsMax = 1024

// ErrStopped is returned by Node.Do once the node has stopped.
var ErrStopped = errors.New("host: node stopped")

// Options configure a Node. Listen and DataDir are required; a zero bound
// means the Default constant of the same name.
type Options struct {
	// Listen is the TCP address to listen on; its port may be 0 to pick a
	// free one (Node.Addr then tells which).
	Listen string
	// Listeners are more TCP addresses to listen on, by name (a broker's
	// inter-broker listener, as Kafka's listeners setting names them:
	// KIP-103). Ports may be 0; Node.ListenerAddr tells which was picked. The
	// process tells them apart with Env.Listener.
	Listeners map[string]string
	// DataDir is the directory holding the node's disk; created if missing.
	DataDir string
	// Seed seeds the node's random stream; nil draws a seed from crypto/rand.
	Seed *uint64
	// Log receives structured log lines (the process's and the runtime's);
	// nil means os.Stderr.
	Log io.Writer
	// FrameBytesMax is the largest inbound frame accepted; a longer one
	// closes the connection.
	FrameBytesMax int
	// SendQueueBytesMax is the most bytes one connection may have queued and
	// not yet written; beyond it the connection is reset and both ends told.
	SendQueueBytesMax int
	// DialTimeout bounds one connection attempt.
	DialTimeout time.Duration
	// CloseLinger bounds how long Close keeps flushing queued frames.
	CloseLinger time.Duration
}

// Node is one running process: its listener, its event loop, its
// connections, its timers and its disk.
type Node struct {
	opts Options
	addr string
	lns  []*namedListener // the main one ("") first, then by name
	log  *slog.Logger

	events chan event
	quit   chan struct{} // closed by Stop: the loop and every goroutine leave
	done   chan struct{} // closed when the loop has returned
	ctx    context.Context
	cancel context.CancelFunc // aborts dials in progress
	wg     sync.WaitGroup     // the loop and every goroutine of this node
	stop   sync.Once

	mu      sync.Mutex
	stopped bool
	live    map[*conn]struct{} // sockets open, so that Stop can close them

	// Owned by the loop.
	proc    env.Process
	disk    *Disk
	rand    *env.Rand
	conns   map[env.ConnID]*conn
	connSeq env.ConnID
	timers  timerQueue
	later   []func() // process calls owed, run after the current one
	clock   *time.Timer
	boot    time.Time // wall and monotonic reading at boot
	halted  bool      // the process called Halt: its Env is inert
}

// event is something a goroutine hands to the loop.
type event interface{}

type (
	acceptedEvent struct{ c *conn }
	dialedEvent   struct {
		c   *conn
		err error
	}
	receivedEvent struct {
		c     *conn
		frame []byte
	}
	brokenEvent struct{ c *conn }
	doEvent     struct {
		f    func()
		done chan struct{}
	}
)

// Start boots a node: it opens the disk, listens, and runs a fresh process
// from factory, whose Start is the first call on the loop.
func Start(opts Options, factory func() env.Process) (*Node, error) {
	if opts.Listen == "" {
		return nil, errors.New("host: Options.Listen is empty; give an address such as 127.0.0.1:9092")
	}
	if opts.DataDir == "" {
		return nil, errors.New("host: Options.DataDir is empty; give the directory holding the node's files")
	}
	if opts.FrameBytesMax < 0 || opts.SendQueueBytesMax < 0 || opts.DialTimeout < 0 || opts.CloseLinger < 0 {
		return nil, fmt.Errorf("host: negative bound in options %+v", opts)
	}
	if opts.FrameBytesMax == 0 {
		opts.FrameBytesMax = DefaultFrameBytesMax
	}
	if opts.FrameBytesMax > 1<<31-1 {
		return nil, fmt.Errorf("host: FrameBytesMax %d exceeds what a 4-byte Kafka length can say", opts.FrameBytesMax)
	}
	if opts.SendQueueBytesMax == 0 {
		opts.SendQueueBytesMax = DefaultSendQueueBytesMax
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.CloseLinger == 0 {
		opts.CloseLinger = DefaultCloseLinger
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	var seed uint64
	if opts.Seed != nil {
		seed = *opts.Seed
	} else {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("host: drawing a random seed: %w", err)
		}
		seed = binary.LittleEndian.Uint64(b[:])
	}

	disk, err := OpenDisk(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	lns, err := listen(opts)
	if err != nil {
		disk.Close()
		return nil, err
	}
	addr := lns[0].addr
	n := &Node{
		opts:   opts,
		addr:   addr,
		lns:    lns,
		log:    slog.New(slog.NewTextHandler(opts.Log, nil)).With("node", addr),
		events: make(chan event, eventsMax),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		live:   map[*conn]struct{}{},
		disk:   disk,
		rand:   env.NewRand(seed),
		conns:  map[env.ConnID]*conn{},
		boot:   time.Now(),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.clock = time.NewTimer(time.Hour)
	n.clock.Stop()
	n.proc = factory()

	n.wg.Add(1 + len(lns))
	go n.loop()
	for _, l := range lns {
		go n.accept(l)
	}
	return n, nil
}

// namedListener is one TCP listener of the node.
type namedListener struct {
	name string // "" for the main one
	addr string // as bound: the port picked for port 0
	ln   net.Listener
}

// listen opens the main listener and then the named ones, in name order.
func listen(opts Options) ([]*namedListener, error) {
	names := make([]string, 0, len(opts.Listeners))
	for name := range opts.Listeners {
		if name == "" {
			return nil, errors.New("host: Options.Listeners has a listener without a name; the main one is Options.Listen")
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var lns []*namedListener
	closeAll := func() {
		for _, l := range lns {
			l.ln.Close()
		}
	}
	for _, name := range append([]string{""}, names...) {
		at := opts.Listen
		if name != "" {
			at = opts.Listeners[name]
		}
		ln, err := net.Listen("tcp", at)
		if err != nil {
			closeAll()
			if name == "" {
				return nil, fmt.Errorf("host: listen on %s: %w", at, err)
			}
			return nil, fmt.Errorf("host: listener %s: listen on %s: %w", name, at, err)
		}
		lns = append(lns, &namedListener{name: name, addr: ln.Addr().String(), ln: ln})
	}
	return lns, nil
}

// Addr is the address the node listens on, which is also its env.Name.
func (n *Node) Addr() string { return n.addr }

// ListenerAddr is the address of the listener called name ("" the main
// one), as bound; "" if the node has none by that name.
func (n *Node) ListenerAddr(name string) string {
	for _, l := range n.lns {
		if l.name == name {
			return l.addr
		}
	}
	return ""
}

// Do runs f on the node's loop, between two process calls, and waits for
// it. It returns ErrStopped, without running f, once the node has stopped.
// f must not call Do on the same node: the loop would wait for itself.
func (n *Node) Do(f func()) error {
	done := make(chan struct{})
	select {
	case n.events <- doEvent{f: f, done: done}:
	case <-n.quit:
		return ErrStopped
	}
	select {
	case <-done:
		return nil
	case <-n.done:
		// The loop may have run f just before leaving.
		select {
		case <-done:
			return nil
		default:
			return ErrStopped
		}
	}
}

// Stop crashes the process cleanly: the listener and every connection close
// (peers see Closed), pending timers are dropped, and Stop returns once the
// loop and every goroutine of the node are gone and the disk is closed. It
// waits for a process call in progress to finish. Stop may be called any
// number of times, from any goroutine but the node's own loop.
func (n *Node) Stop() {
	n.stop.Do(func() {
		close(n.quit)
		n.cancel()
		for _, l := range n.lns {
			l.ln.Close()
		}
		n.mu.Lock()
		n.stopped = true
		live := n.live
		n.live = nil
		n.mu.Unlock()
		for c := range live {
			c.shutdown()
		}
		n.wg.Wait()
		n.disk.Close()
	})
}

// Shutdown stops the node cleanly, as SIGTERM should: if the process
// implements env.Stopper its Stop runs on the loop first (the broker flushes
// its logs and checkpoints its high watermarks there), then the node stops
// as Stop does. A halted process gets no Stop call: its Env is inert. Like
// Stop, Shutdown may be called from any goroutine but the node's own loop.
func (n *Node) Shutdown() {
	_ = n.Do(func() {
		if s, ok := n.proc.(env.Stopper); ok && !n.halted {
			s.Stop()
		}
	})
	n.Stop()
}

// post hands an event to the loop, or reports false once the node stops.
func (n *Node) post(ev event) bool {
	select {
	case n.events <- ev:
		return true
	case <-n.quit:
		return false
	}
}

// register records an open socket so that Stop can close it; after Stop it
// closes the socket instead and reports false.
func (n *Node) register(c *conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		c.nc.Close()
		return false
	}
	n.live[c] = struct{}{}
	return true
}

func (n *Node) unregister(c *conn) {
	n.mu.Lock()
	delete(n.live, c)
	n.mu.Unlock()
}

// loop is the node's single thread of process execution.
func (n *Node) loop() {
	defer n.wg.Done()
	defer close(n.done)
	defer n.clock.Stop()
	n.proc.Start((*nodeEnv)(n))
	n.runLater()
	n.armClock()
	for {
		select {
		case <-n.quit:
			return
		default:
		}
		select {
		case ev := <-n.events:
			n.handle(ev)
		case <-n.clock.C:
			n.fireTimers()
		case <-n.quit:
			return
		}
		n.runLater()
		n.armClock()
	}
}

// runLater makes the process calls owed by the last one.
func (n *Node) runLater() {
	for len(n.later) > 0 {
		f := n.later[0]
		n.later = n.later[1:]
		f()
	}
}

func (n *Node) handle(ev event) {
	switch ev := ev.(type) {
	case acceptedEvent:
		c := ev.c
		n.connSeq++
		c.id = n.connSeq
		n.conns[c.id] = c
		c.up = true
		n.startIO(c)
		n.proc.Connected(c.id, c.peer, true)
	case dialedEvent:
		c := ev.c
		if n.conns[c.id] != c {
			// The process closed it while the dial was in progress.
			if ev.err == nil {
				c.shutdown()
			}
			return
		}
		if ev.err != nil {
			delete(n.conns, c.id)
			n.proc.Closed(c.id)
			return
		}
		c.up = true
		n.startIO(c)
		n.proc.Connected(c.id, c.peer, false)
	case receivedEvent:
		if n.conns[ev.c.id] == ev.c {
			n.proc.Received(ev.c.id, ev.frame)
		}
	case brokenEvent:
		if n.conns[ev.c.id] == ev.c {
			delete(n.conns, ev.c.id)
			n.proc.Closed(ev.c.id)
		}
	case doEvent:
		ev.f()
		close(ev.done)
	default:
		panic(fmt.Sprintf("host: unknown event %T", ev))
	}
}

// accept hands every inbound connection on l to the loop until the listener
// closes.
func (n *Node) accept(l *namedListener) {
	defer n.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-n.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: wait rather than spin,
				// as net/http does.
				n.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-n.quit:
					return
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			n.log.Error("accept failed; no longer accepting", "err", err)
			return
		}
		backoff = 5 * time.Millisecond
		c := newConn(n, nc.RemoteAddr().String())
		c.nc = nc
		c.listener = l.name
		if !n.register(c) {
			return
		}
		if !n.post(acceptedEvent{c}) {
			return // Stop closes the socket.
		}
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// nodeEnv is the node seen as an env.Env. Its methods run on the loop.
type nodeEnv Node

var _ env.Env = (*nodeEnv)(nil)

func (e *nodeEnv) Name() string                    { return e.addr }
func (e *nodeEnv) ListenerAddr(name string) string { return (*Node)(e).ListenerAddr(name) }

func (e *nodeEnv) Listener(id env.ConnID) string {
	if c := e.conns[id]; c != nil {
		return c.listener
	}
	return ""
}

func (e *nodeEnv) Now() env.Time       { return (*Node)(e).now() }
func (e *nodeEnv) WallClock() env.Time { return env.Time(time.Now().UnixNano()) }

// Probe does nothing: in real mode no harness counts coverage.
func (e *nodeEnv) Probe(name, subject string) {}

// now is the wall clock at boot plus the monotonic time since: it cannot
// jump when the system clock is stepped, so deadlines computed from it agree
// with the runtime timers that wake the loop.
func (n *Node) now() env.Time {
	return env.Time(n.boot.UnixNano() + int64(time.Since(n.boot)))
}

func (e *nodeEnv) AfterFunc(d time.Duration, f func()) env.TimerID {
	n := (*Node)(e)
	if n.halted {
		f = func() {}
	}
	return n.timers.add(n.now().Add(max(d, 0)), f)
}

func (e *nodeEnv) Cancel(id env.TimerID) bool { return e.timers.cancel(id) }

func (e *nodeEnv) Dial(addr string) env.ConnID {
	n := (*Node)(e)
	n.connSeq++
	c := newConn(n, addr)
	c.id = n.connSeq
	n.conns[c.id] = c
	n.wg.Add(1)
	go n.dial(c, addr)
	return c.id
}

func (n *Node) dial(c *conn, addr string) {
	defer n.wg.Done()
	d := net.Dialer{Timeout: n.opts.DialTimeout}
	nc, err := d.DialContext(n.ctx, "tcp", addr)
	if err == nil {
		c.nc = nc
		if !n.register(c) {
			return
		}
	}
	n.post(dialedEvent{c: c, err: err})
}

func (e *nodeEnv) Send(id env.ConnID, frame []byte) {
	c := e.conns[id]
	if c == nil || e.halted {
		return
	}
	if len(frame) > 1<<31-1 {
		e.log.Error("frame too long for a 4-byte Kafka length; resetting the connection",
			"conn", id, "bytes", len(frame))
		e.resetConn(c)
		return
	}
	if !c.enqueue(frame, e.opts.SendQueueBytesMax) {
		e.log.Warn("send queue full; resetting the connection", "conn", id, "peer", c.peer,
			"queued_bytes_max", e.opts.SendQueueBytesMax)
		e.resetConn(c)
	}
}

// resetConn breaks a connection the way a network failure would: the socket
// closes at once and this process is told too.
func (e *nodeEnv) resetConn(c *conn) {
	if !c.up {
		// Still dialing: there is no socket to close yet, so there will be no
		// reader to report it. Forget the connection (the dial's result is
		// then thrown away) and report Closed after the current call, never
		// from inside it.
		delete(e.conns, c.id)
		id := c.id
		e.later = append(e.later, func() { e.proc.Closed(id) })
		return
	}
	c.shutdown()
}

func (e *nodeEnv) Close(id env.ConnID) {
	c := e.conns[id]
	if c == nil {
		return
	}
	delete(e.conns, id)
	if !c.up {
		return // dialing: the dial's result will be thrown away
	}
	c.closeGracefully(e.opts.CloseLinger)
}

func (e *nodeEnv) Disk() env.Disk {
	if e.halted {
		return env.FailedDisk{Err: errHalted}
	}
	return e.disk
}

// Halt implements env.Env: the process asked to die, as Kafka halts on a
// failed fsync. The node stops like a crash; Done tells the owner.
func (e *nodeEnv) Halt(reason string) {
	if e.halted {
		return
	}
	e.halted = true
	e.log.Error("halt", "reason", reason)
	go (*Node)(e).Stop()
}

// Done is closed once the node's loop has ended (after Stop or Halt).
func (n *Node) Done() <-chan struct{} { return n.done }

func (e *nodeEnv) Rand() *env.Rand { return e.rand }

func (e *nodeEnv) Log(msg string, kv ...any) { e.log.Info(msg, kv...) }

var errHalted = fmt.Errorf("process halted: %w", env.ErrIO)
