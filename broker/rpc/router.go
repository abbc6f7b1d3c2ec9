package rpc

import "github.com/kafkasim/kafkasim/env"

// Router sends each connection's events to whoever owns the connection: the
// Client that dialed it, or the Server for inbound connections.
type Router struct {
	e       env.Env
	clients map[env.ConnID]*Client
	server  *Server
}

// NewRouter returns a router for the process running on e. server may be
// nil for a process that accepts no connections (inbound ones are closed).
func NewRouter(e env.Env, server *Server) *Router {
	r := &Router{e: e, clients: map[env.ConnID]*Client{}, server: server}
	if server != nil {
		server.e = e
	}
	return r
}

// Env is the environment the router's process runs on.
func (r *Router) Env() env.Env { return r.e }

// Connected implements the env.Process callback.
func (r *Router) Connected(c env.ConnID, peer string, inbound bool) {
	if inbound {
		if r.server == nil {
			r.e.Close(c)
			return
		}
		r.server.accept(c, peer)
		return
	}
	if cl := r.clients[c]; cl != nil {
		cl.connected(c)
	}
}

// Received implements the env.Process callback.
func (r *Router) Received(c env.ConnID, frame []byte) {
	if cl := r.clients[c]; cl != nil {
		cl.received(c, frame)
		return
	}
	if r.server != nil {
		r.server.received(c, frame)
	}
}

// Closed implements the env.Process callback.
func (r *Router) Closed(c env.ConnID) {
	if cl := r.clients[c]; cl != nil {
		delete(r.clients, c)
		cl.closed(c)
		return
	}
	if r.server != nil {
		r.server.closed(c)
	}
}
