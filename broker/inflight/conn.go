package inflight

import (
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// Protocol is what a Conn needs from the protocol it carries. Q is the
// protocol's request as queued (what Send encodes), R its response.
type Protocol[Q, R any] interface {
	// Dialed tells the protocol the connection it will hear about
	// (the Kafka client registers it with its process's router).
	Dialed(conn env.ConnID)
	// Handshake runs when a dial connects. It reports whether the
	// connection is ready for calls at once; if not, the protocol sends its
	// own first exchange (with Push) and calls Ready when it is done.
	Handshake(conn env.ConnID) bool
	// Send puts q on the connection. answered false ends the call at once
	// (a Kafka Produce with acks=0); a non-nil err ends it with err, unsent.
	Send(conn env.ConnID, q Q) (answered bool, err error)
	// Forget tells the protocol the connection is no longer the Conn's,
	// when the Conn itself closes it.
	Forget(conn env.ConnID)
	// Failed is the error a call for q ends with when the Conn or End
	// ends it with err (the Kafka client names the API and server in it).
	Failed(q Q, err error) error
}

// Options tune a Conn.
type Options struct {
	// ReconnectBackoff and ReconnectBackoffMax bound the wait between
	// failed dials: it doubles from the first to the second after each
	// failure, with up to 20% jitter from the process's random stream
	// (Kafka's reconnect.backoff.ms and reconnect.backoff.max.ms).
	ReconnectBackoff, ReconnectBackoffMax time.Duration
	// The errors calls end with, as the protocol names them.
	Errors Errors
}

// Errors are the ends a Conn gives calls, by cause.
type Errors struct {
	// NotSentInTime: the call's timeout passed before it could be sent.
	// It certainly did not happen.
	NotSentInTime error
	// Timeout: the call was sent and its timeout passed with no answer;
	// the connection is dropped, as a Kafka client drops it.
	Timeout error
	// InflightOnTimeout: what the other calls in flight end with when one
	// times out (they may or may not have been processed).
	InflightOnTimeout error
	// Disconnected: the connection closed with the call in flight.
	Disconnected error
	// Closed: Close was called with the call still waiting to be sent.
	Closed error
}

// Conn is a client's connection to one server, redialed as needed, that
// carries calls pipelined: sent in order as soon as the connection is
// ready, any number in flight at once. It has no goroutines; the process
// hands it its connection callbacks.
type Conn[Q, R any] struct {
	e     env.Env
	addr  string
	proto Protocol[Q, R]
	opts  Options

	conn     env.ConnID
	state    state
	waiting  []*Call[Q, R] // not sent yet, in call order
	inflight []*Call[Q, R] // sent, in send order

	backoff     time.Duration
	redialAt    env.Time
	redialTimer env.TimerID
	shut        bool
}

type state uint8

const (
	idle state = iota
	dialing
	handshaking
	ready
)

// Call is one request and what waits for its end. A protocol whose
// request embeds its Call queues it with EnqueueCall, one allocation
// fewer per call.
type Call[Q, R any] struct {
	Req      Q
	timer    env.TimerID
	done     func(R, error)
	finished bool
}

// New returns a Conn to addr for the process running on e. It dials on
// first use.
func New[Q, R any](e env.Env, addr string, proto Protocol[Q, R], opts Options) *Conn[Q, R] {
	return &Conn[Q, R]{e: e, addr: addr, proto: proto, opts: opts}
}

// Addr is the server's address.
func (c *Conn[Q, R]) Addr() string { return c.addr }

// ID is the current connection (0 when there is none).
func (c *Conn[Q, R]) ID() env.ConnID { return c.conn }

// Ready reports whether calls are sent as they come.
func (c *Conn[Q, R]) Ready() bool { return c.state == ready }

// Shut reports whether Close was called.
func (c *Conn[Q, R]) Shut() bool { return c.shut }

// Waiting is the number of calls not yet sent.
func (c *Conn[Q, R]) Waiting() int { return len(c.waiting) }

// Inflight is the calls sent and not yet answered, in send order. The
// slice is the Conn's: read it, end calls only with End, and after an End
// read Inflight again (End shifts the calls after it down in place).
func (c *Conn[Q, R]) Inflight() []*Call[Q, R] { return c.inflight }

// Enqueue queues q; done gets its response or error once. timeout (0:
// none) bounds the whole call: still unsent at the deadline it ends with
// Errors.NotSentInTime, sent and unanswered with Errors.Timeout. The
// caller refuses calls on a shut Conn itself.
func (c *Conn[Q, R]) Enqueue(q Q, timeout time.Duration, done func(R, error)) {
	c.EnqueueCall(&Call[Q, R]{Req: q}, timeout, done)
}

// EnqueueCall is Enqueue for a call whose Req is set and which was never
// queued before.
func (c *Conn[Q, R]) EnqueueCall(k *Call[Q, R], timeout time.Duration, done func(R, error)) {
	k.done = done
	c.waiting = append(c.waiting, k)
	if timeout > 0 {
		k.timer = c.e.AfterFunc(timeout, func() { c.timedOut(k) })
	}
	switch c.state {
	case idle:
		c.dial()
	case ready:
		c.flush()
	}
}

// Push puts a call already sent by the protocol (its handshake) at the end
// of the calls in flight.
func (c *Conn[Q, R]) Push(q Q, done func(R, error)) {
	c.inflight = append(c.inflight, &Call[Q, R]{Req: q, done: done})
}

func (c *Conn[Q, R]) dial() {
	if c.redialTimer != 0 {
		return // a redial is already scheduled
	}
	if now := c.e.Now(); now < c.redialAt {
		c.redialTimer = c.e.AfterFunc(c.redialAt.Sub(now), func() {
			c.redialTimer = 0
			if c.state == idle && len(c.waiting) > 0 && !c.shut {
				c.dial()
			}
		})
		return
	}
	c.state = dialing
	c.conn = c.e.Dial(c.addr)
	c.proto.Dialed(c.conn)
}

// Connected is the process's callback for an outbound connection; it
// reports whether conn is this Conn's.
func (c *Conn[Q, R]) Connected(conn env.ConnID) bool {
	if conn == 0 || conn != c.conn {
		return false
	}
	if c.state != dialing {
		return true
	}
	c.backoff = 0
	c.state = handshaking
	if c.proto.Handshake(conn) {
		c.MarkReady()
	}
	return true
}

// MarkReady ends the handshake: waiting calls go out.
func (c *Conn[Q, R]) MarkReady() {
	c.state = ready
	c.flush()
}

// flush sends every waiting call.
func (c *Conn[Q, R]) flush() {
	for len(c.waiting) > 0 && c.state == ready {
		k := c.waiting[0]
		n := copy(c.waiting, c.waiting[1:]) // shift down, so the array is reused
		c.waiting[n] = nil
		c.waiting = c.waiting[:n]
		answered, err := c.proto.Send(c.conn, k.Req)
		switch {
		case err != nil:
			c.finish(k, err)
		case !answered:
			c.finish(k, nil)
		default:
			c.inflight = append(c.inflight, k)
		}
	}
}

// End ends the call in flight at index i: with its response, or with err
// (an answer the protocol could not read).
func (c *Conn[Q, R]) End(i int, resp R, err error) {
	k := c.inflight[i]
	n := i + copy(c.inflight[i:], c.inflight[i+1:]) // in place: callers end at most one call per pass over Inflight
	c.inflight[n] = nil
	c.inflight = c.inflight[:n]
	c.end(k, resp, err)
}

func (c *Conn[Q, R]) timedOut(k *Call[Q, R]) {
	k.timer = 0
	if k.finished {
		return
	}
	for i, w := range c.waiting {
		if w == k {
			// Never sent: it certainly did not happen.
			c.waiting = append(c.waiting[:i:i], c.waiting[i+1:]...)
			c.finish(k, c.opts.Errors.NotSentInTime)
			if c.state == handshaking {
				// The handshake is still unanswered when a call behind
				// it times out (a server that accepted the connection but
				// serves nothing yet, or one gone without a word): drop
				// the connection, as Kafka's NetworkClient disconnects on
				// a timed-out request its ApiVersions included, so the
				// next call dials afresh instead of waiting behind it.
				c.Drop(nil, nil, c.opts.Errors.InflightOnTimeout)
			}
			return
		}
	}
	// Sent and unanswered: the server may be gone or cut off. Drop the
	// connection, so that later calls find out fast on a new one.
	c.Drop(k, c.opts.Errors.Timeout, c.opts.Errors.InflightOnTimeout)
}

// Closed is the process's callback for a closed connection; it reports
// whether conn was this Conn's. Calls in flight end with
// Errors.Disconnected; waiting ones are sent on a redialed connection.
func (c *Conn[Q, R]) Closed(conn env.ConnID) bool {
	if conn == 0 || conn != c.conn {
		return false
	}
	wasDialing := c.state == dialing
	c.reset(nil, nil, c.opts.Errors.Disconnected)
	if wasDialing {
		c.bumpBackoff() // refused or unreachable: nothing was sent
	}
	if len(c.waiting) > 0 && !c.shut {
		c.dial()
	}
	return true
}

// Drop closes the connection: cause (if any) ends with causeErr, every
// other call in flight with err; waiting calls go on a redialed
// connection after the backoff.
func (c *Conn[Q, R]) Drop(cause *Call[Q, R], causeErr, err error) {
	if c.state == idle {
		return
	}
	c.e.Close(c.conn)
	c.proto.Forget(c.conn)
	c.reset(cause, causeErr, err)
	c.bumpBackoff()
	if len(c.waiting) > 0 && !c.shut {
		c.dial()
	}
}

// reset forgets the connection: calls in flight end (cause with causeErr,
// the others with err); waiting calls stay for the next connection.
func (c *Conn[Q, R]) reset(cause *Call[Q, R], causeErr, err error) {
	inflight := c.inflight
	c.inflight = nil
	c.state = idle
	c.conn = 0
	for _, k := range inflight {
		if k == cause {
			c.finish(k, causeErr)
			continue
		}
		c.finish(k, err)
	}
}

func (c *Conn[Q, R]) bumpBackoff() {
	if c.backoff == 0 {
		c.backoff = c.opts.ReconnectBackoff
	} else {
		c.backoff = min(2*c.backoff, c.opts.ReconnectBackoffMax)
	}
	jitter := time.Duration(c.e.Rand().Int63n(int64(c.backoff)/5 + 1))
	c.redialAt = c.e.Now().Add(c.backoff + jitter)
}

// FailWaiting ends every call not yet sent with err (when the caller gives
// up on this server).
func (c *Conn[Q, R]) FailWaiting(err error) {
	waiting := c.waiting
	c.waiting = nil
	for _, k := range waiting {
		c.finish(k, err)
	}
}

// Close closes the connection for good: calls in flight end with
// Errors.Disconnected, waiting ones with Errors.Closed.
func (c *Conn[Q, R]) Close() {
	if c.shut {
		return
	}
	c.shut = true
	if c.state != idle {
		c.e.Close(c.conn)
		c.proto.Forget(c.conn)
	}
	if c.redialTimer != 0 {
		c.e.Cancel(c.redialTimer)
		c.redialTimer = 0
	}
	c.reset(nil, nil, c.opts.Errors.Disconnected)
	c.FailWaiting(c.opts.Errors.Closed)
}

func (c *Conn[Q, R]) finish(k *Call[Q, R], err error) {
	if k.finished {
		return
	}
	var zero R
	c.end(k, zero, err)
}

// end ends k with resp or err, the protocol's (Protocol.Failed).
func (c *Conn[Q, R]) end(k *Call[Q, R], resp R, err error) {
	k.finished = true
	c.stopTimer(k)
	if err != nil {
		err = c.proto.Failed(k.Req, err)
	}
	k.done(resp, err)
}

func (c *Conn[Q, R]) stopTimer(k *Call[Q, R]) {
	if k.timer != 0 {
		c.e.Cancel(k.timer)
		k.timer = 0
	}
}
