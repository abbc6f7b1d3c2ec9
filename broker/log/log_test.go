package log_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
)

func TestLeaderAppendAssignsOffsetsAndStampsTheEpoch(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	require.Equal(t, int64(0), l.LogEndOffset())

	r1 := appendLeader(t, l, vals("a", 3), 1)
	r2 := appendLeader(t, l, vals("b", 2), 1)
	require.Equal(t, log.AppendResult{FirstOffset: 0, LastOffset: 2}, r1)
	require.Equal(t, log.AppendResult{FirstOffset: 3, LastOffset: 4}, r2)
	require.Equal(t, int64(5), l.LogEndOffset())

	data, err := l.Read(0, 1<<20, l.LogEndOffset())
	require.NoError(t, err)
	batches, err := record.Split(data)
	require.NoError(t, err)
	require.Len(t, batches, 2)
	require.Equal(t, int64(3), batches[1].BaseOffset())
	require.Equal(t, int32(1), batches[1].PartitionLeaderEpoch())
	require.Equal(t, []string{"0:a0", "1:a1", "2:a2", "3:b0", "4:b1"}, readValues(t, l, 0, 5))
}

func TestReadReturnsTheWholeBatchHoldingTheOffsetAndStopsAtTheLimit(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, vals("a", 3), 0) // 0..2
	appendLeader(t, l, vals("b", 3), 0) // 3..5
	appendLeader(t, l, vals("c", 3), 0) // 6..8

	// From the middle of the second batch: the whole second batch comes back.
	data, err := l.Read(4, 1<<20, 9)
	require.NoError(t, err)
	bs, _ := record.Split(data)
	require.Equal(t, int64(3), bs[0].BaseOffset())
	require.Len(t, bs, 2)

	// A high watermark at 6 hides the third batch; at 5 (inside the second)
	// it hides the second too.
	data, _ = l.Read(0, 1<<20, 6)
	bs, _ = record.Split(data)
	require.Len(t, bs, 2)
	data, _ = l.Read(0, 1<<20, 5)
	bs, _ = record.Split(data)
	require.Len(t, bs, 1)

	// A consumer past the high watermark but inside the log gets nothing.
	data, err = l.Read(7, 1<<20, 6)
	require.NoError(t, err)
	require.Empty(t, data)
}

func TestReadHonoursMaxBytesButAlwaysReturnsOneBatch(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, vals("a", 3), 0)
	appendLeader(t, l, vals("b", 3), 0)
	one, _ := l.Read(0, 1, 6)
	bs, err := record.Split(one)
	require.NoError(t, err)
	require.Len(t, bs, 1, "KIP-74: the first batch comes back even when larger than maxBytes")
	two, _ := l.Read(0, 2*len(one), 6)
	bs, _ = record.Split(two)
	require.Len(t, bs, 2)
}

func TestReadOutsideTheLogIsOffsetOutOfRange(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, vals("a", 2), 0)
	_, err := l.Read(3, 100, 3)
	require.ErrorIs(t, err, log.ErrOffsetOutOfRange)
	require.ErrorIs(t, err, kerr.OffsetOutOfRange)
	data, err := l.Read(2, 100, 2)
	require.NoError(t, err, "reading at the log end is an empty answer")
	require.Empty(t, data)
}

func TestSegmentsRollAtSegmentBytesMaxAndSurviveRestart(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	size := len(vals("x", 1))
	cfg.SegmentBytesMax = int64(2 * size)
	l := mustOpen(t, d, cfg)
	for i := 0; i < 5; i++ {
		appendLeader(t, l, vals("x", 1), 0)
	}
	require.Equal(t, []int64{0, 2, 4}, l.SegmentBaseOffsets())
	require.Contains(t, d.List("t-0/"), "t-0/00000000000000000002.log")

	l2 := mustOpen(t, d, cfg)
	require.Equal(t, []int64{0, 2, 4}, l2.SegmentBaseOffsets())
	require.Equal(t, int64(5), l2.LogEndOffset())
	require.Equal(t, 5, len(readValues(t, l2, 0, 5)))
	require.Equal(t, int64(-1), l2.Recovery().TruncatedAt)
}

