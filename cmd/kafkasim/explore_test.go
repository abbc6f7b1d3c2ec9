package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exploreArgs is a small grid: two axes, one combination Kafka refuses
// (idempotence with acks=1), two fault classes, four seeds a cell.
var exploreArgs = []string{"explore", "--scenario", "acks-all-idempotent", "--vary", "acks=1,all", "--vary", "enable.idempotence=false,true",
	"--faults", "crash,network", "--seeds", "4"}

func runCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	if code == exitBadInput {
		t.Fatalf("%s: exit 2: %s", strings.Join(args, " "), errb.String())
	}
	return out.String(), code
}

// The same explore gives the same grid, however many worlds run at once;
// the refused combination is listed, not run; and each failing seed's
// line replays a run that breaks what the cell says it broke.
func TestAnExploreIsTheSameEveryRunAndItsFailuresReplay(t *testing.T) {
	one, code := runCmd(t, append(exploreArgs, "--parallel", "1")...)
	two, _ := runCmd(t, append(exploreArgs, "--parallel", "2")...)
	if one != two || code != exitOK {
		t.Fatalf("parallel 1 (exit %d):\n%s\nparallel 2:\n%s", code, one, two)
	}
	if !strings.Contains(one, "acks=1 enable.idempotence=true: enable.idempotence requires acks=all, not acks=1") {
		t.Errorf("the refused combination is not listed:\n%s", one)
	}
	js, _ := runCmd(t, append(exploreArgs, "--json")...)
	var cells, replayed int
	for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
		var c cell
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		if c.Faults == "" {
			continue
		}
		cells++
		if c.Seeds != 4 || c.Observed == "" {
			t.Errorf("cell %s: %d seeds, observed %q", c.key(), c.Seeds, c.Observed)
		}
		if strings.Join(c.Config, " ") == "acks=all enable.idempotence=true" && c.Observed != "exactly-once in partition order" {
			t.Errorf("the base's own configuration %s observed %s", c.key(), c.Observed)
		}
		for _, f := range c.Failures {
			if !strings.Contains(f.Repro, fmt.Sprintf("--set faults=%s --seed %d", c.Faults, f.Seed)) {
				t.Errorf("cell %s: repro %q", c.key(), f.Repro)
			}
			args := strings.Fields(strings.TrimPrefix(f.Repro, "kafkasim "))
			out, code := runCmd(t, append(args, "--json")...)
			var r struct{ Observed string }
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if code != exitViolation || (!strings.HasSuffix(f.Breaks, "order") && (r.Observed == f.Breaks || r.Observed == "exactly-once")) {
				t.Errorf("cell %s: %q replays with exit %d, observed %s: want %s broken", c.key(), f.Repro, code, r.Observed, f.Breaks)
			}
			replayed++
		}
	}
	if cells != 6 || replayed == 0 {
		t.Errorf("%d cells (want 3 configurations x 2 classes), %d failures replayed", cells, replayed)
	}
}

