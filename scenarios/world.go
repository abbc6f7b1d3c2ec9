package scenarios

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/apps"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/sim"
)

// Node names of a scenario's world; the applications' are package apps'.
const (
	controllerNode = "controller"
	adminNode      = "admin" // setup and final reads; never faulted
	sinkNode       = apps.SinkNode
	readerNode     = apps.ReaderNode
	inputTopic     = apps.InputTopic
	outputTopic    = apps.OutputTopic
	groupID        = apps.GroupID
)

func brokerNode(i int) string { return fmt.Sprintf("broker-%d", i) }

var (
	producerNode  = apps.ProducerNode
	consumerNode  = apps.ConsumerNode
	processorNode = apps.ProcessorNode
)

// clusterConfig turns a scenario's cluster section into the brokers' knobs.
func (s Scenario) clusterConfig() config.Cluster {
	c := config.Default()
	c.MinInsyncReplicas = s.Cluster.MinInsyncReplicas
	c.UncleanLeaderElection = s.Cluster.UncleanLeaderElectionEnable
	c.MetadataLogFsync = s.Cluster.MetadataLogFsync
	c.MetadataLogMaxRecordBytesBetweenSnapshots = s.Cluster.MetadataLogMaxRecordBytesBetweenSnapshots
	if s.Cluster.LogFlushIntervalMessages != nil {
		c.LogFlushIntervalMessages = *s.Cluster.LogFlushIntervalMessages
	}
	c.LeaderEpochTruncation = s.Cluster.KIP101LeaderEpochTruncation
	c.FetchEpochValidation = s.Cluster.KIP320FetchEpochValidation
	c.TransactionPartitionVerification = s.Cluster.TransactionPartitionVerification
	c.EpochBumpPerTransaction = s.Cluster.KIP890EpochBumpPerTransaction
	c.DefaultReplicationFactor = s.Cluster.ReplicationFactor
	c.ReplicaLagTimeMax = time.Duration(s.Cluster.ReplicaLagTimeMaxMs) * time.Millisecond
	c.OffsetsTopicReplicationFactor = min(3, s.Cluster.Brokers)
	c.TransactionTopicReplicationFactor = min(3, s.Cluster.Brokers)
	if s.Consumer.GroupProtocol == GroupProtocolConsumer {
		// KIP-848 moved a member's session and heartbeat to the broker.
		c.GroupConsumerSessionTimeout = time.Duration(s.Consumer.SessionTimeoutMs) * time.Millisecond
		c.GroupConsumerHeartbeatInterval = time.Duration(s.Consumer.HeartbeatIntervalMs) * time.Millisecond
	}
	return c
}

// cluster is a scenario's world and its cast.
type cluster struct {
	w           *sim.World
	controllers []string // the controller nodes (controllerNames)
	s           Scenario
	cfg         config.Cluster
	brokers     []string
	clients     []string // producer and consumer application nodes
	hasSink     bool
	// faults is the installed fault schedule; measure fills the result's
	// history, power and probes (set by Run).
	faults  *faults.Installation
	measure func()
	// samples is what the replica sampler read last (replicas.go).
	samples replicaSamples
}

func buildCluster(s Scenario, o sim.Options, defects defect.Set) *cluster {
	c := &cluster{w: sim.New(o), s: s, cfg: s.clusterConfig()}
	c.cfg.Defects = defects
	cfg := c.cfg
	c.controllers = controllerNames(s.Cluster.Controllers)
	voters := map[int32]string{}
	for i, name := range c.controllers {
		voters[controller.ID+int32(i)] = name
	}
	if len(c.controllers) == 1 {
		c.w.AddNode(controllerNode, func() env.Process { return controller.New(cfg) }).Start()
	} else {
		for i, name := range c.controllers {
			o := controller.Options{NodeID: controller.ID + int32(i), Voters: voters}
			c.w.AddNode(name, func() env.Process { return controller.NewVoter(cfg, o) }).Start()
		}
	}
	for i := range s.Cluster.Brokers {
		name := brokerNode(i)
		c.brokers = append(c.brokers, name)
		id := int32(i)
		n := c.w.AddNode(name, func() env.Process {
			return broker.New(broker.Options{ID: id, Controllers: voters, ClusterID: "kafkasim", Cluster: cfg, InterBrokerListener: interBrokerListener})
		})
		n.Listen(interBrokerListener, interBrokerPort)
		n.Start()
	}
	return c
}

// Every broker has its own inter-broker listener (KIP-103): clients reach
// it at its node's name, other brokers at name:9094, and only those may
// replicate or write transaction markers.
const (
	interBrokerListener = "INTERNAL"
	interBrokerPort     = 9094
)

// controllerNames are the controller nodes of a quorum of n: "controller"
// alone, else "controller-0" and on.
func controllerNames(n int) []string {
	if n <= 1 {
		return []string{controllerNode}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", controllerNode, i)
	}
	return names
}

