package client

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/wire"
)

// TopicPartition names one partition.
type TopicPartition = metadata.TopicPartition

// Partitioner is partitioner.class: how a record without a manual
// partition finds one.
type Partitioner uint8

const (
	// PartitionerMurmur2 is Kafka's default for keyed records:
	// toPositive(murmur2(key)) % partitions. Records with a null key go
	// round robin (Kafka 3.3+ spreads them with its "uniform sticky"
	// batching instead; round robin is the simpler, documented choice).
	PartitionerMurmur2 Partitioner = iota + 1
	// PartitionerRoundRobin spreads records over partitions in turn,
	// whatever their key.
	PartitionerRoundRobin
	// PartitionerManual sends each record to Record.Partition.
	PartitionerManual
)

func (p Partitioner) String() string {
	switch p {
	case PartitionerMurmur2:
		return "murmur2"
	case PartitionerRoundRobin:
		return "round-robin"
	case PartitionerManual:
		return "manual"
	}
	return fmt.Sprintf("partitioner(%d)", uint8(p))
}

// Acks values.
const (
	AcksNone   int16 = 0
	AcksLeader int16 = 1
	AcksAll    int16 = -1
)

// ConnectionOptions are the knobs every client shares: how it finds the
// cluster and talks to brokers.
type ConnectionOptions struct {
	// BootstrapServers is bootstrap.servers: addresses asked for metadata
	// before any is known (and as a last resort after).
	BootstrapServers []string
	// ClientID is client.id, sent in every request header.
	ClientID string
	// RequestTimeout is request.timeout.ms: how long a request waits for
	// its answer before the connection is given up.
	RequestTimeout time.Duration
	// RetryBackoff is retry.backoff.ms: the wait before retrying a failed
	// request, and between metadata refreshes.
	RetryBackoff time.Duration
	// MetadataMaxAge is metadata.max.age.ms: metadata is refreshed at least
	// this often.
	MetadataMaxAge time.Duration
	// ReconnectBackoff and ReconnectBackoffMax are reconnect.backoff.ms and
	// reconnect.backoff.max.ms: the wait between failed dials, doubling.
	ReconnectBackoff, ReconnectBackoffMax time.Duration
	// SocketConnectionSetupTimeout is socket.connection.setup.timeout.ms:
	// how long a request to a broker not yet connected waits for the
	// connection before it counts as not sent.
	SocketConnectionSetupTimeout time.Duration
}

// DefaultConnectionOptions are Kafka's defaults.
func DefaultConnectionOptions(bootstrap ...string) ConnectionOptions {
	return ConnectionOptions{
		BootstrapServers:             bootstrap,
		ClientID:                     "kafkasim",
		RequestTimeout:               30 * time.Second,
		RetryBackoff:                 100 * time.Millisecond,
		MetadataMaxAge:               5 * time.Minute,
		ReconnectBackoff:             50 * time.Millisecond,
		ReconnectBackoffMax:          time.Second,
		SocketConnectionSetupTimeout: 10 * time.Second,
	}
}

func (o ConnectionOptions) validate() error {
	switch {
	case len(o.BootstrapServers) == 0:
		return errors.New("bootstrap.servers is empty")
	case o.RequestTimeout <= 0:
		return fmt.Errorf("request.timeout.ms %v <= 0", o.RequestTimeout)
	case o.RetryBackoff <= 0:
		return fmt.Errorf("retry.backoff.ms %v <= 0", o.RetryBackoff)
	case o.MetadataMaxAge <= 0:
		return fmt.Errorf("metadata.max.age.ms %v <= 0", o.MetadataMaxAge)
	case o.ReconnectBackoff <= 0 || o.ReconnectBackoffMax < o.ReconnectBackoff:
		return fmt.Errorf("reconnect.backoff.ms %v and reconnect.backoff.max.ms %v must be positive and ordered", o.ReconnectBackoff, o.ReconnectBackoffMax)
	case o.SocketConnectionSetupTimeout <= 0:
		return fmt.Errorf("socket.connection.setup.timeout.ms %v <= 0", o.SocketConnectionSetupTimeout)
	}
	return nil
}

