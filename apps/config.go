package apps

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/client"
)

// ProducerConfig is the producer clients' configuration.
type ProducerConfig struct {
	Acks                             string `json:"acks"` // "0", "1" or "all"
	EnableIdempotence                bool   `json:"enable.idempotence"`
	Retries                          int    `json:"retries"`
	MaxInFlightRequestsPerConnection int    `json:"max.in.flight.requests.per.connection"`
	// TransactionalID is the consume-transform-produce processors'
	// transactional.id: processor i uses "<id>-<i>", the same after every
	// restart, so a restarted processor fences its previous incarnation
	// (unless workload.transactional.id.per.incarnation).
	TransactionalID      *string `json:"transactional.id"`
	DeliveryTimeoutMs    int     `json:"delivery.timeout.ms"`
	RequestTimeoutMs     int     `json:"request.timeout.ms"`
	LingerMs             int     `json:"linger.ms"`
	TransactionTimeoutMs int     `json:"transaction.timeout.ms"`
	MaxBlockMs           int     `json:"max.block.ms"`
}

// ConsumerConfig is the consumer clients' configuration.
type ConsumerConfig struct {
	// IsolationLevel is every consumer's isolation.level downstream of the
	// producers: the pipeline's consumers, and the final read of a
	// consume-transform-produce output topic (the output's downstream
	// consumer). read_committed consumers also fetch their starting
	// offsets with require_stable.
	IsolationLevel       string `json:"isolation.level"` // read_uncommitted | read_committed
	EnableAutoCommit     bool   `json:"enable.auto.commit"`
	AutoCommitIntervalMs int    `json:"auto.commit.interval.ms"`
	// AutoOffsetReset is where a consumer goes when its position is not
	// in the log (earliest, latest or none). With none the consumer stops
	// the partition and the application repositions it from where it
	// keeps its offsets: the sink for the atomic pattern, the group's
	// committed offsets otherwise.
	AutoOffsetReset string `json:"auto.offset.reset"`
	// Group membership (consume-transform-produce processors subscribe).
	// GroupProtocol is group.protocol: classic (JoinGroup and SyncGroup)
	// or consumer (KIP-848's ConsumerGroupHeartbeat; then session.timeout.ms
	// and heartbeat.interval.ms are the brokers'
	// group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms, where KIP-848 moved them).
	GroupProtocol       string `json:"group.protocol"`
	SessionTimeoutMs    int    `json:"session.timeout.ms"`
	HeartbeatIntervalMs int    `json:"heartbeat.interval.ms"`
	MaxPollIntervalMs   int    `json:"max.poll.interval.ms"`
	// FetchMinBytes and FetchMaxWaitMs are fetch.min.bytes and
	// fetch.max.wait.ms: a leader holds a consumer's fetch until it has
	// this many bytes or this long has passed, so polls come in batches.
	FetchMinBytes  int `json:"fetch.min.bytes"`
	FetchMaxWaitMs int `json:"fetch.max.wait.ms"`
}

