package main

import (
	"fmt"
	"io"
	"os"

	"github.com/kafkasim/kafkasim/scenarios"
)

func runShrink(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("shrink")
	sf := addScenarioFlags(fs)
	seed := fs.Uint64("seed", 1, "the failing seed")
	out := fs.String("out", "", "where to save the shrunk schedule (default shrunk-<scenario>-<seed>.json)")
	runsMax := fs.Int("runs", 300, "most runs to spend")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
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
	fmt.Fprintf(stdout, "saved: %s\nrepro: %s\n", path, repro(sf, nil, *seed, path, size))
	return exitViolation
}