// ProducerOptions configure a Producer. Every field is a Kafka producer
// setting under its Kafka name; there are no hidden defaults:
// DefaultProducerOptions spells out Kafka's, and NewProducer refuses
// impossible values rather than replacing them.
type ProducerOptions struct {
	ConnectionOptions
	// Acks is acks: 0 (no answer; offsets unknown), 1 (the leader
	// appended) or -1 (all in-sync replicas have it).
	Acks int16
	// Linger is linger.ms: how long a batch waits for more records.
	Linger time.Duration
	// BatchSize is batch.size: bytes per partition batch.
	BatchSize int
	// BufferMemory is buffer.memory: bytes of records sent and not yet
	// completed. Send refuses a record past it (ErrBufferFull).
	BufferMemory int
	// MaxRequestSize is max.request.size: the largest produce request, and
	// so the largest record.
	MaxRequestSize int
	// Retries is retries: how often a batch is re-sent after a retriable
	// error, within DeliveryTimeout.
	Retries int
	// DeliveryTimeout is delivery.timeout.ms: the bound on a record's time
	// from Send to its outcome. It must cover Linger + RequestTimeout.
	DeliveryTimeout time.Duration
	// MaxInFlightRequestsPerConnection is
	// max.in.flight.requests.per.connection. With 1, a partition has at
	// most one batch on the wire; above 1 without idempotence, a retried
	// batch can land after a later one.
	MaxInFlightRequestsPerConnection int
	// EnableIdempotence is enable.idempotence: a producer id and epoch,
	// and per-partition sequence numbers the leader deduplicates with.
	// Requires Acks -1, Retries > 0 and at most 5 requests in flight.
	EnableIdempotence bool
	// Partitioner is partitioner.class.
	Partitioner Partitioner
	// CompressionType is compression.type: none, gzip, snappy, lz4 or
	// zstd (the codecs broker/record writes).
	CompressionType record.Compression
	// TransactionalID is transactional.id: with it the producer is
	// transactional (InitTransactions, BeginTransaction, ...; see
	// transaction.go). It requires enable.idempotence.
	TransactionalID string
	// TransactionTimeout is transaction.timeout.ms: how long the
	// coordinator lets a transaction stay open before it aborts it and
	// fences the producer.
	TransactionTimeout time.Duration
	// MaxBlock is max.block.ms: how long InitTransactions,
	// SendOffsetsToTransaction, CommitTransaction and AbortTransaction keep
	// retrying before they give up.
	MaxBlock time.Duration
}

// DefaultProducerOptions are Kafka's producer defaults (Kafka 4.0: acks
// all, idempotence on, linger 5 ms).
func DefaultProducerOptions(bootstrap ...string) ProducerOptions {
	return ProducerOptions{
		ConnectionOptions:                DefaultConnectionOptions(bootstrap...),
		Acks:                             AcksAll,
		Linger:                           5 * time.Millisecond,
		BatchSize:                        16384,
		BufferMemory:                     32 << 20,
		MaxRequestSize:                   1 << 20,
		Retries:                          math.MaxInt32,
		DeliveryTimeout:                  2 * time.Minute,
		MaxInFlightRequestsPerConnection: 5,
		EnableIdempotence:                true,
		Partitioner:                      PartitionerMurmur2,
		CompressionType:                  record.CompressionNone,
		TransactionTimeout:               time.Minute,
		MaxBlock:                         time.Minute,
	}
}

