package log_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
)

// modelBatch is what the test believes one batch in the log is.
type modelBatch struct {
	base   int64
	values []string
	epoch  int32
	seq    int32 // first sequence of producer 1, or -1 for a plain batch
}

// TestRandomAppendsTruncationsCrashesAndPowerLosses drives a log with random
// leader appends (plain and idempotent), follower truncations, flushes,
// process crashes and power losses (torn or not), and moves of its start —
// IncrementLogStartOffset, DeleteSegmentsBelow, TruncateFullyAndStartAt —
// against a model. Whatever happens: the log is always a prefix of what was
// appended (minus what was truncated); its start is the model's, never
// going back and surviving every crash; no batch below the recovery point
// is ever lost (with log.flush.interval.messages=1 that is every
// acknowledged batch); reads see exactly the model's records from the start
// on and nothing below it; the epoch cache is the one derived from the
// batches the segments hold, truncated from the start, after every step;
// a process crash changes no derived state; and producer state still
// recognises the last batch as a duplicate while its segment remains.
func TestRandomAppendsTruncationsCrashesAndPowerLosses(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := newDisk()
		cfg := testConfig()
		cfg.SegmentBytesMax = int64(rapid.IntRange(100, 600).Draw(rt, "segmentBytes"))
		cfg.FlushIntervalMessages = int64(rapid.SampledFrom([]int{0, 1, 1, 3}).Draw(rt, "flushInterval"))
		l := mustOpen(rt, d, cfg)
		rnd := env.NewRand(rapid.Uint64().Draw(rt, "seed"))

		var model []modelBatch
		// modelStart is the log start; modelFloor the log end while the
		// model holds no batch (TruncateFullyAndStartAt sets both).
		var modelStart, modelFloor int64
		epoch := int32(0)
		nextSeq := int32(0)
		modelEnd := func() int64 {
			if len(model) == 0 {
				return modelFloor
			}
			m := model[len(model)-1]
			return m.base + int64(len(m.values))
		}
		resetSeq := func() {
			nextSeq = 0
			for i := len(model) - 1; i >= 0; i-- {
				if model[i].seq >= 0 {
					nextSeq = model[i].seq + int32(len(model[i].values))
					break
				}
			}
		}
		// check compares the log with the model: start and end, every
		// record from the start on, nothing below it, and the epoch cache:
		// above the start, one entry for the first batch of each epoch; at
		// the start, the epoch of the last batch at or below it — there
		// must be one while the segments hold such a batch, and there may
		// be one (kept from before those segments went) when they do not.
		check := func() {
			l.CheckConsistency()
			start, end := l.LogStartOffset(), l.LogEndOffset()
			require.Equal(rt, modelStart, start, "log start")
			require.Equal(rt, modelEnd(), end, "log end")
			firstBase := l.SegmentBaseOffsets()[0]
			require.LessOrEqual(rt, firstBase, start, "a segment holding the start was removed")
			var want []string
			var epochs []log.EpochEntry
			heldAtOrBelowStart := false
			for _, m := range model {
				for i, v := range m.values {
					if off := m.base + int64(i); off >= start {
						want = append(want, fmt.Sprintf("%d:%s", off, v))
					}
				}
				if len(epochs) == 0 || epochs[len(epochs)-1].Epoch != m.epoch {
					epochs = append(epochs, log.EpochEntry{Epoch: m.epoch, StartOffset: m.base})
				}
				if m.base >= firstBase && m.base <= start {
					heldAtOrBelowStart = true
				}
			}
			require.Equal(rt, want, readValues(rt, l, start, end))
			if start > 0 {
				_, err := l.Read(start-1, 1<<20, end)
				require.ErrorIs(rt, err, log.ErrOffsetOutOfRange, "a read below the start")
			}
			// LeaderEpochFileCache.truncateFromStart, by hand.
			n := 0
			for n < len(epochs) && epochs[n].StartOffset <= start {
				n++
			}
			if n > 0 {
				epochs = append([]log.EpochEntry{{Epoch: epochs[n-1].Epoch, StartOffset: start}}, epochs[n:]...)
			}
			got := l.EpochEntries()
			if len(epochs) > 0 && epochs[0].StartOffset == start && (len(got) == 0 || got[0].StartOffset != start) {
				require.False(rt, heldAtOrBelowStart, "no epoch entry at the start %d, the segments hold batches below it: %v", start, got)
				epochs = epochs[1:]
			}
			if len(epochs) == 0 {
				epochs = nil
			}
			require.Equal(rt, epochs, got)
		}
		// reconcile checks the reopened log against the model and cuts the
		// model to what survived.
		reconcile := func(synced int64, lossAllowed bool) {
			l.CheckConsistency()
			end := l.LogEndOffset()
			require.Equal(rt, modelStart, l.LogStartOffset(), "the log start did not survive")
			require.LessOrEqual(rt, end, modelEnd(), "log grew past what was appended")
			require.GreaterOrEqual(rt, end, synced, "a synced batch was lost")
			if !lossAllowed {
				require.Equal(rt, modelEnd(), end, "a crash without power loss lost data")
			}
			keep := 0
			for keep < len(model) && model[keep].base < end {
				keep++
			}
			model = model[:keep]
			if modelEnd() != end {
				// What recovery found ended below the checkpointed start:
				// the log starts afresh there (LogLoader).
				require.True(rt, lossAllowed && end == modelStart, "recovery cut inside a batch")
				require.Equal(rt, []int64{modelStart}, l.SegmentBaseOffsets())
				model, modelFloor = nil, modelStart
			}
			check()
			resetSeq()
			firstBase := l.SegmentBaseOffsets()[0]
			for i := len(model) - 1; i >= 0; i-- {
				if model[i].seq >= 0 {
					if model[i].base < firstBase {
						break // its segment is gone, and the producer with it
					}
					// The last idempotent batch is still recognised.
					r, err := l.AppendAsLeader(idem(1, 0, model[i].seq, len(model[i].values), false), epoch)
					require.NoError(rt, err)
					require.True(rt, r.Duplicate, "producer state lost the last batch")
					require.Equal(rt, model[i].base, r.FirstOffset)
					break
				}
			}
		}

		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for s := 0; s < steps; s++ {
			switch op := rapid.IntRange(0, 12).Draw(rt, "op"); {
			case op <= 4: // append
				if rapid.IntRange(0, 9).Draw(rt, "newEpoch") == 0 {
					epoch++
				}
				n := rapid.IntRange(1, 4).Draw(rt, "n")
				var b []byte
				seq := int32(-1)
				vs := make([]string, n)
				if rapid.Bool().Draw(rt, "idempotent") {
					seq = nextSeq
					b = idem(1, 0, seq, n, false)
					for i := range vs {
						vs[i] = fmt.Sprintf("p1-s%d", int64(seq)+int64(i))
					}
				} else {
					b = vals(fmt.Sprintf("s%d-", s), n)
					for i := range vs {
						vs[i] = fmt.Sprintf("s%d-%d", s, i)
					}
				}
				r, err := l.AppendAsLeader(b, epoch)
				require.NoError(rt, err)
				require.False(rt, r.Duplicate)
				require.Equal(rt, modelEnd(), r.FirstOffset)
				model = append(model, modelBatch{base: r.FirstOffset, values: vs, epoch: epoch, seq: seq})
				if seq >= 0 {
					nextSeq = seq + int32(n)
				}
				if cfg.FlushIntervalMessages == 1 {
					require.Zero(rt, l.UnflushedMessages())
				}
			case op == 5: // follower truncation, never below the start
				first := 0
				for first < len(model) && model[first].base+int64(len(model[first].values)) <= modelStart {
					first++
				}
				if first == len(model) {
					continue
				}
				k := rapid.IntRange(first, len(model)-1).Draw(rt, "truncateBatch")
				to := max(model[k].base, modelStart)
				end, err := l.TruncateTo(to)
				require.NoError(rt, err)
				if model[k].base >= modelStart {
					require.Equal(rt, model[k].base, end)
					model = model[:k]
				} else {
					// The batch holding the start began below it: the log
					// is truncated fully and starts again at the start.
					require.Equal(rt, modelStart, end)
					model, modelFloor = nil, modelStart
				}
				resetSeq()
				check()
				// Epochs of truncated batches are gone from the cache, so
				// the leader appends in the newest epoch it still has or
				// later: keep epoch as is (it never goes back).
			case op == 6:
				require.NoError(rt, l.Flush())
			case op == 7: // process crash: page cache survives, derived state too
				synced := l.RecoveryPoint()
				type derived struct {
					bases    []int64
					epochs   []log.EpochEntry
					ids      []int64
					producer log.ProducerSnapshot
					fu       int64
					fuOK     bool
				}
				snap := func() derived {
					p, _ := l.Producer(1)
					fu, ok := l.FirstUnstableOffset()
					return derived{l.SegmentBaseOffsets(), l.EpochEntries(), l.ProducerIDs(), p, fu, ok}
				}
				before := snap()
				l = mustOpen(rt, d, cfg)
				after := snap()
				if n := len(before.epochs); n > 0 && len(after.epochs) == n-1 && before.epochs[n-1].StartOffset == l.LogEndOffset() {
					// Open drops an entry starting at the log end (as
					// Kafka's LogLoader does), here the one the start
					// collapsed into when no batch below it remains.
					before.epochs = before.epochs[:n-1]
					if n == 1 {
						before.epochs = nil
					}
				}
				require.Equal(rt, before, after, "a restart changed derived state")
				reconcile(synced, false)
			case op == 8 || op == 12: // power loss
				synced := l.RecoveryPoint()
				d.PowerLoss(rapid.Bool().Draw(rt, "torn"), rnd)
				l = mustOpen(rt, d, cfg)
				reconcile(synced, true)
			case op == 9: // DeleteRecords
				x := rapid.Int64Range(max(modelStart-2, 0), modelEnd()+2).Draw(rt, "startAt")
				err := l.IncrementLogStartOffset(x)
				if x > modelEnd() {
					require.ErrorIs(rt, err, log.ErrOffsetOutOfRange)
				} else {
					require.NoError(rt, err)
					modelStart = max(modelStart, x)
				}
				require.LessOrEqual(rt, l.RecoveryPoint(), l.LogEndOffset())
				check()
			case op == 10: // retention
				before, end := l.SegmentBaseOffsets(), l.LogEndOffset()
				x := rapid.Int64Range(0, modelEnd()+2).Draw(rt, "deleteBelow")
				n, err := l.DeleteSegmentsBelow(x)
				require.NoError(rt, err)
				after := l.SegmentBaseOffsets()
				want := slices.Clone(before[n:])
				if min(x, modelStart) == end && before[len(before)-1] < end {
					// Every record was below the start: the log rolled
					// first, so the segment holding them could go
					// (Kafka's deleteSegments), and the new one stays.
					want = append(want, end)
				}
				require.Equal(rt, want, after, "only the first segments go")
				if len(after) > 1 {
					require.Greater(rt, after[1], min(x, modelStart), "a segment wholly below the start stayed")
				}
				check()
			case op == 11: // a snapshot installed
				x := rapid.Int64Range(max(modelStart-3, 0), modelEnd()+5).Draw(rt, "startFreshAt")
				require.NoError(rt, l.TruncateFullyAndStartAt(x))
				model, modelStart, modelFloor = nil, x, x
				resetSeq()
				require.Equal(rt, []int64{x}, l.SegmentBaseOffsets())
				require.Empty(rt, l.ProducerIDs())
				check()
			}
		}
	})
}

