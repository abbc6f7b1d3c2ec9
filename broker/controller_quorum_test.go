package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Brokers given three controllers find the active one, and find the next
// one when it crashes: the new active controller, which has every
// registration from the log, fences a broker that then goes silent and
// moves its leadership, as the old one would have.
func TestBrokersFollowTheActiveControllerAcrossAFailover(t *testing.T) {
	w := sim.New(sim.Options{Seed: 11})
	cfg := config.Default()
	voters := map[int32]string{}
	var ctls []string
	for i := range 3 {
		name := fmt.Sprintf("controller-%d", i)
		ctls = append(ctls, name)
		voters[controller.ID+int32(i)] = name
	}
	for i, name := range ctls {
		o := controller.Options{NodeID: controller.ID + int32(i), Voters: voters}
		w.AddNode(name, func() env.Process { return controller.NewVoter(cfg, o) }).Start()
	}
	var brokers []string
	for i := range 3 {
		name := fmt.Sprintf("broker-%d", i)
		brokers = append(brokers, name)
		w.AddNode(name, func() env.Process {
			return broker.New(broker.Options{ID: int32(i), Controllers: ctls, ClusterID: "sim", Cluster: cfg})
		}).Start()
	}
	w.AddNode("client", func() env.Process { return &driver{} }).Start()
	active := func() *controller.Controller {
		for _, n := range ctls {
			if c, ok := w.Node(n).Process().(*controller.Controller); ok && c.Active() {
				return c
			}
		}
		return nil
	}
	allLive := func() bool {
		c := active()
		return c != nil && !c.Fenced(0) && !c.Fenced(1) && !c.Fenced(2)
	}
	ok, err := w.RunWhile(func() bool { return !allLive() }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "every broker registered and unfenced at an active controller")

	// A topic, asked of a broker, which forwards to the active controller.
	d := w.Node("client").Process().(*driver)
	created := false
	for deadline := w.Now().Add(30 * time.Second); !created && w.Now() < deadline; {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders", 3, 3
		req.Topics = append(req.Topics, rt)
		done := false
		w.Node("client").Exec(func() {
			cl := rpc.NewClient(d.Router, brokers[0], rpc.ClientOptions{ClientID: "test"})
			cl.Do(req, 10*time.Second, func(r kmsg.Response, e error) {
				done = true
				created = e == nil && r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode == 0
				cl.Close()
			})
		})
		_, err := w.RunWhile(func() bool { return !done }, 20*time.Second)
		require.NoError(t, err)
		require.NoError(t, w.RunFor(500*time.Millisecond))
	}
	require.True(t, created, "the topic was created through the active controller")

	first := active()
	var firstName string
	for _, n := range ctls {
		if c, _ := w.Node(n).Process().(*controller.Controller); c == first {
			firstName = n
		}
	}
	w.Node(firstName).Crash()
	ok, err = w.RunWhile(func() bool { c := active(); return c == nil || c == first }, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "another controller became active")
	second := active()
	require.True(t, second.Registered(0) && second.Registered(1) && second.Registered(2), "the registrations are in the log")

	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	p, _ := second.Partition(tp)
	led := p.Leader
	w.Node(brokers[led]).Crash()
	ok, err = w.RunWhile(func() bool {
		c := active()
		if c == nil {
			return true
		}
		q, _ := c.Partition(tp)
		return q.Leader == led
	}, 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the new active controller moved the crashed broker's leadership")
	require.True(t, active().Fenced(led), "and fenced it")
}