// Validate reports the first impossible setting.
func (o ProducerOptions) Validate() error {
	if err := o.ConnectionOptions.validate(); err != nil {
		return err
	}
	switch {
	case o.Acks != AcksNone && o.Acks != AcksLeader && o.Acks != AcksAll:
		return fmt.Errorf("acks %d: must be 0, 1 or -1 (all)", o.Acks)
	case o.Linger < 0:
		return fmt.Errorf("linger.ms %v < 0", o.Linger)
	case o.BatchSize <= 0:
		return fmt.Errorf("batch.size %d <= 0", o.BatchSize)
	case o.MaxRequestSize <= 0:
		return fmt.Errorf("max.request.size %d <= 0", o.MaxRequestSize)
	case o.BufferMemory < o.BatchSize:
		return fmt.Errorf("buffer.memory %d < batch.size %d", o.BufferMemory, o.BatchSize)
	case o.Retries < 0:
		return fmt.Errorf("retries %d < 0", o.Retries)
	case o.DeliveryTimeout < o.Linger+o.RequestTimeout:
		return fmt.Errorf("delivery.timeout.ms %v must be at least linger.ms + request.timeout.ms (%v)", o.DeliveryTimeout, o.Linger+o.RequestTimeout)
	case o.MaxInFlightRequestsPerConnection < 1:
		return fmt.Errorf("max.in.flight.requests.per.connection %d < 1", o.MaxInFlightRequestsPerConnection)
	case o.Partitioner < PartitionerMurmur2 || o.Partitioner > PartitionerManual:
		return fmt.Errorf("partitioner %v unknown", o.Partitioner)
	case !o.CompressionType.Supported():
		return fmt.Errorf("compression.type %v not supported", o.CompressionType)
	case o.TransactionalID != "" && !o.EnableIdempotence:
		return errors.New("transactional.id requires enable.idempotence")
	case o.TransactionalID != "" && (o.TransactionTimeout <= 0 || o.TransactionTimeout > math.MaxInt32*time.Millisecond):
		return fmt.Errorf("transaction.timeout.ms %v outside (0, %v]", o.TransactionTimeout, math.MaxInt32*time.Millisecond)
	case o.TransactionalID != "" && o.MaxBlock <= 0:
		return fmt.Errorf("max.block.ms %v <= 0", o.MaxBlock)
	}
	if o.EnableIdempotence {
		switch {
		case o.Acks != AcksAll:
			return fmt.Errorf("enable.idempotence requires acks=all, not %d", o.Acks)
		case o.Retries < 1:
			return errors.New("enable.idempotence requires retries > 0")
		case o.MaxInFlightRequestsPerConnection > 5:
			return fmt.Errorf("enable.idempotence requires max.in.flight.requests.per.connection <= 5, not %d", o.MaxInFlightRequestsPerConnection)
		}
	}
	return nil
}

// OffsetReset is auto.offset.reset: where a consumer starts when a
// partition has no committed offset, or its position is out of range.
type OffsetReset uint8

const (
	// OffsetResetEarliest: the log start offset.
	OffsetResetEarliest OffsetReset = iota + 1
	// OffsetResetLatest: the high watermark (the last stable offset with
	// read_committed).
	OffsetResetLatest
	// OffsetResetNone: no reset; Poll reports ErrNoOffset.
	OffsetResetNone
)

func (r OffsetReset) String() string {
	switch r {
	case OffsetResetEarliest:
		return "earliest"
	case OffsetResetLatest:
		return "latest"
	case OffsetResetNone:
		return "none"
	}
	return fmt.Sprintf("offset-reset(%d)", uint8(r))
}

// IsolationLevel is isolation.level.
type IsolationLevel int8

const (
	// ReadUncommitted returns every record below the high watermark,
	// records of aborted transactions included.
	ReadUncommitted IsolationLevel = 0
	// ReadCommitted returns records below the last stable offset and drops
	// those of aborted transactions.
	ReadCommitted IsolationLevel = 1
)

func (l IsolationLevel) String() string {
	if l == ReadCommitted {
		return "read_committed"
	}
	return "read_uncommitted"
}

