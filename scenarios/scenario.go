package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/apps"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/probe"
)

// Scenario is one row of the guarantee matrix: a cluster, client settings
// under Kafka's own names, a workload, a fault class and the guarantee it
// claims. Every knob is spelled out after Normalize; nothing is implied.
type Scenario struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Cluster     Cluster  `json:"cluster"`
	Producer    Producer `json:"producer"`
	Consumer    Consumer `json:"consumer"`
	Workload    Workload `json:"workload"`
	// Faults is the fault class the run suffers: "none", "crash",
	// "network", "power", "correlated-power", "disk", "clock", "all" or a
	// comma-separated union.
	Faults string `json:"faults"`
	// FaultsRate multiplies how often the nemesis's episodes come (1: a
	// quiet interval of 1 to 8 s on average, drawn per run, between one
	// fault being undone and the next).
	FaultsRate float64 `json:"faults.rate"`
	// FaultsSchedule, if set, replaces the nemesis: a fault schedule, one
	// action per line as `kafkasim shrink` prints them ("+5s cut the
	// controller <-> the group coordinator of pipeline"), the same on every
	// seed. For exploring one mechanism on purpose.
	FaultsSchedule string `json:"faults.schedule,omitempty"`
	// Expect is the guarantee the configuration claims.
	Expect checkers.Guarantee `json:"expect"`
	// Refutes, for a weak twin, is the guarantee its sibling claims and
	// this configuration must be caught breaking. A run's verdict is about
	// Refutes when it is set, else about Expect.
	Refutes checkers.Guarantee `json:"refutes,omitempty"`
	// Order is the order the configuration claims beside Expect:
	// "partition" (each producer session's sends land in order, with no
	// sequence gap: the idempotent producer's promise) or "key" (and the
	// pipeline's output keeps each key's input order). A run holds only if
	// the order held too.
	Order checkers.Order `json:"order,omitempty"`
	// RefutesOrder, for a weak twin, is the order its sibling claims and
	// this configuration must be caught breaking.
	RefutesOrder checkers.Order `json:"refutes.order,omitempty"`
	// Probes are the coverage probes (package probe) a claim's verdict
	// depends on: only a run that reached every one of them put the claim
	// at stake. A run that missed one is untested, not held; so is a claim
	// whose probe no run reached.
	Probes []string `json:"probes,omitempty"`
}

// Cluster is the broker side.
type Cluster struct {
	// Controllers is how many controllers the metadata quorum has: 1, 3
	// or 5 voters, of which the leader is the active controller.
	Controllers      int  `json:"controllers"`
	MetadataLogFsync bool `json:"metadata.log.fsync"`
	// MetadataLogMaxRecordBytesBetweenSnapshots is
	// metadata.log.max.record.bytes.between.snapshots. Kafka's default is
	// 20 MiB; scenarios default to 16 KiB, so that a run of simulated
	// minutes snapshots its metadata as a cluster running for days does
	// (and a restarted controller or broker loads a snapshot and a tail
	// instead of replaying the whole log).
	MetadataLogMaxRecordBytesBetweenSnapshots int64  `json:"metadata.log.max.record.bytes.between.snapshots"`
	Brokers                                   int    `json:"brokers"`
	ReplicationFactor                         int    `json:"replication.factor"`
	MinInsyncReplicas                         int    `json:"min.insync.replicas"`
	UncleanLeaderElectionEnable               bool   `json:"unclean.leader.election.enable"`
	LogFlushIntervalMessages                  *int64 `json:"log.flush.interval.messages"`
	KIP101LeaderEpochTruncation               bool   `json:"kip101.leader.epoch.truncation"`
	KIP320FetchEpochValidation                bool   `json:"kip320.fetch.epoch.validation"`
	TransactionPartitionVerification          bool   `json:"transaction.partition.verification.enable"`
	KIP890EpochBumpPerTransaction             bool   `json:"kip890.epoch.bump.per.transaction"`
	Partitions                                int    `json:"partitions"`
	ReplicaLagTimeMaxMs                       int    `json:"replica.lag.time.max.ms"`
	// TopicConfigs are config overrides the workload's topics ("input",
	// "output") are created with, as CreateTopics gives them: by topic, by
	// Kafka's topic config name (min.insync.replicas,
	// unclean.leader.election.enable, max.message.bytes,
	// message.timestamp.type, ...).
	TopicConfigs map[string]map[string]string `json:"topic.configs,omitempty"`
}

