package faults

import (
	"time"

	"pgregory.net/rapid"
)

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(n int) int { return rapid.IntRange(0, n-1).Draw(c.t, "choice") }

// Gen is a rapid generator of schedules of class c for the run o. A
// schedule is drawn as data — a list of faults, each a few small choices
// (which fault, the quiet gap before it, how long, which role) — and then
// paced and fitted to the class's promises exactly as Generate's are, so a
// failing property shrinks toward fewer faults, earlier and shorter, aimed
// at the first role: CHECKING.md found that drawing choices, not a seed, is what lets
// rapid shrink a simulation to one leader crash.
func Gen(c Class, o Options) *rapid.Generator[Schedule] {
	o = o.withDefaults()
	if len(newGenerator(c, o, func(n int) []string { return o.Brokers[:n] }).feats) == 0 {
		return rapid.Just(Schedule{}) // class none, or nothing in the run to hit
	}
	return rapid.Custom(func(t *rapid.T) Schedule {
		ch := rapidChooser{t}
		g := newGenerator(c, o, func(n int) []string {
			// A window of the brokers: shrinks toward the first ones.
			first := ch.intn(len(o.Brokers))
			var out []string
			for i := range 1 + ch.intn(n) {
				out = append(out, o.Brokers[(first+i)%len(o.Brokers)])
			}
			return out
		})
		type drawn struct {
			e   episode
			gap time.Duration
		}
		ds := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) drawn {
			ch := rapidChooser{t}
			f := g.feats[ch.intn(len(g.feats))]
			gap := ticks(ch, 0, 80)
			return drawn{f.draw(g, ch), gap}
		}), 0, o.EpisodesMax).Draw(t, "faults")
		var eps []episode
		var gaps []time.Duration
		for _, d := range ds {
			eps, gaps = chain(eps, gaps, d.e, d.gap)
		}
		return g.pace(eps, gaps)
	})
}