func TestFollowerAppendSpanningSegmentsRollsThem(t *testing.T) {
	leader := mustOpen(t, newDisk(), testConfig())
	for i := 0; i < 6; i++ {
		appendLeader(t, leader, vals("x", 2), 3)
	}
	data, err := leader.Read(0, 1<<20, leader.LogEndOffset())
	require.NoError(t, err)

	cfg := testConfig()
	cfg.SegmentBytesMax = int64(len(data)/3 + 1)
	d := newDisk()
	f := mustOpen(t, d, cfg)
	res, err := f.AppendAsFollower(data)
	require.NoError(t, err)
	require.Equal(t, log.AppendResult{FirstOffset: 0, LastOffset: 11}, res)
	require.Equal(t, []int64{0, 4, 8}, f.SegmentBaseOffsets())
	f.CheckConsistency()
	require.Equal(t, readValues(t, leader, 0, 12), readValues(t, f, 0, 12))
	require.Equal(t, []log.EpochEntry{{Epoch: 3, StartOffset: 0}}, f.EpochEntries())
}

func TestProcessCrashKeepsTheUnsyncedTail(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 4), 0)
	// The process dies; the OS (page cache) survives.
	l2 := mustOpen(t, d, testConfig())
	require.Equal(t, int64(4), l2.LogEndOffset())
	require.Equal(t, int64(4), l2.UnflushedMessages(), "after a restart nothing is known synced")
}

func TestPowerLossWithoutFlushLosesUnsyncedTail(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig()) // log.flush.interval.messages unset: never sync
	appendLeader(t, l, vals("a", 2), 0)
	require.NoError(t, l.Flush())
	appendLeader(t, l, vals("b", 2), 0)
	require.Equal(t, int64(2), l.UnflushedMessages())

	lost := d.PowerLoss(false, env.NewRand(1))
	require.Positive(t, lost)

	l2 := mustOpen(t, d, testConfig())
	require.Equal(t, int64(2), l2.LogEndOffset(), "the synced batch survives, the unsynced one is gone")
	require.Equal(t, []string{"0:a0", "1:a1"}, readValues(t, l2, 0, 2))
}

func TestFlushIntervalOneMakesEveryAppendSurvivePowerLoss(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	l := mustOpen(t, d, cfg)
	for i := 0; i < 5; i++ {
		appendLeader(t, l, vals("a", 2), 0)
		require.Zero(t, l.UnflushedMessages())
	}
	d.PowerLoss(true, env.NewRand(7))
	l2 := mustOpen(t, d, cfg)
	require.Equal(t, int64(10), l2.LogEndOffset())
}

func TestFlushIntervalNSyncsOnceNMessagesAreUnflushed(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	cfg.FlushIntervalMessages = 5
	l := mustOpen(t, d, cfg)
	require.NoError(t, l.AssignEpoch(0)) // the epoch checkpoint is synced on its own
	syncs := d.Syncs
	appendLeader(t, l, vals("a", 2), 0)
	appendLeader(t, l, vals("a", 2), 0)
	require.Equal(t, syncs, d.Syncs, "4 unflushed messages: no sync yet")
	require.Equal(t, int64(4), l.UnflushedMessages())
	appendLeader(t, l, vals("a", 2), 0)
	require.Greater(t, d.Syncs, syncs, "6 ≥ 5: synced")
	require.Zero(t, l.UnflushedMessages())
	require.Equal(t, int64(6), l.RecoveryPoint())
}

func TestFailedSyncIsReportedAndRetriedByTheNextFlush(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	l := mustOpen(t, d, cfg)
	appendLeader(t, l, vals("a", 1), 0)
	d.FailSyncs(1)
	res, err := l.AppendAsLeader(vals("b", 1), 0)
	require.ErrorIs(t, err, log.ErrKafkaStorage)
	require.ErrorIs(t, err, env.ErrIO)
	require.Equal(t, int64(1), res.FirstOffset, "the batch is in the log, just not durable")
	require.Equal(t, int64(1), l.UnflushedMessages())
	require.NoError(t, l.Flush())
	require.Zero(t, l.UnflushedMessages())
	d.PowerLoss(false, env.NewRand(1))
	require.Equal(t, int64(2), mustOpen(t, d, cfg).LogEndOffset())

	// A failed epoch checkpoint refuses the append outright.
	d.FailSyncs(1)
	_, err = l.AppendAsLeader(vals("c", 1), 1)
	require.ErrorIs(t, err, env.ErrIO)
	require.Equal(t, int64(2), l.LogEndOffset())
	require.Equal(t, int32(0), l.LatestEpoch())
}