// ConsumerOptions configure a Consumer, under Kafka's consumer setting
// names; DefaultConsumerOptions spells out Kafka's defaults.
type ConsumerOptions struct {
	ConnectionOptions
	// GroupID is group.id: the group whose committed offsets the consumer
	// starts from and commits to, and which Subscribe joins. Empty: no
	// commits; positions start at AutoOffsetReset. With Assign, commits
	// carry generation -1 and no member id, as simple consumers' do; with
	// Subscribe, the member's generation and id.
	GroupID string
	// SessionTimeout is session.timeout.ms: a member the coordinator hears
	// no heartbeat from for this long is evicted.
	SessionTimeout time.Duration
	// HeartbeatInterval is heartbeat.interval.ms: how often a member
	// heartbeats (below SessionTimeout).
	HeartbeatInterval time.Duration
	// GroupProtocol is group.protocol: GroupProtocolClassic (JoinGroup,
	// SyncGroup, a leader client assigns) or GroupProtocolConsumer (KIP-848:
	// ConsumerGroupHeartbeat, the coordinator assigns; SessionTimeout and
	// HeartbeatInterval are then the broker's).
	GroupProtocol string
	// GroupRemoteAssignor is group.remote.assignor: the server-side
	// assignor a consumer-protocol member asks for ("uniform", "range");
	// empty: the broker's default.
	GroupRemoteAssignor string
	// MaxPollInterval is max.poll.interval.ms: a member that does not call
	// Poll for this long leaves the group, and it is also the rebalance
	// timeout the coordinator gives members to rejoin.
	MaxPollInterval time.Duration
	// IsolationLevel is isolation.level.
	IsolationLevel IsolationLevel
	// AutoOffsetReset is auto.offset.reset.
	AutoOffsetReset OffsetReset
	// FetchMaxWait is fetch.max.wait.ms: how long the leader holds a fetch
	// that has less than FetchMinBytes.
	FetchMaxWait time.Duration
	// FetchMinBytes is fetch.min.bytes.
	FetchMinBytes int32
	// FetchMaxBytes is fetch.max.bytes, per fetch request.
	FetchMaxBytes int32
	// MaxPartitionFetchBytes is max.partition.fetch.bytes.
	MaxPartitionFetchBytes int32
	// MaxPollRecords is max.poll.records: the most records one Poll
	// returns when the caller does not say.
	MaxPollRecords int
	// EnableAutoCommit is enable.auto.commit: at a Poll, once
	// AutoCommitInterval has passed since the last auto-commit, commit the
	// positions the previous Poll reached.
	EnableAutoCommit bool
	// AutoCommitInterval is auto.commit.interval.ms.
	AutoCommitInterval time.Duration
	// DefaultAPITimeout is default.api.timeout.ms: how long CommitOffsets,
	// CommitPositions and Committed retry retriable errors.
	DefaultAPITimeout time.Duration
	// CheckCRCs is check.crcs: verify every fetched batch's CRC.
	CheckCRCs bool
	// OnAutoCommit, if set, is told of every auto-commit's offsets and
	// result (not a Kafka setting: how a workload records auto-commits).
	OnAutoCommit func(offsets map[TopicPartition]OffsetAndMetadata, err error)
}

// DefaultConsumerOptions are Kafka's consumer defaults. Without a group.id
// Kafka turns enable.auto.commit off, and so do these; set both to have
// the group's offsets committed every auto.commit.interval.ms.
func DefaultConsumerOptions(bootstrap ...string) ConsumerOptions {
	return ConsumerOptions{
		ConnectionOptions:      DefaultConnectionOptions(bootstrap...),
		IsolationLevel:         ReadUncommitted,
		AutoOffsetReset:        OffsetResetLatest,
		FetchMaxWait:           500 * time.Millisecond,
		FetchMinBytes:          1,
		FetchMaxBytes:          50 << 20,
		MaxPartitionFetchBytes: 1 << 20,
		MaxPollRecords:         500,
		EnableAutoCommit:       false,
		AutoCommitInterval:     5 * time.Second,
		DefaultAPITimeout:      time.Minute,
		CheckCRCs:              true,
		SessionTimeout:         45 * time.Second,
		HeartbeatInterval:      3 * time.Second,
		MaxPollInterval:        5 * time.Minute,
		GroupProtocol:          GroupProtocolClassic,
	}
}

