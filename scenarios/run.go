package scenarios

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/sim"
)

// RunOptions shape one run.
type RunOptions struct {
	Seed uint64
	// Faults, if set, replaces the nemesis's schedule (run --faults F, and
	// shrinking).
	Faults *faults.Schedule
	// Messages, if positive, replaces the workload's message count
	// (shrinking).
	Messages int
	// TraceJSON receives the full trace as JSON lines.
	TraceJSON io.Writer
	// HTML, if set, is where the visualization of a non-linearizable
	// partition goes.
	HTML string
	// Defects are broker bugs planted for the checkers' self-test
	// (package defect); none in every other run.
	Defects defect.Set
	// DrainBudget bounds the drain phase; 0 means 30 s: a healed cluster
	// elects, rejoins and settles its transactions within seconds.
	DrainBudget time.Duration
}

// Result is one run's outcome.
type Result struct {
	Scenario string
	Seed     uint64
	// Checked is the guarantee judged, Order the order (if any); Holds
	// whether both held.
	Checked checkers.Guarantee
	Order   checkers.Order
	Holds   bool
	// Observed is the strongest guarantee that held.
	Observed checkers.Guarantee
	Verdict  checkers.Verdict
	// Kind of failure when !Holds: "safety", "liveness" or "panic".
	Failure   string
	Panic     string
	Stack     string // where the panic happened
	TraceHash string
	Schedule  faults.Schedule
	History   history.History
	Events    uint64
	Simulated time.Duration
	// Power is what the run put at stake; Probes what it reached.
	Power  Power
	Probes probe.Counts
	// Untested lists the scenario's probes this run never reached: a run
	// that holds with some is untested, not evidence.
	Untested []string
	// Fired is every action of the schedule as it fired or was skipped.
	Fired []faults.Fired
}

// Tested reports whether the run reached every probe its claim names.
func (r *Result) Tested() bool { return len(r.Untested) == 0 }

// Word is the run's verdict in one word: holds, untested (it held, but the
// run missed a probe its claim depends on) or violated.
func (r *Result) Word() string {
	switch {
	case !r.Holds:
		return "violated"
	case !r.Tested():
		return "untested"
	}
	return "holds"
}

// Summary is one line about the run.
func (r *Result) Summary() string {
	if r.Panic != "" {
		return "panic: " + r.Panic
	}
	return r.Verdict.Summary()
}

// Phases of a run, in simulated time.
const (
	bootstrapBudget = 30 * time.Second
	finalReadBudget = 30 * time.Second
)