// activeController is the controller the cluster's metadata comes from:
// the active one; a controller alone in its quorum while it runs.
func (c *cluster) activeController() (*controller.Controller, string) {
	for _, name := range c.controllers {
		ctl, ok := c.w.Node(name).Process().(*controller.Controller)
		if ok && (ctl.Active() || len(c.controllers) == 1) {
			return ctl, name
		}
	}
	return nil, ""
}

// image is the cluster as the active controller sees it, or, while there
// is none, as the first running broker last heard.
func (c *cluster) image() *metadata.Image {
	if ctl, _ := c.activeController(); ctl != nil {
		if img := ctl.Image(); img != nil {
			return img
		}
	}
	for _, b := range c.brokers {
		if br, ok := c.w.Node(b).Process().(*broker.Broker); ok && br.Image() != nil {
			return br.Image()
		}
	}
	return nil
}

// partition is tp as image would find it, without copying the
// controller's image: for reading only.
func (c *cluster) partition(tp metadata.TopicPartition) (metadata.Partition, bool) {
	if ctl, _ := c.activeController(); ctl != nil && ctl.Loaded() {
		return ctl.Partition(tp)
	}
	for _, b := range c.brokers {
		if br, ok := c.w.Node(b).Process().(*broker.Broker); ok && br.Image() != nil {
			return br.Image().Partition(tp)
		}
	}
	return metadata.Partition{}, false
}

// Resolve implements faults.Resolver over the live cluster.
func (c *cluster) Resolve(t faults.Target, r *env.Rand) (string, bool) {
	pick := func(names []string) (string, bool) {
		if len(names) == 0 {
			return "", false
		}
		return names[r.Intn(len(names))], true
	}
	partition := func(topic string, key string, tp metadata.TopicPartition) (metadata.Partition, bool) {
		img := c.image()
		if img == nil {
			return metadata.Partition{}, false
		}
		if key != "" {
			t := img.Topics[topic]
			if t == nil {
				return metadata.Partition{}, false
			}
			tp = metadata.TopicPartition{Topic: topic, Partition: metadata.PartitionFor(key, len(t.Partitions))}
		}
		return img.Partition(tp)
	}
	leader := func(p metadata.Partition, ok bool) (string, bool) {
		if !ok || p.Leader < 0 || int(p.Leader) >= len(c.brokers) {
			return "", false
		}
		return c.brokers[p.Leader], true
	}
	switch t.Role {
	case faults.RoleLeader:
		return leader(partition("", "", metadata.TopicPartition{Topic: t.Topic, Partition: t.Partition}))
	case faults.RoleFollower:
		p, ok := partition("", "", metadata.TopicPartition{Topic: t.Topic, Partition: t.Partition})
		if !ok {
			return "", false
		}
		var fs []string
		for _, r := range p.Replicas {
			if r != p.Leader && int(r) < len(c.brokers) {
				fs = append(fs, c.brokers[r])
			}
		}
		return pick(fs)
	case faults.RoleController:
		if len(c.controllers) == 1 {
			return controllerNode, true
		}
		_, name := c.activeController()
		return name, name != ""
	case faults.RoleAnyController:
		return pick(c.controllers)
	case faults.RoleGroupCoordinator:
		return leader(partition(metadata.OffsetsTopic, t.Name, metadata.TopicPartition{}))
	case faults.RoleTxnCoordinator:
		return leader(partition(metadata.TransactionTopic, t.Name, metadata.TopicPartition{}))
	case faults.RoleRandomBroker:
		return pick(c.brokers)
	case faults.RoleClient:
		var running []string
		for _, n := range c.clients {
			if c.w.Node(n).Running() {
				running = append(running, n)
			}
		}
		return pick(running)
	}
	return "", false
}

// faultNodes lists every node faults may touch, for HealAll.
func (c *cluster) faultNodes() []string {
	nodes := slices.Concat(c.controllers, c.brokers)
	if c.hasSink {
		nodes = append(nodes, sinkNode)
	}
	return append(nodes, c.clients...)
}

// nemesisOptions tell the nemesis the cast and the roles it may aim at.
func (c *cluster) nemesisOptions(topics []string, duration time.Duration) faults.Options {
	o := faults.Options{
		Duration:    duration,
		Brokers:     slices.Clone(c.brokers),
		Controllers: slices.Clone(c.controllers),
		Clients:     slices.Clone(c.clients),
		RateScale:   c.s.FaultsRate,
	}
	if c.hasSink {
		o.Sink = sinkNode
		o.Groups = []string{groupID}
	}
	if c.s.Workload.Kind == ConsumeTransformProduce {
		o.Groups = []string{groupID}
		for i := range c.s.Workload.Consumers {
			o.TransactionalIDs = append(o.TransactionalIDs, c.s.appsConfig(c.brokers).TransactionalID(i, 1))
		}
	}
	for _, t := range topics {
		if t == inputTopic && c.s.Workload.Kind == ConsumeTransformProduce {
			// Aim at the transactional side: the output's leaders and
			// followers, the coordinators, the applications.
			continue
		}
		for p := range c.s.Cluster.Partitions {
			o.Partitions = append(o.Partitions, faults.TopicPartition{Topic: t, Partition: int32(p)})
		}
	}
	if c.s.Cluster.ReplicationFactor < c.s.Cluster.Brokers {
		o.DiskFaultyMax = (c.s.Cluster.ReplicationFactor - 1) / 2
	}
	o.Triggers = c.triggers()
	// A node that lost power is back — its old registration expired, a new
	// one accepted (Kafka refuses a second registration while the first's
	// session lives), the ISR rejoined — only a session timeout and a few
	// seconds after it started again. A second power loss sooner loses a
	// second replica's unsynced data before the first has re-replicated:
	// correlated, not single, and Kafka's ISR then loses acknowledged data
	// (the "last replica standing" of KIP-966, seed 874 of
	// acks-all-idempotent@power with a 5 s settle time).
	o.SettleTime = c.cfg.BrokerSessionTimeout + 4*time.Second
	return o
}

