package envtest

import (
	"slices"
	"testing"

	"github.com/kafkasim/kafkasim/env"
)

// Nodes started with equal seeds draw equal streams; another seed, another
// stream.
func testRandStreamsEqualForEqualSeeds(t *testing.T, h Harness) {
	streams := map[string]*guarded[[]uint64]{}
	for _, s := range []struct {
		name string
		seed uint64
	}{{"seven", 7}, {"seven again", 7}, {"eight", 8}} {
		g := &guarded[[]uint64]{}
		streams[s.name] = g
		h.Start(s.seed, factory(proc{start: func(e env.Env) {
			var v []uint64
			for range 16 {
				v = append(v, e.Rand().Uint64())
			}
			g.set(v)
		}}))
	}
	waitFor(t, h, "three nodes drawing", func() bool {
		for _, g := range streams {
			if g.get() == nil {
				return false
			}
		}
		return true
	})
	seven, again, eight := streams["seven"].get(), streams["seven again"].get(), streams["eight"].get()
	if !slices.Equal(seven, again) {
		t.Errorf("two nodes seeded 7 drew different streams:\n%v\n%v", seven, again)
	}
	if slices.Equal(seven, eight) {
		t.Errorf("nodes seeded 7 and 8 drew the same stream %v", seven)
	}
}
