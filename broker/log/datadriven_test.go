package log_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim/disk"
)

// TestTranscripts runs testdata/*.txt: scripted stories of one replica's
// log through appends, crashes, power losses and truncations. Rewrite the
// expected output with -rewrite.
//
// Commands:
//
//	open [segment-bytes=N] [flush=N] [kip360=false]   (re)open the log: a process restart
//	append epoch=E values=(a,b) [pid=P pepoch=X seq=S] [txn]
//	marker pid=P pepoch=X type=commit|abort [coord=N] epoch=E
//	follower values=(a,b) epoch=E                      append a batch as the leader would have stamped it
//	read from=F [max=M] [limit=L]
//	truncate to=N
//	flush
//	power-loss [torn] [seed=N]                         then open
//	flip file=NAME byte=N                              bit rot
//	assign-epoch epoch=E
//	end-offset-for-epoch epoch=E
//	checkpoint-hw hw=N
//	lso hw=N
//	aborted from=F to=T
//	state
//	increment-start offset=N                           IncrementLogStartOffset (DeleteRecords)
//	delete-segments-below offset=N                     DeleteSegmentsBelow (retention)
//	truncate-fully offset=N                            TruncateFullyAndStartAt (a snapshot installed)
//	first-unstable
//	files                                              the partition's files and sizes
//	dump                                               what ReadDump reads off the disk
func TestTranscripts(t *testing.T) {
	// Only the transcripts: rapid saves its failing cases under
	// testdata/rapid, which are not scripts.
	paths, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) { runTranscript(t, path) })
	}
}

