package scenarios

import (
	"fmt"
	"sort"

	"github.com/kafkasim/kafkasim/checkers"
)

// The built-in catalogue: the configurations of Kafka practice, each with
// the guarantee it claims, and for each claim a weak twin — one knob
// turned — that must be caught breaking it. A checker that cannot fail is a
// defect; the twins are how the matrix proves the checkers can.

func scenario(name, desc string, edit func(*Scenario)) Scenario {
	s := Defaults()
	s.Name, s.Description = name, desc
	edit(&s)
	if err := s.Validate(); err != nil {
		panic(fmt.Sprintf("catalogue: %v", err))
	}
	return s
}

func flush(n int64) *int64 { return &n }

// pipeline is a consume-process-sink workload: two input partitions, one
// consumer application each, committing per pattern.
func pipeline(s *Scenario, commit string) {
	s.Workload.Kind, s.Workload.Commit = ConsumeProcessSink, commit
	s.Cluster.Partitions, s.Workload.Consumers = 2, 2
}

// transformPipeline is Kafka's exactly-once consume-transform-produce: two
// input partitions, two processors, each a group consumer and a
// transactional producer with a stable transactional.id.
func transformPipeline(s *Scenario) {
	id := "pipeline"
	s.Producer.TransactionalID = &id
	s.Workload.Kind, s.Workload.Commit = ConsumeTransformProduce, Transactional
	s.Cluster.Partitions, s.Workload.Consumers = 2, 2
	// Short timeouts: a delayed frame or a clog outlasts a request, so
	// transactions abort, commits end unknown, and late frames arrive after
	// their transaction ended.
	s.Producer.RequestTimeoutMs, s.Producer.DeliveryTimeoutMs, s.Producer.MaxBlockMs = 1000, 2000, 5000
	// Longer than a run (Kafka's default is a minute): a transaction
	// nobody fences stays open to the end.
	s.Producer.TransactionTimeoutMs = 120000
	// Processing fails now and then: the application aborts and retries.
	s.Workload.AbortPercent = 25
}