// WorkloadConfig is what the clients do.
type WorkloadConfig struct {
	// Kind is produce-only, consume-process-sink or
	// consume-transform-produce.
	Kind string `json:"kind"`
	// Commit is the consumer's pattern: commit-before-process,
	// process-then-commit, atomic-with-output or transactional.
	Commit    string `json:"commit,omitempty"`
	Messages  int    `json:"messages"`
	Producers int    `json:"producers"`
	Consumers int    `json:"consumers"`
	// DurationMs is the workload's time budget before heal and drain.
	DurationMs int `json:"duration.ms"`
	// ProcessingMs is how long a consumer application works on a polled
	// batch before writing its outputs (not a Kafka setting: the
	// application's own time, the window a crash can fall into).
	ProcessingMs int `json:"processing.ms"`
	// TransactionalIDPerIncarnation: every producer a processor makes (at
	// its start, and again after a commit whose outcome is unknown or a
	// fatal error) gets a fresh transactional.id, as an application
	// generating a random one does, so it never fences what the previous
	// one left open.
	TransactionalIDPerIncarnation bool `json:"transactional.id.per.incarnation"`
	// CommitIntervalMs is how long a consume-transform-produce processor
	// keeps one transaction open across polls before it commits it, as
	// Kafka Streams' commit.interval.ms (100 ms under exactly-once); 0: one
	// transaction per poll.
	CommitIntervalMs int `json:"commit.interval.ms"`
	// AbortPercent is the share of its transactions a processor aborts
	// after writing their outputs — its processing failed (not a Kafka
	// setting: the application's own failures) — before it rewinds and
	// processes the inputs again.
	AbortPercent int `json:"abort.percent"`
	// ResendOnError is an application habit, not a Kafka setting: when its
	// producer reports a send failed — delivery.timeout.ms expired (KIP-91:
	// an indefinite failure, the record may be in the log), retries ran
	// out, a fatal error — the application sends the same message again,
	// as one that "never drops a message" does. The second send is a new
	// record to the producer: with enable.idempotence it gets a new
	// sequence (and, after an epoch bump, a new epoch), so the broker
	// cannot know it for a duplicate. The queue of messages to resend is
	// the application's memory: a crash loses it.
	ResendOnError bool `json:"resend.on.error"`
	// RewindOnAbort is an application habit: after aborting a transaction
	// a consume-transform-produce processor seeks back to the group's
	// committed offsets, so the aborted transaction's inputs are read and
	// processed again — Kafka leaves this to the application (the
	// KafkaProducer javadoc's abortTransaction example; Kafka Streams
	// does it by closing its tasks dirty and reinitialising them). False:
	// the processor keeps its position and goes on with the next inputs,
	// so what the aborted transaction consumed is never processed.
	RewindOnAbort bool `json:"rewind.on.abort"`
	// Membership is how a consume-process-sink pipeline's consumers hold
	// their partitions, an application habit: "assign" — each assigns its
	// share (assign()) and commits into the group without membership, as
	// a simple consumer (generation -1, no member id: the group
	// coordinator accepts it only while the group has no members, and
	// fences nothing); "subscribe" — each is a group member (subscribe()),
	// its partitions handed out in rebalances and its commits fenced by
	// the generation; "mixed" — consumer 0 is a member and the others
	// assign their shares, all in one group, as an operator's one-off
	// assign()-ing job sharing a live group's group.id does.
	Membership string `json:"membership"`
}

// Workload kinds and commit patterns.
const (
	ProduceOnly             = "produce-only"
	ConsumeProcessSink      = "consume-process-sink"
	ConsumeTransformProduce = "consume-transform-produce"

	CommitBeforeProcess = "commit-before-process"
	ProcessThenCommit   = "process-then-commit"
	AtomicWithOutput    = "atomic-with-output"
	Transactional       = "transactional"

	MembershipAssign    = "assign"
	MembershipSubscribe = "subscribe"
	MembershipMixed     = "mixed"

	// The values of group.protocol.
	GroupProtocolClassic  = client.GroupProtocolClassic
	GroupProtocolConsumer = client.GroupProtocolConsumer
)

// AcksValue is acks as the wire has it.
func (p ProducerConfig) AcksValue() int16 {
	switch p.Acks {
	case "0":
		return 0
	case "1":
		return 1
	}
	return -1
}

// Config is what a run's applications are told.
type Config struct {
	// Name is the scenario's, for the messages of a panic.
	Name string
	// Brokers are the addresses the clients bootstrap from.
	Brokers []string
	// Partitions is the number of partitions of each topic.
	Partitions int
	Producer   ProducerConfig
	Consumer   ConsumerConfig
	Workload   WorkloadConfig
	// Upstream configures the idempotent producers feeding a
	// consume-transform-produce pipeline, whose Producer section
	// configures the processors' transactional producers instead: only
	// its request.timeout.ms and delivery.timeout.ms are used.
	Upstream ProducerConfig
}

// The topics, the group and the nodes of a run.
const (
	InputTopic  = "input"
	OutputTopic = "output"
	GroupID     = "pipeline"
	SinkNode    = "sink"
	ReaderNode  = "reader"
)

// ProducerNode is the node of producer application i.
func ProducerNode(i int) string { return fmt.Sprintf("producer-%d", i) }

// ConsumerNode is the node of sink pipeline consumer i.
func ConsumerNode(i int) string { return fmt.Sprintf("consumer-%d", i) }

// ProcessorNode is the node of consume-transform-produce processor i.
func ProcessorNode(i int) string { return fmt.Sprintf("processor-%d", i) }

// offsetReset is the consumer option for the configured auto.offset.reset.
func (c ConsumerConfig) offsetReset() client.OffsetReset {
	switch c.AutoOffsetReset {
	case "latest":
		return client.OffsetResetLatest
	case "none":
		return client.OffsetResetNone
	}
	return client.OffsetResetEarliest
}
