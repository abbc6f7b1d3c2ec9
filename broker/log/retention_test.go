package log_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kafkasim/kafkasim/broker/record"
)

// Retention by time goes segment by segment, never past the high
// watermark; once every record is expired and committed the active segment
// goes too: DeleteSegmentsBelow rolls a new one first, so the log is empty
// from its end on and takes appends there.
func TestRetentionTakesEveryExpiredCommittedSegmentTheActiveOneLast(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytesMax = 200
	l := mustOpen(t, newDisk(), cfg)
	for i := range 9 {
		appendLeader(t, l, record.Values(1000+int64(i)*100, fmt.Appendf(nil, "v%d", i)), 0)
	}
	segs := l.SegmentBaseOffsets()
	require.Greater(t, len(segs), 2)
	end := l.LogEndOffset()

	require.Equal(t, segs[1], l.RetentionStart(1250, 100, -1, end), "only the first segment's records are older than 1150")
	require.Equal(t, int64(0), l.RetentionStart(5000, 100, -1, 0), "nothing past the high watermark")
	require.Equal(t, segs[len(segs)-1], l.RetentionStart(5000, 100, -1, end-1), "the active segment waits for its records to commit")
	start := l.RetentionStart(5000, 100, -1, end)
	require.Equal(t, end, start, "all expired and committed: the active segment goes too")

	require.NoError(t, l.IncrementLogStartOffset(start))
	n, err := l.DeleteSegmentsBelow(start)
	require.NoError(t, err)
	require.Equal(t, len(segs), n)
	require.Equal(t, []int64{end}, l.SegmentBaseOffsets(), "a fresh active segment at the log end")
	l.CheckConsistency()
	r := appendLeader(t, l, record.Values(6000, []byte("after")), 0)
	require.Equal(t, end, r.FirstOffset)
}
