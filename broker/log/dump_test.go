package log_test

import (
	"testing"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/sim/disk"
	"github.com/stretchr/testify/require"
)

// A tool reads a replica's log off its disk — batches, epochs, the
// checkpointed high watermark — and stops at the first batch that fails
// its checksum, changing nothing.
func TestADumpReadsTheLogAsAToolWouldAndStopsAtRot(t *testing.T) {
	d := disk.New()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 2), 0)
	require.NoError(t, l.AssignEpoch(3))
	appendLeader(t, l, vals("b", 3), 3)
	require.NoError(t, l.CheckpointHighWatermark(2))
	require.NoError(t, l.Flush())

	dump, err := log.ReadDump(d, "t", 0)
	require.NoError(t, err)
	require.Empty(t, dump.Stopped)
	require.Len(t, dump.Batches, 2)
	require.Equal(t, log.DumpedBatch{BaseOffset: 0, LastOffset: 1, LeaderEpoch: 0, CRC: dump.Batches[0].CRC, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, dump.Batches[0])
	require.Equal(t, int64(2), dump.Batches[1].BaseOffset)
	require.Equal(t, int64(4), dump.Batches[1].LastOffset)
	require.Equal(t, int32(3), dump.Batches[1].LeaderEpoch)
	require.Equal(t, []log.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 2}}, dump.Epochs)
	require.Equal(t, int64(2), dump.HighWatermark)

	// Rot a byte of the second batch's records.
	data, err := d.ReadFile("t-0/00000000000000000000.log")
	require.NoError(t, err)
	require.NoError(t, d.WriteAt("t-0/00000000000000000000.log", []byte{data[len(data)-3] ^ 0x40}, int64(len(data)-3)))
	rotten, err := log.ReadDump(d, "t", 0)
	require.NoError(t, err)
	require.Len(t, rotten.Batches, 1, "reading stops at the rotten batch")
	require.Contains(t, rotten.Stopped, "crc")

	empty, err := log.ReadDump(d, "other", 7)
	require.NoError(t, err)
	require.Empty(t, empty.Batches)
	require.Equal(t, int64(-1), empty.HighWatermark)
}

// A log whose head was removed begins at a segment above 0: a dump reads
// it from there, batches below the log start included (they are in the
// segment that holds the start), and reports the start checkpoint; a log
// emptied to start past its end has no batches and its new start.
func TestADumpReadsALogWhoseStartMoved(t *testing.T) {
	d := disk.New()
	cfg := testConfig()
	cfg.SegmentBytesMax = 200
	l := mustOpen(t, d, cfg)
	for range 6 {
		appendLeader(t, l, vals("a", 2), 1)
	}
	bases := l.SegmentBaseOffsets()
	require.GreaterOrEqual(t, len(bases), 3)
	require.NoError(t, l.IncrementLogStartOffset(bases[1]+1))
	_, err := l.DeleteSegmentsBelow(bases[1] + 1)
	require.NoError(t, err)

	var sc log.DumpScanner
	for _, read := range []func() (log.Dump, error){
		func() (log.Dump, error) { return log.ReadDump(d, "t", 0) },
		func() (log.Dump, error) { return log.ScanDump(d.Onlooker(), "t", 0) },
		func() (log.Dump, error) { dump, _, err := sc.Scan(d.Onlooker(), "t", 0); return dump, err },
	} {
		dump, err := read()
		require.NoError(t, err)
		require.Empty(t, dump.Stopped)
		require.Equal(t, bases[1], dump.Batches[0].BaseOffset, "from the first segment that remains")
		require.Equal(t, l.LogEndOffset()-1, dump.Batches[len(dump.Batches)-1].LastOffset)
		require.Equal(t, bases[1]+1, dump.LogStartOffset)
		require.Equal(t, []log.EpochEntry{{Epoch: 1, StartOffset: bases[1] + 1}}, dump.Epochs)
	}

	require.NoError(t, l.TruncateFullyAndStartAt(l.LogEndOffset()+10))
	dump, unchanged, err := sc.Scan(d.Onlooker(), "t", 0)
	require.NoError(t, err)
	require.Empty(t, dump.Batches)
	require.Zero(t, unchanged)
	require.Equal(t, l.LogStartOffset(), dump.LogStartOffset)
	require.Empty(t, dump.Epochs)
}
