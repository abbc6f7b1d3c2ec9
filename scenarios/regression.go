package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kafkasim/kafkasim/faults"
)

// A Regression is a failing seed kept as a test, as FoundationDB keeps the
// seeds its simulation found bugs with: the scenario (whole, so a later
// change to the catalogue does not change what the file replays), the
// seed, the shrunk fault schedule and message count, and what the run
// found when it was saved. `kafkasim sweep` and `matrix` write one per
// claim violation with --save-failures DIR; a file moved under
// testdata/regressions/ is replayed by go test, which requires the claim to
// hold: it is saved red, and committed once the bug is fixed.
//
// Only claims are saved: a weak twin's failing seeds are the ones that
// caught it, which the matrix already runs.
type Regression struct {
	// Why says what was found, and where: the first line of the file.
	Why      string          `json:"why"`
	Scenario json.RawMessage `json:"scenario"`
	Seed     uint64          `json:"seed"`
	// Messages replaces the workload's message count (0: the scenario's).
	Messages int             `json:"messages,omitempty"`
	Faults   faults.Schedule `json:"faults"`
	// Found is the failure when saved: "safety", "liveness" or "panic",
	// and the anomalies (or the panic) behind it.
	Found     string   `json:"found"`
	Anomalies []string `json:"anomalies,omitempty"`
}

// NewRegression shrinks a failing run of claim s at seed (at most runsMax
// runs) and returns it as a regression.
func NewRegression(s Scenario, seed uint64, failing *Result, runsMax int) (Regression, error) {
	if s.Twin() {
		return Regression{}, fmt.Errorf("scenario %q: a weak twin's failing seeds are its catches, not regressions", s.Name)
	}
	if failing.Holds {
		return Regression{}, fmt.Errorf("scenario %q seed %d: the claim holds, nothing to save", s.Name, seed)
	}
	sched, size, err := Shrink(s, seed, failing, runsMax, func(string, ...any) {})
	if err != nil {
		return Regression{}, err
	}
	if size == s.Workload.Messages {
		size = 0
	}
	g := Regression{Scenario: json.RawMessage(bytes.TrimSpace(s.JSON())), Seed: seed, Messages: size, Faults: sched, Found: failing.Failure}
	for _, a := range failing.Verdict.Anomalies {
		g.Anomalies = append(g.Anomalies, a.Name)
	}
	what := strings.Join(g.Anomalies, ", ")
	if failing.Panic != "" {
		g.Anomalies = append(g.Anomalies, "panic")
		what, _, _ = strings.Cut(failing.Panic, "\n")
	}
	g.Why = fmt.Sprintf("%s seed %d: %s violated (%s: %s); shrunk to %d fault actions", s.Name, seed, s.Claim(), failing.Failure, what, len(sched))
	if g.Messages > 0 {
		g.Why += fmt.Sprintf(", %d messages", g.Messages)
	}
	return g, nil
}

// Name is the file name a regression is saved under: scenario and seed.
func (g Regression) Name() string {
	s, err := g.Load()
	name := "custom"
	if err == nil {
		name = s.Name
	}
	return fmt.Sprintf("%s-seed-%d.json", strings.NewReplacer("@", "-at-", "/", "-").Replace(name), g.Seed)
}

// Save writes the regression into dir (created if need be) and returns its
// path.
func (g Regression) Save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, g.Name())
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadRegression reads a file Save wrote.
func LoadRegression(path string) (Regression, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Regression{}, err
	}
	var g Regression
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return Regression{}, fmt.Errorf("regression %s: %w", path, err)
	}
	if _, err := g.Load(); err != nil {
		return Regression{}, fmt.Errorf("regression %s: %w", path, err)
	}
	return g, nil
}

// Load is the regression's scenario.
func (g Regression) Load() (Scenario, error) { return Parse(g.Scenario) }

// Replay runs the regression: its scenario at its seed under its schedule.
func (g Regression) Replay() (*Result, error) {
	s, err := g.Load()
	if err != nil {
		return nil, err
	}
	sched := g.Faults
	return Run(s, RunOptions{Seed: g.Seed, Faults: &sched, Messages: g.Messages})
}
