package checkers_test

import (
	"fmt"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

// An acks=1 producer's write is acknowledged by a leader that then
// crashes; the new leader gives its offset to another write.
func ExampleCheck() {
	tp := history.TopicPartition{Topic: "orders", Partition: 0}
	send := func(id history.ID, proc string, call, ret int64, offset int64, v string) history.Op {
		return history.Op{ID: id, Process: proc, Node: "client-" + proc, Kind: history.KindSend, Call: call, Return: ret,
			Outcome: history.OK, Send: &history.Send{TP: tp, Messages: []history.Message{{Value: v}}, Offset: offset}}
	}
	h := history.History{
		send(1, "p1", 0, 10, 0, "a"),
		send(2, "p1", 20, 30, 1, "b"), // acknowledged by the old leader only
		{ID: 3, Process: "nemesis", Kind: history.KindNemesis, Call: 31, Return: 60, Outcome: history.OK,
			Nemesis: &history.Nemesis{Description: "crash leader", Nodes: []string{"broker-1"}}},
		send(4, "p2", 70, 80, 1, "c"),
		{ID: 5, Process: "final", Kind: history.KindFinalRead, Call: 100, Return: 110, Outcome: history.OK,
			FinalRead: &history.FinalRead{TP: tp, Isolation: history.ReadCommitted, From: 0, Output: true,
				Records: []history.Record{{Offset: 0, Message: history.Message{Value: "a"}}, {Offset: 1, Message: history.Message{Value: "c"}}}}},
	}
	v, err := checkers.Check(h, checkers.Options{WitnessesMax: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Holds(checkers.AtLeastOnce), v.Holds(checkers.AtMostOnce))
	fmt.Print(v.Summary())
	// Output:
	// false true
	// observed: at-most-once
	// checked 5 ops over 1 partitions, 3 intents (3 acknowledged), 2 outputs
	// inconsistent-offsets (safety, 1): breaks exactly-once
	//   orders-0 offset 1 holds "b" (written by op 2) and "c" (written by op 4)
	//     op 2 send by p1 on client-p1 [20..30]
	//     op 4 send by p2 on client-p2 [70..80]
	// lost-write (safety, 1): breaks at-least-once, exactly-once
	//   "b", acknowledged at orders-0 offset 1 by op 2, was never read, though op 5 read up to offset 1
	//     op 2 send by p1 on client-p1 [20..30]
	//     op 5 final-read by final [100..110]
	// nonlinearizable (safety, 1): breaks exactly-once
	//   inconsistent-offsets: orders-0: op 2 wrote "b" and op 4 wrote "c" at offset 1
	//     op 2 send by p1 on client-p1 [20..30]
	//     op 4 send by p2 on client-p2 [70..80]
	// output-loss (liveness, 1): breaks at-least-once, exactly-once
	//   "b", acknowledged by op 2, has no effect in the final output
	//     op 2 send by p1 on client-p1 [20..30]
}
