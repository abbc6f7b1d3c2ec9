package scenarios

import (
	"github.com/kafkasim/kafkasim/apps"
	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/sink"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/sim"
)

// workload is the harness's side of a run's applications (package apps):
// it adds them to the world, starts and stops them, knows when the run has
// drained, and reads the final state.
type workload struct {
	c    *cluster
	s    Scenario
	rec  *history.Recorder
	apps *apps.Workload
}

func newWorkload(c *cluster, rec *history.Recorder) *workload {
	wl := &workload{c: c, s: c.s, rec: rec}
	wl.apps = apps.NewWorkload(c.s.appsConfig(c.brokers), rec, wl.now)
	c.clients = append(c.clients, wl.apps.Clients()...)
	c.hasSink = c.s.Workload.Kind == ConsumeProcessSink
	return wl
}

// appsConfig is what the applications are told of s.
func (s Scenario) appsConfig(brokers []string) apps.Config {
	return apps.Config{
		Name: s.Name, Brokers: brokers, Partitions: s.Cluster.Partitions,
		Producer: s.Producer, Consumer: s.Consumer, Workload: s.Workload,
		Upstream: Defaults().Producer,
	}
}

func (wl *workload) topics() []string { return wl.apps.Topics() }

// isolation is the isolation.level of the consumers downstream.
func (wl *workload) isolation() client.IsolationLevel { return wl.apps.Isolation() }

// now is the history's clock: simulated time since the world began.
func (wl *workload) now() int64 { return int64(wl.c.w.Elapsed()) }

// addNodes adds the applications (and the sink) to the world, not yet
// started, so a fault schedule can name them.
func (wl *workload) addNodes() {
	w := wl.c.w
	if wl.c.hasSink {
		w.AddNode(sinkNode, func() env.Process { return sink.NewServer(sink.DefaultServerOptions) })
	}
	clients := wl.apps.Clients()
	producers := clients[:wl.s.Workload.Producers]
	for _, n := range producers {
		w.AddNode(n, wl.apps.Process(n))
	}
	if wl.apps.ReaderTopic() != "" {
		w.AddNode(readerNode, wl.apps.Process(readerNode))
	}
	for _, n := range clients[len(producers):] {
		w.AddNode(n, wl.apps.Process(n))
	}
}

// start boots the sink and the applications.
func (wl *workload) start() {
	if wl.c.hasSink {
		wl.c.w.Node(sinkNode).Start()
	}
	for _, n := range wl.c.clients {
		wl.c.w.Node(n).Start()
	}
	if wl.apps.ReaderTopic() != "" {
		wl.c.w.Node(readerNode).Start()
	}
}

// stop ends the applications before the final reads.
func (wl *workload) stop() {
	wl.apps.Stop()
	for _, n := range wl.c.clients {
		wl.c.w.Node(n).Crash()
	}
	if wl.apps.ReaderTopic() != "" {
		wl.c.w.Node(readerNode).Crash()
	}
}

// drained reports whether the system has finished: everything sent, and
// in a pipeline, every input partition processed to its end.
func (wl *workload) drained() bool {
	if !wl.apps.Produced() {
		return false
	}
	if wl.s.Workload.Kind == ProduceOnly {
		return true
	}
	for p := range wl.s.Cluster.Partitions {
		tp := metadata.TopicPartition{Topic: inputTopic, Partition: int32(p)}
		end, ok := wl.c.highWatermark(tp)
		// A new leader's high watermark lags until its followers fetch:
		// what producers were told was written must be processed too.
		if !ok || wl.apps.Processed(int32(p)) < max(end, wl.apps.Acknowledged(tp)) {
			return false
		}
	}
	if wl.apps.InTransaction() {
		return false
	}
	if wl.s.Workload.Kind == ConsumeTransformProduce {
		// Every transaction on the output decided: a final read_committed
		// read can see all of it.
		for p := range wl.s.Cluster.Partitions {
			s, ok := wl.c.leaderState(metadata.TopicPartition{Topic: outputTopic, Partition: int32(p)})
			if !ok || s.LastStableOffset < s.HighWatermark {
				return false
			}
		}
	}
	return true
}

// highWatermark is the leader's high watermark of tp, as the cluster knows
// it now.
func (c *cluster) highWatermark(tp metadata.TopicPartition) (int64, bool) {
	s, ok := c.leaderState(tp)
	return s.HighWatermark, ok
}