func TestTornTailIsTruncatedOnRecovery(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 2), 0)
	require.NoError(t, l.Flush())
	appendLeader(t, l, vals("b", 2), 0)

	// Power fails half-way through writing back the second batch.
	seg := "t-0/00000000000000000000.log"
	size, _ := d.Size(seg)
	first := int64(len(vals("a", 2)))
	require.NoError(t, d.Truncate(seg, first+(size-first)/2))

	l2 := mustOpen(t, d, testConfig())
	require.Equal(t, int64(2), l2.LogEndOffset())
	rec := l2.Recovery()
	require.Equal(t, int64(2), rec.TruncatedAt)
	require.Positive(t, rec.BytesTruncated)
	require.Contains(t, rec.Reason, "truncated")
	got, _ := d.Size(seg)
	require.Equal(t, first, got, "the torn bytes are cut from the file")

	// The log goes on from the cut.
	r := appendLeader(t, l2, vals("c", 1), 0)
	require.Equal(t, int64(2), r.FirstOffset)
	require.Equal(t, []string{"0:a0", "1:a1", "2:c0"}, readValues(t, mustOpen(t, d, testConfig()), 0, 3))
}

func TestGarbageAfterTheLastBatchAndLaterSegmentsAreDropped(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	cfg.SegmentBytesMax = int64(len(vals("a", 1)))
	l := mustOpen(t, d, cfg)
	for i := 0; i < 4; i++ {
		appendLeader(t, l, vals("a", 1), 0)
	}
	require.Len(t, l.SegmentBaseOffsets(), 4)
	// Zeroes over the second segment (a write that never landed, then
	// zero-fill).
	seg := "t-0/00000000000000000001.log"
	size, _ := d.Size(seg)
	require.NoError(t, d.WriteAt(seg, make([]byte, size), 0))

	l2 := mustOpen(t, d, cfg)
	require.Equal(t, int64(1), l2.LogEndOffset())
	require.Equal(t, []int64{0, 1}, l2.SegmentBaseOffsets(), "the zeroed segment stays as the (now empty) active one")
	require.Equal(t, 2, l2.Recovery().SegmentsDropped)
	require.NotContains(t, d.List("t-0/"), "t-0/00000000000000000003.log")
}

func TestCorruptBatchIsNeverServed(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 2), 0)
	appendLeader(t, l, vals("b", 2), 0)
	appendLeader(t, l, vals("c", 2), 0)
	bsize := int64(len(vals("a", 2)))

	// Bit rot in the middle batch, inside its records.
	seg := "t-0/00000000000000000000.log"
	buf := make([]byte, 1)
	_, err := d.ReadAt(seg, buf, bsize+70)
	require.NoError(t, err)
	require.NoError(t, d.WriteAt(seg, []byte{buf[0] ^ 0x10}, bsize+70))

	// A read from the start serves the good first batch only.
	data, err := l.Read(0, 1<<20, 6)
	require.NoError(t, err)
	bs, _ := record.Split(data)
	require.Len(t, bs, 1)
	// A read at the bad batch is refused, naming partition and offset.
	_, err = l.Read(2, 1<<20, 6)
	var ce *log.CorruptionError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "t-0", ce.Partition)
	require.Equal(t, int64(2), ce.Offset)
	require.ErrorIs(t, err, log.ErrCorruptMessage)
	require.Contains(t, err.Error(), "t-0")
	require.Contains(t, err.Error(), "offset 2")

	// On restart recovery cuts the log at the corrupt batch.
	l2 := mustOpen(t, d, testConfig())
	require.Equal(t, int64(2), l2.LogEndOffset())
	require.Equal(t, int64(2), l2.Recovery().TruncatedAt)
}

func TestEveryCorruptByteOfABatchIsCaughtOnReadAndOnRecovery(t *testing.T) {
	// The leader epoch field is outside Kafka's CRC; the index catches it on
	// read and the header checksum file catches it on recovery.
	b := vals("a", 1)
	for i := 0; i < len(b); i++ {
		d := newDisk()
		l := mustOpen(t, d, testConfig())
		appendLeader(t, l, vals("a", 1), 4)
		require.NoError(t, l.Flush())
		seg := "t-0/00000000000000000000.log"
		one := make([]byte, 1)
		_, err := d.ReadAt(seg, one, int64(i))
		require.NoError(t, err)
		require.NoError(t, d.WriteAt(seg, []byte{one[0] ^ 0x01}, int64(i)))

		_, err = l.Read(0, 1<<20, 1)
		require.ErrorIs(t, err, log.ErrCorruptMessage, "byte %d flipped, read served it", i)
		l2 := mustOpen(t, d, testConfig())
		require.Equal(t, int64(0), l2.LogEndOffset(), "byte %d flipped, recovery kept it", i)
	}
}