// The client sections of a scenario file are the applications'
// configuration (package apps).
type (
	Producer = apps.ProducerConfig
	Consumer = apps.ConsumerConfig
	Workload = apps.WorkloadConfig
)

// Workload kinds and commit patterns.
const (
	ProduceOnly             = apps.ProduceOnly
	ConsumeProcessSink      = apps.ConsumeProcessSink
	ConsumeTransformProduce = apps.ConsumeTransformProduce

	CommitBeforeProcess = apps.CommitBeforeProcess
	ProcessThenCommit   = apps.ProcessThenCommit
	AtomicWithOutput    = apps.AtomicWithOutput
	Transactional       = apps.Transactional

	MembershipAssign    = apps.MembershipAssign
	MembershipSubscribe = apps.MembershipSubscribe
	MembershipMixed     = apps.MembershipMixed

	GroupProtocolClassic  = apps.GroupProtocolClassic
	GroupProtocolConsumer = apps.GroupProtocolConsumer
)

// Checked is the guarantee a run is judged against.
func (s Scenario) Checked() checkers.Guarantee {
	if s.Refutes != "" {
		return s.Refutes
	}
	return s.Expect
}

// CheckedOrder is the order a run is judged against.
func (s Scenario) CheckedOrder() checkers.Order {
	if s.RefutesOrder != "" {
		return s.RefutesOrder
	}
	return s.Order
}

// CompactedTopics are the workload's topics whose cleanup.policy (in
// topic.configs) holds compact, sorted: the checkers excuse what their log
// cleaners may remove (checkers.Options.Compacted).
func (s Scenario) CompactedTopics() []string {
	var topics []string
	for _, topic := range slices.Sorted(maps.Keys(s.Cluster.TopicConfigs)) {
		if config.Compacts(s.Cluster.TopicConfigs[topic]) {
			topics = append(topics, topic)
		}
	}
	return topics
}

// Claim is what s claims, as reports print it: "exactly-once", or with an
// order "exactly-once in partition order".
func (s Scenario) Claim() string { return withOrder(s.Expect, s.Order) }

// Judged is what a run of s is judged against, as reports print it: the
// claim, or for a weak twin what it must be caught breaking ("refutes
// at-least-once", "refutes partition order").
func (s Scenario) Judged() string {
	switch {
	case s.RefutesOrder != "" && s.Refutes == "":
		return "refutes " + string(s.RefutesOrder) + " order"
	case s.Twin():
		return "refutes " + withOrder(s.Refutes, s.RefutesOrder)
	}
	return s.Claim()
}

func withOrder(g checkers.Guarantee, o checkers.Order) string {
	if o == checkers.NoOrder {
		return string(g)
	}
	return fmt.Sprintf("%s in %s order", g, o)
}

// Twin reports whether s is a weak twin, run to be caught violating.
func (s Scenario) Twin() bool { return s.Refutes != "" || s.RefutesOrder != "" }

// SameWorld reports whether a and b run the same world on every seed: they
// differ at most in their names, descriptions and claims (Expect, Refutes,
// Order, RefutesOrder, Probes), which only judge a run. RunShared runs
// such scenarios once.
func SameWorld(a, b Scenario) bool { return reflect.DeepEqual(a.world(), b.world()) }

// GroupByWorld groups list by world (SameWorld), in the order of each
// group's first scenario, the members of a group in list's order: the
// groups RunShared takes.
func GroupByWorld(list []Scenario) [][]Scenario {
	var worlds [][]Scenario
next:
	for _, s := range list {
		for i, w := range worlds {
			if SameWorld(w[0], s) {
				worlds[i] = append(w, s)
				continue next
			}
		}
		worlds = append(worlds, []Scenario{s})
	}
	return worlds
}

// world is s without what only judges its runs.
func (s Scenario) world() Scenario {
	s.Name, s.Description = "", ""
	s.Expect, s.Refutes, s.Order, s.RefutesOrder, s.Probes = "", "", "", "", nil
	return s
}

