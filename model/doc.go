// Package model holds the porcupine models of kafkasim's histories: the
// partition log and committed consumer offsets, each partitioned (by
// topic-partition; by group and topic-partition).
//
// Partition log. State is a persistent list of entries (offset, value,
// read_committed visibility) whose nodes carry the entry count and two
// running hashes, so Equal and Hash are O(1) and an append shares the older
// log. An append of a batch returns its base offset, which must be at or
// after the log end (offsets of transaction markers leave gaps). A read from
// an offset returns, in order, exactly the entries from there up to its last
// record that its isolation level requires — read_uncommitted every entry,
// read_committed every entry not written by an aborted or undecided
// transaction — never an entry of an aborted transaction at
// read_committed, and nothing that is not in the log. A read may stop early
// or return nothing.
//
// Indefinite appends are resolved before porcupine runs (Logs): a send with
// outcome info, or ok without an offset, that a read observed is pinned to
// the observed offset (and, if indefinite, may take effect any time after
// its call); one nobody observed is dropped, which is always at least as
// legal as any placement. Failed sends are left out: they did not happen.
// Without this, porcupine's search explodes on indefinite operations. Logs
// also chains the appends in offset order (LogInput.After: the log end each
// must find), which any linearization obeys anyway; it spares porcupine
// backtracking over the gaps transaction markers leave, which is
// exponential. Log.Unchained removes the chain, and a test holds the two to
// the same verdicts.
//
// Resolve lays that resolution out flat for the checkers: every value and
// record in one array, each partition's offsets numbered (Cells), its
// appends sorted by offset, and each record matched once with the value
// written at its offset, so the checkers read a history of a million
// operations without copying a value or hashing an offset. Logs builds
// porcupine's operations from it.
//
// Committed offsets: a register per group and partition starting at
// NoOffset; commits (and committed transactions' offsets) write it, offset
// fetches read it.
//
// Porcupine is exponential in overlapping operations and quadratic in a
// partition's length; every check here takes a timeout, and Unknown means
// inconclusive, never a pass. package checkers holds an O(n log n) checker
// deciding the same question for partition logs.
package model
