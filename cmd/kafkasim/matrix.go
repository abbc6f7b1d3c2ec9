package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/scenarios"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// DefaultMatrixSeeds is the seeds per claiming scenario of a plain
// `kafkasim matrix`; DefaultTwinSeeds bounds the seeds a weak twin gets to
// show its violation (it stops at the first).
const (
	DefaultMatrixSeeds = 20
	DefaultTwinSeeds   = 100
)

// job is one (scenario, seed) run.
type job struct {
	s    scenarios.Scenario
	seed uint64
}

type outcome struct {
	job
	r   *scenarios.Result
	err error
}

// runJobs runs jobs on parallel workers; each world is single-threaded and
// independent, so parallelism never changes a run. done is called as jobs
// complete, from one goroutine; a job for which skip (called from the
// feeding goroutine, under the same lock as done) reports true is not run.
func runJobs(jobs []job, parallel int, done func(outcome)) {
	runJobsSkipping(jobs, parallel, nil, done)
}

func runJobsSkipping(jobs []job, parallel int, skip func(job) bool, done func(outcome)) {
	if parallel < 1 {
		parallel = runtime.GOMAXPROCS(0)
	}
	in := make(chan job)
	out := make(chan outcome)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in {
				r, err := scenarios.Run(j.s, scenarios.RunOptions{Seed: j.seed})
				out <- outcome{job: j, r: r, err: err}
			}
		}()
	}
	var mu sync.Mutex
	go func() {
		for _, j := range jobs {
			mu.Lock()
			skipped := skip != nil && skip(j)
			mu.Unlock()
			if !skipped {
				in <- j
			}
		}
		close(in)
		wg.Wait()
		close(out)
	}()
	for o := range out {
		mu.Lock()
		done(o)
		mu.Unlock()
	}
}

// row is one scenario's line of the matrix.
type row struct {
	Scenario  string `json:"scenario"`
	Claims    string `json:"claims"`
	Checked   string `json:"checked"`
	Twin      bool   `json:"twin"`
	Seeds     int    `json:"seeds"`
	Violated  int    `json:"violated"`
	FirstSeed uint64 `json:"first_failing_seed,omitempty"`
	Failure   string `json:"failure,omitempty"`
	Anomalies string `json:"anomalies,omitempty"`
	Observed  string `json:"observed"` // the strongest guarantee that held on every seed
	held      map[checkers.Guarantee]bool
	Pass      bool   `json:"pass"`
	Repro     string `json:"repro,omitempty"`
	Error     string `json:"error,omitempty"`
}

// observed is the strongest guarantee that held on every seed so far.
func (rw *row) observed() string {
	for _, g := range []checkers.Guarantee{checkers.ExactlyOnce, checkers.AtLeastOnce, checkers.AtMostOnce} {
		if rw.held[g] {
			return string(g)
		}
	}
	return string(checkers.None)
}

