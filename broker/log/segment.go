package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/broker/record"
)

// batchEntry is the in-memory index entry of one batch: where it is, and
// the header fields that producer state, transactions and the epoch cache
// are rebuilt from, so that truncation never rereads the disk.
type batchEntry struct {
	base, last       int64
	position         int64 // in the segment file
	size             int32
	leaderEpoch      int32
	maxTimestamp     int64 // the batch header's, for lookups by timestamp
	producerID       int64
	producerEpoch    int16
	baseSequence     int32
	lastSequence     int32
	flags            uint8
	coordinatorEpoch int32 // of a marker
	// txnFirstOffset is, for a marker that closed a transaction, the
	// transaction's first offset, else -1. The last stable offset needs it
	// while the marker is above the high watermark.
	txnFirstOffset int64
}

const (
	flagTransactional uint8 = 1 << iota
	flagControl
	flagCommit
)

func (e *batchEntry) transactional() bool { return e.flags&flagTransactional != 0 }
func (e *batchEntry) control() bool       { return e.flags&flagControl != 0 }
func (e *batchEntry) commit() bool        { return e.flags&flagCommit != 0 }

// newEntry indexes a batch that passed its checks (a control batch's marker
// decodes).
func newEntry(b record.Batch, position int64) batchEntry {
	e := batchEntry{
		base:           b.BaseOffset(),
		last:           b.LastOffset(),
		position:       position,
		size:           int32(b.Size()),
		leaderEpoch:    b.PartitionLeaderEpoch(),
		maxTimestamp:   b.MaxTimestamp(),
		producerID:     b.ProducerID(),
		producerEpoch:  b.ProducerEpoch(),
		baseSequence:   b.BaseSequence(),
		lastSequence:   b.LastSequence(),
		txnFirstOffset: -1,
	}
	if b.IsTransactional() {
		e.flags |= flagTransactional
	}
	if b.IsControl() {
		e.flags |= flagControl
		m, err := b.EndTxnMarker()
		if !(err == nil) {
			fail("indexing a control batch at %d whose marker does not decode: %v", e.base, err)
		}
		e.coordinatorEpoch = m.CoordinatorEpoch
		if m.Commit() {
			e.flags |= flagCommit
		}
	}
	return e
}

// segment is one "<base>.log" file and its in-memory index.
type segment struct {
	base                      int64
	logFile, hdrFile, txnFile string
	size                      int64
	batches                   []batchEntry
	// dirty: written since the last successful sync (or not known synced).
	dirty    bool
	txnDirty bool
	txnStale bool // an append to the .txnindex failed: rewrite it whole
	// memo is what Open's scan left beside the segment's files (a disk
	// with env.Memos), or nil.
	memo *scanMemo
}

func newSegment(dir string, base int64) *segment {
	return &segment{base: base, logFile: logName(dir, base), hdrFile: hdrName(dir, base), txnFile: txnIdxName(dir, base)}
}

func (s *segment) nextOffset() int64 {
	if len(s.batches) == 0 {
		return s.base
	}
	return s.batches[len(s.batches)-1].last + 1
}

// find returns the index of the first batch whose last offset is ≥ offset.
func (s *segment) find(offset int64) int {
	lo, hi := 0, len(s.batches)
	for lo < hi {
		m := (lo + hi) / 2
		if s.batches[m].last < offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

const segmentNameDigits = 20

func segmentPrefix(dir string, base int64) string { return segmentName(dir, base, "") }

// segmentName is segmentPrefix(dir, base) + suffix, made in one allocation.
func segmentName(dir string, base int64, suffix string) string {
	if base < 0 {
		return fmt.Sprintf("%s/%0*d", dir, segmentNameDigits, base) + suffix
	}
	// As Sprintf("%s/%0*d") without fmt: names are made on every read.
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], base, 10)
	b := make([]byte, 0, len(dir)+1+max(segmentNameDigits, len(d))+len(suffix))
	b = append(append(b, dir...), '/')
	for range segmentNameDigits - len(d) {
		b = append(b, '0')
	}
	return string(append(append(b, d...), suffix...))
}

func logName(dir string, base int64) string    { return segmentName(dir, base, ".log") }
func hdrName(dir string, base int64) string    { return segmentName(dir, base, ".hdrcrc") }
func txnIdxName(dir string, base int64) string { return segmentName(dir, base, ".txnindex") }

// parseSegmentName returns the base offset of a "<dir>/<20 digits>.log".
func parseSegmentName(dir, name string) (int64, bool) {
	return parseSegmentFile(dir, name, ".log")
}

// parseSidecarName returns the base offset of a segment's ".hdrcrc" or
// ".txnindex".
func parseSidecarName(dir, name string) (int64, bool) {
	if base, ok := parseSegmentFile(dir, name, ".hdrcrc"); ok {
		return base, true
	}
	return parseSegmentFile(dir, name, ".txnindex")
}

func parseSegmentFile(dir, name, suffix string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, dir+"/")
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(rest, suffix)
	if !ok || len(digits) != segmentNameDigits {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// Header checksums: 8 bytes per batch in a segment's ".hdrcrc": the CRC-32C
// of the batch's first 21 bytes (what Kafka's own CRC does not cover), then
// a CRC-32C of those 4 bytes, so a flipped bit in the sidecar is told apart
// from one in the batch.
const hdrEntrySize = 8

const hdrCovered = 21 // base offset, length, leader epoch, magic, crc

func appendHdrEntry(dst []byte, b record.Batch) []byte {
	var e [hdrEntrySize]byte
	binary.BigEndian.PutUint32(e[0:], crc32.Checksum(b[:hdrCovered], castagnoli))
	binary.BigEndian.PutUint32(e[4:], crc32.Checksum(e[0:4], castagnoli))
	return append(dst, e[:]...)
}

// hdrVerdict is what a sidecar entry says about a batch.
type hdrVerdict int

const (
	hdrMatch    hdrVerdict = iota
	hdrMismatch            // the batch header is corrupt
	hdrMissing             // no entry: the batch was never synced with it
	hdrUnusable            // the entry itself is corrupt: trust the batch's CRC
)

func checkHdrEntry(sidecar []byte, i int, b record.Batch) hdrVerdict {
	off := i * hdrEntrySize
	if off+hdrEntrySize > len(sidecar) {
		return hdrMissing
	}
	e := sidecar[off : off+hdrEntrySize]
	if binary.BigEndian.Uint32(e[4:]) != crc32.Checksum(e[0:4], castagnoli) {
		return hdrUnusable
	}
	if binary.BigEndian.Uint32(e[0:]) != crc32.Checksum(b[:hdrCovered], castagnoli) {
		return hdrMismatch
	}
	return hdrMatch
}

// Aborted-transaction index entries, Kafka's .txnindex layout: version
// int16, producer id, first offset, last offset, last stable offset.
const txnEntrySize = 34

func appendTxnEntry(dst []byte, t AbortedTxn) []byte {
	var e [txnEntrySize]byte
	binary.BigEndian.PutUint16(e[0:], 0)
	binary.BigEndian.PutUint64(e[2:], uint64(t.ProducerID))
	binary.BigEndian.PutUint64(e[10:], uint64(t.FirstOffset))
	binary.BigEndian.PutUint64(e[18:], uint64(t.LastOffset))
	binary.BigEndian.PutUint64(e[26:], uint64(t.LastStableOffset))
	return append(dst, e[:]...)
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
