package rpc

import (
	"errors"
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/inflight"
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

// Client is a connection to one server, redialed as needed: an
// inflight.Conn carrying Kafka requests. It negotiates versions with
// ApiVersions on every new connection and matches answers to requests by
// correlation id, in order.
type Client struct {
	router   *Router
	e        env.Env
	addr     string
	opts     ClientOptions
	conn     *inflight.Conn[*call, kmsg.Response]
	versions wire.Versions // the server's, from ApiVersions
	corr     int32
	sizes    wire.SizeHints
	format   *kmsg.RequestFormatter // carries opts.ClientID
}

// call is one request; it embeds the Conn's record of it (its Req is the
// call itself).
type call struct {
	inflight.Call[*call, kmsg.Response]
	req      kmsg.Request
	corr     int32
	noAnswer bool
}

// NewClient returns a client for addr. It dials on first use.
func NewClient(r *Router, addr string, opts ClientOptions) *Client {
	if opts.ReconnectBackoff == 0 {
		opts.ReconnectBackoff = 50 * time.Millisecond
	}
	if opts.ReconnectBackoffMax == 0 {
		opts.ReconnectBackoffMax = time.Second
	}
	c := &Client{router: r, e: r.e, addr: addr, opts: opts, format: wire.Formatter(opts.ClientID)}
	c.conn = inflight.New[*call, kmsg.Response](r.e, addr, protocol{c}, inflight.Options{
		ReconnectBackoff:    opts.ReconnectBackoff,
		ReconnectBackoffMax: opts.ReconnectBackoffMax,
		Errors: inflight.Errors{
			NotSentInTime: ErrNotSent,
			Timeout:       ErrTimeout,
			// Every request in flight shares the timed-out one's
			// fate: the connection they were on is gone.
			InflightOnTimeout: ErrTimeout,
			Disconnected:      ErrDisconnected,
			Closed:            ErrNotSent,
		},
	})
	return c
}

// Addr is the server's address.
func (c *Client) Addr() string { return c.addr }

// Ready reports whether the connection is up and versions are known.
func (c *Client) Ready() bool { return c.conn.Ready() }

// Inflight is the number of requests sent and not yet answered.
func (c *Client) Inflight() int { return len(c.conn.Inflight()) }

// Do sends req and calls done with the response or a *CallError. timeout
// (0: none) bounds the whole call: still unsent at the deadline it fails
// with ErrNotSent, sent and unanswered with ErrTimeout.
func (c *Client) Do(req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) {
	c.enqueue(&call{req: req}, timeout, done)
}

// Send sends req expecting no answer (Produce with acks=0); done is called
// once it is handed to the connection, or with ErrNotSent.
func (c *Client) Send(req kmsg.Request, done func(error)) {
	c.enqueue(&call{req: req, noAnswer: true}, 0, func(_ kmsg.Response, err error) { done(err) })
}

func (c *Client) enqueue(k *call, timeout time.Duration, done func(kmsg.Response, error)) {
	if c.conn.Shut() {
		done(nil, c.failed(k.req, ErrNotSent))
		return
	}
	k.Req = k
	c.conn.EnqueueCall(&k.Call, timeout, done)
}

// failed is the *CallError every error a call ends with is, naming the
// API and server.
func (c *Client) failed(req kmsg.Request, err error) error {
	return &CallError{Addr: c.addr, API: kmsg.NameForKey(req.Key()), Err: err}
}

// protocol is the Kafka protocol as the inflight.Conn sees it.
type protocol struct{ c *Client }

func (p protocol) Dialed(conn env.ConnID) { p.c.router.clients[conn] = p.c }
func (p protocol) Forget(conn env.ConnID) { delete(p.c.router.clients, conn) }

// Failed makes every error a call ends with a *CallError (failed).
func (p protocol) Failed(k *call, err error) error { return p.c.failed(k.req, err) }

// Handshake asks for the server's versions first: nothing else is sent
// until the answer came (KIP-35).
func (p protocol) Handshake(conn env.ConnID) bool {
	c := p.c
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0) // understood by every server; v0 needs no client software fields
	c.corr++
	k := &call{req: req, corr: c.corr}
	c.conn.Push(k, c.negotiated)
	c.e.Send(conn, wire.AppendRequestWith(nil, c.format, req, c.corr))
	return false
}

func (c *Client) negotiated(resp kmsg.Response, err error) {
	if err != nil {
		return // the connection's end already failed the waiting calls
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	var ranges []wire.Range
	for _, k := range av.ApiKeys {
		if kmsg.RequestForKey(k.ApiKey) != nil && k.MinVersion <= k.MaxVersion && k.MinVersion >= 0 {
			ranges = append(ranges, wire.Range{Key: k.ApiKey, Min: k.MinVersion, Max: min(k.MaxVersion, kmsg.RequestForKey(k.ApiKey).MaxVersion())})
		}
	}
	c.versions = wire.NewVersions(ranges...)
	c.conn.MarkReady()
}

// Send encodes a request at the highest version both sides speak.
func (p protocol) Send(conn env.ConnID, k *call) (answered bool, err error) {
	c := p.c
	clientMax := k.req.MaxVersion()
	if r, ok := c.opts.Speaks.Lookup(k.req.Key()); ok {
		clientMax = r.Max
	}
	v, ok := c.versions.Highest(k.req.Key(), clientMax)
	if !ok {
		return false, ErrUnsupported
	}
	k.req.SetVersion(v)
	c.corr++
	k.corr = c.corr
	key := k.req.Key()
	c.e.Send(conn, c.sizes.Saw(key, wire.AppendRequestWith(c.sizes.Buffer(key), c.format, k.req, k.corr)))
	return !k.noAnswer, nil
}

func (c *Client) connected(conn env.ConnID) { c.conn.Connected(conn) }

func (c *Client) received(conn env.ConnID, frame []byte) {
	if conn != c.conn.ID() {
		return
	}
	corr, err := wire.ResponseCorrelation(frame)
	inflight := c.conn.Inflight()
	if err != nil || len(inflight) == 0 || inflight[0].Req.corr != corr {
		c.e.Log("bad-response", "addr", c.addr, "corr", corr)
		c.conn.Drop(nil, nil, ErrBadResponse)
		return
	}
	resp, err := wire.ParseResponse(frame, inflight[0].Req.req)
	if err != nil {
		c.e.Log("bad-response", "addr", c.addr, "error", err.Error())
		c.conn.End(0, nil, ErrBadResponse)
		c.conn.Drop(nil, nil, ErrBadResponse)
		return
	}
	c.conn.End(0, resp, nil)
}

func (c *Client) closed(conn env.ConnID) { c.conn.Closed(conn) }

// FailWaiting fails every call not yet sent with ErrNotSent (e.g. when the
// caller gives up on this server).
func (c *Client) FailWaiting() { c.conn.FailWaiting(ErrNotSent) }

// Close closes the connection: calls in flight fail with ErrDisconnected,
// waiting ones with ErrNotSent. The client can not be used again.
func (c *Client) Close() { c.conn.Close() }
