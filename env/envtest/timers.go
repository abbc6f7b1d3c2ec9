package envtest

import (
	"slices"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// A process sets timers out of order, two with the same delay; they fire in
// order of deadline (the tie in the order set), none before its delay has
// passed on the local clock, and the clock never runs backwards.
func testTimersFireInDeadlineOrder(t *testing.T, h Harness) {
	type firing struct {
		name    string
		delay   time.Duration
		set, at env.Time
	}
	var fired guarded[[]firing]
	timers := []struct {
		name  string
		delay time.Duration
	}{
		{"c", 30 * time.Millisecond},
		{"a", 10 * time.Millisecond},
		{"d", 30 * time.Millisecond}, // same delay as c, set after it
		{"b", 20 * time.Millisecond},
		{"now", 0},
	}
	h.Start(factory(proc{start: func(e env.Env) {
		for _, tm := range timers {
			set := e.Now()
			e.AfterFunc(tm.delay, func() {
				fired.update(func(f *[]firing) {
					*f = append(*f, firing{tm.name, tm.delay, set, e.Now()})
				})
			})
		}
	}}))

	waitFor(t, h, "all five timers firing", func() bool { return len(fired.get()) == len(timers) })

	var order []string
	var last env.Time
	for _, f := range fired.get() {
		order = append(order, f.name)
		if got := f.at.Sub(f.set); got < f.delay {
			t.Errorf("timer %s fired %v after it was set, sooner than its delay %v", f.name, got, f.delay)
		}
		if f.at < last {
			t.Errorf("clock ran backwards: timer %s saw %v after an earlier timer saw %v", f.name, f.at, last)
		}
		last = f.at
	}
	if want := []string{"now", "a", "b", "c", "d"}; !slices.Equal(order, want) {
		t.Errorf("timers fired in order %v, want deadline order %v", order, want)
	}
}

// Cancel reports true only for a timer still pending, which then never
// fires; cancelling a fired, cancelled or never-issued timer reports false.
func testCancelReportsWhetherPending(t *testing.T, h Harness) {
	var j journal
	h.Start(factory(proc{start: func(e env.Env) {
		// Processes keep a zero TimerID to mean "no timer" and cancel it
		// without checking; that must be harmless.
		j.add("cancel zero id: %v", e.Cancel(0))
		j.add("cancel never-issued id: %v", e.Cancel(^env.TimerID(0)))

		early := e.AfterFunc(1*time.Millisecond, func() { j.add("early fired") })
		e.AfterFunc(5*time.Millisecond, func() { j.add("cancel fired early: %v", e.Cancel(early)) })

		doomed := e.AfterFunc(20*time.Millisecond, func() { j.add("doomed fired") })
		e.AfterFunc(10*time.Millisecond, func() {
			j.add("cancel pending doomed: %v", e.Cancel(doomed))
			j.add("cancel doomed again: %v", e.Cancel(doomed))
		})
		// Fires well after doomed would have: by then doomed had its chance.
		e.AfterFunc(60*time.Millisecond, func() { j.add("sentinel fired") })
	}}))

	waitFor(t, h, "the sentinel timer firing", func() bool { return j.has("sentinel fired") })

	want := []string{
		"cancel zero id: false",
		"cancel never-issued id: false",
		"early fired",
		"cancel fired early: false",
		"cancel pending doomed: true",
		"cancel doomed again: false",
		"sentinel fired",
	}
	if got := j.all(); !slices.Equal(got, want) {
		t.Errorf("journal:\n got %q\nwant %q", got, want)
	}
}

// Two timers fall due at once; the first to run cancels the second, whose
// deadline has passed and whose firing may already be on its way. Cancel
// reports true and the second never runs.
func testCancelStopsATimerAlreadyDue(t *testing.T, h Harness) {
	var j journal
	h.Start(factory(proc{start: func(e env.Env) {
		var second env.TimerID
		e.AfterFunc(0, func() { j.add("first fired; cancel second: %v", e.Cancel(second)) })
		second = e.AfterFunc(0, func() { j.add("second fired") })
		e.AfterFunc(20*time.Millisecond, func() { j.add("sentinel fired") })
	}}))

	waitFor(t, h, "the sentinel timer firing", func() bool { return j.has("sentinel fired") })

	want := []string{"first fired; cancel second: true", "sentinel fired"}
	if got := j.all(); !slices.Equal(got, want) {
		t.Errorf("journal:\n got %q\nwant %q", got, want)
	}
}

// In a healthy world the two clocks agree: the wall clock reads Unix time
// (after 2020) and, over a timer's delay, moves as far as the monotonic
// clock does, give or take scheduling.
func testWallClockMovesWithTheMonotonicClock(t *testing.T, h Harness) {
	type reading struct{ mono, wall env.Time }
	var got guarded[[]reading]
	h.Start(factory(proc{start: func(e env.Env) {
		got.update(func(r *[]reading) { *r = append(*r, reading{e.Now(), e.WallClock()}) })
		e.AfterFunc(50*time.Millisecond, func() {
			got.update(func(r *[]reading) { *r = append(*r, reading{e.Now(), e.WallClock()}) })
		})
	}}))
	waitFor(t, h, "the timer firing", func() bool { return len(got.get()) == 2 })
	r := got.get()
	if epoch2020 := env.Time(1_577_836_800 * int64(time.Second)); r[0].wall < epoch2020 {
		t.Errorf("wall clock reads %v, before 2020: not Unix time", r[0].wall)
	}
	mono, wall := r[1].mono.Sub(r[0].mono), r[1].wall.Sub(r[0].wall)
	if d := wall - mono; d < -20*time.Millisecond || d > 20*time.Millisecond {
		t.Errorf("over a 50 ms timer the monotonic clock moved %v and the wall clock %v", mono, wall)
	}
}
