package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Every bad input gets exit 2 and one line on stderr that names the thing
// and the rule; nothing runs first, and little is allocated. The cases are
// what a new user tried.
func TestEveryBadInputGetsOneLineAndExit2(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	scenario := func(name, extra string) string {
		return file(name+".json", `{"name": "`+name+`", "workload": {"kind": "produce-only"}, "expect": "none"`+extra+`}`)
	}
	empty := file("empty.jsonl", "")
	badTarget := file("bad-target.json", `[{"at":"1s","kind":"crash","target":"leader of nope/7"}]`)
	badNode := file("bad-node.json", `[{"at":"1s","kind":"crash","target":"brokr-1"}]`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"run", "--seed", "abc"}, `invalid value "abc" for flag -seed`},
		{[]string{"run", "--seed", "-1"}, `invalid value "-1" for flag -seed`},
		{[]string{"run", "--nope"}, `flag provided but not defined: -nope`},
		{[]string{"run", "--seed"}, `flag needs an argument: -seed`},
		{[]string{"run"}, `--scenario or --config is required`},
		{[]string{"run", "--scenario", "acks0", "--config", "x.json"}, `give one`},
		{[]string{"run", "--scenario", "nope"}, `nope`},
		{[]string{"run", "--scenario", "acks0", "--messages", "-5"}, `--messages -5 < 0`},
		{[]string{"run", "--scenario", "acks0", "--messages", "1000000000000000000"}, `workload.messages 1000000000000000000 outside`},
		{[]string{"run", "--scenario", "acks0", "--faults", badTarget}, `no partition nope/7`},
		{[]string{"run", "--scenario", "acks0", "--faults", badNode}, `no node "brokr-1"`},
		{[]string{"run", "--scenario", "acks0", "--defect", "nope"}, `unknown defect "nope"`},
		{[]string{"run", "--config", scenario("no-retries", `, "producer": {"retries": 0}`)}, `enable.idempotence requires retries > 0`},
		{[]string{"run", "--config", scenario("linger", `, "producer": {"linger.ms": -1}`)}, `linger.ms -1 < 0`},
		{[]string{"run", "--config", scenario("huge-timeout", `, "producer": {"delivery.timeout.ms": 4611686018427387904}`)}, `delivery.timeout.ms 4611686018427387904 > 2147483647`},
		{[]string{"run", "--config", scenario("auto-commit", `, "workload": {"kind": "consume-process-sink", "commit": "commit-before-process"}, "consumer": {"enable.auto.commit": true, "auto.commit.interval.ms": 0}`)}, `auto.commit.interval.ms 0 < 1`},
		{[]string{"run", "--config", scenario("long", `, "workload": {"kind": "produce-only", "duration.ms": 1000000000000000}`)}, `workload.duration.ms 1000000000000000 outside`},
		{[]string{"run", "--config", scenario("consumers", `, "workload": {"kind": "produce-only", "consumers": -1}`)}, `workload.consumers -1 outside`},
		{[]string{"demo", "--nodes", "-1"}, `--nodes -1 outside [2, 100]`},
		{[]string{"demo", "--nodes", "100000000000"}, `--nodes 100000000000 outside`},
		{[]string{"check", empty}, `empty: no operation to judge`},
		{[]string{"check", empty, "--expect"}, `flag needs an argument: --expect`},
		{[]string{"check", empty, "--expect", "twice"}, `unknown guarantee "twice"`},
		{[]string{"sweep", "--scenario", "acks0", "--seeds", "5-1"}, `5-1`},
		{[]string{"sweep", "--scenario", "acks0", "--seeds", "1-1000000000000", "--shard", "3/2"}, `3/2`},
		{[]string{"matrix", "--seeds", "0"}, `0`},
		{[]string{"selftest", "--seeds", "0"}, `--seeds 0 < 1`},
		{[]string{"controller", "--listen", "notanaddr", "--data", dir}, `--listen notanaddr`},
	} {
		var out, errs bytes.Buffer
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		code := run(c.args, &out, &errs)
		runtime.ReadMemStats(&after)
		// Refused before anything is built: a billion messages or a
		// simulated century must not allocate first.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("kafkasim %s: allocated %d MiB before refusing", strings.Join(c.args, " "), alloc>>20)
		}
		line := strings.TrimRight(errs.String(), "\n")
		if code != exitBadInput || strings.Count(line, "\n") != 0 || !strings.Contains(line, c.want) {
			t.Errorf("kafkasim %s: exit %d, stderr %q: want exit 2 and one line with %q", strings.Join(c.args, " "), code, errs.String(), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("kafkasim %s: printed %q before refusing", strings.Join(c.args, " "), out.String())
		}
	}
}