// leaderState is tp's leader replica's state, as the cluster knows it now.
func (c *cluster) leaderState(tp metadata.TopicPartition) (broker.PartitionState, bool) {
	p, ok := c.partition(tp)
	if !ok || p.Leader < 0 || int(p.Leader) >= len(c.brokers) {
		return broker.PartitionState{}, false
	}
	b, ok := c.w.Node(c.brokers[p.Leader]).Process().(*broker.Broker)
	if !ok {
		return broker.PartitionState{}, false
	}
	s, ok := b.Partition(tp)
	if !ok || s.Role != "leader" {
		return broker.PartitionState{}, false
	}
	return s, true
}

func (wl *workload) checkOptions() checkers.Options {
	// Group members' assignments move in rebalances.
	return checkers.Options{Order: wl.s.CheckedOrder(), Rebalancing: wl.s.Workload.Kind == ConsumeTransformProduce || wl.s.Workload.Membership != MembershipAssign,
		Compacted: wl.s.CompactedTopics()}
}

// finalReads read what the system holds after heal and drain: the input
// topic (the output, for produce-only), the sink, a
// consume-transform-produce pipeline's output topic, read as its
// downstream consumers read it (consumer isolation.level), and the
// pipeline group's committed offsets (unless the sink stores them).
//
// A read that gets stuck is recorded as far as it got (the checkers report
// final-read-stuck); the others go on. The error is the world's failure
// (a panic, a livelock), which ends the run.
func (wl *workload) finalReads() error {
	read := func(tp metadata.TopicPartition, iso history.Isolation, output bool) error {
		err := wl.c.finalRead(wl.rec, tp, iso, output, finalReadBudget, wl.apps.Acknowledged(tp))
		if werr := wl.c.w.Err(); werr != nil {
			return werr
		}
		if err != nil {
			wl.c.w.Trace().Note("final-read-stuck: " + err.Error())
		}
		return nil
	}
	output := wl.s.Workload.Kind == ProduceOnly
	for p := range wl.s.Cluster.Partitions {
		if err := read(metadata.TopicPartition{Topic: inputTopic, Partition: int32(p)}, history.ReadCommitted, output); err != nil {
			return err
		}
	}
	if wl.s.Workload.Kind == ConsumeTransformProduce {
		iso := history.ReadUncommitted
		if wl.isolation() == client.ReadCommitted {
			iso = history.ReadCommitted
		}
		for p := range wl.s.Cluster.Partitions {
			if err := read(metadata.TopicPartition{Topic: outputTopic, Partition: int32(p)}, iso, true); err != nil {
				return err
			}
		}
	}
	if wl.s.Workload.Kind != ProduceOnly && wl.s.Workload.Commit != AtomicWithOutput {
		// The group's committed offsets: the other half of what a
		// transaction commits, and where the pipeline would resume.
		var tps []metadata.TopicPartition
		for p := range wl.s.Cluster.Partitions {
			tps = append(tps, metadata.TopicPartition{Topic: inputTopic, Partition: int32(p)})
		}
		err := wl.c.finalOffsets(wl.rec, groupID, tps, finalReadBudget)
		if werr := wl.c.w.Err(); werr != nil {
			return werr
		}
		if err != nil {
			wl.c.w.Trace().Note("final-read-stuck: " + err.Error())
		}
	}
	if wl.c.hasSink {
		err := wl.c.finalReadSink(wl.rec, finalReadBudget)
		if werr := wl.c.w.Err(); werr != nil {
			return werr
		}
		if err != nil {
			wl.c.w.Trace().Note("final-read-stuck: " + err.Error())
		}
	}
	return nil
}

// deriveProbes hits the probes the harness sees and no single process
// does: a broker that becomes leader of an input partition without every
// record producers were told was written there
// (acknowledged-missing-on-new-leader, what acks=1 and unclean elections
// lose).
func (wl *workload) deriveProbes(h sim.ProbeHit) {
	if h.Name != probe.LeaderElected {
		return
	}
	for _, tp := range wl.inputPartitions() {
		if tp.String() != h.Subject {
			continue
		}
		acked := wl.apps.Acknowledged(tp)
		b, ok := wl.c.w.Node(h.Node).Process().(*broker.Broker)
		if !ok {
			return
		}
		if s, ok := b.Partition(tp); ok && s.LogEndOffset < acked {
			wl.c.w.Probe(probe.AcknowledgedMissingOnNewLeader, h.Subject)
		}
		return
	}
}

// inputPartitions are the input topic's partitions.
func (wl *workload) inputPartitions() []metadata.TopicPartition {
	tps := make([]metadata.TopicPartition, wl.s.Cluster.Partitions)
	for p := range tps {
		tps[p] = metadata.TopicPartition{Topic: inputTopic, Partition: int32(p)}
	}
	return tps
}
