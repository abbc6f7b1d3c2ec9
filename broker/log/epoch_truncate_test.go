package log_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kafkasim/kafkasim/broker/log"
)

// A replica that became leader (assigning its epoch at the log end) and
// lost leadership before appending keeps an epoch entry no other replica
// has. As a follower, the new leader tells it its log diverged at exactly
// its log end: truncating "to the log end" must drop that entry, or every
// fetch reports the same divergence again and the follower never rejoins
// the ISR (found by eos-consume-transform-produce seed 64: the transaction
// log's partition stayed at an ISR of one, below min.insync.replicas).
func TestTruncateToTheLogEndDropsAnEpochNeverWrittenTo(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, testConfig())
	appendLeader(t, l, vals("a", 2), 0) // 0..1 in epoch 0
	require.NoError(t, l.AssignEpoch(2))
	require.Equal(t, int32(2), l.LatestEpoch())

	end, err := l.TruncateTo(l.LogEndOffset())
	require.NoError(t, err)
	require.Equal(t, int64(2), end, "no batch is cut")
	require.Equal(t, int32(0), l.LatestEpoch(), "epoch 2 never held a record")
	require.Equal(t, []log.EpochEntry{{Epoch: 0, StartOffset: 0}}, l.EpochEntries())

	again := mustOpen(t, d, testConfig()) // a restart

	require.Equal(t, int32(0), again.LatestEpoch(), "the checkpoint says so too")
}