func runMatrix(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.Int("seeds", DefaultMatrixSeeds, "seeds per claiming scenario (1..N)")
	twinSeeds := fs.Int("twin-seeds", DefaultTwinSeeds, "most seeds a weak twin gets to be caught (it stops at the first)")
	asJSON := fs.Bool("json", false, "print one JSON object per scenario")
	parallel := fs.Int("parallel", 0, "worlds run at once (0: GOMAXPROCS)")
	only := fs.String("scenarios", "", "comma-separated scenario names (default: all)")
	if err := fs.Parse(args); err != nil {
		return exitBadInput
	}
	if *seeds < 1 || *twinSeeds < 1 {
		return badInput(stderr, "--seeds %d and --twin-seeds %d must be at least 1", *seeds, *twinSeeds)
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
	rows := map[string]*row{}
	most := *seeds
	for _, s := range list {
		claims := string(s.Expect)
		rows[s.Name] = &row{Scenario: s.Name, Claims: claims, Checked: string(s.Checked()), Twin: s.Twin(),
			held: map[checkers.Guarantee]bool{checkers.ExactlyOnce: true, checkers.AtLeastOnce: true, checkers.AtMostOnce: true}}
		if s.Twin() {
			most = max(most, *twinSeeds)
		}
	}
	// Seed-major order: every scenario advances together, and a twin stops
	// being fed once it is caught.
	var jobs []job
	for seed := 1; seed <= most; seed++ {
		for _, s := range list {
			if (s.Twin() && seed <= *twinSeeds) || (!s.Twin() && seed <= *seeds) {
				jobs = append(jobs, job{s: s, seed: uint64(seed)})
			}
		}
	}
	skip := func(j job) bool { return j.s.Twin() && rows[j.s.Name].Violated > 0 }
	runJobsSkipping(jobs, *parallel, skip, func(o outcome) {
		rw := rows[o.s.Name]
		rw.Seeds++
		if o.err != nil {
			if rw.Error == "" {
				rw.Error = o.err.Error()
			}
			return
		}
		for g := range rw.held {
			if o.r.Panic != "" || !o.r.Verdict.Holds(g) {
				rw.held[g] = false
			}
		}
		if !o.r.Holds {
			rw.Violated++
			if rw.FirstSeed == 0 || o.seed < rw.FirstSeed {
				rw.FirstSeed = o.seed
				rw.Failure = o.r.Failure
				var names []string
				for _, a := range o.r.Verdict.Anomalies {
					names = append(names, a.Name)
				}
				if o.r.Panic != "" {
					names = append(names, "panic")
				}
				rw.Anomalies = strings.Join(names, ",")
				rw.Repro = fmt.Sprintf("kafkasim run --scenario %s --seed %d", o.s.Name, o.seed)
			}
		}
	})
	exit := exitOK
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "SCENARIO\tCLAIMS\tCHECKS\tOBSERVED\tRESULT\tFIRST FAILING SEED")
	}
	for _, s := range list {
		rw := rows[s.Name]
		rw.Observed = rw.observed()
		result := ""
		switch {
		case rw.Error != "":
			result = "ERROR: " + rw.Error
		case rw.Twin && rw.Violated > 0:
			rw.Pass, result = true, fmt.Sprintf("caught %d/%d (%s)", rw.Violated, rw.Seeds, rw.Anomalies)
		case rw.Twin:
			result = fmt.Sprintf("NOT CAUGHT in %d seeds", rw.Seeds)
		case rw.Violated == 0:
			rw.Pass, result = true, fmt.Sprintf("held %d/%d", rw.Seeds, rw.Seeds)
		default:
			result = fmt.Sprintf("VIOLATED %d/%d: %s (%s)", rw.Violated, rw.Seeds, rw.Failure, rw.Anomalies)
		}
		if !rw.Pass {
			exit = exitViolation
		}
		checks := rw.Checked
		if rw.Twin {
			checks = "refutes " + checks
		}
		if *asJSON {
			b, _ := json.Marshal(rw)
			fmt.Fprintln(stdout, string(b))
			continue
		}
		first := ""
		if rw.FirstSeed != 0 {
			first = fmt.Sprintf("%d: %s", rw.FirstSeed, rw.Repro)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", rw.Scenario, rw.Claims, checks, rw.Observed, result, first)
	}
	tw.Flush()
	if !*asJSON {
		if exit == exitOK {
			fmt.Fprintln(stdout, "matrix: every claimed guarantee held on every seed and every weak twin was caught")
		} else {
			fmt.Fprintln(stdout, "matrix: FAILED")
		}
	}
	return exit
}

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