func runTranscript(t *testing.T, path string) {
	d := disk.New()
	cfg := testConfig()
	var l *log.Log
	reopen := func() string {
		var err error
		l, err = openBothWays(t, d, cfg)
		if err != nil {
			return "error: " + err.Error()
		}
		l.CheckConsistency()
		return describeRecovery(l.Recovery())
	}
	datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
		intArg := func(key string, def int64) int64 {
			if !td.HasArg(key) {
				return def
			}
			var v int64
			td.ScanArgs(t, key, &v)
			return v
		}
		values := func() [][]byte {
			a, ok := td.Arg("values")
			if !ok {
				t.Fatalf("%s: values=(...) missing", td.Pos)
			}
			out := make([][]byte, len(a.Vals))
			for i, v := range a.Vals {
				out[i] = []byte(v)
			}
			return out
		}
		out := func() string {
			switch td.Cmd {
			case "open":
				cfg.SegmentBytesMax = intArg("segment-bytes", cfg.SegmentBytesMax)
				cfg.FlushIntervalMessages = intArg("flush", cfg.FlushIntervalMessages)
				if td.HasArg("kip360") {
					td.ScanArgs(t, "kip360", &cfg.KIP360ProducerIDRecovery)
				}
				return reopen()
			case "append":
				h := record.NewHeader()
				h.FirstTimestamp = 1000
				if td.HasArg("pid") {
					h.ProducerID = intArg("pid", -1)
					h.ProducerEpoch = int16(intArg("pepoch", 0))
					h.BaseSequence = int32(intArg("seq", 0))
				}
				if td.HasArg("txn") {
					h.Attributes |= record.AttrTransactional
				}
				vs := values()
				recs := make([]record.Record, len(vs))
				for i, v := range vs {
					recs[i].Value = v
				}
				b, err := record.Encode(h, recs)
				if err != nil {
					return "error: " + err.Error()
				}
				res, err := l.AppendAsLeader(b, int32(intArg("epoch", 0)))
				return describeAppend(res, err)
			case "marker":
				typ := record.ControlCommit
				var s string
				td.ScanArgs(t, "type", &s)
				if s == "abort" {
					typ = record.ControlAbort
				}
				m := record.EndTxnMarker{Type: typ, CoordinatorEpoch: int32(intArg("coord", 0))}
				res, err := l.AppendMarker(intArg("pid", 0), int16(intArg("pepoch", 0)), m, int32(intArg("epoch", 0)), 2000)
				return describeAppend(res, err)
			case "follower":
				b := record.Values(1000, values()...)
				b.SetBaseOffset(l.LogEndOffset())
				b.SetPartitionLeaderEpoch(int32(intArg("epoch", 0)))
				res, err := l.AppendAsFollower(b)
				return describeAppend(res, err)
			case "read":
				data, err := l.Read(intArg("from", 0), int(intArg("max", 1<<20)), intArg("limit", l.LogEndOffset()))
				if err != nil {
					return "error: " + err.Error()
				}
				return describeBatches(data)
			case "truncate":
				end, err := l.TruncateTo(intArg("to", 0))
				if err != nil {
					return "error: " + err.Error()
				}
				l.CheckConsistency()
				return fmt.Sprintf("log end %d", end)
			case "flush":
				if err := l.Flush(); err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("synced below %d", l.RecoveryPoint())
			case "power-loss":
				lost := d.PowerLoss(td.HasArg("torn"), env.NewRand(uint64(intArg("seed", 1))))
				return fmt.Sprintf("lost %d unsynced bytes\n%s", lost, reopen())
			case "flip":
				var name string
				td.ScanArgs(t, "file", &name)
				off := intArg("byte", 0)
				one := make([]byte, 1)
				if _, err := d.ReadAt(name, one, off); err != nil {
					return "error: " + err.Error()
				}
				if err := d.WriteAt(name, []byte{one[0] ^ 0x01}, off); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "assign-epoch":
				if err := l.AssignEpoch(int32(intArg("epoch", 0))); err != nil {
					return "error: " + err.Error()
				}
				return describeEpochs(l.EpochEntries())
			case "end-offset-for-epoch":
				e, o := l.EndOffsetForEpoch(int32(intArg("epoch", 0)))
				return fmt.Sprintf("epoch %d end offset %d", e, o)
			case "checkpoint-hw":
				if err := l.CheckpointHighWatermark(intArg("hw", 0)); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "lso":
				return fmt.Sprintf("last stable offset %d", l.LastStableOffset(intArg("hw", 0)))
			case "aborted":
				var b strings.Builder
				for _, a := range l.AbortedTransactions(intArg("from", 0), intArg("to", 0)) {
					fmt.Fprintf(&b, "producer %d offsets %d..%d (lso %d)\n", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
				}
				if b.Len() == 0 {
					return "none"
				}
				return strings.TrimSuffix(b.String(), "\n")
			case "state":
				return describeState(l)
			case "increment-start":
				if err := l.IncrementLogStartOffset(intArg("offset", 0)); err != nil {
					return "error: " + err.Error()
				}
				l.CheckConsistency()
				return fmt.Sprintf("log start %d", l.LogStartOffset())
			case "delete-segments-below":
				n, err := l.DeleteSegmentsBelow(intArg("offset", 0))
				if err != nil {
					return fmt.Sprintf("deleted %d segments, error: %v", n, err)
				}
				l.CheckConsistency()
				return fmt.Sprintf("deleted %d segments, segments %v", n, l.SegmentBaseOffsets())
			case "truncate-fully":
				if err := l.TruncateFullyAndStartAt(intArg("offset", 0)); err != nil {
					return "error: " + err.Error()
				}
				l.CheckConsistency()
				return fmt.Sprintf("log start %d, log end %d", l.LogStartOffset(), l.LogEndOffset())
			case "first-unstable":
				if fu, ok := l.FirstUnstableOffset(); ok {
					return fmt.Sprintf("first unstable offset %d", fu)
				}
				return "no open transaction"
			case "files":
				var b strings.Builder
				for _, name := range d.List(log.Dir(cfg.Topic, cfg.Partition) + "/") {
					size, _ := d.Size(name)
					fmt.Fprintf(&b, "%s %d\n", name, size)
				}
				if b.Len() == 0 {
					return "no files"
				}
				return strings.TrimSuffix(b.String(), "\n")
			case "dump":
				dump, err := log.ReadDump(d, cfg.Topic, cfg.Partition)
				if err != nil {
					return "error: " + err.Error()
				}
				return describeDump(dump)
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		}()
		return out + "\n"
	})
}