// Validate reports the first impossible setting.
func (o ConsumerOptions) Validate() error {
	if err := o.ConnectionOptions.validate(); err != nil {
		return err
	}
	switch {
	case o.IsolationLevel != ReadUncommitted && o.IsolationLevel != ReadCommitted:
		return fmt.Errorf("isolation.level %d unknown", o.IsolationLevel)
	case o.AutoOffsetReset < OffsetResetEarliest || o.AutoOffsetReset > OffsetResetNone:
		return fmt.Errorf("auto.offset.reset %v unknown", o.AutoOffsetReset)
	case o.FetchMaxWait < 0 || o.FetchMaxWait >= o.RequestTimeout:
		return fmt.Errorf("fetch.max.wait.ms %v must be in [0, request.timeout.ms %v)", o.FetchMaxWait, o.RequestTimeout)
	case o.FetchMinBytes < 0:
		return fmt.Errorf("fetch.min.bytes %d < 0", o.FetchMinBytes)
	case o.FetchMaxBytes <= 0 || o.MaxPartitionFetchBytes <= 0:
		return fmt.Errorf("fetch.max.bytes %d and max.partition.fetch.bytes %d must be positive", o.FetchMaxBytes, o.MaxPartitionFetchBytes)
	case o.MaxPollRecords < 1:
		return fmt.Errorf("max.poll.records %d < 1", o.MaxPollRecords)
	case o.EnableAutoCommit && o.AutoCommitInterval <= 0:
		return fmt.Errorf("auto.commit.interval.ms %v <= 0", o.AutoCommitInterval)
	case o.EnableAutoCommit && o.GroupID == "":
		return errors.New("enable.auto.commit requires group.id")
	case o.DefaultAPITimeout <= 0:
		return fmt.Errorf("default.api.timeout.ms %v <= 0", o.DefaultAPITimeout)
	case o.GroupID != "" && (o.HeartbeatInterval <= 0 || o.HeartbeatInterval >= o.SessionTimeout):
		return fmt.Errorf("heartbeat.interval.ms %v must be in (0, session.timeout.ms %v)", o.HeartbeatInterval, o.SessionTimeout)
	case o.GroupID != "" && o.MaxPollInterval <= 0:
		return fmt.Errorf("max.poll.interval.ms %v <= 0", o.MaxPollInterval)
	case o.GroupProtocol != GroupProtocolClassic && o.GroupProtocol != GroupProtocolConsumer:
		return fmt.Errorf("group.protocol %q unknown: %s or %s", o.GroupProtocol, GroupProtocolClassic, GroupProtocolConsumer)
	case o.GroupRemoteAssignor != "" && o.GroupProtocol != GroupProtocolConsumer:
		return fmt.Errorf("group.remote.assignor %q needs group.protocol=%s", o.GroupRemoteAssignor, GroupProtocolConsumer)
	}
	return nil
}

// Versions are the APIs and versions this package's code can fill in: the
// ceiling a client negotiates down from. Produce and Fetch stop before
// their topic-id-only versions; Fetch v12 carries LastFetchedEpoch.
var Versions = wire.NewVersions(
	wire.Range{Key: 0, Min: 3, Max: 12}, // Produce
	wire.Range{Key: 1, Min: 4, Max: 12}, // Fetch
	wire.Range{Key: 2, Min: 1, Max: 8},  // ListOffsets
	wire.Range{Key: 3, Min: 1, Max: 12}, // Metadata
	wire.Range{Key: 8, Min: 2, Max: 9},  // OffsetCommit
	wire.Range{Key: 9, Min: 1, Max: 9},  // OffsetFetch
	wire.Range{Key: 10, Min: 1, Max: 4}, // FindCoordinator
	wire.Range{Key: 11, Min: 4, Max: 9}, // JoinGroup (v4+: MEMBER_ID_REQUIRED, KIP-394)
	wire.Range{Key: 12, Min: 1, Max: 4}, // Heartbeat
	wire.Range{Key: 13, Min: 1, Max: 5}, // LeaveGroup
	wire.Range{Key: 14, Min: 1, Max: 5}, // SyncGroup
	wire.Range{Key: 18, Min: 0, Max: 3}, // ApiVersions
	wire.Range{Key: 22, Min: 0, Max: 4}, // InitProducerId
	wire.Range{Key: 24, Min: 0, Max: 3}, // AddPartitionsToTxn (v4+ is for brokers)
	wire.Range{Key: 25, Min: 0, Max: 4}, // AddOffsetsToTxn
	wire.Range{Key: 26, Min: 0, Max: 5}, // EndTxn (v5: the answer carries the next epoch, KIP-890)
	wire.Range{Key: 28, Min: 3, Max: 5}, // TxnOffsetCommit (v3+: generation and member, KIP-447)
	wire.Range{Key: 68, Min: 1, Max: 1}, // ConsumerGroupHeartbeat (v1: the member makes its id)
)
