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
// leader-epoch and high-watermark checkpoints. Reading changes nothing on
// the disk, so the replica agreement check can look at brokers that are
// still running.
type Dump struct {
	Batches []DumpedBatch
	// Epochs is the leader-epoch checkpoint (nil if there is none).
	Epochs []EpochEntry
	// HighWatermark is the checkpointed high watermark, -1 if none.
	HighWatermark int64
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
	return readDump(d, topic, partition, true, nil)
}

// ScanDump is ReadDump without checking each batch's checksum (it still
// stops at a batch that does not parse or lies out of place): for looking
// often at a running replica, where a flipped bit is the final read's to
// find.
func ScanDump(d Files, topic string, partition int32) (Dump, error) {
	return readDump(d, topic, partition, false, nil)
}

// ScanDumpReusing is ScanDump writing its batches into reuse's array (its
// earlier contents are gone): for a reader that samples often and keeps
// only what it copies out.
func ScanDumpReusing(d Files, topic string, partition int32, reuse []DumpedBatch) (Dump, error) {
	return readDump(d, topic, partition, false, reuse[:0])
}

func readDump(d Files, topic string, partition int32, verify bool, batches []DumpedBatch) (Dump, error) {
	dir := Dir(topic, partition)
	out := Dump{HighWatermark: -1, Batches: batches}
	var bases []int64
	for _, n := range d.List(dir + "/") {
		if base, ok := parseSegmentName(dir, n); ok {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	next := int64(0)
	for _, base := range bases {
		data, err := d.ReadFile(logName(dir, base))
		if err != nil {
			return out, err
		}
		for rest := data; len(rest) > 0; {
			var b record.Batch
			if b, rest, err = record.Next(rest); err != nil {
				break
			}
			if verify {
				if cerr := b.VerifyCRC(); cerr != nil {
					err = cerr
					break
				}
			}
			if b.BaseOffset() < next || b.LastOffset() < b.BaseOffset() {
				// The base offset is outside the CRC: a flipped bit there
				// reads as a batch out of place.
				err = fmt.Errorf("batch [%d..%d] out of order after offset %d", b.BaseOffset(), b.LastOffset(), next)
				break
			}
			next = b.NextOffset()
			out.Batches = append(out.Batches, DumpedBatch{BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset(),
				LeaderEpoch: b.PartitionLeaderEpoch(), CRC: b.CRC(), ProducerID: b.ProducerID(), ProducerEpoch: b.ProducerEpoch(),
				BaseSequence: b.BaseSequence(), Control: b.IsControl()})
		}
		if err != nil {
			out.Stopped = logName(dir, base) + ": " + err.Error()
			break
		}
	}
	if lines, ok, err := readCheckpoint(d, dir+"/"+epochCheckpointFile); err == nil && ok {
		if c, err := parseEpochLines(lines); err == nil {
			out.Epochs = c.entries
		}
	}
	if lines, ok, err := readCheckpoint(d, dir+"/"+hwCheckpointFile); err == nil && ok && len(lines) == 1 {
		if v, err := strconv.ParseInt(strings.TrimSpace(lines[0]), 10, 64); err == nil {
			out.HighWatermark = v
		}
	}
	return out, nil
}
