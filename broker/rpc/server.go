package rpc

import (
	"errors"
	"slices"

	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler serves requests. It must eventually call exactly one of
// Respond, NoResponse or CloseConn on each request — now or from a later
// event — and the connection processes nothing else until it does.
type Handler func(r *Request)

// Server dispatches inbound requests.
type Server struct {
	e        env.Env
	versions wire.Versions
	handle   Handler
	conns    map[env.ConnID]*serverConn
	sizes    wire.SizeHints
	// RequestsMax bounds the requests queued on one connection; a client
	// that pipelines more is cut off.
	RequestsMax int
	// held: requests queue but none is served, ApiVersions neither, until
	// Open (see Hold).
	held bool
}

type serverConn struct {
	id       env.ConnID
	peer     string
	listener string
	queue    []*Request // head is being served
	closed   bool
	serving  bool
	clientID *string // the last request's, reused while it stays the same
}

// Request is one inbound request being served.
type Request struct {
	Conn env.ConnID
	Peer string
	// Listener names the listener the connection came in on (env.Listener):
	// "" for the process's main one.
	Listener string
	Header   wire.RequestHeader
	Body     kmsg.Request
	srv      *Server
	sc       *serverConn
	done     bool
}

// NewServer returns a server for the given APIs. ApiVersions is answered
// by the server itself from versions.
func NewServer(versions wire.Versions, handle Handler) *Server {
	return &Server{versions: versions, handle: handle, conns: map[env.ConnID]*serverConn{}, RequestsMax: 1000}
}

// Hold keeps the server from serving any request until Open: a Kafka
// broker enables request processing on its listeners only once it has
// caught up with the metadata log, published its first image and been
// unfenced (BrokerServer.startup: socketServer.enableRequestProcessing
// after lifecycleManager.setReadyToUnfence's future), so no client ever
// hears an image that has not caught up. Requests that arrive meanwhile wait on their connections, as
// connections wait in the listen backlog of a Kafka broker that has not
// started its acceptors.
func (s *Server) Hold() { s.held = true }

// Open serves what waited since Hold, connection by connection in the
// order they were accepted.
func (s *Server) Open() {
	if !s.held {
		return
	}
	s.held = false
	ids := make([]env.ConnID, 0, len(s.conns))
	for id := range s.conns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if sc := s.conns[id]; sc != nil {
			s.next(sc)
		}
	}
}

func (s *Server) accept(c env.ConnID, peer string) {
	s.conns[c] = &serverConn{id: c, peer: peer, listener: s.e.Listener(c)}
}

func (s *Server) received(c env.ConnID, frame []byte) {
	sc := s.conns[c]
	if sc == nil || sc.closed {
		return
	}
	h, body, err := wire.ParseRequestReusing(frame, s.versions, sc.clientID)
	sc.clientID = h.ClientID
	if err != nil {
		s.refuse(sc, c, h, err)
		return
	}
	if len(sc.queue) >= s.RequestsMax {
		s.e.Log("too-many-requests", "peer", sc.peer, "queued", len(sc.queue))
		s.drop(sc)
		return
	}
	sc.queue = append(sc.queue, &Request{Conn: c, Peer: sc.peer, Listener: sc.listener, Header: h, Body: body, srv: s, sc: sc})
	s.next(sc)
}

// refuse answers a request that did not parse, or asks for what this
// process does not serve.
func (s *Server) refuse(sc *serverConn, c env.ConnID, h wire.RequestHeader, err error) {
	var unsupported *wire.UnsupportedError
	switch {
	case errors.As(err, &unsupported) && h.Key == 18:
		// A client probing with a newer ApiVersions: answer at v0 with
		// UNSUPPORTED_VERSION and our ranges, as Kafka does.
		h.Version = 0
		s.e.Send(c, wire.AppendResponse(nil, h, s.versions.ApiVersionsResponse(-1)))
		return
	case errors.As(err, &unsupported):
		// A known API at a version this process does not serve: Kafka's
		// error response, if kmsg can encode that version; else, like an
		// unknown API, the connection closes.
		if req := kmsg.RequestForKey(h.Key); req != nil && h.Version >= 0 && h.Version <= req.MaxVersion() {
			req.SetVersion(h.Version)
			s.e.Log("unsupported-version", "peer", sc.peer, "api", h.Name(), "version", h.Version)
			s.e.Send(c, wire.AppendResponse(nil, h, errorResponse(req, unsupportedVersionCode)))
			return
		}
		s.e.Log("unsupported-api", "peer", sc.peer, "key", h.Key, "version", h.Version)
		s.drop(sc)
		return
	default:
		s.e.Log("bad-request", "peer", sc.peer, "error", err.Error())
		s.drop(sc)
	}
}

// next serves the head of the connection's queue if nothing is being served.
func (s *Server) next(sc *serverConn) {
	for !s.held && !sc.closed && !sc.serving && len(sc.queue) > 0 {
		r := sc.queue[0]
		sc.serving = true
		if r.Header.Key == 18 {
			r.Respond(s.versions.ApiVersionsResponse(r.Header.Version))
			continue
		}
		s.handle(r)
	}
}

func (s *Server) closed(c env.ConnID) {
	if sc := s.conns[c]; sc != nil {
		sc.closed = true
		delete(s.conns, c)
	}
}

func (s *Server) drop(sc *serverConn) {
	sc.closed = true
	delete(s.conns, sc.id)
	s.e.Close(sc.id)
}

// Respond sends resp and lets the connection's next request be served.
func (r *Request) Respond(resp kmsg.Response) {
	r.finish(func() {
		sz := &r.srv.sizes
		r.srv.e.Send(r.Conn, sz.Saw(r.Header.Key, wire.AppendResponse(sz.Buffer(r.Header.Key), r.Header, resp)))
	})
}

// NoResponse completes a request that gets no answer (Produce with acks=0).
func (r *Request) NoResponse() { r.finish(func() {}) }

// CloseConn drops the connection instead of answering.
func (r *Request) CloseConn() {
	r.finish(func() { r.srv.drop(r.sc) })
}

// Live reports whether the connection is still open, so a delayed answer
// can be skipped.
func (r *Request) Live() bool { return !r.sc.closed }

func (r *Request) finish(send func()) {
	if r.done {
		panic("rpc: request " + r.Header.Name() + " answered twice")
	}
	r.done = true
	if r.sc.closed {
		return
	}
	send()
	if q := r.sc.queue; len(q) > 0 && q[0] == r {
		n := copy(q, q[1:]) // shift down, so the array is reused
		q[n] = nil
		r.sc.queue = q[:n]
	}
	r.sc.serving = false
	r.srv.next(r.sc)
}
