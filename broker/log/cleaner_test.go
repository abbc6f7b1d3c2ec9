package log_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
)

// Stories of the log cleaner (cleanup.policy=compact): what a round keeps,
// what it drops and when, and that no crash during a round loses the
// latest value of a key.

func compactConfig() log.Config {
	cfg := testConfig()
	cfg.Compact = true
	cfg.SegmentBytesMax = 200 // a few batches per segment
	return cfg
}

var cleaning = log.CleanerConfig{DeleteRetentionMs: 1000, MinCleanableDirtyRatio: 0.5}

// keyed builds a plain batch of one record key=value at timestamp ts; a
// value "" is a tombstone.
func keyed(ts int64, key, value string) []byte {
	h := record.NewHeader()
	h.FirstTimestamp = ts
	r := record.Record{Key: []byte(key)}
	if value != "" {
		r.Value = []byte(value)
	}
	b, err := record.Encode(h, []record.Record{r})
	if err != nil {
		panic(err)
	}
	return b
}

// entries reads the whole log as "offset:key=value" ("key=∅" for a
// tombstone, "offset:COMMIT" for a marker, "[a..b]" for an empty batch).
func entries(t tb, l *log.Log) []string {
	t.Helper()
	var out []string
	from := l.LogStartOffset()
	for from < l.LogEndOffset() {
		data, err := l.Read(from, 1<<20, l.LogEndOffset())
		require.NoError(t, err)
		if len(data) == 0 {
			break
		}
		batches, err := record.Split(data)
		require.NoError(t, err)
		for _, b := range batches {
			require.NoError(t, b.VerifyCRC())
			from = b.NextOffset()
			if b.RecordCount() == 0 {
				out = append(out, fmt.Sprintf("[%d..%d]", b.BaseOffset(), b.LastOffset()))
				continue
			}
			if b.IsControl() {
				m, err := b.EndTxnMarker()
				require.NoError(t, err)
				out = append(out, fmt.Sprintf("%d:%s", b.BaseOffset(), m.Type))
				continue
			}
			recs, err := b.DecodeRecords()
			require.NoError(t, err)
			for _, r := range recs {
				v := string(r.Value)
				if r.Value == nil {
					v = "∅"
				}
				out = append(out, fmt.Sprintf("%d:%s=%s", b.BaseOffset()+int64(r.OffsetDelta), r.Key, v))
			}
		}
	}
	return out
}