// FaultClass parses Faults.
func (s Scenario) FaultClass() (faults.Class, error) { return faults.ParseClass(s.Faults) }

// Defaults are the values a scenario file's missing keys take: Kafka's
// defaults where Kafka has one, small numbers where a simulation needs them.
func Defaults() Scenario {
	return Scenario{
		Cluster: Cluster{
			Controllers: 3, MetadataLogFsync: true, MetadataLogMaxRecordBytesBetweenSnapshots: 16 << 10, Brokers: 3, ReplicationFactor: 3, MinInsyncReplicas: 2, Partitions: 1, ReplicaLagTimeMaxMs: 10000,
			KIP101LeaderEpochTruncation: true, KIP320FetchEpochValidation: true,
			TransactionPartitionVerification: true, KIP890EpochBumpPerTransaction: true,
		},
		Producer: Producer{
			Acks: "all", EnableIdempotence: true, Retries: 2147483647,
			MaxInFlightRequestsPerConnection: 5, DeliveryTimeoutMs: 30000, RequestTimeoutMs: 10000,
			TransactionTimeoutMs: 60000, MaxBlockMs: 60000,
		},
		Consumer: Consumer{IsolationLevel: "read_committed", AutoCommitIntervalMs: 1000, AutoOffsetReset: "earliest",
			GroupProtocol: GroupProtocolClassic, SessionTimeoutMs: 6000, HeartbeatIntervalMs: 1000, MaxPollIntervalMs: 30000, FetchMinBytes: 1, FetchMaxWaitMs: 500},
		Workload:   Workload{Messages: 300, Producers: 1, Consumers: 1, DurationMs: 30000, ProcessingMs: 50, RewindOnAbort: true, Membership: MembershipAssign},
		Faults:     "none",
		FaultsRate: 1,
	}
}

// Parse reads a scenario file: JSON with Kafka's configuration names. Every
// key is optional except workload (with its kind) and expect; unknown keys,
// wrong types and impossible combinations are errors naming them.
func Parse(data []byte) (Scenario, error) {
	s := Defaults()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Scenario{}, fmt.Errorf("scenario file: %w", jsonError(err))
	}
	for _, need := range []string{"workload", "expect"} {
		if _, ok := raw[need]; !ok {
			return Scenario{}, fmt.Errorf("scenario file: missing %q", need)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("scenario %q: %w", nameOf(raw), jsonError(err))
	}
	if s.Name == "" {
		s.Name = "custom"
	}
	return s, s.Validate()
}

// Load reads a scenario file from disk.
func Load(path string) (Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, err
	}
	return Parse(data)
}

func nameOf(raw map[string]json.RawMessage) string {
	var n string
	_ = json.Unmarshal(raw["name"], &n)
	if n == "" {
		return "custom"
	}
	return n
}

// jsonError rewrites encoding/json's errors into one line naming the key.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Errorf("%q must be %s, not %s", te.Field, te.Type, te.Value)
	case errors.As(err, &se):
		return fmt.Errorf("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.Is(err, io.EOF):
		return errors.New("empty file")
	}
	msg := err.Error()
	if k, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("unknown key %s", k)
	}
	return err
}

