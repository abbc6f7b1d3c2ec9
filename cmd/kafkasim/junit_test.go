package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CI systems read JUnit XML: matrix writes a test case per scenario — a
// claim failing (here untested: acks0@clock's seed 1 fails no leader over) carries
// its result and why, a caught twin passes with its first failing seed's
// repro line; sweep writes a test case per seed, in seed order.
func TestMatrixAndSweepWriteJUnitThatCIReads(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "matrix.xml")
	if code := run([]string{"matrix", "--scenarios", "acks0@clock,acks1-leader-failover", "--seeds", "1", "--junit", m}, io.Discard, io.Discard); code != exitViolation {
		t.Fatalf("matrix exit %d, want %d (the untested claim)", code, exitViolation)
	}
	var doc junitSuites
	read := func(path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc = junitSuites{}
		if err := xml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, b)
		}
	}
	read(m)
	if len(doc.Suites) != 1 || doc.Tests != 2 || doc.Fails != 1 {
		t.Fatalf("matrix: %d suites, %d tests, %d failures; want 1, 2, 1", len(doc.Suites), doc.Tests, doc.Fails)
	}
	claim, twin := doc.Suites[0].Cases[0], doc.Suites[0].Cases[1]
	if claim.Name != "acks0@clock" || claim.Failure == nil || claim.Failure.Type != "untested" || !strings.Contains(claim.Failure.Text, "leader-failover") {
		t.Errorf("the untested claim's case: %+v", claim)
	}
	if twin.Name != "acks1-leader-failover" || twin.Failure != nil || !strings.Contains(twin.SystemOut, "kafkasim run --scenario acks1-leader-failover --seed 1") {
		t.Errorf("the caught twin's case: %+v", twin)
	}

	s := filepath.Join(dir, "sweep.xml")
	if code := run([]string{"sweep", "--scenario", "acks-all-idempotent", "--seeds", "1-3", "--junit", s}, io.Discard, io.Discard); code != exitOK {
		t.Fatalf("sweep exit %d", code)
	}
	read(s)
	cases := doc.Suites[0].Cases
	if len(cases) != 3 || cases[0].Name != "seed 1" || cases[2].Name != "seed 3" || doc.Fails != 0 {
		t.Fatalf("sweep: %+v", doc.Suites[0])
	}
	if !strings.Contains(cases[1].SystemOut, "repro: kafkasim run --scenario acks-all-idempotent --seed 2") {
		t.Errorf("seed 2's output: %q", cases[1].SystemOut)
	}
}
