package sink_test

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kafkasim/kafkasim/broker/sink"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
)

// consumer turns an input partition (a stand-in for a Kafka consumer:
// input[i] is the record at offset i) into a running total kept in the
// sink, exactly once: the total and the next offset go in one write,
// conditioned on the offset's version, and after any failure or restart
// the consumer resumes from what the sink holds, not from memory.
type consumer struct {
	e       env.Env
	sink    *sink.Client
	input   []int
	next    int    // offset to process next
	total   int    // sum of input[:next]
	version uint64 // version of the offset key last read or written
}

func (c *consumer) Start(e env.Env) {
	c.e = e
	c.sink = sink.NewClient(e, "sink", sink.ClientOptions{})
	c.resume()
}

// resume reads the stored offset and total: where to start, and the
// version to condition the next write on.
func (c *consumer) resume() {
	c.sink.Get([]string{"offset/in-0", "total"}, time.Second, func(r sink.GetResult, err error) {
		if err != nil {
			c.e.AfterFunc(100*time.Millisecond, c.resume)
			return
		}
		c.next, c.total, c.version = 0, 0, r.Entries[0].Version
		if r.Entries[0].Present() {
			c.next, _ = strconv.Atoi(string(r.Entries[0].Value))
			c.total, _ = strconv.Atoi(string(r.Entries[1].Value))
		}
		c.process()
	})
}

func (c *consumer) process() {
	if c.next == len(c.input) {
		return
	}
	total := c.total + c.input[c.next]
	puts := []sink.Put{
		{Key: "total", Value: []byte(strconv.Itoa(total))},
		{Key: "offset/in-0", Value: []byte(strconv.Itoa(c.next + 1))},
	}
	fence := []sink.Condition{sink.IfVersion("offset/in-0", c.version)}
	c.sink.Write(puts, fence, time.Second, func(r sink.Result, err error) {
		if err != nil {
			// Definite or indefinite, the sink knows where we are.
			c.e.AfterFunc(100*time.Millisecond, c.resume)
			return
		}
		c.next, c.total, c.version = c.next+1, total, r.Revision
		c.e.AfterFunc(10*time.Millisecond, c.process)
	})
}

// The process offers every connection callback to the sink client first;
// what it does not claim belongs to the process's Kafka clients.
func (c *consumer) Connected(id env.ConnID, peer string, inbound bool) {
	if c.sink.Connected(id, peer, inbound) {
		return
	}
	// kafkaRouter.Connected(id, peer, inbound)
}

func (c *consumer) Received(id env.ConnID, frame []byte) {
	if c.sink.Received(id, frame) {
		return
	}
	// kafkaRouter.Received(id, frame)
}

func (c *consumer) Closed(id env.ConnID) {
	if c.sink.Closed(id) {
		return
	}
	// kafkaRouter.Closed(id)
}

// The atomic-with-output pattern under a consumer crash and a power loss
// of the sink: the total counts every input exactly once.
func Example_atomicWithOutput() {
	input := make([]int, 50)
	for i := range input {
		input[i] = i + 1
	}
	w := sim.New(sim.Options{Seed: 42})
	w.AddNode("sink", func() env.Process {
		return sink.NewServer(sink.ServerOptions{SyncDelay: 2 * time.Millisecond})
	}).Start()
	app := w.AddNode("app", func() env.Process { return &consumer{input: input} })
	app.Start()

	w.After(150*time.Millisecond, app.Crash)
	w.After(400*time.Millisecond, app.Start)
	w.After(600*time.Millisecond, func() { w.Node("sink").PowerLoss(true) })
	w.After(900*time.Millisecond, w.Node("sink").Start)
	if err := w.RunFor(10 * time.Second); err != nil {
		fmt.Println(err)
		return
	}
	c := app.Process().(*consumer)
	fmt.Println("offset", c.next, "total", c.total)
	// Output: offset 50 total 1275
}
