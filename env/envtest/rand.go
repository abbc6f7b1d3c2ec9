package envtest

import (
	"slices"
	"testing"

	"github.com/kafkasim/kafkasim/env"
)

// Two worlds made from the same seed give their nodes the same random
// streams, so a run replays; a node's stream differs from its neighbour's,
// and from the stream of the same node in a world with another seed.
func testRandStreamsFollowTheWorldSeed(t *testing.T, world func(seed uint64) Harness) {
	// draw starts two nodes in h and returns the first numbers each drew.
	draw := func(h Harness) (first, second []uint64) {
		var streams [2]guarded[[]uint64]
		for i := range streams {
			h.Start(factory(proc{start: func(e env.Env) {
				var v []uint64
				for range 16 {
					v = append(v, e.Rand().Uint64())
				}
				streams[i].set(v)
			}}))
		}
		waitFor(t, h, "both nodes drawing", func() bool {
			return streams[0].get() != nil && streams[1].get() != nil
		})
		return streams[0].get(), streams[1].get()
	}

	a1, a2 := draw(world(7))
	b1, b2 := draw(world(7))
	c1, _ := draw(world(8))

	if !slices.Equal(a1, b1) || !slices.Equal(a2, b2) {
		t.Errorf("two worlds seeded 7 gave their nodes different streams:\n%v %v\n%v %v", a1, a2, b1, b2)
	}
	if slices.Equal(a1, a2) {
		t.Errorf("two nodes of one world drew the same stream %v", a1)
	}
	if slices.Equal(a1, c1) {
		t.Errorf("the first node drew the same stream %v in worlds seeded 7 and 8", a1)
	}
}