func describeDump(dump log.Dump) string {
	var b strings.Builder
	b.WriteString("batches:")
	for _, bt := range dump.Batches {
		fmt.Fprintf(&b, " %d..%d", bt.BaseOffset, bt.LastOffset)
	}
	if len(dump.Batches) == 0 {
		b.WriteString(" none")
	}
	fmt.Fprintf(&b, "\n%s\nhigh watermark %d, log start %d", describeEpochs(dump.Epochs), dump.HighWatermark, dump.LogStartOffset)
	if dump.Stopped != "" {
		fmt.Fprintf(&b, "\nstopped: %s", dump.Stopped)
	}
	return b.String()
}

func describeAppend(res log.AppendResult, err error) string {
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return "error " + ke.Message
		}
		return "error: " + err.Error()
	}
	if res.Duplicate {
		return fmt.Sprintf("duplicate of offsets %d..%d", res.FirstOffset, res.LastOffset)
	}
	return fmt.Sprintf("offsets %d..%d", res.FirstOffset, res.LastOffset)
}

func describeBatches(data []byte) string {
	if len(data) == 0 {
		return "no batches"
	}
	batches, err := record.Split(data)
	var b strings.Builder
	for _, bt := range batches {
		fmt.Fprintf(&b, "batch %d..%d epoch %d", bt.BaseOffset(), bt.LastOffset(), bt.PartitionLeaderEpoch())
		if bt.HasProducerID() {
			fmt.Fprintf(&b, " producer %d/%d seq %d", bt.ProducerID(), bt.ProducerEpoch(), bt.BaseSequence())
		}
		if bt.IsControl() {
			m, _ := bt.EndTxnMarker()
			fmt.Fprintf(&b, " %s marker\n", m.Type)
			continue
		}
		if bt.IsTransactional() {
			b.WriteString(" txn")
		}
		recs, _ := bt.DecodeRecords()
		b.WriteString(":")
		for _, r := range recs {
			fmt.Fprintf(&b, " %s", r.Value)
		}
		b.WriteString("\n")
	}
	if err != nil {
		fmt.Fprintf(&b, "split error: %v\n", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func describeEpochs(es []log.EpochEntry) string {
	if len(es) == 0 {
		return "epochs: none"
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset)
	}
	return "epochs: " + strings.Join(parts, " ")
}

func describeRecovery(r log.RecoveryInfo) string {
	s := fmt.Sprintf("recovered %d batches in %d segments", r.Batches, r.Segments)
	if r.TruncatedAt >= 0 {
		s += fmt.Sprintf("\ntruncated at offset %d (%d bytes, %d segments dropped): %s", r.TruncatedAt, r.BytesTruncated, r.SegmentsDropped, r.Reason)
	}
	for _, e := range r.CheckpointErrors {
		s += "\ncheckpoint ignored: " + e
	}
	return s
}

func describeState(l *log.Log) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log start %d, log end %d, unflushed %d, segments %v\n", l.LogStartOffset(), l.LogEndOffset(), l.UnflushedMessages(), l.SegmentBaseOffsets())
	fmt.Fprintf(&b, "%s\n", describeEpochs(l.EpochEntries()))
	fmt.Fprintf(&b, "high watermark checkpoint %d\n", l.HighWatermarkCheckpoint())
	for _, id := range l.ProducerIDs() {
		p, _ := l.Producer(id)
		fmt.Fprintf(&b, "producer %d: epoch %d last seq %d coordinator epoch %d", id, p.ProducerEpoch, p.LastSequence, p.CoordinatorEpoch)
		if p.TxnFirstOffset >= 0 {
			fmt.Fprintf(&b, " open transaction at %d", p.TxnFirstOffset)
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