var catalogue = []Scenario{
	// Producers into the log.
	scenario("acks0", "acks=0, no retries: fire and forget, never duplicated", func(s *Scenario) {
		s.Producer.Acks, s.Producer.EnableIdempotence, s.Producer.Retries = "0", false, 0
		s.Workload.Kind, s.Faults, s.Expect = ProduceOnly, "crash,network", checkers.AtMostOnce
	}),
	scenario("acks1-retries-duplicates", "acks=1 with retries: a retried batch whose answer was lost lands twice", func(s *Scenario) {
		s.Producer.Acks, s.Producer.EnableIdempotence = "1", false
		s.Workload.Kind, s.Workload.Messages = ProduceOnly, 3000
		s.Faults, s.Expect, s.Refutes = "network", checkers.None, checkers.AtMostOnce
	}),
	scenario("acks1-leader-failover", "acks=1: the leader answers before followers fetch; a leader failover loses acknowledged writes", func(s *Scenario) {
		s.Producer.Acks, s.Producer.EnableIdempotence = "1", false
		s.Workload.Kind, s.Workload.Messages = ProduceOnly, 3000
		s.Faults, s.Expect, s.Refutes = "crash,network", checkers.None, checkers.AtLeastOnce
	}),
	scenario("acks-all-retries", "acks=all, retries, no idempotence: nothing acknowledged is lost, retries may duplicate", func(s *Scenario) {
		s.Producer.EnableIdempotence = false
		s.Workload.Kind, s.Faults, s.Expect = ProduceOnly, "crash,network", checkers.AtLeastOnce
	}),
	scenario("acks-all-retries-duplicates", "acks=all without idempotence duplicates retried batches: not exactly-once", func(s *Scenario) {
		s.Producer.EnableIdempotence = false
		s.Workload.Kind, s.Faults, s.Expect, s.Refutes = ProduceOnly, "network", checkers.AtLeastOnce, checkers.ExactlyOnce
	}),
	scenario("acks-all-idempotent", "acks=all + enable.idempotence: each message in the log exactly once within a producer session", func(s *Scenario) {
		s.Workload.Kind, s.Faults, s.Expect = ProduceOnly, "crash,network", checkers.ExactlyOnce
	}),
	scenario("acks-all-unclean-election", "acks=all with unclean.leader.election.enable: an out-of-sync leader loses committed data", func(s *Scenario) {
		s.Cluster.UncleanLeaderElectionEnable = true
		s.Cluster.MinInsyncReplicas = 1
		s.Cluster.ReplicaLagTimeMaxMs = 3000
		s.Workload.Kind, s.Workload.Messages = ProduceOnly, 1000
		s.Faults, s.Expect, s.Refutes = "crash,network", checkers.None, checkers.AtLeastOnce
	}),
	scenario("acks-all-fsync-correlated-power", "acks=all with log.flush.interval.messages=1 survives every replica losing power", func(s *Scenario) {
		s.Cluster.LogFlushIntervalMessages = flush(1)
		s.Workload.Kind, s.Faults, s.Expect = ProduceOnly, "correlated-power", checkers.AtLeastOnce
	}),
	scenario("acks-all-no-fsync-correlated-power", "acks=all relying on replication, not fsync: correlated power loss drops acknowledged data", func(s *Scenario) {
		s.Workload.Kind, s.Faults, s.Expect, s.Refutes = ProduceOnly, "correlated-power", checkers.None, checkers.AtLeastOnce
	}),

	// Consumers: the seed's three patterns.
	scenario("pipeline-commit-before-process", "commit the offset, then process: a crash in between loses the message", func(s *Scenario) {
		pipeline(s, CommitBeforeProcess)
		s.Faults, s.Expect = "crash", checkers.AtMostOnce
	}),
	scenario("pipeline-commit-before-process-loses", "commit-before-process is caught losing output: not at-least-once", func(s *Scenario) {
		pipeline(s, CommitBeforeProcess)
		s.Faults, s.Expect, s.Refutes = "crash", checkers.AtMostOnce, checkers.AtLeastOnce
	}),
	scenario("pipeline-process-then-commit", "process, then commit: a crash in between processes the message again", func(s *Scenario) {
		pipeline(s, ProcessThenCommit)
		s.Faults, s.Expect = "crash,network", checkers.AtLeastOnce
	}),
	scenario("pipeline-process-then-commit-duplicates", "process-then-commit is caught duplicating output: not at-most-once", func(s *Scenario) {
		pipeline(s, ProcessThenCommit)
		s.Faults, s.Expect, s.Refutes = "crash", checkers.AtLeastOnce, checkers.AtMostOnce
	}),
	scenario("pipeline-auto-commit", "enable.auto.commit with asynchronous processing commits what is not yet processed", func(s *Scenario) {
		s.Consumer.EnableAutoCommit = true
		pipeline(s, CommitBeforeProcess)
		s.Faults, s.Expect, s.Refutes = "crash", checkers.None, checkers.AtLeastOnce
	}),
	scenario("pipeline-sink-offsets-in-kafka", "twin of pipeline-atomic-sink: output to the sink, offsets to Kafka afterwards — a crash in between repeats output", func(s *Scenario) {
		pipeline(s, ProcessThenCommit)
		s.Faults, s.Expect, s.Refutes = "crash", checkers.AtLeastOnce, checkers.ExactlyOnce
	}),
	scenario("pipeline-atomic-sink", "output and offset in one atomic sink write, offset read back from the sink: exactly-once", func(s *Scenario) {
		pipeline(s, AtomicWithOutput)
		s.Faults, s.Expect = "crash,network", checkers.ExactlyOnce
	}),

	// Consume-transform-produce with transactions.
	scenario("eos-consume-transform-produce", "transactions: outputs and input offsets commit together, read_committed downstream, a restarted processor fences its predecessor: exactly-once", func(s *Scenario) {
		transformPipeline(s)
		s.Faults, s.Expect = "crash,network", checkers.ExactlyOnce
	}),
	scenario("eos-read-uncommitted", "twin of eos-consume-transform-produce: downstream consumers read_uncommitted see the outputs of aborted transactions, which are processed again", func(s *Scenario) {
		transformPipeline(s)
		s.Consumer.IsolationLevel = "read_uncommitted"
		s.Faults, s.Expect, s.Refutes = "crash,network", checkers.AtLeastOnce, checkers.ExactlyOnce
	}),
	scenario("eos-no-stable-transactional-id", "twin of eos-consume-transform-produce: a fresh transactional.id per producer — what a crashed or replaced producer left open is never fenced and holds the output and the offsets until transaction.timeout.ms", func(s *Scenario) {
		transformPipeline(s)
		s.Workload.TransactionalIDPerIncarnation = true
		s.Faults, s.Expect, s.Refutes = "crash,network", checkers.None, checkers.ExactlyOnce
	}),
	scenario("eos-zombie-group-coordinator", "a finding, kept as a twin: the group coordinator cut off from the controller but not from clients keeps serving the committed offsets it last knew; a processor rewinding after an abort re-reads input whose output already committed", func(s *Scenario) {
		transformPipeline(s)
		s.FaultsSchedule = "+5s cut the controller <-> the group coordinator of " + groupID + "\n+25s heal"
		s.Faults, s.Expect, s.Refutes = "network", checkers.None, checkers.ExactlyOnce
	}),
	scenario("eos-kip890-off", "twin of eos-consume-transform-produce: no partition verification, no epoch bump per transaction — a late produce or EndTxn lands in the wrong transaction", func(s *Scenario) {
		transformPipeline(s)
		s.Cluster.TransactionPartitionVerification, s.Cluster.KIP890EpochBumpPerTransaction = false, false
		s.Faults, s.Expect, s.Refutes = "network", checkers.None, checkers.ExactlyOnce
	}),
}

// List returns the built-in scenarios, sorted by name.
func List() []Scenario {
	out := make([]Scenario, len(catalogue))
	copy(out, catalogue)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the built-in scenario named name.
func Lookup(name string) (Scenario, error) {
	for _, s := range catalogue {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (kafkasim list shows them)", name)
}
