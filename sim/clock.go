package sim

import (
	"math/bits"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// clock is a node's view of time: world time plus a skew, running fast or
// slow by a drift in parts per million. All arithmetic is integer, so the
// same schedule gives the same readings on every machine.
type clock struct {
	skew      time.Duration // offset at driftBase
	driftPPM  int64
	driftBase env.Time // world time the current drift started
}

func (c *clock) local(now env.Time) env.Time {
	t := now.Add(c.skew)
	if c.driftPPM != 0 {
		t = t.Add(scale(now.Sub(c.driftBase), c.driftPPM, 1_000_000))
	}
	return t
}

func (c *clock) setDrift(now env.Time, ppm int64) {
	// Fold the drift so far into the skew, so readings stay continuous.
	c.skew = c.local(now).Sub(now)
	c.driftBase = now
	c.driftPPM = ppm
}

// worldDuration converts a local duration (a timer) into world time.
func (c *clock) worldDuration(d time.Duration) time.Duration {
	if c.driftPPM == 0 || d <= 0 {
		return d
	}
	return scale(d, 1_000_000, 1_000_000+c.driftPPM)
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