// TestRecoveryOfArbitraryDamageYieldsAValidPrefix flips random bytes and
// cuts random lengths off a log's files — the log's start moved and its
// first segments removed, or not; recovery must always produce a
// consistent log whose batches from its start on are a prefix of the
// original's from there (a start checkpoint lost to the damage lets the
// start fall back to the first segment's base; it is never above the
// batches that remain unless the log started afresh there).
func TestRecoveryOfArbitraryDamageYieldsAValidPrefix(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := newDisk()
		cfg := testConfig()
		cfg.SegmentBytesMax = 300
		l := mustOpen(rt, d, cfg)
		n := rapid.IntRange(1, 20).Draw(rt, "batches")
		for i := 0; i < n; i++ {
			appendLeader(rt, l, vals(fmt.Sprintf("b%d-", i), 1+i%3), int32(i/4))
		}
		if rapid.Bool().Draw(rt, "restart") {
			// A restart leaves memos of what its recovery verified
			// (env.Memos), and more is appended after it: damage must be
			// found on either side of where the memos end.
			l = mustOpen(rt, d, cfg)
			more := rapid.IntRange(0, 5).Draw(rt, "more")
			for i := n; i < n+more; i++ {
				appendLeader(rt, l, vals(fmt.Sprintf("b%d-", i), 1+i%3), int32(i/4))
			}
		}
		want := readValues(rt, l, 0, l.LogEndOffset())
		if rapid.Bool().Draw(rt, "moveStart") {
			start := rapid.Int64Range(0, l.LogEndOffset()).Draw(rt, "start")
			require.NoError(rt, l.IncrementLogStartOffset(start))
			_, err := l.DeleteSegmentsBelow(start)
			require.NoError(rt, err)
			l.CheckConsistency()
		}
		rnd := env.NewRand(rapid.Uint64().Draw(rt, "seed"))
		for k := rapid.IntRange(1, 4).Draw(rt, "faults"); k > 0; k-- {
			if rapid.Bool().Draw(rt, "corrupt") {
				d.Corrupt("t-0/", rnd)
			} else {
				names := d.List("t-0/")
				name := rapid.SampledFrom(names).Draw(rt, "file")
				size, _ := d.Size(name)
				if size > 0 {
					require.NoError(rt, d.Truncate(name, rapid.Int64Range(0, size-1).Draw(rt, "cut")))
				}
			}
		}
		l2 := mustOpen(rt, d, cfg)
		got := readValues(rt, l2, l2.LogStartOffset(), l2.LogEndOffset())
		from := 0
		for from < len(want) && !strings.HasPrefix(want[from], fmt.Sprintf("%d:", l2.LogStartOffset())) {
			from++
		}
		want = want[from:]
		require.LessOrEqual(rt, len(got), len(want))
		for i := range got {
			require.Equal(rt, want[i], got[i])
		}
		// And the log keeps working.
		r, err := l2.AppendAsLeader(vals("after", 1), l2.LatestEpoch()+1)
		require.NoError(rt, err)
		require.Equal(rt, l2.LogEndOffset()-1, r.FirstOffset)
		require.Equal(rt, record.NoProducerID, int64(-1))
	})
}
