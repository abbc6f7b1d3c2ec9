package record

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a decoding or validation failure. It unwraps to the Kafka error a
// broker answers a producer with, so errors.Is(err, kerr.CorruptMessage) and
// errors.As(err, **kerr.Error) both work on anything this package returns.
type Error struct {
	msg   string
	kafka *kerr.Error
}

func (e *Error) Error() string { return "record: " + e.msg }

// Unwrap returns the Kafka error code the failure maps to.
func (e *Error) Unwrap() error { return e.kafka }

// The package's errors. Wrapped errors carry detail; compare with errors.Is.
var (
	// ErrTruncated: the input ends inside a batch (a short read, a torn
	// write, a fetch response cut at its byte limit).
	ErrTruncated = &Error{"truncated batch", kerr.CorruptMessage}
	// ErrCorrupt: lengths, varints or counts that cannot be right.
	ErrCorrupt = &Error{"corrupt batch", kerr.CorruptMessage}
	// ErrChecksum: the CRC-32C does not match the bytes it covers.
	ErrChecksum = &Error{"checksum mismatch", kerr.CorruptMessage}
	// ErrMagic: a batch whose magic byte is not 2 (message formats v0 and v1
	// are not supported).
	ErrMagic = &Error{"unsupported magic", kerr.UnsupportedForMessageFormat}
	// ErrUnsupportedCompression: a codec this package cannot decompress.
	ErrUnsupportedCompression = &Error{"unsupported compression", kerr.UnsupportedCompressionType}
	// ErrInvalid: a well-formed batch that breaks a rule of the format
	// (record count against offset range, offset deltas out of order,
	// a control batch that is not a transaction marker).
	ErrInvalid = &Error{"invalid batch", kerr.InvalidRecord}
)

// detail wraps a package error with a message, keeping errors.Is working.
type detail struct {
	base *Error
	msg  string
}

func (d *detail) Error() string { return d.base.Error() + ": " + d.msg }
func (d *detail) Unwrap() error { return d.base }

func errorf(base *Error, format string, args ...any) error {
	return &detail{base, fmt.Sprintf(format, args...)}
}
