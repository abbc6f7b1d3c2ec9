package main

import (
	"runtime"
	"sync"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/scenarios"
)

// job is one (scenario, seed) run.
type job struct {
	s       scenarios.Scenario
	seed    uint64
	defects defect.Set // planted bugs (selftest only)
	index   int        // the job's place in its caller's order
	// also are scenarios that share s's world (scenarios.SameWorld),
	// judged on the same run.
	also []scenarios.Scenario
}

type outcome struct {
	job
	r    *scenarios.Result
	also []*scenarios.Result // the results of job.also, in order
	err  error
}

// runJobs runs the jobs next yields (until it reports false) on parallel
// workers; each world is single-threaded and independent, so parallelism
// never changes a run. Jobs are drawn as workers free up, never listed
// whole, so a sweep over a billion seeds holds a handful in memory. done
// is called as jobs complete, from one goroutine; next is called from
// another, under the same lock as done, so it may look at what done saw.
func runJobs(next func() (job, bool), parallel int, done func(outcome)) {
	if parallel < 1 {
		parallel = runtime.GOMAXPROCS(0)
	}
	in := make(chan job)
	out := make(chan outcome)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in {
				rs, err := scenarios.RunShared(append([]scenarios.Scenario{j.s}, j.also...), scenarios.RunOptions{Seed: j.seed, Defects: j.defects})
				o := outcome{job: j, err: err}
				if err == nil {
					o.r, o.also = rs[0], rs[1:]
				}
				out <- o
			}
		}()
	}
	var mu sync.Mutex
	go func() {
		for {
			mu.Lock()
			j, ok := next()
			mu.Unlock()
			if !ok {
				break
			}
			in <- j
		}
		close(in)
		wg.Wait()
		close(out)
	}()
	for o := range out {
		mu.Lock()
		done(o)
		mu.Unlock()
	}
}
