package checkers

import (
	"testing"

	"github.com/kafkasim/kafkasim/history"
	"pgregory.net/rapid"
)

// TestResumedComparisonsOfGrowingSamplesSayWhatAFreshWalkSays drives
// agreement as the checker does: two replicas sampled again and again,
// each sample's batches a view of one array that only grows (or a fresh
// array when the log was cut), compared under limits that rise and fall.
// Every answer must be the one a walk from offset 0 gives.
func TestResumedComparisonsOfGrowingSamplesSayWhatAFreshWalkSays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		compacted := rapid.Bool().Draw(t, "compacted")
		ag := agreement{}
		var arrs [2][]history.ReplicaBatch
		var next [2]int64
		grow := func(r int) {
			if rapid.IntRange(0, 9).Draw(t, "cut") == 0 {
				arrs[r] = append([]history.ReplicaBatch(nil), arrs[r][:len(arrs[r])/2]...) // a fresh array
				if n := len(arrs[r]); n > 0 {
					next[r] = arrs[r][n-1].Last + 1
				} else {
					next[r] = 0
				}
			}
			for range rapid.IntRange(0, 3).Draw(t, "appended") {
				if compacted && rapid.IntRange(0, 3).Draw(t, "skip") == 0 {
					next[r] += rapid.Int64Range(1, 3).Draw(t, "gap")
				}
				n := rapid.Int64Range(1, 3).Draw(t, "records")
				epoch := rapid.Int32Range(0, 1).Draw(t, "epoch")
				arrs[r] = append(arrs[r], history.ReplicaBatch{Base: next[r], Last: next[r] + n - 1, Epoch: epoch, CRC: uint32(epoch)})
				next[r] += n
			}
		}
		for range rapid.IntRange(1, 30).Draw(t, "samples") {
			grow(0)
			grow(1)
			x := &history.Replica{Broker: "broker-0", Batches: arrs[0]}
			y := &history.Replica{Broker: "broker-1", Batches: arrs[1]}
			limit := rapid.Int64Range(0, max(next[0], next[1])+1).Draw(t, "limit")
			got := ag.divergence(x, y, limit, compacted)
			var want string
			if compacted {
				want, _, _ = divergenceCompacted(x, y, limit, 0, 0)
			} else {
				want, _, _ = divergence(x, y, limit, 0, 0)
			}
			if got != want {
				t.Fatalf("limit %d: resumed %q, fresh %q\nx %v\ny %v", limit, got, want, x.Batches, y.Batches)
			}
		}
	})
}
