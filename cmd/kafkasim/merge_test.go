package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A matrix split into shards and merged is the matrix one run prints on
// the same seeds, byte for byte: the JSON (every count, fraction, probe
// and first failing seed), the table and the JUnit file. Seeds 1–8 over
// four shards: each shard runs two seeds of each scenario; the twin's
// first catch may be on any shard.
func TestAMatrixSplitIntoShardsAndMergedIsTheUnshardedMatrix(t *testing.T) {
	dir := t.TempDir()
	base := []string{"matrix", "--scenarios", "acks0,acks1-leader-failover", "--seeds", "8", "--parallel", "2"}
	runOut := func(args ...string) (string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != exitOK && code != exitViolation {
			t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String(), code
	}
	wantJSON, wantCode := runOut(append(base, "--json", "--junit", filepath.Join(dir, "one.xml"), "--html", filepath.Join(dir, "one.html"))...)
	wantTable, _ := runOut(base...)
	var files []string
	for i := 1; i <= 4; i++ {
		out, _ := runOut(append(base, "--json", "--shard", fmt.Sprintf("%d/4", i))...)
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	gotJSON, gotCode := runOut(append([]string{"merge", "--json", "--junit", filepath.Join(dir, "merged.xml"), "--html", filepath.Join(dir, "merged.html")}, files...)...)
	if gotJSON != wantJSON || gotCode != wantCode {
		t.Errorf("merged JSON (exit %d):\n%s\nunsharded (exit %d):\n%s", gotCode, gotJSON, wantCode, wantJSON)
	}
	// Any order of the files merges the same.
	gotTable, _ := runOut(append([]string{"merge"}, files[3], files[1], files[0], files[2])...)
	if gotTable != wantTable {
		t.Errorf("merged table:\n%s\nunsharded:\n%s", gotTable, wantTable)
	}
	sameMergedFiles(t, dir)
}

// A merge of some shards but not all, or of one shard twice, would print
// a matrix over seeds nobody ran, or ran twice: refused, naming the shard.
func TestMergeRefusesAMissingOrRepeatedShard(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := 1; i <= 3; i++ {
		var out bytes.Buffer
		run([]string{"matrix", "--scenarios", "acks0", "--seeds", "3", "--json", "--shard", fmt.Sprintf("%d/3", i)}, &out, &bytes.Buffer{})
		f := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		os.WriteFile(f, out.Bytes(), 0o644)
		files = append(files, f)
	}
	notJSON := filepath.Join(dir, "table.txt")
	os.WriteFile(notJSON, []byte("SCENARIO FAULTS\n"), 0o644)
	for _, c := range []struct {
		files []string
		want  string
	}{
		{files[:2], "shard 3/3 is missing"},
		{[]string{files[0], files[1], files[1], files[2]}, "are both shard 2/3"},
		{[]string{notJSON}, "not JSON lines from kafkasim matrix or explore --json"},
		{nil, "give the shards' JSON files"},
	} {
		var errb bytes.Buffer
		if code := run(append([]string{"merge"}, c.files...), &bytes.Buffer{}, &errb); code != exitBadInput || !strings.Contains(errb.String(), c.want) {
			t.Errorf("merge %v: exit %d, %q; want exit %d and %q", c.files, code, errb.String(), exitBadInput, c.want)
		}
	}
}

// sameMergedFiles requires dir's merged.xml and merged.html (from merge)
// to be one.xml and one.html (from the unsharded run), byte for byte.
func sameMergedFiles(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"xml", "html"} {
		one, _ := os.ReadFile(filepath.Join(dir, "one."+f))
		merged, _ := os.ReadFile(filepath.Join(dir, "merged."+f))
		if len(one) == 0 || !bytes.Equal(one, merged) {
			t.Errorf("merged %s (%d bytes) is not the unsharded one (%d bytes)", f, len(merged), len(one))
		}
	}
}
