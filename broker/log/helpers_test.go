package log_test

import (
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim/disk"
)

// tb is what the helpers need of *testing.T and *rapid.T alike.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	FailNow()
}

func testConfig() log.Config {
	return log.Config{
		Topic:                    "t",
		Partition:                0,
		SegmentBytesMax:          1 << 20,
		FlushIntervalMessages:    0,
		KIP360ProducerIDRecovery: true,
	}
}

// mustOpen opens the log of cfg on d, both ways (openBothWays), and checks
// its consistency.
func mustOpen(t tb, d env.Disk, cfg log.Config) *log.Log {
	t.Helper()
	l, err := openBothWays(t, d, cfg)
	require.NoError(t, err)
	l.CheckConsistency()
	return l
}

// openBothWays opens the log of cfg on d. On a simulated disk it opens it
// twice: on a copy of the disk first, which keeps none of the memos a
// recovery scan leaves (env.Memos), so its scan starts from each
// segment's first byte; then on the disk itself, resuming where the last
// scan stopped. Both must fail alike, or recover the same state and leave
// the same files.
func openBothWays(t tb, d env.Disk, cfg log.Config) (*log.Log, error) {
	t.Helper()
	sd, simulated := d.(*disk.Disk)
	if !simulated {
		return log.Open(d, cfg)
	}
	fresh := sd.Clone()
	afresh, freshErr := log.Open(fresh, cfg)
	l, err := log.Open(d, cfg)
	if freshErr != nil || err != nil {
		require.Equal(t, fmt.Sprint(freshErr), fmt.Sprint(err), "opened on a copy without memos, and with them")
		return l, err
	}
	require.True(t, log.SameState(afresh, l), "the log recovered from memos is not the log recovered afresh:\nafresh %+v\nmemos  %+v", afresh.Recovery(), l.Recovery())
	names := sd.List("")
	require.Equal(t, fresh.List(""), names, "files after recovery")
	for _, name := range names {
		want, _ := fresh.Peek(name)
		got, _ := sd.Peek(name)
		require.Equal(t, want, got, "file %s after recovery", name)
	}
	require.Equal(t, fresh.UnsyncedBytes(), sd.UnsyncedBytes(), "unsynced bytes after recovery")
	return l, nil
}

// vals builds a plain batch of values "prefix0", "prefix1", ...
func vals(prefix string, n int) []byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, "%s%d", prefix, i)
	}
	return record.Values(1000, vs...)
}

// idem builds an idempotent batch of n records.
func idem(pid int64, epoch int16, seq int32, n int, transactional bool) []byte {
	h := record.NewHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	h.FirstTimestamp = 1000
	if transactional {
		h.Attributes |= record.AttrTransactional
	}
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i].Value = fmt.Appendf(nil, "p%d-s%d", pid, int64(seq)+int64(i))
	}
	b, err := record.Encode(h, recs)
	if err != nil {
		panic(err)
	}
	return b
}

func appendLeader(t tb, l *log.Log, b []byte, epoch int32) log.AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader(b, epoch)
	require.NoError(t, err)
	l.CheckConsistency()
	return res
}

// readValues reads everything below limit and returns "offset:value" per
// record, control batches shown as "offset:COMMIT"/"offset:ABORT".
func readValues(t tb, l *log.Log, from, limit int64) []string {
	t.Helper()
	var out []string
	for from < limit {
		data, err := l.Read(from, 1<<20, limit)
		require.NoError(t, err)
		if len(data) == 0 {
			break
		}
		batches, err := record.Split(data)
		require.NoError(t, err)
		for _, b := range batches {
			require.NoError(t, b.Validate())
			if b.IsControl() {
				m, err := b.EndTxnMarker()
				require.NoError(t, err)
				out = append(out, fmt.Sprintf("%d:%s", b.BaseOffset(), m.Type))
				from = b.NextOffset()
				continue
			}
			recs, err := b.DecodeRecords()
			require.NoError(t, err)
			for _, r := range recs {
				off := b.BaseOffset() + int64(r.OffsetDelta)
				if off >= from {
					out = append(out, fmt.Sprintf("%d:%s", off, r.Value))
				}
			}
			from = b.NextOffset()
		}
	}
	return out
}

func newDisk() *disk.Disk { return disk.New() }
