package log

import (
	"fmt"
	"github.com/kafkasim/kafkasim/internal/invariant"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors the broker maps to Kafka error codes. Each is the kerr value
// itself, so errors.Is(err, ErrX) and errors.As(err, **kerr.Error) work on
// every wrapped error this package returns.
var (
	// ErrOffsetOutOfRange: a read below the log start or past the log end.
	ErrOffsetOutOfRange error = kerr.OffsetOutOfRange
	// ErrCorruptMessage: a batch that fails its checks, on append or read.
	ErrCorruptMessage error = kerr.CorruptMessage
	// ErrInvalidRecord: a well-formed batch the log refuses (a control batch
	// from a client, a bad record count).
	ErrInvalidRecord error = kerr.InvalidRecord
	// ErrMessageTooLarge: a batch above Config.MessageBytesMax.
	ErrMessageTooLarge error = kerr.MessageTooLarge
	// ErrOutOfOrderSequence: an idempotent batch whose first sequence does
	// not follow the producer's last one.
	ErrOutOfOrderSequence error = kerr.OutOfOrderSequenceNumber
	// ErrInvalidProducerEpoch: a batch or marker from an older producer
	// epoch — a fenced zombie.
	ErrInvalidProducerEpoch error = kerr.InvalidProducerEpoch
	// ErrUnknownProducerID: a producer the log has no state for, writing at
	// a sequence other than 0, when Config.KIP360ProducerIDRecovery is off.
	ErrUnknownProducerID error = kerr.UnknownProducerID
	// ErrInvalidTxnState: a non-transactional batch from a producer with a
	// transaction open in this partition.
	ErrInvalidTxnState error = kerr.InvalidTxnState
	// ErrTransactionCoordinatorFenced: a marker from an older coordinator
	// epoch than the last marker of the producer.
	ErrTransactionCoordinatorFenced error = kerr.TransactionCoordinatorFenced
	// ErrFencedLeaderEpoch: a leader append stamped with an epoch older than
	// the log's latest.
	ErrFencedLeaderEpoch error = kerr.FencedLeaderEpoch
	// ErrKafkaStorage: the disk failed (the wrapped error also matches
	// env.ErrIO where the disk said so).
	ErrKafkaStorage error = kerr.KafkaStorageError
	// ErrUnexpectedAppendOffset: a follower append that does not start at
	// the log end offset or is not contiguous. Not a Kafka wire error: the
	// replica fetcher has lost track of its position.
	ErrUnexpectedAppendOffset = fmt.Errorf("log: unexpected append offset")
)

// CorruptionError reports a batch that failed its checks on read. It
// unwraps to ErrCorruptMessage. A replica that gets one must not serve the
// batch; it can truncate to Offset and fetch again.
type CorruptionError struct {
	Partition string
	Offset    int64 // base offset of the batch, as the index knows it
	Reason    string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("log %s: corrupt batch at offset %d: %s", e.Partition, e.Offset, e.Reason)
}

// Unwrap returns ErrCorruptMessage.
func (e *CorruptionError) Unwrap() error { return ErrCorruptMessage }

// fail panics with the broken invariant's name. Broken invariants are bugs,
// not operating errors: the simulator turns the panic into a failure with
// its seed. Callers guard it with an if, so that hot paths do not box the
// arguments of an assertion that holds.
func fail(format string, args ...any) { invariant.Fail("log", format, args...) }
