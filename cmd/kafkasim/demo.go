package main

import (
	"fmt"
	"io"
	"time"

	"github.com/kafkasim/kafkasim/sim/demo"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo")
	seed := fs.Uint64("seed", 1, "root seed of the world")
	nodes := fs.Int("nodes", 5, "number of nodes")
	duration := fs.Duration("duration", time.Minute, "simulated duration")
	faults := fs.Bool("faults", true, "inject a seeded fault schedule")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *nodes < 2 || *nodes > 100:
		return badInput(stderr, "demo: --nodes %d outside [2, 100]", *nodes)
	case *duration <= 0 || *duration > 24*time.Hour:
		return badInput(stderr, "demo: --duration %v outside (0, 24h]", *duration)
	}
	fmt.Fprintf(stdout, "seed: %d\n", *seed)
	start := time.Now()
	r, err := demo.Run(demo.Options{Seed: *seed, Nodes: *nodes, Duration: *duration, Faults: *faults})
	if err != nil {
		fmt.Fprintf(stdout, "error: %v\n", err)
		return 1
	}
	wall := time.Since(start)
	fmt.Fprintf(stdout, "simulated: %v\nevents: %d\nframes: %d\nwall: %v\n", r.Elapsed, r.Events, r.Frames, wall.Round(time.Millisecond))
	fmt.Fprintf(stdout, "trace-hash: %s\n", r.TraceHash)
	return 0
}
