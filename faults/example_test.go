package faults_test

import (
	"fmt"
	"os"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/sim"
)

func ExampleParseSchedule() {
	s, err := faults.ParseSchedule(`
# the leader crashes while its followers are cut off from each other
+2s crash leader of orders/0 as $1
+2s cut b2 <-> b3
+7s heal
+8s start $1
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Save(os.Stdout)
	// Output:
	// [
	//   {"at":"2s","kind":"crash","target":"leader of orders/0","tag":"1"},
	//   {"at":"2s","kind":"cut","target":"b2","peer":"b3"},
	//   {"at":"7s","kind":"heal"},
	//   {"at":"8s","kind":"start","target":"$1"}
	// ]
}

func ExampleGenerate() {
	o := faults.Options{
		Duration:    30 * time.Second,
		Brokers:     []string{"b1", "b2", "b3"},
		Controllers: []string{"controller"},
		Clients:     []string{"producer"},
		Partitions:  []faults.TopicPartition{{Topic: "orders", Partition: 0}},
		Triggers:    []faults.Trigger{{Probe: "produce-acknowledged-before-replication", On: "orders/0"}},
	}
	class := faults.MustParseClass("crash,network")
	s := faults.Generate(env.NewRand(8).Fork("faults"), class, o)
	fmt.Print(s)
	fmt.Println(class.Check(s, o))
	// Output:
	// +1s cut-one-way the active controller -> leader of orders/0
	// +3.5s heal
	// +3.7s partition [leader of orders/0, producer]
	// +12.3s heal
	// +12.5s cut-one-way a follower of orders/0 -> b2
	// +19.5s heal
	// +19.5s when produce-acknowledged-before-replication on orders/0 within 1.3s: reset the probed node
	// +21.1s isolate a random broker
	// +27.7s heal
	// +27.7s when produce-acknowledged-before-replication on orders/0 within 1.3s: reset the probed node
	// +29.1s when produce-acknowledged-before-replication on orders/0 within 500ms: reset the probed node
	// +29.6s when produce-acknowledged-before-replication on orders/0 within 300ms: reset the probed node
	// <nil>
}

func ExampleInstall() {
	w := sim.New(sim.Options{Seed: 1})
	for _, name := range []string{"b1", "b2", "b3"} {
		w.AddNode(name, func() env.Process { return &probe{} }).Start()
	}
	leader := "b2"
	res := faults.ResolverFunc(func(t faults.Target, r *env.Rand) (string, bool) {
		if t.Role == faults.RoleLeader {
			return leader, true
		}
		return "", false
	})
	s, _ := faults.ParseSchedule("+1s crash leader of orders/0 as $1\n+1s isolate b3\n+5s heal\n+6s start $1")
	in, _ := faults.Install(w, s, res, w.Now())
	_ = w.RunFor(3 * time.Second)
	fmt.Println("b2 running:", w.Node("b2").Running(), "b3 reaches b1:", w.Reachable("b3", "b1"))
	_ = w.RunFor(5 * time.Second)
	for _, f := range in.Fired() {
		fmt.Println(f)
	}
	faults.HealAll(w, []string{"b1", "b2", "b3"})
	// Output:
	// b2 running: false b3 reaches b1: false
	// +1s crash leader of orders/0 as $1 → b2
	// +1s isolate b3 → b3
	// +5s heal
	// +6s start $1 → b2
}

func ExampleShrink() {
	s, _ := faults.ParseSchedule(`
+1s crash b1
+2s pause b2
+3s partition [b3]
+4s start b1
+5s resume b2
+6s heal
+7s clog b1 <-> b2 for 1s`)
	// The bug: a partitioned b3 and a paused b2 together, with at least 40
	// messages.
	fails := func(s faults.Schedule, messages int) bool {
		paused, cut := false, false
		for _, a := range s {
			paused = paused || a.Kind == faults.KindPause
			cut = cut || a.Kind == faults.KindPartition
		}
		return paused && cut && messages >= 40
	}
	min, messages := faults.Shrink(s, 1000, fails, faults.ShrinkOptions{SizeMin: 1})
	fmt.Printf("%d messages under\n%s", messages, min)
	// Output:
	// 40 messages under
	// +2s pause b2
	// +3s partition [b3]
	// +5s resume b2
	// +6s heal
}