// latest is what a consumer rebuilding a table from the log ends with:
// key → value, tombstones deleting.
func latest(t tb, l *log.Log) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, e := range entries(t, l) {
		var off int64
		var kv string
		if _, err := fmt.Sscanf(e, "%d:%s", &off, &kv); err != nil {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if v == "∅" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func TestCleanerKeepsTheLatestValueOfEachKeyAtItsOffset(t *testing.T) {
	d := newDisk()
	l := mustOpen(t, d, compactConfig())
	for i, kv := range [][2]string{{"a", "1"}, {"b", "1"}, {"a", "2"}, {"c", "1"}, {"b", "2"}, {"a", "3"}, {"d", "1"}, {"c", "2"}, {"e", "1"}} {
		appendLeader(t, l, keyed(1000+int64(i), kv[0], kv[1]), 0)
	}
	require.Greater(t, len(l.SegmentBaseOffsets()), 2)
	before := latest(t, l)
	active := l.SegmentBaseOffsets()[len(l.SegmentBaseOffsets())-1]

	res, err := l.Clean(5000, l.LogEndOffset(), cleaning)
	require.NoError(t, err)
	require.True(t, res.Cleaned)
	require.Equal(t, active, res.End, "cleaned up to the active segment")
	l.CheckConsistency()
	require.Equal(t, before, latest(t, l), "the table a consumer rebuilds is the same")
	got := entries(t, l)
	for _, e := range got {
		var off int64
		fmt.Sscanf(e, "%d:", &off)
		if off < active-1 {
			require.NotContains(t, []string{"0:a=1", "1:b=1", "2:a=2", "3:c=1"}, e, "superseded values below the active segment go")
		}
	}
	require.Contains(t, got, "5:a=3", "the latest value keeps its offset")
	require.Equal(t, int64(0), l.LogStartOffset(), "compaction does not move the log start")
	require.Equal(t, active, l.CleanerCheckpoint())

	// Reads from inside a gap get the next batch; the log reopens as it is.
	data, err := l.Read(0, 1<<20, l.LogEndOffset())
	require.NoError(t, err)
	first, _, err := record.Next(data)
	require.NoError(t, err)
	require.Greater(t, first.BaseOffset(), int64(0), "offset 0 was cleaned away: the read starts at the next batch")
	l2 := mustOpen(t, d, compactConfig())
	require.Equal(t, got, entries(t, l2))
	require.Equal(t, l.LogEndOffset(), l2.LogEndOffset())

	// A second round right away has nothing dirty.
	res, err = l2.Clean(6000, l2.LogEndOffset(), cleaning)
	require.NoError(t, err)
	require.False(t, res.Cleaned)
}

func TestTombstoneStaysForDeleteRetentionAfterTheRoundThatKeptIt(t *testing.T) {
	l := mustOpen(t, newDisk(), compactConfig())
	appendLeader(t, l, keyed(1000, "a", "1"), 0)
	appendLeader(t, l, keyed(1001, "b", "1"), 0)
	appendLeader(t, l, keyed(1002, "a", ""), 0) // delete a
	for i := range 3 {
		appendLeader(t, l, keyed(1003+int64(i), "pad", fmt.Sprint(i)), 0)
	}
	res, err := l.Clean(10_000, l.LogEndOffset(), cleaning)
	require.NoError(t, err)
	require.True(t, res.Cleaned)
	require.Contains(t, entries(t, l), "2:a=∅", "the first round keeps the tombstone and sets its delete horizon")
	require.NotContains(t, entries(t, l), "0:a=1")

	// More writes make the log dirty again; a round before the horizon
	// (10,000 + delete.retention.ms) keeps the tombstone, one after drops it.
	for i := range 8 {
		appendLeader(t, l, keyed(2000+int64(i), "pad", fmt.Sprint(10+i)), 0)
	}
	res, err = l.Clean(10_500, l.LogEndOffset(), cleaning)
	require.NoError(t, err)
	require.True(t, res.Cleaned)
	require.Contains(t, entries(t, l), "2:a=∅", "a consumer that reads within delete.retention.ms still sees the delete")
	for i := range 8 {
		appendLeader(t, l, keyed(3000+int64(i), "pad", fmt.Sprint(20+i)), 0)
	}
	res, err = l.Clean(11_001, l.LogEndOffset(), cleaning)
	require.NoError(t, err)
	require.True(t, res.Cleaned)
	require.NotContains(t, entries(t, l), "2:a=∅")
	require.Equal(t, 1, res.TombstonesRemoved)
	require.Contains(t, entries(t, l), "1:b=1")
	l.CheckConsistency()
}

func TestCleanerStopsAtTheLastStableOffsetAndTheCompactionLag(t *testing.T) {
	fill := func() *log.Log {
		l := mustOpen(t, newDisk(), compactConfig())
		for i := range 12 {
			appendLeader(t, l, keyed(1000+int64(i)*100, "k", fmt.Sprint(i)), 0)
		}
		return l
	}
	// A high watermark at 5: the round rewrites only the segments wholly
	// below the one holding offset 5; what lies above stays as written.
	l := fill()
	res, err := l.Clean(5000, 5, cleaning)
	require.NoError(t, err)
	require.True(t, res.Cleaned)
	require.Equal(t, int64(4), res.End)
	got := entries(t, l)
	require.NotContains(t, got, "0:k=0")
	require.Contains(t, got, "3:k=3", "the round's last batch stays")
	for i := 4; i < 12; i++ {
		require.Contains(t, got, fmt.Sprintf("%d:k=%d", i, i), "at or above the first uncleanable offset")
	}

	// min.compaction.lag.ms: a segment holding a record younger than
	// now - lag is not cleaned, nor anything after it.
	l = fill()
	lag := cleaning
	lag.MinCompactionLagMs = 1000
	res, err = l.Clean(2500, l.LogEndOffset(), lag) // records from 1,600 (offset 6) on are too young
	require.NoError(t, err)
	require.True(t, res.Cleaned)
	require.Equal(t, int64(6), res.End)
	got = entries(t, l)
	require.NotContains(t, got, "4:k=4")
	for i := 5; i < 12; i++ {
		require.Contains(t, got, fmt.Sprintf("%d:k=%d", i, i))
	}
}

func TestCleanerDropsAbortedTransactionsAndKeepsEachProducersLastBatch(t *testing.T) {
	l := mustOpen(t, newDisk(), compactConfig())
	txn := func(pid int64, seq int32, key, value string) []byte {
		h := record.NewHeader()
		h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.FirstTimestamp = pid, 0, seq, 1000
		h.Attributes |= record.AttrTransactional
		b, err := record.Encode(h, []record.Record{{Key: []byte(key), Value: []byte(value)}})
		require.NoError(t, err)
		return b
	}
	appendLeader(t, l, txn(7, 0, "a", "aborted"), 0)
	appendLeader(t, l, txn(7, 1, "b", "aborted"), 0)
	_, err := l.AppendMarker(7, 0, record.EndTxnMarker{Type: record.ControlAbort}, 0, 1000)
	require.NoError(t, err)
	appendLeader(t, l, txn(8, 0, "a", "committed"), 0)
	_, err = l.AppendMarker(8, 0, record.EndTxnMarker{Type: record.ControlCommit}, 0, 1000)
	require.NoError(t, err)
	for i := range 6 {
		appendLeader(t, l, keyed(1000+int64(i), "pad", fmt.Sprint(i)), 0)
	}
	hw := l.LogEndOffset()
	res, err := l.Clean(5000, hw, cleaning)
	require.NoError(t, err)
	require.True(t, res.Cleaned)
	got := entries(t, l)
	require.NotContains(t, got, "0:a=aborted")
	require.Contains(t, got, "[1..1]", "producer 7's last data batch stays, emptied: its sequence survives")
	require.Contains(t, got, "2:ABORT", "the abort marker stays while the round saw its transaction's batches")
	require.Contains(t, got, "3:a=committed")
	require.Contains(t, got, "4:COMMIT")
	snap, ok := l.Producer(7)
	require.True(t, ok)
	require.Equal(t, int32(1), snap.LastSequence)
	require.Equal(t, 2, res.AbortedBatchesRemoved)
	l.CheckConsistency()
}

// crashingDisk fails every mutation after a budget of them: the process
// died there.
type crashingDisk struct {
	env.Disk
	budget int
}

var errCrashed = errors.New("crashed")

func (d *crashingDisk) spend() error {
	if d.budget <= 0 {
		return errCrashed
	}
	d.budget--
	return nil
}
func (d *crashingDisk) WriteAt(n string, p []byte, off int64) error {
	if err := d.spend(); err != nil {
		return err
	}
	return d.Disk.WriteAt(n, p, off)
}
func (d *crashingDisk) Append(n string, p []byte) error {
	if err := d.spend(); err != nil {
		return err
	}
	return d.Disk.Append(n, p)
}
func (d *crashingDisk) Sync(n string) error {
	if err := d.spend(); err != nil {
		return err
	}
	return d.Disk.Sync(n)
}
func (d *crashingDisk) Truncate(n string, size int64) error {
	if err := d.spend(); err != nil {
		return err
	}
	return d.Disk.Truncate(n, size)
}
func (d *crashingDisk) Rename(from, to string) error {
	if err := d.spend(); err != nil {
		return err
	}
	return d.Disk.Rename(from, to)
}
func (d *crashingDisk) Remove(n string) error {
	if err := d.spend(); err != nil {
		return err
	}
	return d.Disk.Remove(n)
}

func TestNoCrashOrPowerLossDuringARoundLosesTheLatestValueOfAKey(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := newDisk()
		cfg := compactConfig()
		cfg.FlushIntervalMessages = 1
		l := mustOpen(rt, d, cfg)
		n := rapid.IntRange(4, 30).Draw(rt, "records")
		for i := range n {
			k := fmt.Sprint("k", rapid.IntRange(0, 4).Draw(rt, "key"))
			v := fmt.Sprint(i)
			if rapid.IntRange(0, 5).Draw(rt, "tombstone") == 0 {
				v = ""
			}
			appendLeader(rt, l, keyed(1000+int64(i), k, v), 0)
		}
		want := latest(rt, l)
		cd := &crashingDisk{Disk: d, budget: rapid.IntRange(0, 60).Draw(rt, "ops before the crash")}
		l, err := log.Open(cd, cfg)
		if err == nil {
			_, err = l.Clean(1500, l.LogEndOffset(), cleaning)
		}
		if err != nil {
			require.True(rt, errors.Is(err, errCrashed), "%v", err)
		}
		if rapid.Bool().Draw(rt, "power loss") {
			d.PowerLoss(rapid.Bool().Draw(rt, "torn"), env.NewRand(rapid.Uint64().Draw(rt, "seed")))
		}
		l2, err := log.Open(d, cfg)
		require.NoError(rt, err)
		l2.CheckConsistency()
		require.Equal(rt, want, latest(rt, l2), "the table after recovery")
		// And it cleans on.
		res, err := l2.Clean(1500, l2.LogEndOffset(), cleaning)
		require.NoError(rt, err)
		l2.CheckConsistency()
		require.Equal(rt, want, latest(rt, l2))
		require.True(rt, res.Cleaned || res.End <= res.FirstDirty, "a round that cleaned nothing had nothing dirty")
	})
}

