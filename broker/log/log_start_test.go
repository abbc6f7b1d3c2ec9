package log_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim/disk"
)

const startCheckpoint = "t-0/log-start-offset-checkpoint"

// A log whose start never moves is the log it always was: no start
// checkpoint is written by appends, rolls, flushes, truncations, restarts
// or recoveries, so existing disks and traces are unchanged.
func TestALogThatNeverMovesItsStartWritesNoStartCheckpoint(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	cfg.SegmentBytesMax = 200
	l := mustOpen(t, d, cfg)
	for i := range 8 {
		appendLeader(t, l, vals("a", 1+i%3), int32(i/3))
	}
	require.NoError(t, l.Flush())
	_, err := l.TruncateTo(5)
	require.NoError(t, err)
	_, err = l.TruncateTo(l.LogEndOffset())
	require.NoError(t, err)
	require.NoError(t, l.CheckpointHighWatermark(3))
	appendLeader(t, l, vals("b", 2), 3)
	d.PowerLoss(true, env.NewRand(3))
	l = mustOpen(t, d, cfg)
	_, err = l.DeleteSegmentsBelow(100) // nothing lies below a start at the first segment
	require.NoError(t, err)
	require.NoError(t, l.IncrementLogStartOffset(0))

	for _, name := range d.List("t-0/") {
		require.NotEqual(t, startCheckpoint, name)
	}
	require.Equal(t, int64(0), l.LogStartOffset())
	dump, err := log.ReadDump(d, "t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(-1), dump.LogStartOffset)
}

// Open recovers a log whose first segment lies above 0 and whose start
// checkpoint lies above that segment's base; LogStartOffset reports the
// checkpoint. A start checkpoint that fails its CRC is ignored (and named):
// the start falls back to the first segment's base.
func TestOpenRecoversALogWhoseStartIsPastItsFirstSegmentAboveZero(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	cfg.SegmentBytesMax = 200
	l := mustOpen(t, d, cfg)
	for i := range 9 {
		appendLeader(t, l, vals("a", 2), int32(i/3))
	}
	require.NoError(t, l.Flush())
	bases := l.SegmentBaseOffsets()
	require.GreaterOrEqual(t, len(bases), 3)
	start := bases[1] + 1 // inside the second segment
	require.NoError(t, l.IncrementLogStartOffset(start))
	n, err := l.DeleteSegmentsBelow(start)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	l2 := mustOpen(t, d, cfg)
	require.Equal(t, bases[1:], l2.SegmentBaseOffsets())
	require.Equal(t, start, l2.LogStartOffset())
	require.Equal(t, l.LogEndOffset(), l2.LogEndOffset())
	require.Equal(t, l.EpochEntries(), l2.EpochEntries())
	require.Equal(t, start, l2.EpochEntries()[0].StartOffset)
	require.Equal(t, readValues(t, l, start, l.LogEndOffset()), readValues(t, l2, start, l2.LogEndOffset()))
	_, err = l2.Read(start-1, 1<<20, l2.LogEndOffset())
	require.ErrorIs(t, err, log.ErrOffsetOutOfRange)

	data, err := d.ReadFile(startCheckpoint)
	require.NoError(t, err)
	require.NoError(t, d.WriteAt(startCheckpoint, []byte{data[2] ^ 0x04}, 2))
	l3 := mustOpen(t, d, cfg)
	require.Equal(t, bases[1], l3.LogStartOffset())
	require.Len(t, l3.Recovery().CheckpointErrors, 1)
	require.Contains(t, l3.Recovery().CheckpointErrors[0], "log-start-offset-checkpoint")
}

// The errors of a refused move name the partition and the rule and unwrap
// to Kafka's error code.
func TestALogStartPastTheLogEndIsOffsetOutOfRange(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, vals("a", 3), 0)
	err := l.IncrementLogStartOffset(4)
	var ke *kerr.Error
	require.True(t, errors.As(err, &ke))
	require.Equal(t, kerr.OffsetOutOfRange.Code, ke.Code)
	require.Contains(t, err.Error(), "log t-0: log start offset 4 past the log end 3")
	require.Equal(t, int64(0), l.LogStartOffset())
	require.NoError(t, l.IncrementLogStartOffset(3), "up to the log end is fine")
	_, err = l.Read(2, 1<<20, 3)
	require.ErrorIs(t, err, log.ErrOffsetOutOfRange)
	require.Contains(t, err.Error(), "log t-0: offset 2 outside [3, 3]")
}

// flakyDisk fails the syncs and removals of files whose names start with
// a prefix, as a disk with a bad region does.
type flakyDisk struct {
	*disk.Disk
	failSync, failRemove string
}

func (f *flakyDisk) Sync(name string) error {
	if f.failSync != "" && strings.HasPrefix(name, f.failSync) {
		return env.ErrIO
	}
	return f.Disk.Sync(name)
}

func (f *flakyDisk) Remove(name string) error {
	if f.failRemove != "" && strings.HasPrefix(name, f.failRemove) {
		return env.ErrIO
	}
	return f.Disk.Remove(name)
}

// A start that cannot be checkpointed does not move: the error is a
// storage error, and neither the Log nor a restart shows the move.
func TestAStartThatCannotBeCheckpointedDoesNotMove(t *testing.T) {
	d := &flakyDisk{Disk: newDisk()}
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 4), 0)
	d.failSync = startCheckpoint
	err := l.IncrementLogStartOffset(2)
	require.ErrorIs(t, err, log.ErrKafkaStorage)
	require.Contains(t, err.Error(), "log t-0")
	require.Equal(t, int64(0), l.LogStartOffset())
	d.failSync = ""
	require.Equal(t, int64(0), mustOpen(t, d, testConfig()).LogStartOffset())
}