func TestCorruptHeaderChecksumFileDoesNotCostData(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 1), 0)
	appendLeader(t, l, vals("b", 1), 0)
	side := "t-0/00000000000000000000.hdrcrc"
	one := make([]byte, 1)
	_, _ = d.ReadAt(side, one, 2)
	require.NoError(t, d.WriteAt(side, []byte{one[0] ^ 0x80}, 2))
	l2 := mustOpen(t, d, testConfig())
	require.Equal(t, int64(2), l2.LogEndOffset(), "a bad sidecar entry falls back on the batch's own CRC")
}

func TestReadFailureIsAStorageErrorNamingThePartition(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 1), 0)
	d.FailReads("t-0/", 1)
	_, err := l.Read(0, 100, 1)
	require.ErrorIs(t, err, env.ErrIO)
	require.ErrorIs(t, err, log.ErrKafkaStorage)
	require.Contains(t, err.Error(), "t-0")
	_, err = l.Read(0, 100, 1)
	require.NoError(t, err, "the sector reads again")
}

func TestFollowerAppendMustStartAtTheLogEndAndBeContiguous(t *testing.T) {
	leader := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, leader, vals("a", 2), 1)
	appendLeader(t, leader, vals("b", 2), 1)
	data, _ := leader.Read(0, 1<<20, 4)
	bs, _ := record.Split(data)

	f := mustOpen(t, newDisk(), testConfig())
	_, err := f.AppendAsFollower(bs[1])
	require.ErrorIs(t, err, log.ErrUnexpectedAppendOffset)
	gap := append(append([]byte(nil), bs[0]...), bs[0]...)
	_, err = f.AppendAsFollower(gap)
	require.ErrorIs(t, err, log.ErrUnexpectedAppendOffset)
	require.Equal(t, int64(0), f.LogEndOffset(), "nothing of a refused append lands")

	bad := append([]byte(nil), data...)
	bad[len(bad)-1] ^= 1
	_, err = f.AppendAsFollower(bad)
	require.ErrorIs(t, err, log.ErrCorruptMessage)

	res, err := f.AppendAsFollower(data)
	require.NoError(t, err)
	require.Equal(t, int64(3), res.LastOffset)
}

func TestFollowerTruncationRemovesBatchesEpochsAndSurvivesPowerLoss(t *testing.T) {
	d := newDisk()
	cfg := testConfig()
	cfg.SegmentBytesMax = int64(2 * len(vals("a", 2)))
	l := mustOpen(t, d, cfg)
	appendLeader(t, l, vals("a", 2), 1) // 0..1
	appendLeader(t, l, vals("b", 2), 1) // 2..3
	appendLeader(t, l, vals("c", 2), 2) // 4..5, new segment
	appendLeader(t, l, vals("d", 2), 3) // 6..7
	require.NoError(t, l.Flush())
	require.Equal(t, []log.EpochEntry{{1, 0}, {2, 4}, {3, 6}}, l.EpochEntries())

	end, err := l.TruncateTo(4)
	require.NoError(t, err)
	require.Equal(t, int64(4), end)
	l.CheckConsistency()
	require.Equal(t, []log.EpochEntry{{1, 0}}, l.EpochEntries())
	require.Equal(t, []int64{0, 4}, l.SegmentBaseOffsets())

	// The truncation is durable: a power loss does not bring "c" back.
	d.PowerLoss(false, env.NewRand(3))
	l2 := mustOpen(t, d, cfg)
	require.Equal(t, int64(4), l2.LogEndOffset())
	require.Equal(t, []log.EpochEntry{{1, 0}}, l2.EpochEntries())

	// Truncating inside a batch removes the whole batch.
	end, err = l2.TruncateTo(3)
	require.NoError(t, err)
	require.Equal(t, int64(2), end)
}

