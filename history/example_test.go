package history_test

import (
	"os"

	"github.com/kafkasim/kafkasim/history"
)

// A consume-transform-produce step, recorded as it happens. Times are the
// simulation's virtual nanoseconds; the recorder never reads a clock.
func ExampleRecorder() {
	r := history.NewRecorder()
	in := history.TopicPartition{Topic: "in", Partition: 0}
	out := history.TopicPartition{Topic: "out", Partition: 0}

	// A producer sends an input message; the broker acknowledges offset 0.
	s := r.Invoke(history.Op{Process: "producer-1", Node: "client-1", Kind: history.KindSend, Call: 100,
		Send: &history.Send{TP: in, Messages: []history.Message{{Key: "k1", Value: "m1"}}}})
	r.Complete(s, 180, history.OK, history.Result{Offset: 0})

	// The processor polls it at read_committed...
	p := r.Invoke(history.Op{Process: "processor-1", Node: "client-2", Kind: history.KindPoll, Call: 200,
		Poll: &history.Poll{Group: "g", Isolation: history.ReadCommitted}})
	r.Complete(p, 250, history.OK, history.Result{Fetched: []history.Fetch{{TP: in, From: 0,
		Records: []history.Record{{Offset: 0, Message: history.Message{Key: "k1", Value: "m1"}}}}}})

	// ...and writes its output in a transaction with the consumed offset.
	t := r.Invoke(history.Op{Process: "processor-1", Node: "client-2", Kind: history.KindTxn, Call: 260,
		Txn: &history.Txn{TransactionalID: "processor-1", Group: "g"}})
	o := r.Invoke(history.Op{Process: "processor-1", Node: "client-2", Kind: history.KindSend, Call: 270,
		Send: &history.Send{TP: out, Messages: []history.Message{{Key: "k1", Value: "M1", Source: "m1"}}, Txn: t}})
	r.Complete(o, 300, history.OK, history.Result{Offset: 0})
	r.Complete(t, 400, history.OK, history.Result{EndCall: 320,
		Offsets: []history.PartitionOffset{{TP: in, Offset: 1}}})

	// A fault, then, after heal and drain, the output as it stands.
	r.Nemesis(410, 500, "crash leader of out-0", "broker-2")
	f := r.Invoke(history.Op{Process: "final", Node: "client-3", Kind: history.KindFinalRead, Call: 900,
		FinalRead: &history.FinalRead{TP: out, Isolation: history.ReadCommitted, From: 0, Output: true}})
	r.Complete(f, 950, history.OK, history.Result{Records: []history.Record{{Offset: 0, Message: history.Message{Key: "k1", Value: "M1", Source: "m1"}}}})

	if err := r.History().Validate(); err != nil {
		panic(err)
	}
	r.History().Write(os.Stdout)
	// Output:
	// {"id":1,"process":"producer-1","node":"client-1","kind":"send","call":100,"return":180,"outcome":"ok","send":{"tp":{"topic":"in","partition":0},"messages":[{"key":"k1","value":"m1"}],"offset":0}}
	// {"id":2,"process":"processor-1","node":"client-2","kind":"poll","call":200,"return":250,"outcome":"ok","poll":{"group":"g","isolation":"read_committed","fetched":[{"tp":{"topic":"in","partition":0},"from":0,"records":[{"offset":0,"key":"k1","value":"m1"}]}]}}
	// {"id":3,"process":"processor-1","node":"client-2","kind":"txn","call":260,"return":400,"outcome":"ok","txn":{"transactional_id":"processor-1","group":"g","offsets":[{"tp":{"topic":"in","partition":0},"offset":1}],"end_call":320}}
	// {"id":4,"process":"processor-1","node":"client-2","kind":"send","call":270,"return":300,"outcome":"ok","send":{"tp":{"topic":"out","partition":0},"messages":[{"key":"k1","value":"M1","source":"m1"}],"offset":0,"txn":3}}
	// {"id":5,"process":"nemesis","kind":"nemesis","call":410,"return":500,"outcome":"ok","nemesis":{"description":"crash leader of out-0","nodes":["broker-2"]}}
	// {"id":6,"process":"final","node":"client-3","kind":"final-read","call":900,"return":950,"outcome":"ok","final_read":{"tp":{"topic":"out","partition":0},"isolation":"read_committed","from":0,"output":true,"records":[{"offset":0,"key":"k1","value":"M1","source":"m1"}]}}
}
