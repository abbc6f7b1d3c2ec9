package apps

import (
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/broker/sink"
	"github.com/kafkasim/kafkasim/env"
)

// rpcRouter routes an application's connections: to its sink client first,
// if it has one, then to its Kafka clients' router.
type rpcRouter struct {
	*rpc.Router
	sink *sink.Client
}

func newRPCRouter(e env.Env) *rpcRouter { return &rpcRouter{Router: rpc.NewRouter(e, nil)} }

func (r *rpcRouter) Connected(c env.ConnID, peer string, inbound bool) {
	if r.sink != nil && r.sink.Connected(c, peer, inbound) {
		return
	}
	r.Router.Connected(c, peer, inbound)
}

func (r *rpcRouter) Received(c env.ConnID, f []byte) {
	if r.sink != nil && r.sink.Received(c, f) {
		return
	}
	r.Router.Received(c, f)
}

func (r *rpcRouter) Closed(c env.ConnID) {
	if r.sink != nil && r.sink.Closed(c) {
		return
	}
	r.Router.Closed(c)
}
