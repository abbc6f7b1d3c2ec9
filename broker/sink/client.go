package sink

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/inflight"
	"github.com/kafkasim/kafkasim/env"
)

// ClientOptions tune a Client. Zero fields take DefaultClientOptions' value.
type ClientOptions struct {
	// ReconnectBackoff and ReconnectBackoffMax bound the wait between
	// failed dials: it doubles from the first to the second, with up to 20%
	// jitter from the process's random stream.
	ReconnectBackoff, ReconnectBackoffMax time.Duration
	// RequestsQueuedMax bounds the calls waiting to be sent plus those in
	// flight; a call past it fails at once with ErrNotSent.
	RequestsQueuedMax int
}

// DefaultClientOptions are the values used for zero fields.
var DefaultClientOptions = ClientOptions{
	ReconnectBackoff:    50 * time.Millisecond,
	ReconnectBackoffMax: time.Second,
	RequestsQueuedMax:   1024,
}

func (o ClientOptions) withDefaults() ClientOptions {
	d := DefaultClientOptions
	if o.ReconnectBackoff == 0 {
		o.ReconnectBackoff = d.ReconnectBackoff
	}
	if o.ReconnectBackoffMax == 0 {
		o.ReconnectBackoffMax = d.ReconnectBackoffMax
	}
	if o.RequestsQueuedMax == 0 {
		o.RequestsQueuedMax = d.RequestsQueuedMax
	}
	return o
}

// Client talks to one sink server from inside a process. It has no
// goroutines: the process forwards its connection callbacks to Connected,
// Received and Closed, each of which reports whether the connection was the
// client's, so a process that also runs Kafka clients offers each callback
// to the sink client first and passes it on when the answer is false.
//
// Calls are pipelined on one connection (an inflight.Conn), dialed on first
// use and redialed with backoff. A call not yet sent waits for a connection
// until its timeout; a call sent is never re-sent by the client (that could
// apply a write twice): if its connection drops it fails indefinitely.
// Answers may come in any order; each names its call.
type Client struct {
	e      env.Env
	addr   string
	opts   ClientOptions
	conn   *inflight.Conn[*call, *response]
	idNext uint64
}

type call struct {
	id    uint64
	op    op
	frame []byte
}

// NewClient returns a client of the sink server at addr, for the process
// running on e. It dials on first use.
func NewClient(e env.Env, addr string, opts ClientOptions) *Client {
	opts = opts.withDefaults()
	c := &Client{e: e, addr: addr, opts: opts}
	c.conn = inflight.New[*call, *response](e, addr, protocol{e}, inflight.Options{
		ReconnectBackoff:    opts.ReconnectBackoff,
		ReconnectBackoffMax: opts.ReconnectBackoffMax,
		Errors: inflight.Errors{
			NotSentInTime:     fmt.Errorf("%w: no connection to %s in time", ErrNotSent, addr),
			Timeout:           ErrTimeout,
			InflightOnTimeout: ErrDisconnected,
			Disconnected:      ErrDisconnected,
			Closed:            fmt.Errorf("%w: client closed", ErrNotSent),
		},
	})
	return c
}

// Addr is the server's address.
func (c *Client) Addr() string { return c.addr }

// Outstanding is the number of calls not yet finished (waiting or in
// flight).
func (c *Client) Outstanding() int { return c.conn.Waiting() + len(c.conn.Inflight()) }

// Write applies puts atomically — all of them or none — if every condition
// holds, and calls done once the write is durable (with its revision) or
// has failed. timeout (0: none) bounds the whole call: still unsent at the
// deadline it fails with ErrNotSent, sent and unanswered with ErrTimeout.
// A failed condition is a *ConditionError (errors.Is ErrConditionFailed).
// The client copies puts and conds before Write returns.
func (c *Client) Write(puts []Put, conds []Condition, timeout time.Duration, done func(Result, error)) {
	conds = cloneConditions(conds)
	if err := validateWrite(puts, conds); err != nil {
		c.refuse(opWrite, fmt.Errorf("%w: %v", ErrInvalid, err), func(err error) { done(Result{}, err) })
		return
	}
	c.enqueue(&request{op: opWrite, puts: puts, conds: conds}, timeout, func(resp *response, err error) {
		if err == nil {
			err = c.statusError(resp, conds)
		}
		if err != nil {
			done(Result{}, err)
			return
		}
		done(Result{Revision: resp.revision}, nil)
	})
}

// Get reads keys; the answer has one Entry per key, in order (Version 0
// for an absent key). Reads see only durable, acknowledged writes.
func (c *Client) Get(keys []string, timeout time.Duration, done func(GetResult, error)) {
	if err := validateKeys(keys); err != nil {
		c.refuse(opGet, fmt.Errorf("%w: %v", ErrInvalid, err), func(err error) { done(GetResult{}, err) })
		return
	}
	keys = append([]string(nil), keys...)
	c.enqueue(&request{op: opGet, keys: keys}, timeout, func(resp *response, err error) {
		if err == nil {
			err = c.statusError(resp, nil)
		}
		if err == nil && len(resp.entries) != len(keys) {
			err = c.callError(opGet, fmt.Errorf("%w: %d entries for %d keys", ErrBadResponse, len(resp.entries), len(keys)))
		}
		if err != nil {
			done(GetResult{}, err)
			return
		}
		for i := range resp.entries {
			resp.entries[i].Key = keys[i]
		}
		done(GetResult{Entries: resp.entries, Revision: resp.revision}, nil)
	})
}

