package sink

import (
	"errors"
	"fmt"
	"github.com/kafkasim/kafkasim/internal/invariant"
)

// Errors a call can end with, wrapped in a *CallError. Each is definite
// (the request certainly did not take effect) or indefinite (it may have).
var (
	// ErrNotSent (definite): the request never left this process — no
	// connection could be made before its timeout, the client's queue was
	// full, or the client was closed.
	ErrNotSent = errors.New("not sent")
	// ErrInvalid (definite): the request broke a protocol limit or rule
	// (an empty or oversized key, a key put twice, too many puts, ...).
	ErrInvalid = errors.New("invalid request")
	// ErrConditionFailed (definite): a condition of the write did not hold;
	// nothing was written. The *ConditionError says which and why.
	ErrConditionFailed = errors.New("condition failed")
	// ErrStorage (definite): the server's disk refused the write (a failed
	// append or sync); the server rolled it back.
	ErrStorage = errors.New("storage failed; write rolled back")
	// ErrUnavailable (definite): the server is not serving (still
	// recovering its state, or halted on an unrecoverable disk).
	ErrUnavailable = errors.New("store unavailable")

	// ErrDisconnected (indefinite): the connection closed after the request
	// was sent and before its answer came.
	ErrDisconnected = errors.New("disconnected")
	// ErrTimeout (indefinite): the request was sent and no answer came in
	// time; the connection was closed.
	ErrTimeout = errors.New("request timed out")
	// ErrBadResponse (indefinite): an answer did not parse or answered no
	// request; the connection was closed.
	ErrBadResponse = errors.New("malformed response")
)

// CallError is the failure of one client call.
type CallError struct {
	Op   string // "write", "get" or "scan"
	Addr string
	Err  error
}

func (e *CallError) Error() string { return fmt.Sprintf("sink %s to %s: %v", e.Op, e.Addr, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// ConditionError names the condition of a write that did not hold.
type ConditionError struct {
	Index     int       // position in the write's conditions
	Condition Condition // the condition as sent
	// Version is the key's version when the write was judged (0: absent).
	Version uint64
}

func (e *ConditionError) Error() string {
	switch e.Condition.Kind {
	case VersionIs:
		return fmt.Sprintf("condition %d failed: key %q has version %d, want %d", e.Index, e.Condition.Key, e.Version, e.Condition.Version)
	default:
		if e.Version == 0 {
			return fmt.Sprintf("condition %d failed: key %q is absent, want value %q", e.Index, e.Condition.Key, e.Condition.Value)
		}
		return fmt.Sprintf("condition %d failed: key %q (version %d) does not hold value %q", e.Index, e.Condition.Key, e.Version, e.Condition.Value)
	}
}

func (e *ConditionError) Unwrap() error { return ErrConditionFailed }

// Indefinite reports whether err leaves it unknown whether the request took
// effect: the caller must read the store to find out (a consumer re-reads
// its stored offsets).
func Indefinite(err error) bool {
	return errors.Is(err, ErrDisconnected) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrBadResponse)
}

// Definite reports whether err is a failure that certainly did not take
// effect.
func Definite(err error) bool { return err != nil && !Indefinite(err) }

// assert panics with the invariant's name when cond is false: a broken
// invariant is a bug, and the simulator turns the panic into a failure
// with the seed.
func assert(cond bool, format string, args ...any) {
	if !cond {
		invariant.Fail("sink", format, args...)
	}
}