func TestEndOffsetForEpochFollowsKIP101AndKIP279(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	e, o := l.EndOffsetForEpoch(0)
	require.Equal(t, log.UndefinedEpoch, e, "empty cache")
	require.Equal(t, log.UndefinedEpochOffset, o)

	appendLeader(t, l, vals("a", 2), 2) // epoch 2: 0..1
	appendLeader(t, l, vals("b", 3), 4) // epoch 4: 2..4
	appendLeader(t, l, vals("c", 1), 7) // epoch 7: 5

	cases := []struct {
		asked     int32
		epoch     int32
		endOffset int64
	}{
		{7, 7, 6},   // the latest epoch ends at the log end
		{4, 4, 5},   // ends where epoch 7 starts
		{5, 4, 5},   // unknown epoch: the largest below it, ending where the next starts
		{2, 2, 2},   //
		{1, 1, 0},   // below every epoch: KIP-279 answers the asked epoch and the first start
		{8, -1, -1}, // above every epoch
		{-1, -1, -1},
	}
	for _, c := range cases {
		e, o := l.EndOffsetForEpoch(c.asked)
		require.Equal(t, c.epoch, e, "asked %d", c.asked)
		require.Equal(t, c.endOffset, o, "asked %d", c.asked)
	}
	// A new leader assigns its epoch before appending.
	require.NoError(t, l.AssignEpoch(9))
	e, o = l.EndOffsetForEpoch(7)
	require.Equal(t, int32(7), e)
	require.Equal(t, int64(6), o)
	_, err := l.AppendAsLeader(vals("z", 1), 8)
	require.ErrorIs(t, err, log.ErrFencedLeaderEpoch, "a stale leader cannot append")
}

func TestEpochCheckpointIsRebuiltWhenLostOrCorrupt(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 1), 1)
	appendLeader(t, l, vals("b", 1), 5)
	want := l.EpochEntries()

	require.NoError(t, d.Remove("t-0/leader-epoch-checkpoint"))
	require.Equal(t, want, mustOpen(t, d, testConfig()).EpochEntries())

	data, err := d.ReadFile("t-0/leader-epoch-checkpoint")
	require.NoError(t, err, "rewritten on open")
	data[len(data)/2] ^= 0x04
	require.NoError(t, d.WriteAt("t-0/leader-epoch-checkpoint", data, 0))
	l3 := mustOpen(t, d, testConfig())
	require.Equal(t, want, l3.EpochEntries())
	require.NotEmpty(t, l3.Recovery().CheckpointErrors)
}

func TestHighWatermarkCheckpointIsReadBackClampedToTheRecoveredLog(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	require.Equal(t, int64(0), l.HighWatermarkCheckpoint())
	appendLeader(t, l, vals("a", 3), 0)
	require.NoError(t, l.Flush())
	appendLeader(t, l, vals("b", 3), 0)
	require.NoError(t, l.CheckpointHighWatermark(5))
	require.Equal(t, int64(5), mustOpen(t, d, testConfig()).HighWatermarkCheckpoint())

	// Power loss takes the unsynced second batch; the checkpoint (synced)
	// says 5, but the log ends at 3.
	d.PowerLoss(false, env.NewRand(1))
	l2 := mustOpen(t, d, testConfig())
	require.Equal(t, int64(3), l2.LogEndOffset())
	require.Equal(t, int64(3), l2.HighWatermarkCheckpoint())
}

func TestDuplicateBatchReturnsOriginalOffset(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, vals("x", 1), 0)
	first := appendLeader(t, l, idem(7, 0, 0, 3, false), 0)
	appendLeader(t, l, idem(7, 0, 3, 2, false), 0)
	require.Equal(t, int64(1), first.FirstOffset)

	// The produce response was lost; the client retries the first batch.
	again := appendLeader(t, l, idem(7, 0, 0, 3, false), 0)
	require.True(t, again.Duplicate)
	require.Equal(t, int64(1), again.FirstOffset)
	require.Equal(t, int64(3), again.LastOffset)
	require.Equal(t, int64(6), l.LogEndOffset(), "nothing appended")

	// After a restart the state is rebuilt from the log: still a duplicate.
	snap, ok := l.Producer(7)
	require.True(t, ok)
	require.Equal(t, int32(4), snap.LastSequence)
}

func TestDuplicateDetectionRemembersFiveBatches(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	for s := int32(0); s < 6; s++ {
		appendLeader(t, l, idem(1, 0, s, 1, false), 0)
	}
	r := appendLeader(t, l, idem(1, 0, 1, 1, false), 0)
	require.True(t, r.Duplicate, "batch 1 of 6 is among the last five")
	_, err := l.AppendAsLeader(idem(1, 0, 0, 1, false), 0)
	require.ErrorIs(t, err, log.ErrOutOfOrderSequence, "batch 0 has left the window")
}