// Scan reads the present keys selected by r, in key order.
func (c *Client) Scan(r ScanRange, timeout time.Duration, done func(ScanResult, error)) {
	if err := validateScan(r); err != nil {
		c.refuse(opScan, fmt.Errorf("%w: %v", ErrInvalid, err), func(err error) { done(ScanResult{}, err) })
		return
	}
	c.enqueue(&request{op: opScan, scan: r}, timeout, func(resp *response, err error) {
		if err == nil {
			err = c.statusError(resp, nil)
		}
		if err != nil {
			done(ScanResult{}, err)
			return
		}
		done(ScanResult{Entries: resp.entries, Revision: resp.revision, More: resp.more}, nil)
	})
}

// statusError turns a response's status into the call's error.
func (c *Client) statusError(resp *response, conds []Condition) error {
	var err error
	switch resp.status {
	case statusOK:
		return nil
	case statusConditionFailed:
		if resp.index >= len(conds) {
			err = fmt.Errorf("%w: condition %d of %d failed", ErrBadResponse, resp.index, len(conds))
		} else {
			err = &ConditionError{Index: resp.index, Condition: conds[resp.index], Version: resp.version}
		}
	case statusInvalid:
		err = fmt.Errorf("%w: %s", ErrInvalid, resp.message)
	case statusStorage:
		err = fmt.Errorf("%w: %s", ErrStorage, resp.message)
	case statusUnavailable:
		err = fmt.Errorf("%w: %s", ErrUnavailable, resp.message)
	default:
		err = fmt.Errorf("%w: status %d", ErrBadResponse, resp.status)
	}
	return c.callError(resp.op, err)
}

func (c *Client) callError(o op, err error) error {
	return &CallError{Op: o.String(), Addr: c.addr, Err: err}
}

// refuse fails a call that was never queued, from a fresh event so that
// done never runs inside the call that made it.
func (c *Client) refuse(o op, err error, done func(error)) {
	err = c.callError(o, err)
	c.e.AfterFunc(0, func() { done(err) })
}

func (c *Client) enqueue(req *request, timeout time.Duration, done func(*response, error)) {
	switch {
	case c.conn.Shut():
		c.refuse(req.op, fmt.Errorf("%w: client closed", ErrNotSent), func(err error) { done(nil, err) })
		return
	case c.Outstanding() >= c.opts.RequestsQueuedMax:
		c.refuse(req.op, fmt.Errorf("%w: %d calls outstanding", ErrNotSent, c.Outstanding()), func(err error) { done(nil, err) })
		return
	}
	c.idNext++
	req.id = c.idNext
	frame := encodeRequest(req)
	if len(frame) > FrameBytesMax {
		c.refuse(req.op, fmt.Errorf("%w: request of %d bytes exceeds %d", ErrInvalid, len(frame), FrameBytesMax), func(err error) { done(nil, err) })
		return
	}
	c.conn.Enqueue(&call{id: req.id, op: req.op, frame: frame}, timeout, func(resp *response, err error) {
		if err != nil {
			err = c.callError(req.op, err)
		}
		done(resp, err)
	})
}

// protocol is the sink protocol as the inflight.Conn sees it: no
// handshake, a frame per call.
type protocol struct{ e env.Env }

func (protocol) Dialed(env.ConnID)               {}
func (protocol) Forget(env.ConnID)               {}
func (protocol) Handshake(env.ConnID) bool       { return true }
func (protocol) Failed(_ *call, err error) error { return err }

func (p protocol) Send(conn env.ConnID, k *call) (bool, error) {
	p.e.Send(conn, k.frame)
	k.frame = nil
	return true, nil
}

// Connected is the process's env.Process callback; it reports whether the
// connection is this client's.
func (c *Client) Connected(conn env.ConnID, _ string, inbound bool) bool {
	return !inbound && c.conn.Connected(conn)
}

// Received is the process's env.Process callback; it reports whether the
// connection is this client's.
func (c *Client) Received(conn env.ConnID, frame []byte) bool {
	if conn == 0 || conn != c.conn.ID() {
		return false
	}
	resp, err := decodeResponse(frame)
	if err != nil {
		c.e.Log("sink-bad-response", "addr", c.addr, "error", err.Error())
		c.conn.Drop(nil, nil, ErrBadResponse)
		return true
	}
	for i, k := range c.conn.Inflight() {
		if k.Req.id != resp.id {
			continue
		}
		if k.Req.op != resp.op {
			break
		}
		c.conn.End(i, resp, nil)
		return true
	}
	c.e.Log("sink-bad-response", "addr", c.addr, "error", fmt.Sprintf("answer %d (%v) matches no call in flight", resp.id, resp.op))
	c.conn.Drop(nil, nil, ErrBadResponse)
	return true
}

// Closed is the process's env.Process callback; it reports whether the
// connection was this client's.
func (c *Client) Closed(conn env.ConnID) bool { return c.conn.Closed(conn) }

// Close ends the client: calls in flight fail with ErrDisconnected, calls
// waiting with ErrNotSent. The client cannot be used again.
func (c *Client) Close() { c.conn.Close() }

func cloneConditions(conds []Condition) []Condition {
	if len(conds) == 0 {
		return nil
	}
	out := make([]Condition, len(conds))
	for i, cd := range conds {
		out[i] = cd
		if cd.Value != nil {
			out[i].Value = append([]byte(nil), cd.Value...)
		}
	}
	return out
}
