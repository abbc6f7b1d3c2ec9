package log

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/broker/record"
)

// Dump is a replica's log as a tool reads it off the disk, as Kafka's
// kafka-dump-log.sh does: every batch of every segment in offset order, up
// to the first that does not parse or fails its checksum, and the
// leader-epoch, high-watermark and log-start-offset checkpoints. Reading
// changes nothing on the disk, so the replica agreement check can look at
// brokers that are still running.
//
// Batches are what the segment files hold, from the first segment's base
// (which need not be 0), batches below the log start offset included, as
// kafka-dump-log prints them: a log whose start moved holds batches that
// are no longer served.
type Dump struct {
	Batches []DumpedBatch
	// Epochs is the leader-epoch checkpoint (nil if there is none).
	Epochs []EpochEntry
	// HighWatermark is the checkpointed high watermark, -1 if none. It is
	// the file as written: after the log start moved past it, it lies
	// below LogStartOffset until the replica checkpoints again.
	HighWatermark int64
	// LogStartOffset is the log-start-offset checkpoint, -1 if none (the
	// log then starts at its first segment's base, or 0).
	LogStartOffset int64
	// Stopped says why reading ended before a segment's end ("" when
	// every segment was read to its end): a torn tail, a corrupt batch.
	Stopped string
}

// DumpedBatch is a batch's header as kafka-dump-log prints it: where it
// lies, who wrote it, and its checksum (which covers everything after the
// leader epoch, so two batches with one CRC hold the same records).
type DumpedBatch struct {
	BaseOffset, LastOffset int64
	LeaderEpoch            int32
	CRC                    uint32
	ProducerID             int64
	ProducerEpoch          int16
	// BaseSequence is the producer's sequence of the first record
	// (record.NoSequence when the producer is not idempotent).
	BaseSequence int32
	Control      bool
}

// Files is what ReadDump reads: a disk's file names and contents. An
// env.Disk is one; so is a harness's onlooker view of a running node's
// disk, which reads without counting or faulting.
type Files interface {
	List(prefix string) []string
	ReadFile(name string) ([]byte, error)
}

// ReadDump reads the log of topic/partition from d. A partition the disk
// has no directory for has an empty Dump; an error is the disk's.
func ReadDump(d Files, topic string, partition int32) (Dump, error) {
	return readDump(d, topic, partition, true)
}

// ScanDump is ReadDump without checking each batch's checksum (it still
// stops at a batch that does not parse or lies out of place): for looking
// often at a running replica, where a flipped bit is the final read's to
// find.
func ScanDump(d Files, topic string, partition int32) (Dump, error) {
	return readDump(d, topic, partition, false)
}

func readDump(d Files, topic string, partition int32, verify bool) (Dump, error) {
	dir := Dir(topic, partition)
	out := Dump{HighWatermark: -1, LogStartOffset: -1}
	next := int64(0)
	for _, base := range segmentBases(d, dir) {
		data, err := d.ReadFile(logName(dir, base))
		if err != nil {
			return out, err
		}
		out.Batches, _, next, err = scanSegment(data, 0, next, verify, out.Batches)
		if err != nil {
			out.Stopped = logName(dir, base) + ": " + err.Error()
			break
		}
	}
	readDumpCheckpoints(d, dir, &out)
	return out, nil
}

// segmentBases lists the base offsets of dir's segments, in order.
func segmentBases(d Files, dir string) []int64 {
	var bases []int64
	for _, n := range d.List(dir + "/") {
		if base, ok := parseSegmentName(dir, n); ok {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	return bases
}

// scanSegment reads one segment's batches from byte pos on, appending them
// to into, the first no lower than next. It returns where it stopped (the
// byte after the last batch it took), the offset after that batch, and why
// it stopped before the end (nil when it reached it).
func scanSegment(data []byte, pos int, next int64, verify bool, into []DumpedBatch) ([]DumpedBatch, int, int64, error) {
	for pos < len(data) {
		b, _, err := record.Next(data[pos:])
		if err != nil {
			return into, pos, next, err
		}
		if verify {
			if err := b.VerifyCRC(); err != nil {
				return into, pos, next, err
			}
		}
		if b.BaseOffset() < next || b.LastOffset() < b.BaseOffset() {
			// The base offset is outside the CRC: a flipped bit there
			// reads as a batch out of place.
			return into, pos, next, fmt.Errorf("batch [%d..%d] out of order after offset %d", b.BaseOffset(), b.LastOffset(), next)
		}
		next = b.NextOffset()
		into = append(into, DumpedBatch{BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset(),
			LeaderEpoch: b.PartitionLeaderEpoch(), CRC: b.CRC(), ProducerID: b.ProducerID(), ProducerEpoch: b.ProducerEpoch(),
			BaseSequence: b.BaseSequence(), Control: b.IsControl()})
		pos += b.Size()
	}
	return into, pos, next, nil
}

// readDumpCheckpoints fills the dump's leader epochs, high watermark and
// log start offset from their checkpoint files, leaving them unset where a
// file is missing or does not parse.
func readDumpCheckpoints(d Files, dir string, out *Dump) {
	out.Epochs = readDumpEpochs(d, dir+"/"+epochCheckpointFile)
	out.HighWatermark = readDumpOffset(d, dir+"/"+hwCheckpointFile, false)
	out.LogStartOffset = readDumpOffset(d, dir+"/"+logStartCheckpointFile, true)
}

// readDumpEpochs is a dump's epoch cache: the entries of the checkpoint
// file name, or nil if it is missing or unreadable.
func readDumpEpochs(d Files, name string) []EpochEntry {
	if lines, ok, err := readCheckpoint(d, name); err == nil && ok {
		if c, err := parseEpochLines(lines); err == nil {
			return c.entries
		}
	}
	return nil
}

// readDumpOffset is the offset a one-line checkpoint file holds, or -1 if
// it is missing or unreadable (or, with nonNegative, negative).
func readDumpOffset(d Files, name string, nonNegative bool) int64 {
	if lines, ok, err := readCheckpoint(d, name); err == nil && ok && len(lines) == 1 {
		if v, err := strconv.ParseInt(strings.TrimSpace(lines[0]), 10, 64); err == nil && (v >= 0 || !nonNegative) {
			return v
		}
	}
	return -1
}
