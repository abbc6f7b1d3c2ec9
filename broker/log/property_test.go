package log_test

import (
	"fmt"
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
// process crashes and power losses (torn or not), against a model. Whatever
// happens: the log is always a prefix of what was appended (minus what was
// truncated); no batch below the recovery point is ever lost (with
// log.flush.interval.messages=1 that is every acknowledged batch); recovery
// leaves a consistent index, an epoch cache derived from the batches, and
// producer state that still recognises the last batch as a duplicate.
func TestRandomAppendsTruncationsCrashesAndPowerLosses(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := newDisk()
		cfg := testConfig()
		cfg.SegmentBytesMax = int64(rapid.IntRange(100, 600).Draw(rt, "segmentBytes"))
		cfg.FlushIntervalMessages = int64(rapid.SampledFrom([]int{0, 1, 1, 3}).Draw(rt, "flushInterval"))
		l := mustOpen(rt, d, cfg)
		rnd := env.NewRand(rapid.Uint64().Draw(rt, "seed"))

		var model []modelBatch
		epoch := int32(0)
		nextSeq := int32(0)
		modelEnd := func() int64 {
			if len(model) == 0 {
				return 0
			}
			m := model[len(model)-1]
			return m.base + int64(len(m.values))
		}
		// reconcile checks the reopened log against the model and cuts the
		// model to what survived.
		reconcile := func(synced int64, lossAllowed bool) {
			l.CheckConsistency()
			end := l.LogEndOffset()
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
			require.Equal(rt, modelEnd(), end, "recovery cut inside a batch")
			var want []string
			var epochs []log.EpochEntry
			for _, m := range model {
				for i, v := range m.values {
					want = append(want, fmt.Sprintf("%d:%s", m.base+int64(i), v))
				}
				if len(epochs) == 0 || epochs[len(epochs)-1].Epoch != m.epoch {
					epochs = append(epochs, log.EpochEntry{Epoch: m.epoch, StartOffset: m.base})
				}
			}
			require.Equal(rt, want, readValues(rt, l, 0, end))
			require.Equal(rt, epochs, l.EpochEntries())
			nextSeq = 0
			for i := len(model) - 1; i >= 0; i-- {
				if model[i].seq >= 0 {
					nextSeq = model[i].seq + int32(len(model[i].values))
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
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
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
			case op == 5: // follower truncation
				if len(model) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(model)-1).Draw(rt, "truncateBatch")
				end, err := l.TruncateTo(model[k].base)
				require.NoError(rt, err)
				require.Equal(rt, model[k].base, end)
				model = model[:k]
				l.CheckConsistency()
				nextSeq = 0
				for i := len(model) - 1; i >= 0; i-- {
					if model[i].seq >= 0 {
						nextSeq = model[i].seq + int32(len(model[i].values))
						break
					}
				}
				// Epochs of truncated batches are gone from the cache, so
				// the leader appends in the newest epoch it still has or
				// later: keep epoch as is (it never goes back).
			case op == 6:
				require.NoError(rt, l.Flush())
			case op == 7: // process crash: page cache survives
				synced := l.RecoveryPoint()
				l = mustOpen(rt, d, cfg)
				reconcile(synced, false)
			default: // power loss
				synced := l.RecoveryPoint()
				d.PowerLoss(rapid.Bool().Draw(rt, "torn"), rnd)
				l = mustOpen(rt, d, cfg)
				reconcile(synced, true)
			}
		}
	})
}

// TestRecoveryOfArbitraryDamageYieldsAValidPrefix flips random bytes and
// cuts random lengths off a log's files; recovery must always produce a
// consistent log whose batches are a prefix of the original.
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
		want := readValues(rt, l, 0, l.LogEndOffset())
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
		l2, err := log.Open(d, cfg)
		require.NoError(rt, err)
		l2.CheckConsistency()
		got := readValues(rt, l2, 0, l2.LogEndOffset())
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
