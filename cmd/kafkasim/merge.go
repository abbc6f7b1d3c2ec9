package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/kafkasim/kafkasim/scenarios"
)

// runMerge combines the JSON of matrix shards (`matrix --shard I/N
// --json`, one file per shard) into the matrix one unsharded run on the
// same seeds prints: the same table, JSON and JUnit. A row carries what
// that takes — per guarantee whether every seed held it, every seed's
// acknowledged fraction, probe hits and the seeds that reached each, the
// first failing seed — so the merge is exact, not an estimate.
//
// The files must be every shard of one split, each once: a missing or
// repeated shard would print a matrix over seeds nobody ran, or over some
// twice, and is refused.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge")
	asJSON := fs.Bool("json", false, "print one JSON object per scenario (per cell, for explore's shards)")
	junit := fs.String("junit", "", "also write the results as JUnit XML to this file (a test case per scenario or cell)")
	htmlFile := fs.String("html", "", "also write the results as one HTML page, as matrix or explore --html does (replaying each first failure)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return badInput(stderr, "merge: give the shards' JSON files (from kafkasim matrix or explore --shard I/N --json)")
	}
	var list []scenarios.Scenario
	rows := map[string]*row{}
	var g *grid                    // explore's shards
	shardOf := map[string]string{} // shard "I/N" -> the file that held it
	split := uint64(0)
	for k, path := range fs.Args() {
		explore, err := isExploreFile(path)
		if err != nil {
			return badInput(stderr, "merge: %v", err)
		}
		if k > 0 && explore != (g != nil) {
			return badInput(stderr, "merge: %s and %s are not both matrix or both explore output", fs.Arg(0), path)
		}
		var shard string
		if explore {
			if g == nil {
				g = &grid{}
			}
			shard, err = mergeCellsFile(path, g)
		} else {
			shard, err = mergeFile(path, &list, rows)
		}
		if err != nil {
			return badInput(stderr, "merge: %v", err)
		}
		i, n := uint64(1), uint64(1)
		if shard != "" {
			i, n, _ = parseShard(shard) // the file's reader checked it
		}
		switch {
		case split != 0 && n != split:
			return badInput(stderr, "merge: %s is shard %d/%d, but another file is of a split into %d", path, i, n, split)
		case shardOf[fmt.Sprintf("%d/%d", i, n)] != "":
			return badInput(stderr, "merge: %s and %s are both shard %d/%d", shardOf[fmt.Sprintf("%d/%d", i, n)], path, i, n)
		}
		split = n
		shardOf[fmt.Sprintf("%d/%d", i, n)] = path
	}
	for i := uint64(1); i <= split; i++ {
		if shardOf[fmt.Sprintf("%d/%d", i, split)] == "" {
			return badInput(stderr, "merge: shard %d/%d is missing", i, split)
		}
	}
	if g != nil {
		seeds := 0
		for _, c := range g.cells {
			c.Shard = ""
			seeds = c.Of
		}
		return reportExplore(*g, seeds, *asJSON, *junit, *htmlFile, 0, fmt.Sprintf("kafkasim explore %s, %d seeds", g.base.Name, seeds), stdout, stderr)
	}
	seeds := 0
	for _, rw := range rows {
		seeds = max(seeds, rw.Seeds)
	}
	return reportMatrix(list, rows, *asJSON, *junit, *htmlFile, 0, fmt.Sprintf("kafkasim matrix, %d seeds", seeds), stdout, stderr)
}