func TestOutOfOrderSequenceIsRefused(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, idem(3, 0, 0, 2, false), 0)
	_, err := l.AppendAsLeader(idem(3, 0, 5, 1, false), 0)
	require.ErrorIs(t, err, log.ErrOutOfOrderSequence)
	require.ErrorIs(t, err, kerr.OutOfOrderSequenceNumber)
	require.Equal(t, int64(2), l.LogEndOffset())
	appendLeader(t, l, idem(3, 0, 2, 1, false), 0)

	// A new epoch must start at sequence 0.
	_, err = l.AppendAsLeader(idem(3, 1, 3, 1, false), 0)
	require.ErrorIs(t, err, log.ErrOutOfOrderSequence)
	appendLeader(t, l, idem(3, 1, 0, 1, false), 0)
}

func TestOlderProducerEpochIsFenced(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, idem(3, 2, 0, 1, false), 0)
	_, err := l.AppendAsLeader(idem(3, 1, 1, 1, false), 0)
	require.ErrorIs(t, err, log.ErrInvalidProducerEpoch)
}

func TestUnknownProducerIDIsRefusedOnlyWithoutKIP360(t *testing.T) {
	cfg := testConfig()
	cfg.KIP360ProducerIDRecovery = false
	l := mustOpen(t, newDisk(), cfg)
	_, err := l.AppendAsLeader(idem(9, 0, 17, 1, false), 0)
	require.ErrorIs(t, err, log.ErrUnknownProducerID)
	appendLeader(t, l, idem(9, 0, 0, 1, false), 0)

	cfg.KIP360ProducerIDRecovery = true
	l2 := mustOpen(t, newDisk(), cfg)
	appendLeader(t, l2, idem(9, 0, 17, 1, false), 0)
}

func TestSequenceWrapsAtInt32(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, idem(4, 0, 1<<31-3, 3, false), 0) // sequences MaxInt32-2 .. MaxInt32
	appendLeader(t, l, idem(4, 0, 0, 2, false), 0)       // wraps to 0
	_, err := l.AppendAsLeader(idem(4, 0, 0, 2, false), 0)
	require.NoError(t, err, "a retry of the wrapped batch is a duplicate")
	snap, _ := l.Producer(4)
	require.Equal(t, int32(1), snap.LastSequence)

	// A batch that wraps inside itself.
	l2 := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l2, idem(4, 0, 1<<31-2, 4, false), 0) // MaxInt32-1, MaxInt32, 0, 1
	appendLeader(t, l2, idem(4, 0, 2, 1, false), 0)
}

func TestProducerStateIsRebuiltAfterRestartAndTruncation(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, idem(5, 0, 0, 2, false), 0) // 0..1
	appendLeader(t, l, idem(5, 0, 2, 2, false), 0) // 2..3
	appendLeader(t, l, idem(5, 0, 4, 2, false), 0) // 4..5

	l2 := mustOpen(t, d, testConfig())
	r := appendLeader(t, l2, idem(5, 0, 2, 2, false), 0)
	require.True(t, r.Duplicate)
	require.Equal(t, int64(2), r.FirstOffset)

	// A follower truncation forgets the truncated batches' sequences.
	_, err := l2.TruncateTo(4)
	require.NoError(t, err)
	snap, _ := l2.Producer(5)
	require.Equal(t, int32(3), snap.LastSequence)
	r = appendLeader(t, l2, idem(5, 0, 4, 2, false), 0)
	require.False(t, r.Duplicate, "the batch at sequence 4 is gone and is appended again")
	require.Equal(t, int64(4), r.FirstOffset)
}

