package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/scenarios"
)

// allFaultClasses are explore's columns unless --faults says otherwise.
const allFaultClasses = "none,crash,network,power,correlated-power,disk,clock,all"

// axis is one --vary: a scenario key and the values it takes.
type axis struct {
	name   string
	values []string
}

// axes are the --vary flags, in the order given.
type axes []axis

func (a *axes) String() string { return "" }

func (a *axes) Set(v string) error {
	name, values, ok := strings.Cut(v, "=")
	if !ok || name == "" || values == "" {
		return fmt.Errorf("%q: want NAME=V1,V2,... (acks=0,1,all)", v)
	}
	return a.add(name, strings.Split(values, ","))
}

func (a *axes) add(name string, values []string) error {
	if name == "faults" {
		return errors.New("the fault classes are the grid's columns: give them with --faults")
	}
	for _, x := range *a {
		if x.name == name {
			return fmt.Errorf("%s is varied twice", name)
		}
	}
	*a = append(*a, axis{name, values})
	return nil
}

// exploreFile is --axes: the axes (in the file's order) and the fault
// classes, as JSON: {"vary": {"acks": ["0", "1", "all"],
// "enable.idempotence": [false, true]}, "faults": ["crash", "power"]}.
type exploreFile struct {
	vary   axes
	faults []string
}

