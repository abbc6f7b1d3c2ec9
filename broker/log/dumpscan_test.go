package log_test

import (
	"fmt"
	"testing"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim/disk"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A scanner that samples a log again and again, parsing only what was
// appended, must see exactly what a fresh ScanDump sees after any mix of
// appends, rolls, truncations, a crash's reopen, a flipped bit, power loss
// and moves of the log start (segments removed from the head, the log
// emptied to start at an offset past its end) and of the high-watermark
// checkpoint, each checkpoint file read again only when it changed; and
// the batches it calls
// unchanged must be the previous scan's.
func TestPropertyAScannerSeesWhatAFreshScanSees(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := disk.New()
		cfg := testConfig()
		cfg.SegmentBytesMax = rapid.SampledFrom([]int64{200, 600, 1 << 20}).Draw(rt, "segment.bytes")
		l := mustOpen(rt, d, cfg)
		r := env.NewRand(rapid.Uint64().Draw(rt, "seed"))
		var sc log.DumpScanner
		var prev []log.DumpedBatch
		for i := range rapid.IntRange(1, 40).Draw(rt, "steps") {
			switch rapid.IntRange(0, 13).Draw(rt, fmt.Sprintf("op%d", i)) {
			case 0, 1, 2, 3, 4:
				// A flipped bit in a batch's leader epoch, behind a flipped
				// header checksum, may leave the log in a high epoch.
				appendLeader(rt, l, vals(fmt.Sprint(i), rapid.IntRange(1, 4).Draw(rt, "n")), max(l.LatestEpoch(), 0))
			case 5:
				to := rapid.Int64Range(l.LogStartOffset(), l.LogEndOffset()).Draw(rt, "to")
				_, err := l.TruncateTo(to)
				require.NoError(rt, err)
			case 6:
				require.NoError(rt, l.Flush())
			case 7:
				d.Corrupt("t-0/", r)
			case 8:
				d.PowerLoss(rapid.Bool().Draw(rt, "torn"), r)
				l = reopen(rt, d, cfg)
			case 9:
				l = reopen(rt, d, cfg)
			case 10:
				to := rapid.Int64Range(l.LogStartOffset(), l.LogEndOffset()).Draw(rt, "start")
				require.NoError(rt, l.IncrementLogStartOffset(to))
				_, err := l.DeleteSegmentsBelow(to)
				require.NoError(rt, err)
			case 11:
				_, err := l.DeleteSegmentsBelow(l.LogStartOffset())
				require.NoError(rt, err)
			case 12:
				require.NoError(rt, l.TruncateFullyAndStartAt(l.LogEndOffset()+rapid.Int64Range(0, 5).Draw(rt, "past")))
			case 13:
				hw := rapid.Int64Range(l.LogStartOffset(), l.LogEndOffset()).Draw(rt, "hw")
				require.NoError(rt, l.CheckpointHighWatermark(hw))
			}
			got, unchanged, err := sc.Scan(d.Onlooker(), "t", 0)
			require.NoError(rt, err)
			want, err := log.ScanDump(d.Onlooker(), "t", 0)
			require.NoError(rt, err)
			require.Equal(rt, want.Stopped, got.Stopped, "step %d", i)
			require.Equal(rt, len(want.Batches), len(got.Batches), "step %d", i)
			for j := range want.Batches {
				require.Equal(rt, want.Batches[j], got.Batches[j], "step %d batch %d", i, j)
			}
			require.Equal(rt, want.Epochs, got.Epochs)
			require.Equal(rt, want.HighWatermark, got.HighWatermark)
			require.Equal(rt, want.LogStartOffset, got.LogStartOffset)
			require.LessOrEqual(rt, unchanged, min(len(prev), len(got.Batches)))
			for j := range unchanged {
				require.Equal(rt, prev[j], got.Batches[j], "step %d: batch %d called unchanged", i, j)
			}
			prev = append(prev[:0], got.Batches...)
		}
	})
}

// reopen opens the log again as a restarted broker does; a log whose
// recovery fails (a flipped bit where recovery cannot cut) is left as the
// disk holds it, which the scan must read all the same.
func reopen(t *rapid.T, d *disk.Disk, cfg log.Config) *log.Log {
	l, err := openBothWays(t, d, cfg)
	if err != nil {
		t.Skipf("open after a fault: %v", err)
	}
	return l
}