func TestLastStableOffsetFollowsOpenTransactions(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, vals("x", 2), 0)            // 0..1
	appendLeader(t, l, idem(10, 0, 0, 2, true), 0) // 2..3, txn of 10 opens at 2
	appendLeader(t, l, vals("y", 1), 0)            // 4
	appendLeader(t, l, idem(11, 0, 0, 1, true), 0) // 5, txn of 11 opens at 5
	require.Equal(t, int64(2), l.LastStableOffset(6))
	require.Equal(t, int64(1), l.LastStableOffset(1), "LSO ≤ HW")
	fu, ok := l.FirstUnstableOffset()
	require.True(t, ok)
	require.Equal(t, int64(2), fu)

	// The coordinator commits 10: the marker at 6.
	r, err := l.AppendMarker(10, 0, record.EndTxnMarker{Type: record.ControlCommit, CoordinatorEpoch: 1}, 0, 2000)
	require.NoError(t, err)
	require.Equal(t, int64(6), r.FirstOffset)
	// Until the marker is below the HW, 10's transaction is not stable.
	require.Equal(t, int64(2), l.LastStableOffset(6))
	require.Equal(t, int64(5), l.LastStableOffset(7), "then 11's open transaction holds the LSO")

	_, err = l.AppendMarker(11, 0, record.EndTxnMarker{Type: record.ControlAbort, CoordinatorEpoch: 1}, 0, 2000)
	require.NoError(t, err)
	require.Equal(t, int64(8), l.LastStableOffset(8))
	_, ok = l.FirstUnstableOffset()
	require.False(t, ok)

	// A non-transactional batch from a producer with an open transaction.
	appendLeader(t, l, idem(12, 0, 0, 1, true), 0)
	_, err = l.AppendAsLeader(idem(12, 0, 1, 1, false), 0)
	require.ErrorIs(t, err, log.ErrInvalidTxnState)
}

func TestAbortedTransactionsAreIndexedPersistedAndRebuilt(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, idem(1, 0, 0, 2, true), 0) // 0..1
	appendLeader(t, l, idem(2, 0, 0, 1, true), 0) // 2
	abort := record.EndTxnMarker{Type: record.ControlAbort}
	commit := record.EndTxnMarker{Type: record.ControlCommit}
	_, err := l.AppendMarker(1, 0, abort, 0, 0) // 3
	require.NoError(t, err)
	appendLeader(t, l, idem(1, 0, 2, 1, true), 0) // 4: 1's next transaction
	_, err = l.AppendMarker(2, 0, commit, 0, 0)   // 5
	require.NoError(t, err)
	_, err = l.AppendMarker(1, 0, abort, 0, 0) // 6
	require.NoError(t, err)

	want := []log.AbortedTxn{
		{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 2},
		{ProducerID: 1, FirstOffset: 4, LastOffset: 6, LastStableOffset: 7},
	}
	require.Equal(t, want, l.AbortedTransactions(0, 7))
	require.Equal(t, want[1:], l.AbortedTransactions(4, 7))
	require.Equal(t, want[:1], l.AbortedTransactions(0, 3))
	require.Empty(t, l.AbortedTransactions(7, 8))

	idx, err := d.ReadFile("t-0/00000000000000000000.txnindex")
	require.NoError(t, err)
	require.Len(t, idx, 2*34, "Kafka's 34-byte entries")

	// Lost index file: rebuilt from the markers on open.
	require.NoError(t, d.Remove("t-0/00000000000000000000.txnindex"))
	l2 := mustOpen(t, d, testConfig())
	require.Equal(t, want, l2.AbortedTransactions(0, 7))
	again, err := d.ReadFile("t-0/00000000000000000000.txnindex")
	require.NoError(t, err)
	require.Equal(t, idx, again)

	// Truncating below the second abort drops it from the index.
	_, err = l2.TruncateTo(5)
	require.NoError(t, err)
	require.Equal(t, want[:1], l2.AbortedTransactions(0, 7))
	snap, _ := l2.Producer(1)
	require.Equal(t, int64(4), snap.TxnFirstOffset, "1's second transaction is open again")
}

func TestMarkerFromAnOlderCoordinatorOrProducerEpochIsFenced(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, l, idem(1, 3, 0, 1, true), 0)
	_, err := l.AppendMarker(1, 3, record.EndTxnMarker{Type: record.ControlCommit, CoordinatorEpoch: 5}, 0, 0)
	require.NoError(t, err)
	_, err = l.AppendMarker(1, 3, record.EndTxnMarker{Type: record.ControlCommit, CoordinatorEpoch: 4}, 0, 0)
	require.ErrorIs(t, err, log.ErrTransactionCoordinatorFenced)
	_, err = l.AppendMarker(1, 2, record.EndTxnMarker{Type: record.ControlAbort, CoordinatorEpoch: 5}, 0, 0)
	require.ErrorIs(t, err, log.ErrInvalidProducerEpoch)
	// KIP-890: the marker bumps the epoch; the old epoch's batches are fenced.
	_, err = l.AppendMarker(1, 4, record.EndTxnMarker{Type: record.ControlCommit, CoordinatorEpoch: 5}, 0, 0)
	require.NoError(t, err)
	_, err = l.AppendAsLeader(idem(1, 3, 1, 1, true), 0)
	require.ErrorIs(t, err, log.ErrInvalidProducerEpoch)
}

