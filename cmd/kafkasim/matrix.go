package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/report"
	"github.com/kafkasim/kafkasim/scenarios"
)

// DefaultMatrixSeeds is the seeds every scenario of a plain `kafkasim
// matrix` runs: each claim on every one, each weak twin too, so its catch
// rate is measured, not just its first catch.
const DefaultMatrixSeeds = 200

// Power targets the matrix reports against: a claim's verdict is evidence
// when its runs acknowledged most of what they meant to send, and a weak
// twin's when it is caught on most seeds.
const (
	targetAckedMedian = 0.8
	targetAckedP10    = 0.3
	targetCatchRate   = 0.5
)

// row is one scenario's line of the matrix.
type row struct {
	Scenario  string   `json:"scenario"`
	Faults    string   `json:"faults"`
	Claims    string   `json:"claims"`
	Checked   string   `json:"checked"`
	Twin      bool     `json:"twin"`
	Seeds     int      `json:"seeds"`
	Violated  int      `json:"violated"`
	Untested  int      `json:"untested"` // runs that held without reaching every probe the claim names
	CatchRate float64  `json:"catch_rate,omitempty"`
	FirstSeed uint64   `json:"first_failing_seed,omitempty"`
	Failure   string   `json:"failure,omitempty"`
	Anomalies string   `json:"anomalies,omitempty"`
	Observed  string   `json:"observed"` // the strongest guarantee that held on every seed
	AckMedian float64  `json:"acknowledged_median"`
	AckP10    float64  `json:"acknowledged_p10"`
	Required  []string `json:"required_probes,omitempty"`
	// NeverReached lists required probes no seed reached: the claim is
	// untested.
	NeverReached []string       `json:"never_reached,omitempty"`
	Reached      map[string]int `json:"probes_reached"` // per probe, the seeds that reached it
	Probes       probe.Counts   `json:"probes"`         // hits summed over the seeds
	Pass         bool           `json:"pass"`
	Result       string         `json:"result"`
	Repro        string         `json:"repro,omitempty"`
	Error        string         `json:"error,omitempty"`
	// Held and Acked are what `kafkasim merge` needs to combine shards
	// into the row one run would give: per guarantee whether every seed
	// held it, and every seed's acknowledged fraction, sorted.
	Held  map[checkers.Guarantee]bool `json:"held"`
	Acked []float64                   `json:"acknowledged_fractions"`
	// Shard is "I/N" on a shard's row (--shard I/N, N > 1): merge checks
	// it was given every shard of one split, once.
	Shard string `json:"shard,omitempty"`
	st    stats
}

func newRow(s scenarios.Scenario) *row {
	return &row{Scenario: s.Name, Faults: s.Faults, Claims: s.Claim(), Checked: s.Judged(), Twin: s.Twin(),
		Held: map[checkers.Guarantee]bool{checkers.ExactlyOnce: true, checkers.AtLeastOnce: true, checkers.AtMostOnce: true}}
}

// observed is the strongest guarantee that held on every seed so far.
func (rw *row) observed() string {
	for _, g := range []checkers.Guarantee{checkers.ExactlyOnce, checkers.AtLeastOnce, checkers.AtMostOnce} {
		if rw.Held[g] {
			return string(g)
		}
	}
	return string(checkers.None)
}

// judge fills the row's verdict once every seed has run: a claim held
// when no seed violated it and every probe it names was reached on some
// seed (else untested); a twin passes when some seed caught it.
func (rw *row) judge(s scenarios.Scenario) {
	rw.Observed = rw.observed()
	rw.Violated, rw.Untested = rw.st.violated, rw.st.untested
	rw.AckMedian, rw.AckP10 = rw.st.ackQuantile(0.5), rw.st.ackQuantile(0.1)
	rw.Acked = slices.Sorted(slices.Values(rw.st.acked))
	rw.NeverReached = nil
	rw.Probes, rw.Reached = rw.st.probes, rw.st.reached
	if rw.Reached == nil {
		rw.Reached = map[string]int{}
	}
	rw.Required = s.Probes
	for _, p := range s.Probes {
		if rw.Reached[p] == 0 {
			rw.NeverReached = append(rw.NeverReached, p)
		}
	}
	if rw.Seeds > 0 && rw.Twin {
		rw.CatchRate = float64(rw.Violated) / float64(rw.Seeds)
	}
	switch {
	case rw.Error != "":
		rw.Result = "ERROR: " + rw.Error
	case rw.Twin && rw.Violated > 0:
		rw.Pass, rw.Result = true, fmt.Sprintf("caught %d/%d (%.0f%%: %s)", rw.Violated, rw.Seeds, 100*rw.CatchRate, rw.Anomalies)
	case rw.Twin:
		rw.Result = fmt.Sprintf("NOT CAUGHT in %d seeds", rw.Seeds)
	case rw.Violated > 0:
		rw.Result = fmt.Sprintf("VIOLATED %d/%d: %s (%s)", rw.Violated, rw.Seeds, rw.Failure, rw.Anomalies)
	case len(rw.NeverReached) > 0:
		rw.Result = fmt.Sprintf("UNTESTED: %s never reached in %d seeds", strings.Join(rw.NeverReached, ", "), rw.Seeds)
	default:
		rw.Pass = true
		rw.Result = fmt.Sprintf("held %d/%d", rw.Seeds, rw.Seeds)
		if rw.Untested > 0 {
			rw.Result += fmt.Sprintf(" (%d at stake)", rw.Seeds-rw.Untested)
		}
	}
}

