package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/kafkasim/kafkasim/sim/demo"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "root seed of the world")
	nodes := fs.Int("nodes", 5, "number of nodes")
	duration := fs.Duration("duration", time.Minute, "simulated duration")
	faults := fs.Bool("faults", true, "inject a seeded fault schedule")
	if err := fs.Parse(args); err != nil {
		return 2
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