func TestACompactedFollowerCopiesItsLeadersGaps(t *testing.T) {
	leader := mustOpen(t, newDisk(), compactConfig())
	for i := range 9 {
		appendLeader(t, leader, keyed(1000+int64(i), fmt.Sprint("k", i%2), fmt.Sprint(i)), 0)
	}
	_, err := leader.Clean(5000, leader.LogEndOffset(), cleaning)
	require.NoError(t, err)
	data, err := leader.Read(0, 1<<20, leader.LogEndOffset())
	require.NoError(t, err)

	follower := mustOpen(t, newDisk(), compactConfig())
	_, err = follower.AppendAsFollower(data)
	require.NoError(t, err)
	follower.CheckConsistency()
	require.Equal(t, entries(t, leader), entries(t, follower))
	require.Equal(t, leader.LogEndOffset(), follower.LogEndOffset())

	strict := mustOpen(t, newDisk(), testConfig())
	_, err = strict.AppendAsFollower(data)
	require.ErrorIs(t, err, log.ErrUnexpectedAppendOffset, "a log that does not compact keeps offsets contiguous")
}

// A follower's fetch of a cleaned log can resume past a gap in a new leader
// epoch and span segments: the epoch it assigned for a batch of a later
// segment must not count as past the log end while the earlier segments
// are still being written (found by compacted-latest-value@power, seed 1:
// "epoch 2 starts at 160 past log end 159").
func TestACompactedFollowerAppendResumingPastAGapInANewEpochSpansSegments(t *testing.T) {
	leader := mustOpen(t, newDisk(), compactConfig())
	appendLeader(t, leader, keyed(1000, "a", "0"), 0)
	appendLeader(t, leader, keyed(1001, "b", "1"), 0) // superseded by 2, in epoch 1
	appendLeader(t, leader, keyed(1002, "b", "2"), 1)
	for i := range 8 {
		appendLeader(t, leader, keyed(1003+int64(i), "c", fmt.Sprint(3+i)), 1)
	}
	res, err := leader.Clean(5000, leader.LogEndOffset(), cleaning)
	require.NoError(t, err)
	require.Positive(t, res.RecordsRemoved)
	data, err := leader.Read(0, 1<<20, leader.LogEndOffset())
	require.NoError(t, err)

	cfg := compactConfig()
	cfg.SegmentBytesMax = 1 // a segment per batch
	follower := mustOpen(t, newDisk(), cfg)
	_, err = follower.AppendAsFollower(data)
	require.NoError(t, err)
	follower.CheckConsistency()
	require.Equal(t, entries(t, leader), entries(t, follower))
	require.Equal(t, []log.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}, follower.EpochEntries())
}

