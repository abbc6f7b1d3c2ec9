package controller_test

import (
	"fmt"
	"github.com/kafkasim/kafkasim/broker/quorum"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// asker is a process that only sends requests.
type asker struct {
	*rpc.Router
	e env.Env
}

func (a *asker) Start(e env.Env) { a.e = e; a.Router = rpc.NewRouter(e, nil) }

type quorumWorld struct {
	t       *testing.T
	w       *sim.World
	names   []string
	clients map[string]*rpc.Client
}

// newQuorumWorld starts n controllers, node ids 3000.., and a client.
func newQuorumWorld(t *testing.T, seed uint64, n int) *quorumWorld {
	q := &quorumWorld{t: t, w: sim.New(sim.Options{Seed: seed}), clients: map[string]*rpc.Client{}}
	voters := map[int32]string{}
	for i := range n {
		name := fmt.Sprintf("controller-%d", i)
		q.names = append(q.names, name)
		voters[controller.ID+int32(i)] = name
	}
	cfg := config.Default()
	for i, name := range q.names {
		o := controller.Options{NodeID: controller.ID + int32(i), Voters: voters}
		q.w.AddNode(name, func() env.Process { return controller.NewVoter(cfg, o) }).Start()
	}
	q.w.AddNode("client", func() env.Process { return &asker{} }).Start()
	return q
}

func (q *quorumWorld) controller(name string) *controller.Controller {
	c, _ := q.w.Node(name).Process().(*controller.Controller)
	return c
}

// active returns the one active controller's name, failing if two are.
func (q *quorumWorld) active() string {
	found := ""
	for _, name := range q.names {
		if c := q.controller(name); c != nil && c.Active() {
			require.Empty(q.t, found, "two active controllers: %s and %s", found, name)
			found = name
		}
	}
	return found
}

func (q *quorumWorld) awaitActive(except string) string {
	ok, err := q.w.RunWhile(func() bool { a := q.active(); return a == "" || a == except }, 30*time.Second)
	require.NoError(q.t, err)
	require.True(q.t, ok, "no controller became active")
	return q.active()
}

func (q *quorumWorld) call(addr string, req kmsg.Request) kmsg.Response {
	var resp kmsg.Response
	var err error
	done := false
	q.w.Node("client").Exec(func() {
		cl := q.clients[addr]
		if cl == nil {
			cl = rpc.NewClient(q.w.Node("client").Process().(*asker).Router, addr, rpc.ClientOptions{ClientID: "test"})
			q.clients[addr] = cl
		}
		cl.Do(req, 10*time.Second, func(r kmsg.Response, e error) { resp, err, done = r, e, true })
	})
	ok, werr := q.w.RunWhile(func() bool { return !done }, 20*time.Second)
	require.NoError(q.t, werr)
	require.True(q.t, ok, "no answer to %s from %s", kmsg.NameForKey(req.Key()), addr)
	require.NoError(q.t, err)
	return resp
}

func registration(id int32, incarnation byte) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID[0] = id, incarnation
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host = "PLAINTEXT", fmt.Sprintf("broker-%d", id)
	req.Listeners = append(req.Listeners, l)
	return req
}

// Three controllers elect one active controller; the others answer
// NOT_CONTROLLER. A registration the active one decides is committed by
// the quorum and applied by all three alike; its broker epoch is the
// offset of its entry. When the active controller crashes another takes
// over with the registration intact, and the restarted one catches up.
func TestThreeControllersAgreeAndOneDecides(t *testing.T) {
	q := newQuorumWorld(t, 7, 3)
	first := q.awaitActive("")
	for _, name := range q.names {
		if name == first {
			continue
		}
		resp := q.call(name, registration(0, 1)).(*kmsg.BrokerRegistrationResponse)
		require.Equal(t, kerr.NotController.Code, resp.ErrorCode, "%s is not active", name)
	}
	resp := q.call(first, registration(0, 1)).(*kmsg.BrokerRegistrationResponse)
	require.Zero(t, resp.ErrorCode)
	require.Positive(t, resp.BrokerEpoch, "the entry comes after the leader's leader-change entry")
	require.NoError(t, q.w.RunFor(time.Second))
	for _, name := range q.names {
		require.True(t, q.controller(name).Registered(0), "%s applied the registration", name)
	}

	q.w.Node(first).Crash()
	second := q.awaitActive(first)
	require.NotEqual(t, first, second)
	require.True(t, q.controller(second).Registered(0), "the new active controller has the registration")
	again := q.call(second, registration(0, 1)).(*kmsg.BrokerRegistrationResponse)
	require.Zero(t, again.ErrorCode)
	require.Equal(t, resp.BrokerEpoch, again.BrokerEpoch, "a retried registration of the same incarnation keeps its epoch")

	q.w.Node(first).Start()
	require.NoError(t, q.w.RunFor(3*time.Second))
	require.True(t, q.controller(first).Registered(0), "the restarted controller replayed the log")
	a, b := q.controller(first).Applied(), q.controller(second).Applied()
	at := min(a.End(), b.End()) - 1
	require.Positive(t, at)
	da, okA := a.At(at)
	db, okB := b.At(at)
	require.True(t, okA && okB)
	require.Equal(t, da, db, "both applied the same entries")
	require.Equal(t, second, q.active(), "the restart did not unseat the active controller")
}

// Controllers that lose power — the active one, then a follower, each in
// the middle of registrations — drop only what they had not fsynced, which
// the quorum never counted: after they restart every controller's applied
// metadata is a prefix of one log, every registration that was answered
// is still there, and a controller is active again.
func TestAControllerThatLostPowerRejoinsWithoutBreakingTheLog(t *testing.T) {
	q := newQuorumWorld(t, 3, 3)
	first := q.awaitActive("")
	answered := map[int32]int64{}
	register := func(id int32) {
		name := q.active()
		if name == "" {
			return
		}
		resp := q.call(name, registration(id, byte(id)+1)).(*kmsg.BrokerRegistrationResponse)
		if resp.ErrorCode == 0 {
			answered[id] = resp.BrokerEpoch
		}
	}
	register(0)
	register(1)
	q.w.Node(first).PowerLoss(true)
	register(2)
	second := q.awaitActive(first)
	register(3)
	q.w.Node(first).Start()
	var follower string
	for _, n := range q.names {
		if n != second && n != first {
			follower = n
		}
	}
	register(4)
	q.w.Node(follower).PowerLoss(false)
	register(5)
	require.NoError(t, q.w.RunFor(2*time.Second))
	q.w.Node(follower).Start()
	require.NoError(t, q.w.RunFor(5*time.Second))
	require.NotEmpty(t, q.awaitActive(""))

	var longest *quorum.Chain
	for _, n := range q.names {
		a := q.controller(n).Applied()
		if longest != nil {
			at := min(a.End(), longest.End()) - 1
			da, okA := a.At(at)
			dl, okL := longest.At(at)
			require.True(t, okA && okL || at < 0)
			require.Equal(t, dl, da, "%s applied a prefix of the one log", n)
		}
		if longest == nil || a.End() > longest.End() {
			longest = a
		}
		for id := range answered {
			require.True(t, q.controller(n).Registered(id), "%s has answered registration %d", n, id)
		}
	}
	require.GreaterOrEqual(t, len(answered), 4, "most registrations were answered: %v", answered)
}
