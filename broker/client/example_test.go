package client_test

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shop is an application process embedding a producer and a consumer: it
// owns the router its connection callbacks go to, and the clients run on
// its loop.
type shop struct {
	*rpc.Router
}

func (s *shop) Start(e env.Env) {
	s.Router = rpc.NewRouter(e, nil)
	admin := rpc.NewClient(s.Router, "broker-0", rpc.ClientOptions{ClientID: "shop"})
	create := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = "orders", 1, 1
	create.Topics = append(create.Topics, t)
	admin.Do(create, 5*time.Second, func(kmsg.Response, error) {
		e.AfterFunc(time.Second, func() { s.trade(e) }) // let the leader settle
	})
}

func (s *shop) trade(e env.Env) {
	p, err := client.NewProducer(e, s.Router, client.DefaultProducerOptions("broker-0"))
	if err != nil {
		panic(err)
	}
	for _, item := range []string{"book", "lamp"} {
		p.Send(client.Record{Topic: "orders", Value: []byte(item)}, func(r client.SendResult) {
			fmt.Println("sent", item, r.Outcome, "at offset", r.Offset)
		})
	}
	p.Flush(func() {
		opts := client.DefaultConsumerOptions("broker-0")
		opts.AutoOffsetReset = client.OffsetResetEarliest
		c, err := client.NewConsumer(e, s.Router, opts)
		if err != nil {
			panic(err)
		}
		c.Assign([]client.TopicPartition{{Topic: "orders", Partition: 0}})
		c.Poll(0, 5*time.Second, func(recs []client.Record, err error) {
			for _, r := range recs {
				fmt.Println("read", string(r.Value), "at offset", r.Offset)
			}
		})
	})
}

func Example() {
	w := sim.New(sim.Options{Seed: 1})
	cfg := config.Default()
	w.AddNode("controller", func() env.Process { return controller.New(cfg) }).Start()
	w.AddNode("broker-0", func() env.Process {
		return broker.New(broker.Options{ID: 0, Controllers: map[int32]string{controller.ID: "controller"}, ClusterID: "example", Cluster: cfg})
	}).Start()
	w.AddNode("shop", func() env.Process { return &shop{} })
	w.After(2*time.Second, func() { w.Node("shop").Start() }) // once the broker has registered
	if err := w.RunFor(12 * time.Second); err != nil {
		panic(err)
	}
	// Output:
	// sent book ok at offset 0
	// sent lamp ok at offset 1
	// read book at offset 0
	// read lamp at offset 1
}