// A follower of a compacted topic may be told to truncate to an offset in
// a gap the cleaner left after the last batch a segment kept, before the
// next segment: the log then ends where that segment's batches end (found
// by compacted-unclean-election, seed 11: "no batch holds offset 34 below
// log end 376").
func TestTruncatingACompactedLogIntoAGapAtASegmentsEndDropsTheLaterSegments(t *testing.T) {
	l := mustOpen(t, newDisk(), compactConfig())
	// Segment 0 ends with records of b that later ones supersede.
	for i, k := range []string{"a", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b"} {
		appendLeader(t, l, keyed(1000+int64(i), k, fmt.Sprint(i)), 0)
	}
	bases := l.SegmentBaseOffsets()
	require.GreaterOrEqual(t, len(bases), 3, "segments %v", bases)
	_, err := l.Clean(5000, l.LogEndOffset(), cleaning)
	require.NoError(t, err)
	kept := entries(t, l)
	require.Equal(t, "0:a=0", kept[0])
	require.NotContains(t, kept, fmt.Sprintf("%d:b=%d", bases[1]-1, bases[1]-1), "the cleaner removed segment 0's last record")
	end, err := l.TruncateTo(bases[1] - 1)
	require.NoError(t, err)
	l.CheckConsistency()
	require.Equal(t, []int64{0}, l.SegmentBaseOffsets())
	require.Equal(t, end, l.LogEndOffset())
	require.Equal(t, []string{"0:a=0"}, entries(t, l), "segment 0 kept a alone")
}
