package sim

import (
	"math/bits"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// clock is a node's two clocks, as an operating system gives them: a
// monotonic clock (Env.Now: timeouts, delays, timers) that runs fast or slow
// by a drift in parts per million but never steps, and a wall clock
// (Env.WallClock: timestamps) that drifts with it and also steps when skewed,
// as a misconfigured NTP steps it. All arithmetic is integer, so the same
// schedule gives the same readings on every machine.
type clock struct {
	drift     time.Duration // monotonic offset from world time at driftBase
	driftPPM  int64
	driftBase env.Time      // world time the current drift started
	skew      time.Duration // wall clock minus monotonic clock
}

// monotonic is the node's monotonic reading at world time now.
func (c *clock) monotonic(now env.Time) env.Time {
	t := now.Add(c.drift)
	if c.driftPPM != 0 {
		t = t.Add(scale(now.Sub(c.driftBase), c.driftPPM, 1_000_000))
	}
	return t
}

// wall is the node's wall-clock reading at world time now.
func (c *clock) wall(now env.Time) env.Time { return c.monotonic(now).Add(c.skew) }

func (c *clock) setDrift(now env.Time, ppm int64) {
	// Fold the drift so far into the offset, so readings stay continuous.
	c.drift = c.monotonic(now).Sub(now)
	c.driftBase = now
	c.driftPPM = ppm
}

// worldDuration converts a local duration (a timer) into world time,
// rounding up: a positive timer always lets world time move, so the local
// clock has moved by at least d when it fires. Rounding down turned a 1 ns
// timer on a fast clock into 0 ns of world time; code that re-arms "until
// the deadline" then fired a million times at one instant (the livelock of
// eos-consume-transform-produce under clock faults).
func (c *clock) worldDuration(d time.Duration) time.Duration {
	if c.driftPPM == 0 || d <= 0 {
		return d
	}
	den := 1_000_000 + c.driftPPM
	w := scale(d, 1_000_000, den)
	if scale(w, den, 1_000_000) < d {
		w++
	}
	return w
}

// scale returns d*num/den for d >= 0, den > 0, without overflow.
func scale(d time.Duration, num, den int64) time.Duration {
	neg := d < 0
	if neg {
		d = -d
	}
	sign := int64(1)
	if num < 0 {
		num, sign = -num, -1
	}
	hi, lo := bits.Mul64(uint64(d), uint64(num))
	if hi >= uint64(den) {
		panic("sim: clock arithmetic overflow")
	}
	q, _ := bits.Div64(hi, lo, uint64(den))
	r := time.Duration(q) * time.Duration(sign)
	if neg {
		r = -r
	}
	return r
}
