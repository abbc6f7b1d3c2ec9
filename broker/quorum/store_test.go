package quorum

import (
	"testing"

	"github.com/stretchr/testify/require"

	klog "github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/sim/disk"
)

// writeLog appends one batch per entry, as a voter does, and syncs.
func writeLog(t *testing.T, d *disk.Disk, epochs ...int32) {
	t.Helper()
	l, err := klog.Open(d, klog.Config{Topic: Topic, Partition: 0, SegmentBytesMax: 1 << 20})
	require.NoError(t, err)
	for i, ep := range epochs {
		_, err := l.AppendAsFollower(encodeEntries([]raft.Entry{{Offset: int64(i), Epoch: ep, Data: []byte{byte(i)}}}, voters))
		require.NoError(t, err)
	}
	require.NoError(t, l.Flush())
}

func epochsOf(es []raft.Entry) []int32 {
	var out []int32
	for _, en := range es {
		out = append(out, en.Epoch)
	}
	return out
}

// A flipped bit in a batch's leader epoch (outside Kafka's CRC, and here
// behind a header sidecar entry that rotted too, seed 6225 of acks0@disk)
// once reached the raft core as a log whose epochs went 1, 129, 1, and
// its invariant failed the broker. The log is cut at the earlier batch of
// the drop instead, and the leader sends the rest again.
func TestAMetadataLogWhoseEpochDropsIsCutAtTheEarlierBatch(t *testing.T) {
	d := disk.New()
	writeLog(t, d, 1, 1, 129, 1, 1)
	l, es, err := openLog(d, 0)
	var cut *EpochCorruptionError
	require.ErrorAs(t, err, &cut)
	require.Equal(t, EpochCorruptionError{Offset: 3, Epoch: 1, Prev: 129, CutAt: 2}, *cut)
	require.Equal(t, []int32{1, 1}, epochsOf(es))
	require.Equal(t, int64(2), l.LogEndOffset())

	// The cut is on disk: the next open finds a good log.
	_, es, err = openLog(d, 0)
	require.NoError(t, err)
	require.Equal(t, []int32{1, 1}, epochsOf(es))
}

func TestAFlipDownwardCutsFromTheBatchBeforeIt(t *testing.T) {
	d := disk.New()
	writeLog(t, d, 2, 3, 1, 3)
	_, es, err := openLog(d, 0)
	require.ErrorAs(t, err, new(*EpochCorruptionError))
	require.Equal(t, []int32{2}, epochsOf(es))
}

func TestEpochsBelowTheSnapshotsAreCut(t *testing.T) {
	d := disk.New()
	writeLog(t, d, 1, 2)
	_, es, err := openLog(d, 2)
	require.ErrorAs(t, err, new(*EpochCorruptionError))
	require.Empty(t, es)
}

func TestAGoodLogOpensWhole(t *testing.T) {
	d := disk.New()
	writeLog(t, d, 1, 1, 2, 5, 5)
	_, es, err := openLog(d, 1)
	require.NoError(t, err)
	require.Equal(t, []int32{1, 1, 2, 5, 5}, epochsOf(es))
}