// An explore split into shards and merged is the explore one run prints,
// byte for byte: table, JSON, JUnit and the HTML page, over four shards.
func TestAnExploreSplitIntoShardsAndMergedIsTheUnshardedExplore(t *testing.T) {
	dir := t.TempDir()
	wantJSON, wantCode := runCmd(t, append(exploreArgs, "--json", "--junit", filepath.Join(dir, "one.xml"), "--html", filepath.Join(dir, "one.html"))...)
	wantTable, _ := runCmd(t, exploreArgs...)
	var files []string
	for i := 1; i <= 4; i++ {
		out, _ := runCmd(t, append(exploreArgs, "--json", "--shard", fmt.Sprintf("%d/4", i))...)
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	gotJSON, gotCode := runCmd(t, append([]string{"merge", "--json", "--junit", filepath.Join(dir, "merged.xml"), "--html", filepath.Join(dir, "merged.html")}, files...)...)
	if gotJSON != wantJSON || gotCode != wantCode {
		t.Errorf("merged (exit %d):\n%s\nunsharded (exit %d):\n%s", gotCode, gotJSON, wantCode, wantJSON)
	}
	if got, _ := runCmd(t, "merge", files[2], files[0], files[3], files[1]); got != wantTable {
		t.Errorf("merged table:\n%s\nunsharded:\n%s", got, wantTable)
	}
	sameMergedFiles(t, dir)
	var errb bytes.Buffer
	if code := run([]string{"merge", files[0], files[2], files[3]}, &bytes.Buffer{}, &errb); code != exitBadInput || !strings.Contains(errb.String(), "shard 2/4 is missing") {
		t.Errorf("a merge without shard 2/4: exit %d, %q", code, errb.String())
	}
}

// An explore killed midway resumes from its --out file: the cells there
// are read back, not rerun (a cell edited in the file shows in the grid),
// a line cut short is recomputed, and the grid ends the same.
func TestAnExploreCutShortResumesFromItsOutFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cells.jsonl")
	want, _ := runCmd(t, append(exploreArgs, "--out", out)...)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) != 7 { // six cells and the empty rest
		t.Fatalf("--out holds %d lines:\n%s", len(lines), data)
	}
	// The kill: two cells complete, the third cut mid-line.
	if err := os.WriteFile(out, []byte(lines[0]+lines[1]+lines[2][:len(lines[2])/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := runCmd(t, append(exploreArgs, "--out", out)...); got != want {
		t.Errorf("resumed:\n%s\nwhole:\n%s", got, want)
	}
	// A cell read back is taken as it is: give the first an impossible
	// acknowledged fraction and see it in the grid.
	var c cell
	if err := json.Unmarshal([]byte(lines[0]), &c); err != nil {
		t.Fatal(err)
	}
	for i := range c.Acked {
		c.Acked[i] = 0.25
	}
	b, _ := json.Marshal(c)
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := runCmd(t, append(exploreArgs, "--out", out)...); !strings.Contains(got, "0.25/0.25") {
		t.Errorf("the cell in --out was rerun, not read back:\n%s", got)
	}
}

// The page --html writes: a row per configuration, a cell per fault
// class, each cell opening its details; a cell that broke something
// shows the timeline of its first failing seed, witnesses outlined.
func TestAnExplorePageOpensEveryCellAndDrawsItsFirstFailure(t *testing.T) {
	page := filepath.Join(t.TempDir(), "grid.html")
	runCmd(t, append(exploreArgs, "--html", page)...)
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if n := strings.Count(html, "<tr><th>acks="); n != 3 {
		t.Errorf("%d configuration rows, want 3", n)
	}
	for i := range 6 {
		if !strings.Contains(html, fmt.Sprintf(`href="#d-%d"`, i)) || !strings.Contains(html, fmt.Sprintf(`id="d-%d"`, i)) {
			t.Errorf("cell d-%d has no link or no detail", i)
		}
	}
	if !strings.Contains(html, "where exactly-once first broke") || !strings.Contains(html, "<svg") || !strings.Contains(html, `stroke="#0d47a1"`) {
		t.Errorf("no first failure's timeline with its witnesses outlined")
	}
	if !strings.Contains(html, "acks=1 enable.idempotence=true: enable.idempotence requires acks=all") {
		t.Errorf("the refused combination is not on the page")
	}
}

// run --html opens at what is wrong: a header with the verdict and each
// anomaly's witnesses as links that land on their operations' bars, the
// faults fired linked to their marks, the page set to open at the first
// witness, and Porcupine's view of the partition at fault beside it.
func TestARunsPageSaysWhatIsWrongAndOpensAtTheFirstWitness(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "acks1.html")
	if _, code := runCmd(t, "run", "--scenario", "acks1-leader-failover", "--seed", "1", "--html", page); code != exitViolation {
		t.Fatalf("acks1-leader-failover seed 1: exit %d, want a violation", code)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"acks1-leader-failover, seed 1: violated", `class="violated"`, "<b>lost-write</b>", "fault schedule",
		`href="acks1.porcupine.html"`, "kafkasim run --scenario acks1-leader-failover --seed 1"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "acks1.porcupine.html")); err != nil {
		t.Errorf("Porcupine's view: %v", err)
	}
	links := regexp.MustCompile(`href="#((op|fault)-\d+)"`).FindAllStringSubmatch(html, -1)
	kinds := map[string]int{}
	for _, m := range links {
		kinds[m[2]]++
		if !strings.Contains(html, `id="`+m[1]+`"`) {
			t.Errorf("link #%s lands on nothing", m[1])
		}
	}
	if kinds["op"] == 0 || kinds["fault"] == 0 {
		t.Errorf("links to operations %d, to faults %d: want both", kinds["op"], kinds["fault"])
	}
	open := regexp.MustCompile(`location\.hash = "(op-\d+)"`).FindStringSubmatch(html)
	if open == nil || !strings.Contains(html, `href="#`+open[1]+`"`) {
		t.Errorf("the page does not open at a witness: %v", open)
	}
}

// --axes reads the axes from a file in the file's order, values of any
// JSON type (a number for a string knob, null for an unset one), and the
// fault classes with them.
func TestExploreAxesFromAFileKeepTheirOrder(t *testing.T) {
	f := filepath.Join(t.TempDir(), "axes.json")
	if err := os.WriteFile(f, []byte(`{"vary": {"enable.idempotence": [false, true], "acks": ["all", 1], "log.flush.interval.messages": [null, 1]}, "faults": ["crash"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCmd(t, "explore", "--scenario", "acks-all-idempotent", "--axes", f, "--seeds", "1", "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var c cell
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		if c.Faults != "" {
			got = append(got, c.label()+" @"+c.Faults)
		}
	}
	want := []string{
		"enable.idempotence=false acks=all log.flush.interval.messages=null @crash",
		"enable.idempotence=false acks=all log.flush.interval.messages=1 @crash",
		"enable.idempotence=false acks=1 log.flush.interval.messages=null @crash",
		"enable.idempotence=false acks=1 log.flush.interval.messages=1 @crash",
		"enable.idempotence=true acks=all log.flush.interval.messages=null @crash",
		"enable.idempotence=true acks=all log.flush.interval.messages=1 @crash",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("cells:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var errb bytes.Buffer
	if code := run([]string{"explore", "--scenario", "acks-all-idempotent", "--vary", "akcs=1"}, &bytes.Buffer{}, &errb); code != exitBadInput || !strings.Contains(errb.String(), `unknown config "akcs"`) {
		t.Errorf("a misspelt axis: exit %d, %q", code, errb.String())
	}
}
