package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/scenarios"
)

// The self-test plants each defect of the catalogue (package defect) in
// every broker and the controller, runs the claims — the matrix's own
// scenarios, unchanged — and requires one of them to fail within the seed
// bound. It reports, per defect, the first (seed, scenario) that caught
// it, in a fixed order so the answer does not depend on which worker was
// quick: first the claims most likely to show the defect (huntFirst) over
// every seed, seed by seed; then every other claim the same way.

// huntFirst are, per defect, the claims whose workload exercises it most
// directly: tried first at every seed, so the self-test is quick, but any
// claim may catch it.
var huntFirst = map[defect.Defect][]string{
	defect.HighWatermarkIgnoresFollowers:           {"acks-all-idempotent", "acks-all-retries"},
	defect.HighWatermarkIgnoresPendingISR:          {"acks-all-idempotent", "acks-all-retries", "acks-all-idempotent@power"},
	defect.ISRExpansionIgnoresHighWatermark:        {"acks-all-idempotent", "acks-all-retries", "acks-all-idempotent@power"},
	defect.FollowerTruncatesToHighWatermark:        {"acks-all-idempotent", "acks-all-retries"},
	defect.FetchServesPastHighWatermark:            {"acks-all-idempotent"},
	defect.SequenceGapAccepted:                     {"acks-all-idempotent"},
	defect.RetriedBatchAppendedAgain:               {"acks-all-idempotent"},
	defect.LastStableOffsetIgnoresOpenTransactions: {"eos-consume-transform-produce"},
	defect.AbortedTransactionsNotListed:            {"eos-consume-transform-produce"},
	defect.TxnStateAdoptedBeforeReplication:        {"eos-consume-transform-produce"},
	defect.TxnOffsetsCommittedOnAbort:              {"eos-consume-transform-produce"},
	defect.OffsetCommitAckedBeforeReplication:      {"pipeline-commit-before-process@network", "eos-consume-transform-produce", "pipeline-commit-before-process"},
	defect.OffsetFetchIgnoresPendingTransactions:   {"eos-consume-transform-produce"},
	defect.ElectionIgnoresISR:                      {"acks-all-idempotent", "acks-all-retries"},
	defect.CleanerPastHighWatermark:                {"compacted-latest-value", "compacted-latest-value@power"},
}

// selfTestResult is what the self-test found for one defect.
type selfTestResult struct {
	Defect    string   `json:"defect"`
	Caught    bool     `json:"caught"`
	Scenario  string   `json:"scenario,omitempty"`
	Seed      uint64   `json:"seed,omitempty"`
	Failure   string   `json:"failure,omitempty"`   // safety, liveness or panic
	Anomalies []string `json:"anomalies,omitempty"` // what broke the claim, or the panic
	Runs      int      `json:"runs"`                // runs until the catch (all of them if none)
	Repro     string   `json:"repro,omitempty"`
	Error     string   `json:"error,omitempty"` // a harness failure
}

// selfTestOrder is the runs the self-test tries for d, in order: the
// hunt-first claims at seeds 1..seeds, seed-major, then the other claims
// likewise.
func selfTestOrder(d defect.Defect, claims []scenarios.Scenario, seeds int) []job {
	var first, rest []scenarios.Scenario
	for _, name := range huntFirst[d] {
		if i := slices.IndexFunc(claims, func(s scenarios.Scenario) bool { return s.Name == name }); i >= 0 {
			first = append(first, claims[i])
		}
	}
	for _, s := range claims {
		if !slices.ContainsFunc(first, func(o scenarios.Scenario) bool { return o.Name == s.Name }) {
			rest = append(rest, s)
		}
	}
	var out []job
	for _, group := range [][]scenarios.Scenario{first, rest} {
		for seed := 1; seed <= seeds; seed++ {
			for _, s := range group {
				out = append(out, job{s: s, seed: uint64(seed), defects: defect.Of(d), index: len(out)})
			}
		}
	}
	return out
}

// hunt is the self-test's search for one defect.
type hunt struct {
	d        defect.Defect
	order    []job
	next     int // the next job index to hand out
	inflight int
	best     *outcome // the catching run with the lowest index so far
	err      error
}

// open reports whether the hunt has jobs left worth running: none past a
// catch (only earlier jobs may still beat it).
func (h *hunt) open() bool {
	limit := len(h.order)
	if h.best != nil {
		limit = h.best.index
	}
	return h.err == nil && h.next < limit
}