func TestBatchesAClientMayNotWriteAreRefusedWithTheirKafkaError(t *testing.T) {
	l := mustOpen(t, newDisk(), testConfig())
	marker := record.EncodeEndTxnMarker(0, -1, 1, 0, 0, record.EndTxnMarker{Type: record.ControlCommit})
	_, err := l.AppendAsLeader(marker, 0)
	require.ErrorIs(t, err, log.ErrInvalidRecord)

	h := record.NewHeader()
	unknown := record.Values(0, []byte("x")).Clone()
	unknown[22] |= 5 // low byte of attributes: a codec no Kafka version assigns
	record.Batch(unknown).SetBaseOffset(0)
	copy(unknown[17:21], crcBytes(record.Batch(unknown)))
	_, err = l.AppendAsLeader(unknown, 0)
	require.ErrorIs(t, err, kerr.UnsupportedCompressionType)

	bad := vals("a", 1)
	bad[len(bad)-1] ^= 1
	_, err = l.AppendAsLeader(bad, 0)
	require.ErrorIs(t, err, kerr.CorruptMessage)

	two := append(vals("a", 1), vals("b", 1)...)
	_, err = l.AppendAsLeader(two, 0)
	require.ErrorIs(t, err, kerr.CorruptMessage, "a produce carries exactly one batch")

	cfg := testConfig()
	cfg.MessageBytesMax = 10
	small := mustOpen(t, newDisk(), cfg)
	_, err = small.AppendAsLeader(vals("a", 1), 0)
	require.ErrorIs(t, err, kerr.MessageTooLarge)

	codecs := []record.Compression{record.CompressionGzip, record.CompressionSnappy, record.CompressionLz4, record.CompressionZstd}
	for i, c := range codecs {
		ch := record.NewHeader()
		ch.Attributes = record.Attributes(c)
		cb, err := record.Encode(ch, []record.Record{{Value: []byte("compressed")}})
		require.NoError(t, err)
		appendLeader(t, l, cb, 0)
		require.Equal(t, int64(i+1), l.LogEndOffset(), "%s batches are stored as they came", c)
	}
	require.Equal(t, 0, len(l.AbortedTransactions(0, int64(len(codecs)))))
	require.Equal(t, h.ProducerID, record.NoProducerID)
}

func crcBytes(b record.Batch) []byte {
	c := b.ComputeCRC()
	return []byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)}
}

func TestBadConfigIsRefused(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytesMax = 0
	_, err := log.Open(newDisk(), cfg)
	require.Error(t, err)
	cfg = testConfig()
	cfg.Topic = "a/b"
	_, err = log.Open(newDisk(), cfg)
	require.Error(t, err)
}

func TestFollowerIgnoresAPartialBatchAtTheEndOfAFetch(t *testing.T) {
	leader := mustOpen(t, newDisk(), testConfig())
	appendLeader(t, leader, vals("a", 2), 0)
	appendLeader(t, leader, vals("b", 2), 0)
	data, _ := leader.Read(0, 1<<20, 4)
	f := mustOpen(t, newDisk(), testConfig())
	res, err := f.AppendAsFollower(data[:len(data)-5])
	require.NoError(t, err)
	require.Equal(t, int64(1), res.LastOffset)
	require.Equal(t, int64(2), f.LogEndOffset())

	garbage := append(append([]byte(nil), data[len(data)/2:]...), make([]byte, 64)...)
	_, err = f.AppendAsFollower(garbage)
	require.Error(t, err)
}

func TestLeftoverChecksumsOfARemovedSegmentDoNotMisalignANewOne(t *testing.T) {
	// A crash between removing a segment's files left its header checksums
	// behind; much later a segment of the same base offset is rolled.
	d := newDisk()
	cfg := testConfig()
	cfg.SegmentBytesMax = int64(len(vals("a", 1)))
	require.NoError(t, d.Append("t-0/00000000000000000001.hdrcrc", []byte("stale123")))
	require.NoError(t, d.Append("t-0/00000000000000000000.hdrcrc", []byte("stale456")))
	l := mustOpen(t, d, cfg)
	appendLeader(t, l, vals("a", 1), 0)
	appendLeader(t, l, vals("b", 1), 0) // rolls segment 1
	require.NoError(t, l.Flush())
	l2 := mustOpen(t, d, cfg)
	require.Equal(t, int64(2), l2.LogEndOffset())
	require.Equal(t, int64(-1), l2.Recovery().TruncatedAt)
}