func loadExploreFile(path string) (exploreFile, error) {
	var ef exploreFile
	data, err := os.ReadFile(path)
	if err != nil {
		return ef, err
	}
	var raw struct {
		Vary   json.RawMessage `json:"vary"`
		Faults []string        `json:"faults"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return ef, fmt.Errorf("--axes %s: %w", path, err)
	}
	ef.faults = raw.Faults
	if len(raw.Vary) == 0 {
		return ef, nil
	}
	// The axes keep the file's order: read the object token by token.
	d := json.NewDecoder(bytes.NewReader(raw.Vary))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return ef, fmt.Errorf("--axes %s: \"vary\" must be an object of NAME: [values]", path)
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return ef, fmt.Errorf("--axes %s: %w", path, err)
		}
		name := t.(string)
		var vals []any
		if err := d.Decode(&vals); err != nil || len(vals) == 0 {
			return ef, fmt.Errorf("--axes %s: vary %q must be a non-empty list of values", path, name)
		}
		var texts []string
		for _, v := range vals {
			switch v := v.(type) {
			case nil:
				texts = append(texts, "null")
			default:
				texts = append(texts, fmt.Sprint(v))
			}
		}
		if err := ef.vary.add(name, texts); err != nil {
			return ef, fmt.Errorf("--axes %s: %w", path, err)
		}
	}
	return ef, nil
}

// grid is what explore runs: every valid configuration under every fault
// class, and the configurations Kafka refuses.
type grid struct {
	base    scenarios.Scenario
	classes []string
	cells   []*cell              // configuration-major, then fault class
	runs    []scenarios.Scenario // cells[i]'s scenario
	// settings are cells[i]'s configuration and fault class as --set
	// pairs, for its repro lines.
	settings []settings
	skipped  []skip
}

// skip is a configuration not run: Kafka's rule it breaks.
type skip struct {
	Config  []string `json:"config"`
	Skipped string   `json:"skipped"`
}

// plan expands the axes' product over base (the last axis varies
// fastest) and validates each configuration, under each fault class, as a
// scenario file is: a combination Kafka refuses is skipped with its rule.
func plan(base scenarios.Scenario, vary axes, classes []string, seeds int) grid {
	g := grid{base: base, classes: classes}
	var walk func(i int, config []scenarios.Setting)
	walk = func(i int, config []scenarios.Setting) {
		if i < len(vary) {
			for _, v := range vary[i].values {
				walk(i+1, append(config[:len(config):len(config)], scenarios.Setting{Name: vary[i].name, Value: v}))
			}
			return
		}
		var labels []string
		for _, kv := range config {
			labels = append(labels, kv.String())
		}
		for _, class := range classes {
			sets := append(config[:len(config):len(config)], scenarios.Setting{Name: "faults", Value: class})
			s, err := scenarios.Set(base, sets...)
			if err != nil {
				why := strings.TrimPrefix(err.Error(), fmt.Sprintf("scenario %q: ", base.Name))
				if len(g.skipped) == 0 || !slices.Equal(g.skipped[len(g.skipped)-1].Config, labels) {
					g.skipped = append(g.skipped, skip{Config: labels, Skipped: why})
				}
				continue
			}
			g.cells = append(g.cells, newCell(labels, class, seeds))
			g.runs = append(g.runs, s)
			g.settings = append(g.settings, sets)
		}
	}
	walk(0, nil)
	return g
}

func runExplore(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explore")
	sf := addScenarioFlags(fs)
	var vary axes
	fs.Var(&vary, "vary", "NAME=V1,V2,...: an axis, a scenario key as its file names it (acks=0,1,all; enable.idempotence=false,true); repeatable")
	axesFile := fs.String("axes", "", `a JSON file of axes and fault classes: {"vary": {"acks": ["0","1","all"]}, "faults": ["crash","power"]}`)
	classesFlag := fs.String("faults", "", "comma-separated fault classes, the grid's columns (default "+allFaultClasses+")")
	seeds := fs.Int("seeds", 100, "seeds per cell (1..N)")
	parallel := fs.Int("parallel", 0, "worlds run at once (0: GOMAXPROCS)")
	shardFlag := fs.String("shard", "1/1", "this shard I of N: runs the seeds s with s mod N == I-1 of every cell")
	asJSON := fs.Bool("json", false, "print one JSON object per cell (and per skipped configuration)")
	junit := fs.String("junit", "", "also write the grid as JUnit XML to this file (a test case per cell)")
	htmlFile := fs.String("html", "", "also write the grid as one self-contained HTML page, each cell opening its details and its first failure's timeline")
	outFile := fs.String("out", "", "append each cell's JSON to this file as it completes, and read back the cells already there (resumable)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return badInput(stderr, "explore: unexpected argument %q", fs.Arg(0))
	}
	base, err := sf.load()
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	if base.FaultsSchedule != "" {
		return badInput(stderr, "explore: scenario %q has a faults.schedule: explore varies the fault class, and a fixed schedule would replace it", base.Name)
	}
	if *seeds < 1 {
		return badInput(stderr, "--seeds %d must be at least 1", *seeds)
	}
	si, sn, err := parseShard(*shardFlag)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	var classes []string
	if *axesFile != "" {
		ef, err := loadExploreFile(*axesFile)
		if err != nil {
			return badInput(stderr, "%v", err)
		}
		for _, a := range ef.vary {
			if err := vary.add(a.name, a.values); err != nil {
				return badInput(stderr, "--axes %s: %v", *axesFile, err)
			}
		}
		classes = ef.faults
	}
	if *classesFlag != "" {
		classes = strings.Split(*classesFlag, ",")
	}
	if len(classes) == 0 {
		classes = strings.Split(allFaultClasses, ",")
	}
	for i, c := range classes {
		classes[i] = strings.TrimSpace(c)
		if _, err := faults.ParseClass(classes[i]); err != nil {
			return badInput(stderr, "--faults: %v", err)
		}
	}
	for _, a := range vary {
		if err := scenarios.KnownKnob(a.name); err != nil {
			return badInput(stderr, "--vary: %v", err)
		}
	}
	g := plan(base, vary, classes, *seeds)
	shard := ""
	if sn > 1 {
		shard = fmt.Sprintf("%d/%d", si, sn)
	}
	for _, c := range g.cells {
		c.Base, c.Expect, c.Order, c.Shard = base.Name, base.Expect, base.Order, shard
	}

	// Cells already in --out (same seeds, same shard) are read back.
	done := map[string]*cell{}
	var out *os.File
	if *outFile != "" {
		done, err = readCells(*outFile)
		if err != nil {
			return badInput(stderr, "--out: %v", err)
		}
		out, err = os.OpenFile(*outFile, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return badInput(stderr, "--out: %v", err)
		}
		defer out.Close()
		// A line a kill cut short is ended, so the next starts clean.
		if st, err := out.Stat(); err == nil && st.Size() > 0 {
			last := make([]byte, 1)
			if _, err := out.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
				out.Write([]byte("\n"))
			}
		}
	}
	var todo []int
	remaining := map[int]int{}
	first, count := shardSeeds(1, uint64(*seeds), si, sn)
	perCell := int(count)
	for i, c := range g.cells {
		if d, ok := done[c.key()]; ok && d.Of == c.Of && d.Shard == c.Shard && d.Base == c.Base {
			g.cells[i] = d
			continue
		}
		if perCell > 0 {
			todo = append(todo, i)
			remaining[i] = perCell
		}
	}
	next, seed := 0, first
	var writeErr error
	runJobs(func() (job, bool) {
		if next == len(todo) || perCell == 0 {
			return job{}, false
		}
		j := job{s: g.runs[todo[next]], seed: seed, index: todo[next]}
		if seed += sn; seed > uint64(*seeds) {
			seed, next = first, next+1
		}
		return j, true
	}, *parallel, func(o outcome) {
		c := g.cells[o.index]
		if o.err != nil {
			c.Errors++
			if c.Error == "" {
				c.Error = fmt.Sprintf("seed %d: %v", o.seed, o.err)
			}
		} else {
			c.add(o.s, o.seed, o.r, repro(sf, g.settings[o.index], o.seed, "", 0))
		}
		if remaining[o.index]--; remaining[o.index] == 0 && out != nil {
			c.judge(base.Order)
			b, _ := json.Marshal(c)
			if _, err := out.Write(append(b, '\n')); err != nil && writeErr == nil {
				writeErr = err
			}
		}
	})
	if writeErr != nil {
		return badInput(stderr, "--out: %v", writeErr)
	}
	name := fmt.Sprintf("kafkasim explore %s, %d seeds", base.Name, *seeds)
	if shard != "" {
		name += ", shard " + shard
	}
	return reportExplore(g, *seeds, *asJSON, *junit, *htmlFile, *parallel, name, stdout, stderr)
}

// readCells reads the cells a previous run appended to path (none if it
// does not exist yet), by key.
func readCells(path string) (map[string]*cell, error) {
	cells := map[string]*cell{}
	lines, err := readJSONLines(path)
	if errors.Is(err, os.ErrNotExist) {
		return cells, nil
	}
	for _, l := range lines {
		c := &cell{}
		if err := json.Unmarshal(l.b, c); err != nil || c.Faults == "" {
			// A line cut short by a kill is recomputed, not trusted.
			continue
		}
		cells[c.key()] = c
	}
	return cells, err
}