// Run runs scenario s once with a seed: bootstrap the cluster, run the
// workload under the fault schedule, heal, drain, read the final state, and
// check the history. A panic of the code under test is a failed run with
// Failure "panic"; an error is for the harness itself (bad input, a cluster
// that never bootstrapped).
func Run(s Scenario, o RunOptions) (*Result, error) {
	rs, err := RunShared([]Scenario{s}, o)
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// RunShared runs the world the scenarios ss share once with a seed and
// judges each one's claim on it: the results are Run's for each, from one
// run's cost. ss must share their world (SameWorld): a claim and its weak
// twin that differ only in what they claim run the very same trace.
func RunShared(ss []Scenario, o RunOptions) ([]*Result, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	for _, t := range ss[1:] {
		if !SameWorld(ss[0], t) {
			return nil, fmt.Errorf("scenario %q does not run the world of scenario %q: only their claims may differ", t.Name, ss[0].Name)
		}
	}
	res, copts, err := runWorld(ss[0], o)
	if err != nil {
		return nil, err
	}
	verdicts := map[checkers.Order]checkers.Verdict{}
	out := make([]*Result, len(ss))
	for i, t := range ss {
		r := *res
		r.Scenario, r.Checked, r.Order = t.Name, t.Checked(), t.CheckedOrder()
		r.Untested = nil
		for _, p := range t.Probes {
			if r.Probes.Hits(p) == 0 {
				r.Untested = append(r.Untested, p)
			}
		}
		if r.Panic == "" {
			// The checker's verdict depends on the claimed order only.
			v, ok := verdicts[t.CheckedOrder()]
			if !ok {
				opts := copts
				opts.Order = t.CheckedOrder()
				if v, err = checkers.Check(r.History, opts); err != nil {
					return nil, fmt.Errorf("scenario %q seed %d: check: %w", t.Name, o.Seed, err)
				}
				verdicts[t.CheckedOrder()] = v
			}
			r.judge(v)
		}
		out[i] = &r
	}
	return out, nil
}

// judge sets the verdict on the run's claim from the checker's verdict.
func (r *Result) judge(v checkers.Verdict) {
	r.Verdict = v
	r.Observed = v.Observed
	orderHeld := r.Order == checkers.NoOrder || v.OrderHeld
	r.Holds = v.Holds(r.Checked) && orderHeld
	r.Failure = ""
	if !r.Holds {
		// Classify by what broke the judged guarantee, not by every
		// anomaly seen. Every order anomaly is a safety one.
		r.Failure = string(checkers.Liveness)
		for _, a := range v.Breaking(r.Checked) {
			if a.Class == checkers.Safety {
				r.Failure = string(checkers.Safety)
			}
		}
		if !orderHeld {
			r.Failure = string(checkers.Safety)
		}
	}
}

// runWorld is a run of s up to its check: the result without a verdict
// (but Failure "panic" if the code under test panicked), and the checker's
// options for its history.
func runWorld(s Scenario, o RunOptions) (*Result, checkers.Options, error) {
	var copts checkers.Options
	if err := CheckRun(s, o); err != nil {
		return nil, copts, err
	}
	if o.Messages > 0 {
		s.Workload.Messages = o.Messages // validated by CheckRun, bounds and all
	}
	class, _ := s.FaultClass()
	if o.DrainBudget == 0 {
		o.DrainBudget = 30 * time.Second
	}
	c := buildCluster(s, sim.Options{Seed: o.Seed, TraceJSON: o.TraceJSON}, o.Defects)
	rec := history.NewRecorder()
	wl := newWorkload(c, rec)
	wl.addNodes()
	c.w.AddNode(adminNode, func() env.Process { return &admin{} }).Start()
	c.w.OnProbe(wl.deriveProbes)
	res := &Result{Scenario: s.Name, Seed: o.Seed} // the claim is RunShared's to judge
	measured := false
	c.measure = func() {
		if measured {
			return
		}
		measured = true
		res.History = rec.History()
		var fired []faults.Fired
		if c.faults != nil {
			fired = c.faults.Fired()
		}
		res.Fired = fired
		res.Power = powerOf(s.Workload.Messages, res.History, fired)
		res.Probes = c.w.Probes()
	}

	if err := c.w.RunFor(2 * time.Second); err != nil {
		r, err := res.panicked(c, err)
		return r, copts, err
	}
	if err := c.createTopics(wl.topics(), bootstrapBudget); err != nil {
		r, err := res.harnessFailure(c, err)
		return r, copts, err
	}
	duration := time.Duration(s.Workload.DurationMs) * time.Millisecond
	start := c.w.Now()
	switch {
	case o.Faults != nil:
		res.Schedule = *o.Faults
	case s.FaultsSchedule != "":
		res.Schedule, _ = faults.ParseSchedule(s.FaultsSchedule) // checked by Validate
	default:
		res.Schedule = faults.Generate(c.w.Rand("nemesis"), class, c.nemesisOptions(wl.topics(), duration))
	}
	inst, err := faults.Install(c.w, res.Schedule, c, start)
	if err != nil {
		return nil, copts, fmt.Errorf("scenario %q: fault schedule: %w", s.Name, err)
	}
	c.faults = inst
	inst.OnFire(func(f faults.Fired) {
		if f.Skipped == "" {
			t := int64(f.At.Sub(c.w.Now())) + int64(c.w.Elapsed())
			var nodes []string
			if f.Node != "" {
				nodes = append(nodes, f.Node)
			}
			rec.Nemesis(t, t, f.Action.String(), nodes...)
		}
	})
	wl.start()
	c.sampleReplicas(rec, start.Add(duration))
	if err := c.w.RunUntil(start.Add(duration)); err != nil {
		r, err := res.panicked(c, err)
		return r, copts, err
	}
	c.w.Trace().Note("heal")
	inst.HealAll(c.faultNodes())
	c.w.Trace().Note("drain")
	if _, err := c.w.RunWhile(func() bool { return !wl.drained() }, o.DrainBudget); err != nil {
		r, err := res.panicked(c, err)
		return r, copts, err
	}
	wl.stop()
	c.w.Trace().Note("final-read")
	if err := wl.finalReads(); err != nil {
		r, err := res.panicked(c, err)
		return r, copts, err
	}
	if err := c.readReplicas(rec, finalReplicaRead); err != nil {
		return nil, copts, fmt.Errorf("scenario %q seed %d: %w", s.Name, o.Seed, err)
	}
	c.measure()
	copts = wl.checkOptions()
	copts.HTML = o.HTML
	res.finish(c)
	return res, copts, nil
}

func (r *Result) finish(c *cluster) {
	if c.measure != nil {
		c.measure()
	}
	r.TraceHash = c.w.Trace().HashString()
	r.Events = c.w.Events()
	r.Simulated = c.w.Elapsed()
}

// panicked turns a world failure (a panic in the code under test, or a
// livelock) into a failed result.
func (r *Result) panicked(c *cluster, err error) (*Result, error) {
	var pe *sim.PanicError
	var le *sim.LivelockError
	if !errors.As(err, &pe) && !errors.As(err, &le) {
		return nil, err
	}
	r.finish(c)
	r.Failure = "panic"
	r.Panic = err.Error()
	if pe != nil {
		r.Stack = pe.Stack
	}
	r.Holds = false
	r.Observed = checkers.None
	return r, nil
}

func (r *Result) harnessFailure(c *cluster, err error) (*Result, error) {
	if c.w.Err() != nil {
		return r.panicked(c, c.w.Err())
	}
	return nil, err
}

// Shrink minimizes a failing run's fault schedule and message count: a
// candidate still fails if it breaks the same guarantee with the same kind
// of failure. It returns the smallest schedule and size found.
func Shrink(s Scenario, seed uint64, failing *Result, runsMax int, log func(string, ...any)) (faults.Schedule, int, error) {
	var harnessErr error
	fails := func(sched faults.Schedule, size int) bool {
		r, err := Run(s, RunOptions{Seed: seed, Faults: &sched, Messages: size})
		if err != nil {
			harnessErr = err
			return false
		}
		return !r.Holds && r.Failure == failing.Failure
	}
	sched, size := faults.Shrink(failing.Schedule, s.Workload.Messages, fails, faults.ShrinkOptions{RunsMax: runsMax, SizeMin: 1, Log: log})
	return sched, size, harnessErr
}

func simOptions(seed uint64) sim.Options { return sim.Options{Seed: seed} }

func durationOf(s Scenario) time.Duration {
	return time.Duration(s.Workload.DurationMs) * time.Millisecond
}