// weak says how a row falls short of the power targets ("" when it does
// not): a claim whose runs acknowledged little, a twin caught rarely.
func (rw *row) weak() string {
	switch {
	case rw.Error != "":
		return ""
	case rw.Twin && rw.CatchRate < targetCatchRate:
		return fmt.Sprintf("caught on %.0f%% of seeds (target %.0f%%)", 100*rw.CatchRate, 100*targetCatchRate)
	case !rw.Twin && (rw.AckMedian < targetAckedMedian || rw.AckP10 < targetAckedP10):
		return fmt.Sprintf("acknowledged median %.2f, 10th percentile %.2f (targets %.1f, %.1f)", rw.AckMedian, rw.AckP10, targetAckedMedian, targetAckedP10)
	}
	return ""
}

func runMatrix(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("matrix")
	seeds := fs.Int("seeds", DefaultMatrixSeeds, "seeds per scenario, claims and twins alike (1..N)")
	asJSON := fs.Bool("json", false, "print one JSON object per scenario")
	parallel := fs.Int("parallel", 0, "worlds run at once (0: GOMAXPROCS)")
	only := fs.String("scenarios", "", "comma-separated scenario names (default: all)")
	claimsOnly := fs.Bool("claims", false, "only the claims, no weak twins (the nightly run)")
	shardFlag := fs.String("shard", "1/1", "this shard I of N: runs the seeds s with s mod N == I-1")
	junit := fs.String("junit", "", "also write the results as JUnit XML to this file (a test case per scenario)")
	htmlFile := fs.String("html", "", "also write the matrix as one self-contained HTML page, each scenario opening its details and its first failing seed's timeline")
	saveDir := fs.String("save-failures", "", "shrink each violated claim's first failing seed and save it into this directory as a regression file")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if *seeds < 1 {
		return badInput(stderr, "--seeds %d must be at least 1", *seeds)
	}
	si, sn, err := parseShard(*shardFlag)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	list := scenarios.List()
	if *only != "" {
		list = nil
		for _, name := range strings.Split(*only, ",") {
			s, err := scenarios.Lookup(strings.TrimSpace(name))
			if err != nil {
				return badInput(stderr, "%v", err)
			}
			list = append(list, s)
		}
	}
	if *claimsOnly {
		list = slices.DeleteFunc(list, scenarios.Scenario.Twin)
	}
	rows := map[string]*row{}
	for _, s := range list {
		rows[s.Name] = newRow(s)
		if sn > 1 {
			rows[s.Name].Shard = fmt.Sprintf("%d/%d", si, sn)
		}
	}
	// Scenarios that differ only in their claims (a claim and a twin of
	// the same configuration) run the same world: it runs once a seed and
	// each is judged on it.
	worlds := scenarios.GroupByWorld(list)
	// Seed-major order: every scenario advances together. Jobs are drawn
	// as workers free up, so ten thousand seeds take no memory to list.
	seed, _ := shardSeeds(1, uint64(*seeds), si, sn)
	next := 0
	jobs := func() (job, bool) {
		if next == len(worlds) {
			seed, next = seed+sn, 0
		}
		if seed > uint64(*seeds) || len(worlds) == 0 {
			return job{}, false
		}
		next++
		w := worlds[next-1]
		return job{s: w[0], also: w[1:], seed: seed}, true
	}
	firsts := map[string]failure{} // each scenario's first failing seed
	record := func(s scenarios.Scenario, seed uint64, r *scenarios.Result, err error) {
		rw := rows[s.Name]
		rw.Seeds++
		if err != nil {
			if rw.Error == "" {
				rw.Error = err.Error()
			}
			return
		}
		rw.st.add(r)
		for g := range rw.Held {
			if r.Panic != "" || !r.Verdict.Holds(g) {
				rw.Held[g] = false
			}
		}
		if !r.Holds && (rw.FirstSeed == 0 || seed < rw.FirstSeed) {
			firsts[s.Name] = failure{s: s, seed: seed, r: r}
			rw.FirstSeed = seed
			rw.Failure = r.Failure
			rw.Anomalies = anomalyNames(r)
			rw.Repro = fmt.Sprintf("kafkasim run --scenario %s --seed %d", s.Name, seed)
		}
	}
	runJobs(jobs, *parallel, func(o outcome) {
		record(o.s, o.seed, o.r, o.err)
		for i, s := range o.job.also {
			var r *scenarios.Result
			if o.err == nil {
				r = o.also[i]
			}
			record(s, o.seed, r, o.err)
		}
	})
	if *saveDir != "" {
		if err := saveFailures(*saveDir, slices.Collect(maps.Values(firsts)), stderr); err != nil {
			fmt.Fprintln(stderr, err)
			return exitBadInput
		}
	}
	name := fmt.Sprintf("kafkasim matrix, %d seeds", *seeds)
	if sn > 1 {
		name += fmt.Sprintf(", shard %d/%d", si, sn)
	}
	return reportMatrix(list, rows, *asJSON, *junit, *htmlFile, *parallel, name, stdout, stderr)
}

