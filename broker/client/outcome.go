package client

import (
	"errors"
	"fmt"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Outcome is what is known about an operation once it has ended, in the
// vocabulary of histories: ok, fail, info.
type Outcome uint8

const (
	// OK: it happened.
	OK Outcome = iota + 1
	// Fail: it certainly did not happen.
	Fail
	// Info: it may or may not have happened.
	Info
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Fail:
		return "fail"
	case Info:
		return "info"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Error is a failed operation together with what is known of its effect:
// Outcome is Fail when it certainly did not happen and Info when it may
// have. Err is the cause: a *kerr.Error from the broker, an rpc error, or
// one of this package's errors.
type Error struct {
	Outcome Outcome
	Err     error
}

func (e *Error) Error() string { return fmt.Sprintf("%v (%v)", e.Err, e.Outcome) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// OutcomeOf classifies an operation's error: nil is OK, an *Error says
// which, and anything else is Info — an effect that is not known not to
// have happened is never reported as a failure.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Outcome
	}
	return Info
}

func failed(err error) error       { return &Error{Outcome: Fail, Err: err} }
func indefinitely(err error) error { return &Error{Outcome: Info, Err: err} }

// outcomeErr wraps err as Info if the operation may have taken effect,
// else as Fail.
func outcomeErr(maybe bool, err error) error {
	if maybe {
		return indefinitely(err)
	}
	return failed(err)
}

// Errors of this package (the cause inside an *Error, or returned as is
// where no outcome is involved).
var (
	// ErrDeliveryTimeout: delivery.timeout.ms passed before the record was
	// acknowledged.
	ErrDeliveryTimeout = errors.New("delivery timeout")
	// ErrProducerClosed: the producer was closed before the record was
	// acknowledged.
	ErrProducerClosed = errors.New("producer closed")
	// ErrBufferFull: buffer.memory is taken by records not yet completed
	// (Kafka's send blocks for max.block.ms; an event-driven producer
	// refuses at once).
	ErrBufferFull = errors.New("buffer.memory exhausted")
	// ErrRecordTooLarge: the record is larger than max.request.size or
	// buffer.memory.
	ErrRecordTooLarge = errors.New("record too large")
	// ErrUnknownPartition: the record names a partition its topic does not
	// have.
	ErrUnknownPartition = errors.New("unknown partition")
	// ErrConsumerClosed: the consumer was closed.
	ErrConsumerClosed = errors.New("consumer closed")
	// ErrPollInProgress: Poll was called while an earlier Poll had not
	// completed; polls are sequential.
	ErrPollInProgress = errors.New("poll in progress")
	// ErrNoGroup: an offset commit or fetch from a consumer without
	// group.id.
	ErrNoGroup = errors.New("no group.id")
	// ErrNotAssigned: the partition is not assigned to this consumer.
	ErrNotAssigned = errors.New("partition not assigned")
	// ErrNoOffset: a partition has no valid position and
	// auto.offset.reset is none (Kafka's NoOffsetForPartitionException and
	// OffsetOutOfRangeException). Seek to go on.
	ErrNoOffset = errors.New("no offset and auto.offset.reset is none")
	// ErrLogTruncation: the partition's log was truncated below the
	// consumer's position (KIP-320) and auto.offset.reset is none. Seek to
	// go on.
	ErrLogTruncation = errors.New("log truncation detected")
	// ErrCorruptRecord: a fetched batch failed its CRC (check.crcs).
	ErrCorruptRecord = errors.New("corrupt record batch")
	// ErrNotTransactional: a transactional call on a producer without a
	// transactional.id.
	ErrNotTransactional = errors.New("producer has no transactional.id")
	// ErrTransactionState: a transactional call in a state that does not
	// allow it (Kafka's IllegalStateException).
	ErrTransactionState = errors.New("illegal transaction state")
	// ErrTransactionAborted: the record's transaction was aborted before
	// the record was sent.
	ErrTransactionAborted = errors.New("transaction aborted")
	// ErrMaxBlock: max.block.ms passed before a transactional call
	// finished.
	ErrMaxBlock = errors.New("max.block.ms passed")
	// ErrNotSubscribed: a group call on a consumer that has not
	// subscribed, or a mix of Assign and Subscribe.
	ErrNotSubscribed = errors.New("not subscribed")
	// ErrCommitFailed: an offset commit of a group member that is not in a
	// stable generation (Kafka's CommitFailedException and
	// RebalanceInProgressException): the partitions may have moved.
	ErrCommitFailed = errors.New("commit failed: the member is not in a stable generation")
)

// PartitionError names the partition an error is about.
type PartitionError struct {
	TopicPartition
	Offset int64 // the position concerned, or -1
	Err    error
}

func (e *PartitionError) Error() string {
	return fmt.Sprintf("%v at offset %d: %v", e.TopicPartition, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *PartitionError) Unwrap() error { return e.Err }

// produceIndefinite reports whether a produce error code leaves it unknown
// whether the batch was appended. Only codes a leader returns before it
// appends are definite; anything else, unknown codes included, may follow
// an append (KAFKA.md §3: NOT_LEADER_OR_FOLLOWER can be returned for a
// write that was in fact appended, NOT_ENOUGH_REPLICAS_AFTER_APPEND and
// REQUEST_TIMED_OUT come after one).
func produceIndefinite(code int16) bool {
	switch code {
	case kerr.UnknownTopicOrPartition.Code,
		kerr.LeaderNotAvailable.Code,
		kerr.NotEnoughReplicas.Code,
		kerr.CorruptMessage.Code,
		kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code,
		kerr.InvalidRecord.Code,
		kerr.InvalidRequiredAcks.Code,
		kerr.InvalidTimestamp.Code,
		kerr.InvalidTopicException.Code,
		kerr.UnsupportedForMessageFormat.Code,
		kerr.UnsupportedCompressionType.Code,
		kerr.UnsupportedVersion.Code,
		kerr.OutOfOrderSequenceNumber.Code,
		kerr.UnknownProducerID.Code,
		kerr.InvalidProducerEpoch.Code,
		kerr.ProducerFenced.Code,
		kerr.InvalidProducerIDMapping.Code,
		kerr.InvalidTxnState.Code,
		kerr.TransactionalIDAuthorizationFailed.Code,
		kerr.TopicAuthorizationFailed.Code,
		kerr.ClusterAuthorizationFailed.Code,
		kerr.FencedLeaderEpoch.Code,
		kerr.UnknownLeaderEpoch.Code:
		return false
	}
	return true
}

// invalidMetadata reports codes that mean the client's view of the
// partition's leadership is stale (Kafka's InvalidMetadataException).
func invalidMetadata(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code,
		kerr.LeaderNotAvailable.Code,
		kerr.UnknownTopicOrPartition.Code,
		kerr.KafkaStorageError.Code,
		kerr.FencedLeaderEpoch.Code,
		kerr.UnknownLeaderEpoch.Code,
		kerr.ReplicaNotAvailable.Code:
		return true
	}
	return false
}

// callIndefinite reports whether an rpc failure leaves the request's fate
// unknown: it was sent and no answer came.
func callIndefinite(err error) bool { return rpc.Indefinite(err) }

// codeErr turns a Kafka error code into an error.
func codeErr(code int16) error {
	if err := kerr.ErrorForCode(code); err != nil {
		return err
	}
	return nil
}

func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return false
}
