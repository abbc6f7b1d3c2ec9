package env

import "time"

// TimerID names a timer set with Env.AfterFunc. It is never 0, so a
// process may use 0 to mean "no timer".
type TimerID uint64

// ConnID names one connection of a process. IDs are never 0 and never
// reused within a process's lifetime.
type ConnID uint64

// Env is everything a process may touch. All methods are called from the
// process's own event loop only.
type Env interface {
	// Name is the address other processes dial to reach this one: its main
	// listener's.
	Name() string
	// ListenerAddr is the address other processes dial to reach this node's
	// listener called name, or "" if the node has none by that name (the
	// runtime is given a node's listeners, as Kafka's listeners setting
	// gives a broker its: KIP-103). ListenerAddr("") is Name.
	ListenerAddr(name string) string
	// Listener names the listener an inbound connection arrived on: "" for
	// the main one, else the name ListenerAddr knows it by. A connection
	// this process dialed, or one it no longer has, has none: "". A process
	// may serve a listener's connections differently (a broker answers
	// inter-broker requests only on its inter-broker listener).
	Listener(c ConnID) string

	// Now is the node's monotonic clock, for timeouts and delays (Java's
	// System.nanoTime, Kafka's Time.nanoseconds): it never steps, though it
	// may run fast or slow. Timers run on it. Its readings are comparable
	// only within one node.
	Now() Time
	// WallClock is the node's wall clock, for timestamps and the expiries
	// Kafka measures on it (System.currentTimeMillis, Kafka's
	// Time.milliseconds): it may be skewed relative to other nodes and may
	// step forward or back at any moment.
	WallClock() Time

	// AfterFunc runs f on this process's event loop once d has passed on the
	// local clock. A crash discards every pending timer.
	AfterFunc(d time.Duration, f func()) TimerID
	// Cancel stops a timer; it reports whether the timer was still pending.
	Cancel(id TimerID) bool

	// Dial opens a connection to the process listening at addr. It returns at
	// once; Process.Connected or Process.Closed follows.
	Dial(addr string) ConnID
	// Send queues one frame on the connection. The frame arrives whole, in
	// order, at most once. The caller must not modify frame afterwards.
	// Frames sent after Dial but before Connected are held and follow the
	// handshake. Sending on a closed connection is a no-op; Process.Closed
	// has been or will be delivered.
	Send(c ConnID, frame []byte)
	// Close closes the connection. The peer is told; this process is not.
	Close(c ConnID)

	// Disk is the node's disk, surviving process restarts (and, for synced
	// bytes, power loss).
	Disk() Disk

	// Rand is this node's random stream. In the simulator it carries on
	// across restarts; in real mode an unseeded node draws a fresh seed at
	// each boot. Identifiers that must not repeat across incarnations belong
	// on the disk, not in the random stream.
	Rand() *Rand

	// Log writes a structured line into the trace: a message followed by
	// alternating keys and values.
	Log(msg string, kv ...any)

	// Probe reports that the process reached a named coverage point
	// (package probe names them) about subject: a partition as "topic/N", a
	// group, a transactional id. The world counts it; nothing else changes.
	Probe(name, subject string)

	// Halt stops the process at once, as Kafka halts on an fsync failure:
	// the node goes down like a crash (the simulator may restart it; in real
	// mode the process exits). Once Halt returns, the Env is inert: timers,
	// sends and disk operations do nothing or fail.
	Halt(reason string)
}

// Process is code that runs on a node: a broker, the controller, a client
// application, the sink store. Every method runs on the node's event loop, one
// call at a time; none may block.
type Process interface {
	// Start boots the process (or reboots it after a crash): it recovers its
	// state from e.Disk() and sets its first timers. e stays valid for the
	// life of this process instance.
	Start(e Env)
	// Connected reports a connection that is now open: one this process
	// dialed (inbound false; peer is the address dialed) or one a peer
	// dialed to it (inbound true; peer is an opaque remote address — on TCP
	// not the dialer's Name, so identify peers by what they say, not by it).
	Connected(c ConnID, peer string, inbound bool)
	// Received delivers one frame. The process owns frame.
	Received(c ConnID, frame []byte)
	// Closed reports that a connection is gone (reset, refused, peer closed or
	// timed out). Frames in flight on it may or may not have arrived. A peer
	// that lost power sends no close: the connection closes only when a send
	// into it goes unanswered long enough, or the peer reboots and resets it.
	Closed(c ConnID)
}

// Stopper is implemented by processes that want a clean shutdown (SIGTERM
// in real mode): Stop runs on the event loop before the node goes down, so
// the process can deregister, flush and checkpoint. A crash never calls it.
type Stopper interface {
	Stop()
}