// Segments go oldest first, each .log before its side files: a crash
// between leaves header checksums and a transaction index without their
// segment, which Open removes, and the log begins at the next segment.
func TestAnInterruptedSegmentDeletionLeavesALogThatBeginsLater(t *testing.T) {
	d := &flakyDisk{Disk: newDisk()}
	cfg := testConfig()
	cfg.SegmentBytesMax = 200
	l := mustOpen(t, d, cfg)
	for range 6 {
		appendLeader(t, l, vals("a", 2), 0)
	}
	require.NoError(t, l.Flush())
	bases := l.SegmentBaseOffsets()
	require.GreaterOrEqual(t, len(bases), 3)
	require.NoError(t, l.IncrementLogStartOffset(bases[2]))

	d.failRemove = "t-0/00000000000000000000.hdrcrc"
	n, err := l.DeleteSegmentsBelow(bases[2])
	require.ErrorIs(t, err, log.ErrKafkaStorage)
	require.Equal(t, 1, n, "the first segment's .log is gone: it counts")
	require.Equal(t, bases[1:], l.SegmentBaseOffsets())
	l.CheckConsistency()
	d.failRemove = ""
	require.NotEmpty(t, d.List("t-0/00000000000000000000."), "the side files outlived their segment")

	l2 := mustOpen(t, d, cfg)
	require.Equal(t, bases[1:], l2.SegmentBaseOffsets())
	require.Equal(t, bases[2], l2.LogStartOffset())
	for _, name := range d.List("t-0/00000000000000000000.") {
		t.Errorf("%s left behind", name)
	}
	n, err = l2.DeleteSegmentsBelow(bases[2])
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// TruncateFullyAndStartAt interrupted at each step recovers to a prefix of
// the old log or to the new empty log, never to anything else.
func TestAnInterruptedTruncateFullyRecoversToAPrefixOrTheNewLog(t *testing.T) {
	setup := func(t *testing.T) (*flakyDisk, log.Config, *log.Log, []string) {
		d := &flakyDisk{Disk: newDisk()}
		cfg := testConfig()
		cfg.SegmentBytesMax = 200
		l := mustOpen(t, d, cfg)
		for i := range 6 {
			appendLeader(t, l, vals("a", 2), int32(i/2))
		}
		require.NoError(t, l.Flush())
		return d, cfg, l, readValues(t, l, 0, l.LogEndOffset())
	}
	isPrefix := func(t *testing.T, l *log.Log, all []string) {
		got := readValues(t, l, l.LogStartOffset(), l.LogEndOffset())
		require.LessOrEqual(t, len(got), len(all))
		require.Equal(t, all[:len(got)], got)
	}

	t.Run("the epoch checkpoint fails", func(t *testing.T) {
		d, cfg, l, all := setup(t)
		d.failSync = "t-0/leader-epoch-checkpoint"
		require.ErrorIs(t, l.TruncateFullyAndStartAt(5), log.ErrKafkaStorage)
		d.failSync = ""
		l2 := mustOpen(t, d, cfg)
		require.Equal(t, int64(0), l2.LogStartOffset())
		require.LessOrEqual(t, l2.LogEndOffset(), int64(5), "what lay past 5 went first")
		isPrefix(t, l2, all)
	})
	t.Run("the start checkpoint fails", func(t *testing.T) {
		d, cfg, l, all := setup(t)
		d.failSync = startCheckpoint
		require.ErrorIs(t, l.TruncateFullyAndStartAt(5), log.ErrKafkaStorage)
		d.failSync = ""
		l2 := mustOpen(t, d, cfg)
		require.Equal(t, int64(0), l2.LogStartOffset())
		require.LessOrEqual(t, l2.LogEndOffset(), int64(5))
		isPrefix(t, l2, all)
		require.NotEmpty(t, l2.EpochEntries(), "rebuilt from the batches")
	})
	t.Run("a removal after the start checkpoint fails", func(t *testing.T) {
		d, cfg, l, _ := setup(t)
		d.failRemove = "t-0/00000000000000000000.log"
		require.ErrorIs(t, l.TruncateFullyAndStartAt(5), log.ErrKafkaStorage)
		d.failRemove = ""
		l2 := mustOpen(t, d, cfg)
		require.Equal(t, int64(5), l2.LogStartOffset())
		require.Equal(t, int64(5), l2.LogEndOffset())
		require.Equal(t, []int64{5}, l2.SegmentBaseOffsets())
		require.Empty(t, l2.EpochEntries())
		require.Contains(t, l2.Recovery().Reason, "log start offset checkpoint 5 is past the recovered log end")
	})
	t.Run("nothing fails", func(t *testing.T) {
		d, cfg, l, _ := setup(t)
		require.NoError(t, l.TruncateFullyAndStartAt(5))
		d.PowerLoss(true, env.NewRand(1))
		l2 := mustOpen(t, d, cfg)
		require.Equal(t, int64(5), l2.LogStartOffset())
		require.Equal(t, int64(5), l2.LogEndOffset())
		require.Empty(t, l2.EpochEntries())
		require.Empty(t, l2.ProducerIDs())
		for _, name := range d.List("t-0/") {
			require.NotContains(t, name, ".log", "no segment file until the first append")
		}
	})
}
