package faults_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
)

// cluster is the shape most tests use: three brokers, a controller, two
// clients and a sink, one topic with two partitions, a group and a
// transactional id.
func cluster() faults.Options {
	return faults.Options{
		Duration:         60 * time.Second,
		Brokers:          []string{"b1", "b2", "b3"},
		Controllers:      []string{"controller"},
		Clients:          []string{"c1", "c2"},
		Sink:             "sink",
		Partitions:       []faults.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}},
		Groups:           []string{"billing"},
		TransactionalIDs: []string{"tx-1"},
	}
}

func nodesOf(o faults.Options) []string {
	var ns []string
	ns = append(ns, o.Brokers...)
	ns = append(ns, o.Controllers...)
	ns = append(ns, o.Clients...)
	return append(ns, o.Sink)
}

// probe is a process that remembers its environment and the frames it got.
type probe struct {
	e      env.Env
	frames []received
}

type received struct {
	at    env.Time
	frame []byte
}

func (p *probe) Start(e env.Env)                    { p.e = e }
func (p *probe) Connected(env.ConnID, string, bool) {}
func (p *probe) Closed(env.ConnID)                  {}
func (p *probe) Received(_ env.ConnID, f []byte) {
	p.frames = append(p.frames, received{p.e.Now(), f})
}

// world is a sim world with a running probe on every node of o.
func world(t *testing.T, seed uint64, o faults.Options) *sim.World {
	t.Helper()
	w := sim.New(sim.Options{Seed: seed})
	for _, n := range nodesOf(o) {
		w.AddNode(n, func() env.Process { return &probe{} }).Start()
	}
	require.NoError(t, w.RunFor(time.Millisecond))
	return w
}

func probeOf(w *sim.World, name string) *probe {
	p, _ := w.Node(name).Process().(*probe)
	return p
}

// roles is a fake cluster for the Resolver: who leads what is set by the
// test, and may change while the world runs.
type roles struct {
	o       faults.Options
	leader  map[string]string // "orders/0" → node
	asked   []string
	refuses bool // no node plays any role
}

func newRoles(o faults.Options) *roles {
	r := &roles{o: o, leader: map[string]string{}}
	for _, tp := range o.Partitions {
		r.leader[tp.String()] = o.Brokers[0]
	}
	return r
}

func (r *roles) Resolve(t faults.Target, rnd *env.Rand) (string, bool) {
	r.asked = append(r.asked, t.String())
	if r.refuses {
		return "", false
	}
	tp := fmt.Sprintf("%s/%d", t.Topic, t.Partition)
	switch t.Role {
	case faults.RoleLeader:
		n, ok := r.leader[tp]
		return n, ok
	case faults.RoleFollower:
		var fs []string
		for _, b := range r.o.Brokers {
			if b != r.leader[tp] {
				fs = append(fs, b)
			}
		}
		return fs[rnd.Intn(len(fs))], true
	case faults.RoleController:
		return r.o.Controllers[0], true
	case faults.RoleAnyController:
		return r.o.Controllers[rnd.Intn(len(r.o.Controllers))], true
	case faults.RoleGroupCoordinator, faults.RoleTxnCoordinator:
		return r.o.Brokers[1], true
	case faults.RoleRandomBroker:
		return r.o.Brokers[rnd.Intn(len(r.o.Brokers))], true
	case faults.RoleClient:
		return r.o.Clients[rnd.Intn(len(r.o.Clients))], true
	}
	return "", false
}

func mustParse(t *testing.T, text string) faults.Schedule {
	t.Helper()
	s, err := faults.ParseSchedule(text)
	require.NoError(t, err)
	return s
}

// healthy reports how the world falls short of health: a node down,
// paused, or a link cut.
func healthy(w *sim.World) []string {
	var bad []string
	for _, n := range w.Nodes() {
		if !n.Running() || n.Paused() {
			bad = append(bad, n.Name()+" is not running")
		}
		for _, m := range w.Nodes() {
			if !w.Reachable(n.Name(), m.Name()) {
				bad = append(bad, n.Name()+" cannot reach "+m.Name())
			}
		}
	}
	return bad
}