func (h *hunt) result() selfTestResult {
	res := selfTestResult{Defect: h.d.String(), Runs: len(h.order)}
	switch {
	case h.err != nil:
		res.Error = h.err.Error()
	case h.best != nil:
		r := h.best.r
		res.Caught, res.Scenario, res.Seed, res.Failure, res.Runs = true, r.Scenario, r.Seed, r.Failure, h.best.index+1
		res.Anomalies = caughtBy(r)
		res.Repro = fmt.Sprintf("kafkasim run --scenario %s --seed %d --defect %s", r.Scenario, r.Seed, h.d)
	}
	return res
}

// caughtBy names what failed a run: the anomalies that broke its claim
// (its guarantee, or the order it claims), or the panic's first line.
func caughtBy(r *scenarios.Result) []string {
	if r.Panic != "" {
		return []string{strings.SplitN(r.Panic, "\n", 2)[0]}
	}
	var out []string
	for _, a := range r.Verdict.Breaking(r.Checked) {
		out = append(out, a.Name)
	}
	if r.Order != checkers.NoOrder && !r.Verdict.OrderHeld {
		for _, a := range r.Verdict.Anomalies {
			if len(a.Breaks) == 0 && !slices.Contains(out, a.Name) {
				out = append(out, a.Name)
			}
		}
	}
	return out
}

// selfTest hunts the defects, each over at most seeds seeds; report is
// called per defect, in catalogue order, as each is decided. Workers move
// on to the next defect's runs while a defect's last runs finish.
func selfTest(ds []defect.Defect, seeds, parallel int, report func(selfTestResult)) []selfTestResult {
	var claims []scenarios.Scenario
	for _, s := range scenarios.List() {
		if !s.Twin() {
			claims = append(claims, s)
		}
	}
	hunts := make([]*hunt, len(ds))
	for i, d := range ds {
		hunts[i] = &hunt{d: d, order: selfTestOrder(d, claims, seeds)}
	}
	results := make([]selfTestResult, len(ds))
	decided := 0
	decide := func() {
		for decided < len(hunts) && !hunts[decided].open() && hunts[decided].inflight == 0 {
			results[decided] = hunts[decided].result()
			report(results[decided])
			decided++
		}
	}
	const stride = 1 << 24 // job index = hunt * stride + its own index
	current := 0
	next := func() (job, bool) {
		for current < len(hunts) && !hunts[current].open() {
			current++
		}
		if current == len(hunts) {
			return job{}, false
		}
		h := hunts[current]
		j := h.order[h.next]
		j.index += current * stride
		h.next++
		h.inflight++
		return j, true
	}
	runJobs(next, parallel, func(o outcome) {
		h := hunts[o.index/stride]
		o.index %= stride
		h.inflight--
		switch {
		case o.err != nil:
			h.err = o.err
		case !o.r.Holds && (h.best == nil || o.index < h.best.index):
			h.best = &o
		}
		decide()
	})
	decide()
	return results
}

func runSelfTest(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("selftest")
	seeds := fs.Int("seeds", 20, "seeds each defect may take (each seed runs every claim)")
	only := fs.String("defects", "", "comma-separated defects (default: the whole catalogue)")
	asJSON := fs.Bool("json", false, "print one JSON object per defect")
	parallel := fs.Int("parallel", 0, "worlds run at once (0: GOMAXPROCS)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if *seeds < 1 {
		return badInput(stderr, "selftest: --seeds %d < 1", *seeds)
	}
	ds := defect.All()
	if *only != "" {
		ds = nil
		for _, n := range strings.Split(*only, ",") {
			d, err := defect.Parse(strings.TrimSpace(n))
			if err != nil {
				return badInput(stderr, "selftest: %v", err)
			}
			ds = append(ds, d)
		}
	}
	missed := 0
	selfTest(ds, *seeds, *parallel, func(r selfTestResult) {
		if !r.Caught {
			missed++
		}
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(stdout, string(b))
			return
		}
		switch {
		case r.Error != "":
			fmt.Fprintf(stdout, "%-44s harness error: %s\n", r.Defect, r.Error)
		case r.Caught:
			fmt.Fprintf(stdout, "%-44s caught by %s seed %d after %d runs (%s: %s)\n  %s\n",
				r.Defect, r.Scenario, r.Seed, r.Runs, r.Failure, strings.Join(r.Anomalies, ", "), r.Repro)
		default:
			fmt.Fprintf(stdout, "%-44s NOT CAUGHT in %d runs (%d seeds of every claim)\n", r.Defect, r.Runs, *seeds)
		}
	})
	if *asJSON {
		if missed > 0 {
			return exitViolation
		}
		return exitOK
	}
	if missed > 0 {
		fmt.Fprintf(stdout, "selftest: %d of %d defects got past every claim\n", missed, len(ds))
		return exitViolation
	}
	fmt.Fprintf(stdout, "selftest: every one of %d planted defects was caught\n", len(ds))
	return exitOK
}
