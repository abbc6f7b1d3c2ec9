package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/kafkasim/kafkasim/scenarios"
)

// A failure is a claim's failing seed, kept for --save-failures.
type failure struct {
	s    scenarios.Scenario
	seed uint64
	r    *scenarios.Result
}

// saveFailuresMax bounds the seeds --save-failures shrinks and saves per
// scenario (the lowest ones): each costs up to shrinkRuns runs.
const (
	saveFailuresMax = 10
	shrinkRuns      = 300
)

// saveFailures shrinks each failure of a claim (a twin's failing seeds are
// its catches) and saves it into dir as a regression
// (scenarios.Regression), the lowest seeds of each scenario first, at most
// saveFailuresMax of each, and says where each went.
func saveFailures(dir string, fs []failure, stdout io.Writer) error {
	slices.SortFunc(fs, func(a, b failure) int {
		return cmp.Or(cmp.Compare(a.s.Name, b.s.Name), cmp.Compare(a.seed, b.seed))
	})
	saved := map[string]int{}
	for _, f := range fs {
		if f.s.Twin() || saved[f.s.Name] == saveFailuresMax {
			continue
		}
		g, err := scenarios.NewRegression(f.s, f.seed, f.r, shrinkRuns)
		if err != nil {
			return err
		}
		path, err := g.Save(dir)
		if err != nil {
			return err
		}
		saved[f.s.Name]++
		fmt.Fprintf(stdout, "saved: %s (%s seed %d, shrunk to %d actions): move it under scenarios/testdata/regressions/ once fixed, and go test replays it\n",
			path, f.s.Name, f.seed, len(g.Faults))
	}
	return nil
}
