package client_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/stretchr/testify/require"
)

// BenchmarkProduceConsume sends records with acks=all and idempotence to a
// topic of 3 partitions replicated on 3 brokers while a consumer reads them
// back, and reports, for that phase, records per wall-clock second and
// sim-x (simulated seconds per wall-clock second). "burst" sends every
// record at once (the cluster's throughput); "paced" sends 2,000 records
// per simulated second (a steady workload, where sim-x is what matters).
func BenchmarkProduceConsume(b *testing.B) {
	b.Run("burst", func(b *testing.B) { benchProduceConsume(b, 20_000, 0) })
	b.Run("paced", func(b *testing.B) { benchProduceConsume(b, 10_000, 500*time.Microsecond) })
}

func benchProduceConsume(b *testing.B, records int, interval time.Duration) {
	var wall, simulated time.Duration
	for i := range b.N {
		b.StopTimer()
		w := newWorld(b, uint64(i+1), config.Default())
		w.createTopic("bench", 3, 3)
		tps := []client.TopicPartition{{Topic: "bench", Partition: 0}, {Topic: "bench", Partition: 1}, {Topic: "bench", Partition: 2}}
		p := w.newProducer("client", producerOptions())
		c := w.newConsumer("client", consumerOptions(""))
		w.exec("client", func(*app) { c.Assign(tps) })
		payload := make([]byte, 100)
		acked := 0
		send := func(j int) {
			p.Send(client.Record{Topic: "bench", Key: value(j), Value: payload}, func(r client.SendResult) {
				if r.Outcome == client.OK {
					acked++
				}
			})
		}
		simBegan := w.w.Now()
		if interval == 0 {
			w.w.Node("client").Exec(func() {
				for j := range records {
					send(j)
				}
			})
		} else {
			for j := range records {
				w.w.At(simBegan.Add(time.Duration(j)*interval), func() { w.w.Node("client").Exec(func() { send(j) }) })
			}
		}
		b.StartTimer()

		began := time.Now()
		got := w.pollUntil("client", c, records, 10*time.Minute)
		w.runUntil(func() bool { return acked == records }, time.Minute, "acks")
		wall += time.Since(began)
		simulated += w.w.Now().Sub(simBegan)
		require.Len(b, got, records)
	}
	b.ReportMetric(float64(records*b.N)/wall.Seconds(), "records/s")
	b.ReportMetric(simulated.Seconds()/wall.Seconds(), "sim-x")
}