// triggers is the menu of probes targeted faults may wait for: the windows
// of the mechanisms this workload leans on.
func (c *cluster) triggers() []faults.Trigger {
	var ts []faults.Trigger
	logs := func(topic string, probes ...string) {
		for p := range c.s.Cluster.Partitions {
			for _, name := range probes {
				ts = append(ts, faults.Trigger{Probe: name, On: fmt.Sprintf("%s/%d", topic, p)})
			}
		}
	}
	switch c.s.Workload.Kind {
	case ProduceOnly:
		// The menu leads with the window of the riskiest mechanism the
		// configuration turns on: a follower catching up outside the ISR
		// (unclean elections); a follower that cut its log to its high
		// watermark (KIP-101's case without epoch truncation: its leader
		// failing now elects it short); an answer on its way, whose loss
		// makes the producer retry (without idempotence: a duplicate). Then
		// the rest: acknowledged before the followers fetched it (acks=1),
		// an ISR change in flight, a new leader, a follower that cut its
		// log (by whichever rule), an acks=all produce waiting on the
		// followers (a crash now leaves its fate to the next leader). A
		// window the configuration cannot open (an answer to acks=0, a wait
		// on the followers without acks=all) is not on the menu: a fault
		// armed on it would never fire.
		var first []string
		cl, pr := c.s.Cluster, c.s.Producer
		if (config.Cluster{UncleanLeaderElection: cl.UncleanLeaderElectionEnable}).Settings(cl.TopicConfigs[inputTopic]).UncleanLeaderElection {
			first = append(first, probe.FollowerFetchOutOfSync)
		}
		if !cl.KIP101LeaderEpochTruncation {
			first = append(first, probe.FollowerTruncatedToHighWatermark)
		}
		answered := pr.Acks != "0" // acks=0 is never answered
		if answered && (!pr.EnableIdempotence || cl.LogFlushIntervalMessages == nil) {
			first = append(first, probe.ProduceAnswered)
		}
		var rest []string
		if pr.Acks == "1" {
			// Only an acks=1 leader answers before its followers fetch.
			rest = append(rest, probe.ProduceAcknowledgedBeforeReplication)
		}
		if answered {
			rest = append(rest, probe.ProduceAnswered)
		}
		rest = append(rest, probe.FollowerFetchOutOfSync, probe.ISRExpansionPending, probe.LeaderElected, probe.FollowerTruncated)
		if pr.Acks == "all" || pr.Acks == "-1" {
			// Only acks=all waits on the followers.
			rest = append(rest, probe.ProduceAwaitingReplication)
		}
		logs(inputTopic, slices.Compact(append(first, slices.DeleteFunc(rest, func(n string) bool { return slices.Contains(first, n) })...))...)
	case ConsumeProcessSink:
		// Between a consumer's commit and its processing, or the reverse:
		// the window of its commit pattern.
		switch c.s.Workload.Commit {
		case CommitBeforeProcess:
			ts = append(ts, faults.Trigger{Probe: probe.CommittedBeforeProcessing, On: groupID})
		case ProcessThenCommit:
			ts = append(ts, faults.Trigger{Probe: probe.ProcessedBeforeCommit, On: groupID})
		}
		if c.s.Workload.Commit != AtomicWithOutput {
			// An offset commit on its way to the group's replicas.
			ts = append(ts, faults.Trigger{Probe: probe.OffsetCommitAwaitingReplication, On: groupID})
		}
		// An acknowledgment on its way (a correlated power loss right
		// after it takes the input away); the input's leaders.
		logs(inputTopic, probe.ProduceAnswered, probe.LeaderElected)
	case ConsumeTransformProduce:
		// A transaction written but not yet asked to commit; between its
		// decision and its markers; a rebalance with a transaction open;
		// its offsets on their way to the group's replicas; the output's
		// leaders.
		ts = append(ts, faults.Trigger{Probe: probe.TransactionAwaitingCommit}, faults.Trigger{Probe: probe.TransactionPrepared},
			faults.Trigger{Probe: probe.RebalanceDuringTransaction}, faults.Trigger{Probe: probe.OffsetCommitAwaitingReplication, On: groupID})
		logs(outputTopic, probe.LeaderElected, probe.ISRExpansionPending)
	}
	return ts
}