// Validate refuses impossible configurations with one line that names the
// scenario and what is wrong.
func (s Scenario) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("scenario %q: "+format, append([]any{s.Name}, args...)...)
	}
	c, p, w := s.Cluster, s.Producer, s.Workload
	// Kafka's time settings are ints of milliseconds: larger values are
	// refused before they overflow a duration.
	for _, t := range []struct {
		name string
		ms   int
	}{
		{"request.timeout.ms", p.RequestTimeoutMs}, {"delivery.timeout.ms", p.DeliveryTimeoutMs}, {"linger.ms", p.LingerMs},
		{"transaction.timeout.ms", p.TransactionTimeoutMs}, {"max.block.ms", p.MaxBlockMs},
		{"session.timeout.ms", s.Consumer.SessionTimeoutMs}, {"heartbeat.interval.ms", s.Consumer.HeartbeatIntervalMs},
		{"max.poll.interval.ms", s.Consumer.MaxPollIntervalMs}, {"auto.commit.interval.ms", s.Consumer.AutoCommitIntervalMs},
		{"fetch.max.wait.ms", s.Consumer.FetchMaxWaitMs}, {"replica.lag.time.max.ms", c.ReplicaLagTimeMaxMs},
	} {
		if t.ms > math.MaxInt32 {
			return bad("%s %d > %d (Kafka's int of milliseconds)", t.name, t.ms, math.MaxInt32)
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(c.TopicConfigs)) {
		if topic != apps.InputTopic && topic != apps.OutputTopic {
			return bad("topic.configs %q: the workload's topics are %q and %q", topic, apps.InputTopic, apps.OutputTopic)
		}
		cfgs := c.TopicConfigs[topic]
		for _, name := range slices.Sorted(maps.Keys(cfgs)) {
			if err := config.ValidateTopicConfig(name, cfgs[name]); err != nil {
				return bad("topic.configs %q: %v", topic, err)
			}
		}
	}
	switch {
	case c.Controllers != 1 && c.Controllers != 3 && c.Controllers != 5:
		return bad("controllers %d: a quorum has 1, 3 or 5 voters", c.Controllers)
	case c.Brokers < 1 || c.Brokers > 9:
		return bad("brokers %d outside [1, 9]", c.Brokers)
	case c.ReplicationFactor < 1 || c.ReplicationFactor > c.Brokers:
		return bad("replication.factor %d outside [1, brokers %d]", c.ReplicationFactor, c.Brokers)
	case c.MinInsyncReplicas < 1 || c.MinInsyncReplicas > c.ReplicationFactor:
		return bad("min.insync.replicas %d > replication.factor %d", c.MinInsyncReplicas, c.ReplicationFactor)
	case c.LogFlushIntervalMessages != nil && *c.LogFlushIntervalMessages < 1:
		return bad("log.flush.interval.messages %d < 1 (null means never)", *c.LogFlushIntervalMessages)
	case c.Partitions < 1 || c.Partitions > 64:
		return bad("partitions %d outside [1, 64]", c.Partitions)
	case c.MetadataLogMaxRecordBytesBetweenSnapshots < 1:
		return bad("metadata.log.max.record.bytes.between.snapshots %d < 1", c.MetadataLogMaxRecordBytesBetweenSnapshots)
	case c.ReplicaLagTimeMaxMs < 1000:
		return bad("replica.lag.time.max.ms %d < 1000", c.ReplicaLagTimeMaxMs)
	case p.Acks != "0" && p.Acks != "1" && p.Acks != "all" && p.Acks != "-1":
		return bad("acks %q: want 0, 1 or all", p.Acks)
	case p.EnableIdempotence && p.Acks != "all" && p.Acks != "-1":
		return bad("enable.idempotence requires acks=all, not acks=%s", p.Acks)
	case p.EnableIdempotence && p.MaxInFlightRequestsPerConnection > 5:
		return bad("enable.idempotence requires max.in.flight.requests.per.connection <= 5, not %d", p.MaxInFlightRequestsPerConnection)
	case p.TransactionalID != nil && !p.EnableIdempotence:
		return bad("transactional.id requires enable.idempotence")
	case p.Retries < 0:
		return bad("retries %d < 0", p.Retries)
	case p.EnableIdempotence && p.Retries == 0:
		return bad("enable.idempotence requires retries > 0 (Kafka: \"Must set retries to non-zero when using the idempotent producer\")")
	case p.LingerMs < 0:
		return bad("linger.ms %d < 0", p.LingerMs)
	case p.MaxInFlightRequestsPerConnection < 1:
		return bad("max.in.flight.requests.per.connection %d < 1", p.MaxInFlightRequestsPerConnection)
	case p.RequestTimeoutMs < 1 || p.DeliveryTimeoutMs < p.RequestTimeoutMs+p.LingerMs:
		return bad("delivery.timeout.ms %d must be at least request.timeout.ms %d + linger.ms %d", p.DeliveryTimeoutMs, p.RequestTimeoutMs, p.LingerMs)
	case p.TransactionTimeoutMs < 1 || p.MaxBlockMs < 1:
		return bad("transaction.timeout.ms %d and max.block.ms %d must be positive", p.TransactionTimeoutMs, p.MaxBlockMs)
	case s.Consumer.HeartbeatIntervalMs < 1 || s.Consumer.HeartbeatIntervalMs >= s.Consumer.SessionTimeoutMs:
		return bad("heartbeat.interval.ms %d must be in [1, session.timeout.ms %d)", s.Consumer.HeartbeatIntervalMs, s.Consumer.SessionTimeoutMs)
	case s.Consumer.SessionTimeoutMs < 1000:
		return bad("session.timeout.ms %d < 1000 (the brokers' group.min.session.timeout.ms)", s.Consumer.SessionTimeoutMs)
	case s.Consumer.MaxPollIntervalMs < 1:
		return bad("max.poll.interval.ms %d < 1", s.Consumer.MaxPollIntervalMs)
	case s.Consumer.EnableAutoCommit && s.Consumer.AutoCommitIntervalMs < 1:
		return bad("auto.commit.interval.ms %d < 1 with enable.auto.commit (it would commit at every instant)", s.Consumer.AutoCommitIntervalMs)
	case s.Consumer.FetchMinBytes < 0 || s.Consumer.FetchMinBytes > 1<<20:
		return bad("fetch.min.bytes %d outside [0, 1048576]", s.Consumer.FetchMinBytes)
	case s.Consumer.FetchMaxWaitMs < 0 || s.Consumer.FetchMaxWaitMs >= p.RequestTimeoutMs:
		return bad("fetch.max.wait.ms %d must be in [0, request.timeout.ms %d)", s.Consumer.FetchMaxWaitMs, p.RequestTimeoutMs)
	case w.TransactionalIDPerIncarnation && w.Kind != ConsumeTransformProduce:
		return bad("workload.transactional.id.per.incarnation is for consume-transform-produce")
	case w.AbortPercent < 0 || w.AbortPercent > 100 || (w.AbortPercent > 0 && w.Kind != ConsumeTransformProduce):
		return bad("workload.abort.percent %d: a share in [0, 100] of a consume-transform-produce's transactions", w.AbortPercent)
	case s.Consumer.IsolationLevel != "read_committed" && s.Consumer.IsolationLevel != "read_uncommitted":
		return bad("isolation.level %q: want read_committed or read_uncommitted", s.Consumer.IsolationLevel)
	case s.Consumer.AutoOffsetReset != "earliest" && s.Consumer.AutoOffsetReset != "latest" && s.Consumer.AutoOffsetReset != "none":
		return bad("auto.offset.reset %q: want earliest, latest or none", s.Consumer.AutoOffsetReset)
	case w.Messages < 1 || w.Messages > 1_000_000:
		return bad("workload.messages %d outside [1, 1000000]", w.Messages)
	case w.Producers < 1 || w.Producers > 64:
		return bad("workload.producers %d outside [1, 64]", w.Producers)
	case w.DurationMs < 1000 || w.DurationMs > 86_400_000:
		return bad("workload.duration.ms %d outside [1000, 86400000] (a simulated day)", w.DurationMs)
	case w.Consumers < 0 || w.Consumers > 64:
		return bad("workload.consumers %d outside [0, 64]", w.Consumers)
	case w.ProcessingMs < 0 || w.ProcessingMs > 60000:
		return bad("workload.processing.ms %d outside [0, 60000]", w.ProcessingMs)
	case w.Membership != MembershipAssign && w.Membership != MembershipSubscribe && w.Membership != MembershipMixed:
		return bad("workload.membership %q: want assign, subscribe or mixed", w.Membership)
	case w.Membership != MembershipAssign && (w.Kind != ConsumeProcessSink || w.Commit == AtomicWithOutput):
		return bad("workload.membership %s is for consume-process-sink consumers committing to Kafka (atomic-with-output keeps its positions in the sink, and assigns)", w.Membership)
	case s.Consumer.GroupProtocol != GroupProtocolClassic && s.Consumer.GroupProtocol != GroupProtocolConsumer:
		return bad("group.protocol %q: want classic or consumer", s.Consumer.GroupProtocol)
	case s.Consumer.GroupProtocol == GroupProtocolConsumer && w.Kind != ConsumeTransformProduce && w.Membership == MembershipAssign:
		return bad("group.protocol consumer is for group members: consume-transform-produce processors, or workload.membership subscribe or mixed (these consumers assign())")
	case w.Membership == MembershipMixed && w.Consumers < 2:
		return bad("workload.membership mixed needs workload.consumers >= 2 (consumer 0 a member, the others assigning)")
	case !w.RewindOnAbort && w.Kind != ConsumeTransformProduce:
		return bad("workload.rewind.on.abort false is a consume-transform-produce processor's habit (after an abort it keeps its position)")
	case w.CommitIntervalMs < 0 || w.CommitIntervalMs > 60000 || (w.CommitIntervalMs > 0 && w.Kind != ConsumeTransformProduce):
		return bad("workload.commit.interval.ms %d: in [0, 60000], for consume-transform-produce", w.CommitIntervalMs)
	}
	switch w.Kind {
	case ProduceOnly:
		if w.Commit != "" {
			return bad("workload.commit %q makes no sense for produce-only", w.Commit)
		}
	case ConsumeProcessSink:
		switch w.Commit {
		case CommitBeforeProcess, ProcessThenCommit, AtomicWithOutput:
		case Transactional:
			return bad("commit transactional needs workload kind consume-transform-produce")
		default:
			return bad("workload.commit %q: want commit-before-process, process-then-commit or atomic-with-output", w.Commit)
		}
		if w.Consumers < 1 || w.Consumers > c.Partitions {
			return bad("workload.consumers %d outside [1, partitions %d]", w.Consumers, c.Partitions)
		}
		if s.Consumer.EnableAutoCommit && w.Commit != CommitBeforeProcess {
			return bad("enable.auto.commit commits before processing: use commit commit-before-process")
		}
	case ConsumeTransformProduce:
		if w.Commit != Transactional {
			return bad("consume-transform-produce needs commit transactional, not %q", w.Commit)
		}
		if p.TransactionalID == nil || *p.TransactionalID == "" {
			return bad("consume-transform-produce needs a transactional.id")
		}
		if w.Consumers < 1 || w.Consumers > c.Partitions {
			return bad("workload.consumers %d outside [1, partitions %d]", w.Consumers, c.Partitions)
		}
		if s.Consumer.EnableAutoCommit {
			return bad("enable.auto.commit makes no sense with transactions: offsets go with sendOffsetsToTransaction")
		}
	case "":
		return bad("workload.kind is missing")
	default:
		return bad("workload.kind %q: want produce-only, consume-process-sink or consume-transform-produce", w.Kind)
	}
	if _, err := s.FaultClass(); err != nil {
		return bad("faults: %v", err)
	}
	if s.FaultsRate <= 0 || s.FaultsRate > 20 {
		return bad("faults.rate %v outside (0, 20]", s.FaultsRate)
	}
	if s.FaultsSchedule != "" {
		sched, err := faults.ParseSchedule(s.FaultsSchedule)
		if err != nil {
			return bad("faults.schedule: %v", err)
		}
		if err := s.checkSchedule(sched); err != nil {
			return bad("faults.schedule: %v", err)
		}
	}
	if _, err := checkers.ParseGuarantee(string(s.Expect)); err != nil {
		return bad("expect: %v", err)
	}
	if s.Refutes != "" {
		if _, err := checkers.ParseGuarantee(string(s.Refutes)); err != nil || s.Refutes == checkers.None {
			return bad("refutes %q: want a guarantee to be caught breaking", s.Refutes)
		}
	}
	if _, err := checkers.ParseOrder(string(s.Order)); err != nil {
		return bad("order: %v", err)
	}
	if _, err := checkers.ParseOrder(string(s.RefutesOrder)); err != nil {
		return bad("refutes.order: %v", err)
	}
	if s.RefutesOrder != "" && s.RefutesOrder == s.Order {
		return bad("order %q and refutes.order %q: a twin cannot claim the order it refutes", s.Order, s.RefutesOrder)
	}
	for _, p := range s.Probes {
		if !probe.Known(p) {
			return bad("probes: unknown probe %q (known: %s)", p, strings.Join(probe.Names(), ", "))
		}
	}
	return nil
}

// JSON renders the scenario as a file a user can edit and pass to --config.
func (s Scenario) JSON() []byte {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