// isExploreFile says whether path holds explore's cells (a first line
// with a configuration) rather than matrix rows.
func isExploreFile(path string) (bool, error) {
	lines, err := readJSONLines(path)
	if err != nil || len(lines) == 0 {
		return false, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(lines[0].b, &probe); err != nil {
		return false, fmt.Errorf("%s: not JSON lines from kafkasim matrix or explore --json: %v", path, err)
	}
	_, ok := probe["config"]
	return ok, nil
}

// jsonLine is one non-empty line of a JSON-lines file and its number.
type jsonLine struct {
	n int
	b []byte
}

// readJSONLines reads path's non-empty lines: the outputs merge and
// explore --out read back are a few hundred lines at most.
func readJSONLines(path string) ([]jsonLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []jsonLine
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) > 0 {
			out = append(out, jsonLine{n, slices.Clone(sc.Bytes())})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return out, nil
}

// mergeCellsFile adds one explore shard's cells into g: the first file
// lays out the grid (its cells' order, its fault classes, the
// configurations not run), each later one must hold the same cells.
func mergeCellsFile(path string, g *grid) (string, error) {
	lines, err := readJSONLines(path)
	if err != nil {
		return "", err
	}
	first := len(g.cells) == 0 && len(g.skipped) == 0
	byKey := map[string]*cell{}
	for _, c := range g.cells {
		byKey[c.key()] = c
	}
	shard, line, seen := "", 0, map[string]bool{}
	for _, l := range lines {
		line = l.n
		var in cell
		if err := json.Unmarshal(l.b, &in); err != nil {
			return "", fmt.Errorf("%s:%d: not an explore cell (kafkasim explore --json): %v", path, line, err)
		}
		if in.Faults == "" {
			var sk skip
			_ = json.Unmarshal(l.b, &sk)
			if sk.Skipped == "" {
				return "", fmt.Errorf("%s:%d: neither a cell nor a configuration not run", path, line)
			}
			if first {
				g.skipped = append(g.skipped, sk)
			}
			continue
		}
		if in.Shard != "" {
			if _, _, err := parseShard(in.Shard); err != nil {
				return "", fmt.Errorf("%s:%d: %v", path, line, err)
			}
		}
		if len(seen) > 0 && in.Shard != shard {
			return "", fmt.Errorf("%s:%d: shard %q, but the file's first cell is of shard %q", path, line, in.Shard, shard)
		}
		shard = in.Shard
		if seen[in.key()] {
			return "", fmt.Errorf("%s:%d: cell %s twice in one file", path, line, in.key())
		}
		seen[in.key()] = true
		c := byKey[in.key()]
		switch {
		case c == nil && !first:
			return "", fmt.Errorf("%s:%d: cell %s is not in the other shards: shards of different explores", path, line, in.key())
		case c == nil:
			if len(g.cells) == 0 {
				g.base = scenarios.Scenario{Name: in.Base, Expect: in.Expect, Order: in.Order}
			}
			c = newCell(in.Config, in.Faults, in.Of)
			c.Base, c.Expect, c.Order = in.Base, in.Expect, in.Order
			g.cells = append(g.cells, c)
			byKey[c.key()] = c
			if !slices.Contains(g.classes, in.Faults) {
				g.classes = append(g.classes, in.Faults)
			}
		case c.Base != in.Base || c.Of != in.Of:
			return "", fmt.Errorf("%s:%d: cell %s is of %s over %d seeds, the other shards' of %s over %d", path, line, in.key(), in.Base, in.Of, c.Base, c.Of)
		}
		c.absorb(&in)
	}
	if !first && len(seen) != len(g.cells) {
		return "", fmt.Errorf("%s: %d cells, the other shards %d: shards of different explores", path, len(seen), len(g.cells))
	}
	return shard, nil
}

// mergeFile adds one shard's rows into rows (appending scenarios new to
// list, in the file's order) and returns the shard it says it is ("" for
// an unsharded run). Every row of a file must name the same shard.
func mergeFile(path string, list *[]scenarios.Scenario, rows map[string]*row) (string, error) {
	lines, err := readJSONLines(path)
	if err != nil {
		return "", err
	}
	shard, line, seen := "", 0, map[string]bool{}
	for _, l := range lines {
		line = l.n
		var in row
		if err := json.Unmarshal(l.b, &in); err != nil {
			return "", fmt.Errorf("%s:%d: not a matrix row (kafkasim matrix --json): %v", path, line, err)
		}
		if in.Scenario == "" || in.Held == nil {
			return "", fmt.Errorf("%s:%d: not a matrix row (kafkasim matrix --json): no scenario or held guarantees", path, line)
		}
		if in.Shard != "" {
			if _, _, err := parseShard(in.Shard); err != nil {
				return "", fmt.Errorf("%s:%d: %v", path, line, err)
			}
		}
		if line > 1 && in.Shard != shard {
			return "", fmt.Errorf("%s:%d: shard %q, but the file's first row is of shard %q", path, line, in.Shard, shard)
		}
		shard = in.Shard
		if seen[in.Scenario] {
			return "", fmt.Errorf("%s:%d: scenario %s twice in one file", path, line, in.Scenario)
		}
		seen[in.Scenario] = true
		rw := rows[in.Scenario]
		if rw == nil {
			s, err := scenarios.Lookup(in.Scenario)
			if err != nil {
				return "", fmt.Errorf("%s:%d: %v", path, line, err)
			}
			*list = append(*list, s)
			rw = newRow(s)
			rows[s.Name] = rw
		}
		rw.absorb(&in)
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("%s: empty (want kafkasim matrix --json output)", path)
	}
	return shard, nil
}

// absorb adds a shard's row into rw, as if rw's run had also run the
// shard's seeds: counts add, a guarantee holds only where it held on both,
// the lowest failing seed's failure wins.
func (rw *row) absorb(in *row) {
	rw.Seeds += in.Seeds
	rw.st.runs += in.Seeds
	rw.st.violated += in.Violated
	rw.st.untested += in.Untested
	rw.st.acked = append(rw.st.acked, in.Acked...)
	rw.st.probes = rw.st.probes.Add(in.Probes)
	if rw.st.reached == nil {
		rw.st.reached = map[string]int{}
	}
	for p, n := range in.Reached {
		rw.st.reached[p] += n
	}
	for g, held := range rw.Held {
		if !held || !in.Held[g] {
			rw.Held[g] = false
		}
	}
	if in.FirstSeed != 0 && (rw.FirstSeed == 0 || in.FirstSeed < rw.FirstSeed) {
		rw.FirstSeed, rw.Failure, rw.Anomalies, rw.Repro = in.FirstSeed, in.Failure, in.Anomalies, in.Repro
	}
	if rw.Error == "" {
		rw.Error = in.Error
	}
	slices.Sort(rw.st.acked)
}
