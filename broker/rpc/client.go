package rpc

import (
	"errors"
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors a call can end with (wrapped in a *CallError).
var (
	// ErrNotSent: the request never left this process (no connection could
	// be made, or the client was closed first). It certainly did not happen.
	ErrNotSent = errors.New("not sent")
	// ErrDisconnected: the connection closed before the response came. The
	// request may or may not have been processed.
	ErrDisconnected = errors.New("disconnected")
	// ErrTimeout: no response in time; the connection was closed. The
	// request may or may not have been processed.
	ErrTimeout = errors.New("request timed out")
	// ErrUnsupported: the server does not speak this API.
	ErrUnsupported = errors.New("unsupported by server")
	// ErrBadResponse: the response did not parse; the connection was closed.
	ErrBadResponse = errors.New("malformed response")
)

// CallError is the failure of one call.
type CallError struct {
	Addr string
	API  string
	Err  error
}

func (e *CallError) Error() string { return fmt.Sprintf("%s to %s: %v", e.API, e.Addr, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// Indefinite reports whether err leaves it unknown if the request took
// effect.
func Indefinite(err error) bool {
	return errors.Is(err, ErrDisconnected) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrBadResponse)
}

// ClientOptions tune a Client.
type ClientOptions struct {
	ClientID string
	// Speaks is the APIs and versions this client's code can encode; the
	// version used is the highest both sides speak.
	Speaks wire.Versions
	// ReconnectBackoff and ReconnectBackoffMax bound the wait between
	// failed dials (Kafka's reconnect.backoff.ms / .max.ms).
	ReconnectBackoff, ReconnectBackoffMax time.Duration
}

// Client is a connection to one server, redialed as needed.
type Client struct {
	router *Router
	e      env.Env
	addr   string
	opts   ClientOptions

	conn     env.ConnID
	state    clientState
	versions wire.Versions // the server's, from ApiVersions
	corr     int32
	waiting  []*call // not sent yet: before connect or version negotiation
	inflight []*call // sent, answers come in this order

	backoff     time.Duration
	redialTimer env.TimerID
	redialAt    env.Time
	shut        bool
}

type clientState uint8

const (
	idle clientState = iota
	dialing
	negotiating
	ready
)

type call struct {
	req      kmsg.Request
	corr     int32
	timeout  time.Duration
	timer    env.TimerID
	done     func(kmsg.Response, error)
	noAnswer bool
	finished bool
}

// NewClient returns a client for addr. It dials on first use.
func NewClient(r *Router, addr string, opts ClientOptions) *Client {
	if opts.ReconnectBackoff == 0 {
		opts.ReconnectBackoff = 50 * time.Millisecond
	}
	if opts.ReconnectBackoffMax == 0 {
		opts.ReconnectBackoffMax = time.Second
	}
	return &Client{router: r, e: r.e, addr: addr, opts: opts}
}

// Addr is the server's address.
func (c *Client) Addr() string { return c.addr }

// Ready reports whether the connection is up and versions are known.
func (c *Client) Ready() bool { return c.state == ready }

// Inflight is the number of requests sent and not yet answered.
func (c *Client) Inflight() int { return len(c.inflight) }

// Do sends req and calls done with the response or a *CallError. timeout
// (0: none) bounds the whole call: still unsent at the deadline it fails
// with ErrNotSent, sent and unanswered with ErrTimeout.
func (c *Client) Do(req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) {
	c.enqueue(&call{req: req, timeout: timeout, done: done})
}

// Send sends req expecting no answer (Produce with acks=0); done is called
// once it is handed to the connection, or with ErrNotSent.
func (c *Client) Send(req kmsg.Request, done func(error)) {
	c.enqueue(&call{req: req, noAnswer: true, done: func(_ kmsg.Response, err error) { done(err) }})
}

func (c *Client) enqueue(k *call) {
	if c.shut {
		c.finish(k, nil, ErrNotSent)
		return
	}
	c.waiting = append(c.waiting, k)
	if k.timeout > 0 {
		k.timer = c.e.AfterFunc(k.timeout, func() { c.timedOut(k) })
	}
	switch c.state {
	case idle:
		c.dial()
	case ready:
		c.flush()
	}
}

func (c *Client) dial() {
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
	c.router.clients[c.conn] = c
}

func (c *Client) connected(conn env.ConnID) {
	if conn != c.conn || c.state != dialing {
		return
	}
	c.backoff = 0
	c.state = negotiating
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0) // understood by every server; v0 needs no client software fields
	c.corr++
	c.inflight = append(c.inflight, &call{req: req, corr: c.corr, done: c.negotiated})
	c.e.Send(conn, wire.AppendRequest(nil, req, c.corr, c.opts.ClientID))
}

func (c *Client) negotiated(resp kmsg.Response, err error) {
	if err != nil {
		return // closed already handled the waiting calls
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	var ranges []wire.Range
	for _, k := range av.ApiKeys {
		if kmsg.RequestForKey(k.ApiKey) != nil && k.MinVersion <= k.MaxVersion && k.MinVersion >= 0 {
			ranges = append(ranges, wire.Range{Key: k.ApiKey, Min: k.MinVersion, Max: min(k.MaxVersion, kmsg.RequestForKey(k.ApiKey).MaxVersion())})
		}
	}
	c.versions = wire.NewVersions(ranges...)
	c.state = ready
	c.flush()
}

// flush sends every waiting call.
func (c *Client) flush() {
	for len(c.waiting) > 0 && c.state == ready {
		k := c.waiting[0]
		c.waiting = c.waiting[1:]
		clientMax := k.req.MaxVersion()
		if r, ok := c.opts.Speaks.Lookup(k.req.Key()); ok {
			clientMax = r.Max
		}
		v, ok := c.versions.Highest(k.req.Key(), clientMax)
		if !ok {
			c.finish(k, nil, ErrUnsupported)
			continue
		}
		k.req.SetVersion(v)
		c.corr++
		k.corr = c.corr
		c.e.Send(c.conn, wire.AppendRequest(nil, k.req, k.corr, c.opts.ClientID))
		if k.noAnswer {
			c.finish(k, nil, nil)
			continue
		}
		c.inflight = append(c.inflight, k)
	}
}

func (c *Client) received(conn env.ConnID, frame []byte) {
	if conn != c.conn {
		return
	}
	corr, err := wire.ResponseCorrelation(frame)
	if err != nil || len(c.inflight) == 0 || c.inflight[0].corr != corr {
		c.e.Log("bad-response", "addr", c.addr, "corr", corr)
		c.fail(ErrBadResponse)
		return
	}
	k := c.inflight[0]
	c.inflight = c.inflight[1:]
	resp, err := wire.ParseResponse(frame, k.req)
	if err != nil {
		c.e.Log("bad-response", "addr", c.addr, "error", err.Error())
		c.finish(k, nil, ErrBadResponse)
		c.fail(ErrBadResponse)
		return
	}
	c.finish(k, resp, nil)
}

func (c *Client) timedOut(k *call) {
	if k.finished {
		return
	}
	k.timer = 0
	for i, w := range c.waiting {
		if w == k {
			// Never sent: it certainly did not happen.
			c.waiting = append(c.waiting[:i:i], c.waiting[i+1:]...)
			c.finish(k, nil, ErrNotSent)
			return
		}
	}
	// Answers come in order: the only way past a lost one is a new
	// connection, as Kafka clients do.
	c.fail(ErrTimeout)
}

func (c *Client) closed(conn env.ConnID) {
	if conn != c.conn {
		return
	}
	wasDialing := c.state == dialing
	c.reset(ErrDisconnected)
	if wasDialing {
		c.bumpBackoff()
		// Nothing was sent: whatever waits fails definitely if we give up,
		// but a redial may still carry it.
	}
	if len(c.waiting) > 0 && !c.shut {
		c.dial()
	}
}

func (c *Client) bumpBackoff() {
	if c.backoff == 0 {
		c.backoff = c.opts.ReconnectBackoff
	} else {
		c.backoff = min(2*c.backoff, c.opts.ReconnectBackoffMax)
	}
	jitter := time.Duration(c.e.Rand().Int63n(int64(c.backoff)/5 + 1))
	c.redialAt = c.e.Now().Add(c.backoff + jitter)
}

// fail closes the connection and fails everything in flight with err.
func (c *Client) fail(err error) {
	if c.state == idle {
		return
	}
	c.e.Close(c.conn)
	delete(c.router.clients, c.conn)
	c.reset(err)
	c.bumpBackoff()
	if len(c.waiting) > 0 && !c.shut {
		c.dial()
	}
}

// reset forgets the connection: calls in flight end with err; waiting calls
// stay for the next connection.
func (c *Client) reset(err error) {
	inflight := c.inflight
	c.inflight = nil
	c.state = idle
	c.conn = 0
	for _, k := range inflight {
		c.finish(k, nil, err)
	}
}

// FailWaiting fails every call not yet sent with ErrNotSent (e.g. when the
// caller gives up on this server).
func (c *Client) FailWaiting() {
	waiting := c.waiting
	c.waiting = nil
	for _, k := range waiting {
		c.finish(k, nil, ErrNotSent)
	}
}

// Close closes the connection: calls in flight fail with ErrDisconnected,
// waiting ones with ErrNotSent. The client can not be used again.
func (c *Client) Close() {
	if c.shut {
		return
	}
	c.shut = true
	if c.state != idle {
		c.e.Close(c.conn)
		delete(c.router.clients, c.conn)
	}
	if c.redialTimer != 0 {
		c.e.Cancel(c.redialTimer)
		c.redialTimer = 0
	}
	c.reset(ErrDisconnected)
	c.FailWaiting()
}

func (c *Client) finish(k *call, resp kmsg.Response, err error) {
	if k.finished {
		return
	}
	k.finished = true
	if k.timer != 0 {
		c.e.Cancel(k.timer)
		k.timer = 0
	}
	if err != nil {
		err = &CallError{Addr: c.addr, API: kmsg.NameForKey(k.req.Key()), Err: err}
	}
	k.done(resp, err)
}
