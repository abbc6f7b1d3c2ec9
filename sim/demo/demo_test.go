package demo

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSameSeedSameTraceHash(t *testing.T) {
	o := Options{Seed: 42, Duration: 20 * time.Second, Faults: true}
	first, err := Run(o)
	require.NoError(t, err)
	require.Greater(t, first.Frames, 1000)
	for _, procs := range []int{1, 2} {
		old := runtime.GOMAXPROCS(procs)
		again, err := Run(o)
		runtime.GOMAXPROCS(old)
		require.NoError(t, err)
		require.Equal(t, first, again, "GOMAXPROCS=%d changed the run", procs)
	}
}

func TestDifferentSeedsDifferentTraceHashes(t *testing.T) {
	seen := map[string]uint64{}
	for seed := range uint64(20) {
		r, err := Run(Options{Seed: seed, Duration: 5 * time.Second, Faults: true, Nodes: 3})
		require.NoError(t, err)
		if prev, dup := seen[r.TraceHash]; dup {
			t.Fatalf("seeds %d and %d gave the same trace hash %s", prev, seed, r.TraceHash)
		}
		seen[r.TraceHash] = seed
	}
}

// BenchmarkWorld runs a 16-node all-to-all message workload and reports
// simulator throughput: events per wall second and simulated seconds per
// wall second (sim-x).
func BenchmarkWorld(b *testing.B) {
	var events uint64
	var simulated time.Duration
	for i := 0; b.Loop(); i++ {
		r, err := Run(Options{Seed: uint64(i), Nodes: 16, Duration: 2 * time.Second, TickInterval: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
		simulated += r.Elapsed
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/wall, "events/s")
	b.ReportMetric(simulated.Seconds()/wall, "sim-x")
}
