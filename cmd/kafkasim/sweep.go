package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/scenarios"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// parseRange reads "A-B" (or "N").
func parseRange(s string) (lo, hi uint64, err error) {
	a, b, found := strings.Cut(s, "-")
	if lo, err = strconv.ParseUint(a, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("--seeds %q: want A-B", s)
	}
	hi = lo
	if found {
		if hi, err = strconv.ParseUint(b, 10, 64); err != nil || hi < lo {
			return 0, 0, fmt.Errorf("--seeds %q: want A-B with A <= B", s)
		}
	}
	return lo, hi, nil
}

// parseShard reads "I/N" (1 <= I <= N).
func parseShard(s string) (i, n uint64, err error) {
	a, b, found := strings.Cut(s, "/")
	i, err1 := strconv.ParseUint(a, 10, 64)
	n, err2 := strconv.ParseUint(b, 10, 64)
	if !found || err1 != nil || err2 != nil || n == 0 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 1 <= I <= N", s)
	}
	return i, n, nil
}

// shardSeeds is shard I of N's share of the seeds lo..hi: the seeds s with
// s mod N == I-1, the first of them and how many there are.
func shardSeeds(lo, hi, si, sn uint64) (first, count uint64) {
	first = lo + (si-1+sn-lo%sn)%sn
	if first <= hi {
		count = (hi-first)/sn + 1
	}
	return first, count
}

func runSweep(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("sweep")
	sf := addScenarioFlags(fs)
	seedsFlag := fs.String("seeds", "1-100", "seed range A-B")
	shardFlag := fs.String("shard", "1/1", "this shard I of N: runs the seeds s with s mod N == I-1")
	asJSON := fs.Bool("json", false, "JSON lines even on a terminal")
	parallel := fs.Int("parallel", 0, "worlds run at once (0: GOMAXPROCS)")
	junit := fs.String("junit", "", "also write the results as JUnit XML to this file (a test case per seed)")
	saveDir := fs.String("save-failures", "", "shrink the claim's failing seeds (the lowest 10) and save each into this directory as a regression file")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	s, err := sf.load()
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	lo, hi, err := parseRange(*seedsFlag)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	si, sn, err := parseShard(*shardFlag)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	// The shard's seeds, drawn one at a time.
	first, count := shardSeeds(lo, hi, si, sn)
	next, drawn := first, uint64(0)
	seeds := func() (job, bool) {
		if drawn == count {
			return job{}, false
		}
		j := job{s: s, seed: next}
		drawn++
		next += sn
		return j, true
	}
	f, isFile := stdout.(*os.File)
	terminal := isFile && term.IsTerminal(int(f.Fd())) && !*asJSON
	var bar *progressbar.ProgressBar
	if terminal {
		bar = progressbar.NewOptions64(int64(min(count, 1<<62)), progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(s.Name),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
	}
	var st stats
	var failing []string
	var failures []failure
	cases := map[uint64]junitCase{}
	runJobs(seeds, *parallel, func(o outcome) {
		if bar != nil {
			_ = bar.Add(1)
		}
		line := repro(sf, nil, o.seed, "", 0)
		cases[o.seed] = sweepCase(s, o, line)
		if o.err != nil {
			st.errors++
			if !terminal {
				b, _ := json.Marshal(map[string]any{"scenario": s.Name, "seed": o.seed, "error": o.err.Error()})
				fmt.Fprintln(stdout, string(b))
			}
			return
		}
		st.add(o.r)
		if !o.r.Holds {
			failures = append(failures, failure{s: s, seed: o.seed, r: o.r})
			failing = append(failing, fmt.Sprintf("seed %d: %s (%s) — %s", o.seed, o.r.Failure, anomalyNames(o.r), line))
		}
		if !terminal {
			b, _ := json.Marshal(toJSON(o.r, line))
			fmt.Fprintln(stdout, string(b))
		}
	})
	suite := junitSuite{Name: fmt.Sprintf("kafkasim sweep %s, seeds %s", s.Name, *seedsFlag)}
	for _, seed := range slices.Sorted(maps.Keys(cases)) {
		suite.add(cases[seed])
	}
	if err := writeJUnit(*junit, suite); err != nil {
		fmt.Fprintln(stderr, err)
		return exitBadInput
	}
	if *saveDir != "" {
		if err := saveFailures(*saveDir, failures, stderr); err != nil {
			fmt.Fprintln(stderr, err)
			return exitBadInput
		}
	}
	if terminal {
		for _, f := range failing {
			fmt.Fprintln(stdout, f)
		}
		fmt.Fprintf(stdout, "sweep %s: %d seeds, %d violated, %d untested, %d errors; acknowledged median %.2f, 10th percentile %.2f\n",
			s.Name, st.runs, st.violated, st.untested, st.errors, st.ackQuantile(0.5), st.ackQuantile(0.1))
		fmt.Fprintf(stdout, "probes: %s\n", scenarios.ProbesLine(st.probes))
	}
	if st.errors > 0 {
		return exitBadInput
	}
	if st.violated > 0 {
		return exitViolation
	}
	return exitOK
}

// stats sums many runs of one scenario: verdicts, acknowledged
// fractions, probe hits, and per probe the runs that reached it.
type stats struct {
	runs, violated, untested, errors int
	acked                            []float64
	probes                           probe.Counts
	reached                          map[string]int
}

func (st *stats) add(r *scenarios.Result) {
	st.runs++
	switch r.Word() {
	case "violated":
		st.violated++
	case "untested":
		st.untested++
	}
	st.acked = append(st.acked, r.Power.AcknowledgedFraction())
	st.probes = st.probes.Add(r.Probes)
	if st.reached == nil {
		st.reached = map[string]int{}
	}
	for _, c := range r.Probes {
		st.reached[c.Name]++
	}
}

// ackQuantile is the q-quantile of the runs' acknowledged fractions
// (nearest rank; 0 with no runs).
func (st *stats) ackQuantile(q float64) float64 {
	return quantile(slices.Sorted(slices.Values(st.acked)), q)
}

func anomalyNames(r *scenarios.Result) string {
	var names []string
	for _, a := range r.Verdict.Anomalies {
		names = append(names, a.Name)
	}
	if r.Panic != "" {
		names = append(names, "panic")
	}
	return strings.Join(names, ",")
}
