package log_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
)

// TestARestartThatRecallsItsLastScanRecoversWhatAFreshScanRecovers drives
// a log of idempotent and transactional producers, whose transactions
// commit and abort, through rolls, syncs, crashes, power losses, bit rot,
// truncation and retention. Every restart goes through mustOpen, which
// opens the log on a copy of the disk without memos (env.Memos) too and
// requires the same state: the segments' batches (the markers' closed
// transaction offsets included), producer state, open and aborted
// transactions and the files left behind. Open recalls what the last
// scan verified and the producer state it derived, and replays only what
// came after; this is where a memo that outlived what it was derived from
// would show.
func TestARestartThatRecallsItsLastScanRecoversWhatAFreshScanRecovers(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := newDisk()
		cfg := testConfig()
		cfg.SegmentBytesMax = int64(rapid.IntRange(150, 1500).Draw(rt, "segmentBytes"))
		l := mustOpen(rt, d, cfg)
		rnd := env.NewRand(rapid.Uint64().Draw(rt, "seed"))
		const producers = 3
		type producer struct {
			seq  int32
			open bool // a transaction is open
		}
		var ps [producers + 1]producer // by producer id, 1 to 3
		// refresh reads the producers' state back from the log, after
		// a restart or anything that may have removed batches.
		refresh := func() {
			for pid := int64(1); pid <= producers; pid++ {
				ps[pid] = producer{}
				if s, ok := l.Producer(pid); ok {
					ps[pid] = producer{seq: s.LastSequence + 1, open: s.TxnFirstOffset >= 0}
				}
			}
		}
		epoch := int32(0)
		restart := func() {
			l = mustOpen(rt, d, cfg)
			refresh()
			// A flipped bit in a batch's leader epoch, behind a flipped
			// header checksum, may leave the log in a higher epoch.
			epoch = max(epoch, l.LatestEpoch())
		}
		for s, steps := 0, rapid.IntRange(1, 80).Draw(rt, "steps"); s < steps; s++ {
			switch op := rapid.IntRange(0, 11).Draw(rt, "op"); {
			case op <= 4: // a producer's batch, or a plain one
				pid := int64(rapid.IntRange(0, producers).Draw(rt, "producer"))
				n := rapid.IntRange(1, 3).Draw(rt, "records")
				b := vals(fmt.Sprintf("s%d-", s), n)
				if pid > 0 {
					p := &ps[pid]
					p.open = p.open || rapid.Bool().Draw(rt, "transactional")
					b = idem(pid, 0, p.seq, n, p.open)
					p.seq += int32(n)
				}
				r := appendLeader(rt, l, b, epoch)
				require.False(rt, r.Duplicate)
			case op == 5: // a marker ends a producer's transaction
				pid := int64(rapid.IntRange(1, producers).Draw(rt, "producer"))
				if !ps[pid].open {
					continue
				}
				m := record.EndTxnMarker{Type: record.ControlAbort, CoordinatorEpoch: 1}
				if rapid.Bool().Draw(rt, "commit") {
					m.Type = record.ControlCommit
				}
				_, err := l.AppendMarker(pid, 0, m, epoch, 2000)
				require.NoError(rt, err)
				ps[pid].open = false
			case op == 6:
				require.NoError(rt, l.Flush())
				if rapid.IntRange(0, 3).Draw(rt, "newEpoch") == 0 {
					epoch++
				}
			case op == 7: // process crash: the page cache survives
				restart()
			case op == 8: // power loss
				d.PowerLoss(rapid.Bool().Draw(rt, "torn"), rnd)
				restart()
			case op == 9: // bit rot, found at the next start
				d.Corrupt("t-0/", rnd)
				restart()
			case op == 10: // retention below a random offset
				x := rapid.Int64Range(l.LogStartOffset(), l.LogEndOffset()).Draw(rt, "deleteBelow")
				require.NoError(rt, l.IncrementLogStartOffset(x))
				_, err := l.DeleteSegmentsBelow(x)
				require.NoError(rt, err)
				refresh()
			case op == 11: // a follower's truncation
				x := rapid.Int64Range(l.LogStartOffset(), l.LogEndOffset()).Draw(rt, "truncateTo")
				_, err := l.TruncateTo(x)
				require.NoError(rt, err)
				refresh()
			}
			l.CheckConsistency()
		}
		restart()
	})
}
