package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The scripts a CI matrix and a Kubernetes Indexed Job run
// (deploy/matrix-shard.sh, deploy/matrix-merge.sh), run here as those
// engines run them: each shard from its index in the environment —
// KAFKASIM_SHARD_INDEX as the GitHub workflow sets it, JOB_COMPLETION_INDEX
// as Kubernetes does — then the merge, whose table and JSON must be the
// unsharded matrix's and whose exit code must be the matrix's. A shard
// rerun (a Job restarted) skips what is done; a merge with a shard that
// never landed fails, naming it.
func TestTheShardAndMergeScriptsGiveTheUnshardedMatrix(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	bin := buildKafkasim(t)
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	flags := []string{"--scenarios", "acks0,acks1-leader-failover", "--seeds", "4", "--parallel", "2"}
	script := func(name string, env []string, args ...string) (string, string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, sh, append([]string{filepath.Join("..", "..", "deploy", name)}, args...)...)
		cmd.Env = append(os.Environ(), append([]string{"KAFKASIM=" + bin}, env...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out.String(), errb.String(), code
	}
	matrix := func(extra ...string) (string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(append(append([]string{"matrix"}, flags...), extra...), &out, &errb)
		return out.String(), code
	}

	for _, env := range [][]string{
		{"KAFKASIM_SHARDS=2", "KAFKASIM_SHARD_INDEX=0"},
		{"KAFKASIM_SHARDS=2", "JOB_COMPLETION_INDEX=1"},
	} {
		if out, errs, code := script("matrix-shard.sh", env, append([]string{results}, flags...)...); code != 0 {
			t.Fatalf("matrix-shard.sh %v: exit %d\n%s%s", env, code, out, errs)
		}
	}
	first := filepath.Join(results, "shard-1-of-2.json")
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	out, _, code := script("matrix-shard.sh", []string{"KAFKASIM_SHARDS=2", "JOB_COMPLETION_INDEX=0"}, append([]string{results}, flags...)...)
	if after, _ := os.Stat(first); code != 0 || !strings.Contains(out, "already done") || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a rerun shard 1/2: exit %d, %q: want it skipped, its file untouched", code, out)
	}

	wantTable, wantCode := matrix()
	wantJSON, _ := matrix("--json")
	out, errs, code := script("matrix-merge.sh", []string{"KAFKASIM_SHARDS=2"}, results)
	if code != wantCode || out != wantTable {
		t.Errorf("matrix-merge.sh: exit %d, printed\n%s%s\nthe unsharded matrix: exit %d\n%s", code, out, errs, wantCode, wantTable)
	}
	for file, want := range map[string]string{"matrix.txt": wantTable, "matrix.json": wantJSON} {
		got, err := os.ReadFile(filepath.Join(results, file))
		if err != nil || string(got) != want {
			t.Errorf("%s (%v):\n%s\nwant:\n%s", file, err, got, want)
		}
	}
	if xml, err := os.ReadFile(filepath.Join(results, "matrix.xml")); err != nil || !bytes.Contains(xml, []byte("<testsuite")) {
		t.Errorf("matrix.xml (%v): %s", err, xml)
	}

	// The second shard never lands.
	partial := filepath.Join(dir, "partial")
	if err := os.MkdirAll(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(first)
	if err := os.WriteFile(filepath.Join(partial, "shard-1-of-2.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = script("matrix-merge.sh", []string{"KAFKASIM_SHARDS=2"}, partial)
	if code != 2 || !strings.Contains(errs, "shard-2-of-2.json is missing") {
		t.Errorf("a merge without shard 2/2: exit %d, %q: want 2, naming it", code, errs)
	}
}