func runSweep(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addScenarioFlags(fs)
	seedsFlag := fs.String("seeds", "1-100", "seed range A-B")
	shardFlag := fs.String("shard", "1/1", "this shard I of N: runs the seeds s with s mod N == I-1")
	asJSON := fs.Bool("json", false, "JSON lines even on a terminal")
	parallel := fs.Int("parallel", 0, "worlds run at once (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return exitBadInput
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
	var jobs []job
	for seed := lo; seed <= hi; seed++ {
		if seed%sn == si-1 {
			jobs = append(jobs, job{s: s, seed: seed})
		}
	}
	f, isFile := stdout.(*os.File)
	terminal := isFile && term.IsTerminal(int(f.Fd())) && !*asJSON
	var bar *progressbar.ProgressBar
	if terminal {
		bar = progressbar.NewOptions(len(jobs), progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(s.Name),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
	}
	violated, errors := 0, 0
	var failing []string
	runJobs(jobs, *parallel, func(o outcome) {
		if bar != nil {
			_ = bar.Add(1)
		}
		line := repro(sf, o.seed, "", 0)
		if o.err != nil {
			errors++
			if !terminal {
				b, _ := json.Marshal(map[string]any{"scenario": s.Name, "seed": o.seed, "error": o.err.Error()})
				fmt.Fprintln(stdout, string(b))
			}
			return
		}
		if !o.r.Holds {
			violated++
			failing = append(failing, fmt.Sprintf("seed %d: %s (%s) — %s", o.seed, o.r.Failure, anomalyNames(o.r), line))
		}
		if !terminal {
			b, _ := json.Marshal(toJSON(o.r, line))
			fmt.Fprintln(stdout, string(b))
		}
	})
	if terminal {
		for _, f := range failing {
			fmt.Fprintln(stdout, f)
		}
		fmt.Fprintf(stdout, "sweep %s: %d seeds, %d violated, %d errors\n", s.Name, len(jobs), violated, errors)
	}
	if errors > 0 {
		return exitBadInput
	}
	if violated > 0 {
		return exitViolation
	}
	return exitOK
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

func runShrink(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := addScenarioFlags(fs)
	seed := fs.Uint64("seed", 1, "the failing seed")
	out := fs.String("out", "", "where to save the shrunk schedule (default shrunk-<scenario>-<seed>.json)")
	runsMax := fs.Int("runs", 300, "most runs to spend")
	if err := fs.Parse(args); err != nil {
		return exitBadInput
	}
	s, err := sf.load()
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	r, err := scenarios.Run(s, scenarios.RunOptions{Seed: *seed})
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	if r.Holds {
		fmt.Fprintf(stdout, "seed %d of %s does not fail: nothing to shrink\n", *seed, s.Name)
		return exitOK
	}
	fmt.Fprintf(stdout, "seed: %d\nfailure: %s (%s)\nschedule: %d actions, %d messages\n", *seed, r.Failure, anomalyNames(r), len(r.Schedule), s.Workload.Messages)
	sched, size, err := scenarios.Shrink(s, *seed, r, *runsMax, func(format string, a ...any) {
		fmt.Fprintf(stdout, "  "+format+"\n", a...)
	})
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	path := *out
	if path == "" {
		path = fmt.Sprintf("shrunk-%s-%d.json", s.Name, *seed)
	}
	f, err := os.Create(path)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	if err := sched.Save(f); err != nil {
		f.Close()
		return badInput(stderr, "%v", err)
	}
	f.Close()
	fmt.Fprintf(stdout, "shrunk: %d actions, %d messages\n", len(sched), size)
	for _, a := range sched {
		fmt.Fprintf(stdout, "  %s\n", a)
	}
	fmt.Fprintf(stdout, "saved: %s\nrepro: %s\n", path, repro(sf, *seed, path, size))
	return exitViolation
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	expect := fs.String("expect", "none", "the guarantee the history must show (exit 1 if not)")
	htmlFile := fs.String("html", "", "write the visualization of a non-linearizable partition here")
	keyOrder := fs.Bool("key-order", false, "per-key order was promised")
	if err := fs.Parse(reorder(args)); err != nil {
		return exitBadInput
	}
	if fs.NArg() != 1 {
		return badInput(stderr, "check: want exactly one history file")
	}
	g, err := checkers.ParseGuarantee(*expect)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	defer f.Close()
	h, err := history.Read(f)
	if err != nil {
		return badInput(stderr, "history %s: %v", fs.Arg(0), err)
	}
	v, err := checkers.Check(h, checkers.Options{KeyOrder: *keyOrder, HTML: *htmlFile})
	if err != nil {
		return badInput(stderr, "history %s: %v", fs.Arg(0), err)
	}
	fmt.Fprint(stdout, v.Summary())
	fmt.Fprintf(stdout, "verdict: %s\n", verdictWord(v.Holds(g)))
	if !v.Holds(g) {
		return exitViolation
	}
	return exitOK
}

// reorder moves flags before positional arguments, so `check FILE --expect
// G` works as well as `check --expect G FILE`.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			flags = append(flags, args[i])
			if !strings.Contains(args[i], "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && args[i] != "--key-order" && args[i] != "-key-order" {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, args[i])
	}
	return append(flags, pos...)
}