// reportMatrix judges every row (list's order) and prints the matrix: a
// table, the probes reached, the rows below the power targets and the
// overall word, or a JSON object per row; and writes the JUnit file if
// junit names one.
func reportMatrix(list []scenarios.Scenario, rows map[string]*row, asJSON bool, junit, htmlFile string, parallel int, suiteName string, stdout, stderr io.Writer) int {
	exit := exitOK
	var weak []string
	suite := junitSuite{Name: suiteName}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "SCENARIO\tFAULTS\tCLAIMS\tCHECKS\tOBSERVED\tACKED MEDIAN/P10\tRESULT\tFIRST FAILING SEED")
	}
	for _, s := range list {
		rw := rows[s.Name]
		rw.judge(s)
		if !rw.Pass {
			exit = exitViolation
		}
		suite.add(matrixCase(rw))
		if w := rw.weak(); w != "" {
			weak = append(weak, rw.Scenario+": "+w)
		}
		if asJSON {
			b, _ := json.Marshal(rw)
			fmt.Fprintln(stdout, string(b))
			continue
		}
		checks := rw.Checked
		first := ""
		if rw.FirstSeed != 0 {
			first = fmt.Sprintf("%d: %s", rw.FirstSeed, rw.Repro)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f/%.2f\t%s\t%s\n", rw.Scenario, rw.Faults, rw.Claims, checks, rw.Observed, rw.AckMedian, rw.AckP10, rw.Result, first)
	}
	tw.Flush()
	if err := writeJUnit(junit, suite); err != nil {
		fmt.Fprintln(stderr, err)
		return exitBadInput
	}
	if htmlFile != "" {
		title := strings.Replace(suiteName, ", shard", " — shard", 1)
		p, err := matrixPage(list, rows, title, parallel)
		if err != nil {
			fmt.Fprintf(stderr, "kafkasim: --html: a failure's timeline: %v\n", err)
			exit = exitViolation
		}
		if err := writeHTML(htmlFile, func(w io.Writer) error { return report.Write(w, p) }); err != nil {
			fmt.Fprintln(stderr, err)
			return exitBadInput
		}
	}
	if asJSON {
		return exit
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "probes reached (seeds that reached each, of each scenario's seeds):")
	for _, s := range list {
		rw := rows[s.Name]
		if len(rw.Reached) == 0 {
			continue
		}
		var parts []string
		for _, p := range probe.Names() {
			if n := rw.Reached[p]; n > 0 {
				mark := ""
				if slices.Contains(s.Probes, p) {
					mark = "*"
				}
				parts = append(parts, fmt.Sprintf("%s%s %d", p, mark, n))
			}
		}
		fmt.Fprintf(stdout, "  %s: %s\n", rw.Scenario, strings.Join(parts, ", "))
	}
	fmt.Fprintln(stdout, "  (* a probe the claim names)")
	if len(weak) > 0 {
		fmt.Fprintln(stdout, "\nbelow the power targets:")
		for _, w := range weak {
			fmt.Fprintln(stdout, "  "+w)
		}
	}
	if exit == exitOK {
		fmt.Fprintln(stdout, "\nmatrix: every claimed guarantee held on every seed, its probes reached, and every weak twin was caught")
	} else {
		fmt.Fprintln(stdout, "\nmatrix: FAILED")
	}
	return exit
}
