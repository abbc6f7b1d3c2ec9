package scenarios

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/faults"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// seedsFromEnv reads a seed count from the environment: the default run
// stays quick, KAFKASIM_SEEDS=1000 go test ./scenarios/ sweeps.
func seedsFromEnv(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			panic(fmt.Sprintf("%s=%q: want a positive number", name, v))
		}
		return n
	}
	return def
}

// TestClaimedGuaranteesHold runs every claiming scenario over
// KAFKASIM_SEEDS seeds (default 5): the claim must hold on each.
func TestClaimedGuaranteesHold(t *testing.T) {
	seeds := seedsFromEnv("KAFKASIM_SEEDS", 5)
	for _, s := range List() {
		if s.Twin() {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			for seed := 1; seed <= seeds; seed++ {
				r, err := Run(s, RunOptions{Seed: uint64(seed)})
				require.NoError(t, err)
				require.True(t, r.Holds, "%s seed %d: %s\nrepro: kafkasim run --scenario %s --seed %d", s.Name, seed, r.Summary(), s.Name, seed)
			}
		})
	}
}

// TestWeakTwinsAreCaught runs every weak twin until a seed shows the
// violation it must show, within KAFKASIM_TWIN_SEEDS seeds (default 100;
// most twins are caught in the first few): a checker that cannot fail is a
// defect.
func TestWeakTwinsAreCaught(t *testing.T) {
	seeds := seedsFromEnv("KAFKASIM_TWIN_SEEDS", 100)
	for _, s := range List() {
		if !s.Twin() {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			for seed := 1; seed <= seeds; seed++ {
				r, err := Run(s, RunOptions{Seed: uint64(seed)})
				require.NoError(t, err)
				require.Empty(t, r.Panic, "seed %d: the code under test panicked:\n%s", seed, r.Stack)
				if !r.Holds {
					return
				}
			}
			t.Fatalf("%s never broke %s in %d seeds", s.Name, s.Refutes, seeds)
		})
	}
}

// TestEveryScenarioReplaysByteForByte runs every catalogue scenario on
// KAFKASIM_REPLAY_SEEDS seeds (default 3) twice — all of them on two cores,
// then all of them again on one — and requires equal trace hashes and event
// counts, as FoundationDB reruns a sample of its seeds: the hash covers
// every message, timer, fault and disk operation, so any difference is
// nondeterminism (map order, a goroutine, the wall clock). .ci/run does the
// same across processes.
func TestEveryScenarioReplaysByteForByte(t *testing.T) {
	seeds := seedsFromEnv("KAFKASIM_REPLAY_SEEDS", 3)
	type run struct {
		hash   string
		events uint64
		err    error
	}
	all := List()
	runAll := func(procs int) [][]run {
		old := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(old)
		out := make([][]run, len(all))
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					out[i] = make([]run, seeds)
					for j := range seeds {
						r, err := Run(all[i], RunOptions{Seed: uint64(j + 1)})
						out[i][j] = run{hash: r.TraceHash, events: r.Events, err: err}
					}
				}
			}()
		}
		for i := range all {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		return out
	}
	two := runAll(2)
	one := runAll(1)
	for i, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			hashes := map[string]int{}
			for j := range seeds {
				a, b := two[i][j], one[i][j]
				require.NoError(t, a.err)
				require.NoError(t, b.err)
				require.Equal(t, a.hash, b.hash, "seed %d: GOMAXPROCS 2 and 1 ran differently", j+1)
				require.Equal(t, a.events, b.events, "seed %d", j+1)
				if k, dup := hashes[a.hash]; dup {
					t.Fatalf("seeds %d and %d gave the same run", k, j+1)
				}
				hashes[a.hash] = j + 1
			}
		})
	}
}

// A replayed schedule gives the run it came from: what `run --faults`
// relies on.
func TestSavedScheduleReplaysTheRun(t *testing.T) {
	s, err := Lookup("acks-all-retries-duplicates")
	require.NoError(t, err)
	r, err := Run(s, RunOptions{Seed: 1})
	require.NoError(t, err)
	sched := r.Schedule
	again, err := Run(s, RunOptions{Seed: 1, Faults: &sched})
	require.NoError(t, err)
	require.Equal(t, r.TraceHash, again.TraceHash)
	require.Equal(t, r.Holds, again.Holds)
}

// Properties per guarantee: rapid draws the fault schedule (as data, so a
// failure shrinks to a few faults) and the message count; the claim must
// hold whatever it draws within the scenario's fault class.
func checkClaimProperty(t *testing.T, name string) {
	s, err := Lookup(name)
	require.NoError(t, err)
	class, err := s.FaultClass()
	require.NoError(t, err)
	rapid.Check(t, func(rt *rapid.T) {
		c := buildCluster(s, simOptions(0), 0)
		wl := newWorkload(c, nil)
		o := c.nemesisOptions(wl.topics(), durationOf(s))
		sched := faults.Gen(class, o).Draw(rt, "faults")
		messages := rapid.IntRange(1, s.Workload.Messages).Draw(rt, "messages")
		seed := rapid.Uint64Range(1, 1<<20).Draw(rt, "seed")
		r, err := Run(s, RunOptions{Seed: seed, Faults: &sched, Messages: messages})
		if err != nil {
			rt.Fatalf("run: %v", err)
		}
		if !r.Holds {
			rt.Fatalf("%s broke %s (%s)", name, s.Checked(), r.Failure)
		}
	})
}

func TestPropertyAtLeastOnceInOrderWithIdempotence(t *testing.T) {
	checkClaimProperty(t, "acks-all-idempotent")
}
func TestPropertyAtLeastOnceWithRetries(t *testing.T) { checkClaimProperty(t, "acks-all-retries") }
func TestPropertyAtMostOnceWithAcks0(t *testing.T)    { checkClaimProperty(t, "acks0") }
func TestPropertyExactlyOnceThroughTheSink(t *testing.T) {
	checkClaimProperty(t, "pipeline-atomic-sink")
}
func TestPropertyExactlyOnceThroughTransactions(t *testing.T) {
	checkClaimProperty(t, "eos-consume-transform-produce")
}

// BenchmarkStandardScenario reports how many seeds of the standard
// scenario (acks=all, idempotence, crash and network faults) one core runs
// per second, and the simulator's speed (sim-x: simulated seconds per wall
// second).
func BenchmarkStandardScenario(b *testing.B) {
	s, err := Lookup("acks-all-idempotent")
	if err != nil {
		b.Fatal(err)
	}
	var simulated float64
	var events uint64
	seed := uint64(0)
	for b.Loop() {
		seed++
		r, err := Run(s, RunOptions{Seed: seed})
		if err != nil {
			b.Fatal(err)
		}
		simulated += r.Simulated.Seconds()
		events += r.Events
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(float64(seed)/wall, "seeds/s")
	b.ReportMetric(simulated/wall, "sim-x")
	b.ReportMetric(float64(events)/wall, "events/s")
}

// TestMain runs the package's tests with the collector tuned as the
// kafkasim command tunes it (cmd/kafkasim tuneGC): worlds allocate much and
// keep little.
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(800)
	}
	os.Exit(m.Run())
}

// BenchmarkCatalogue runs every built-in scenario, one sub-benchmark each,
// and reports seeds and events per CPU-second of the process (user plus
// system time, so collector work on other threads is counted): the figures
// the speed issue asks to double. Seeds count up from 1 on each run, so two
// runs of the benchmark at the same -benchtime do the same work.
//
//	go test ./scenarios -run '^$' -bench Catalogue -benchtime 20x
func BenchmarkCatalogue(b *testing.B) {
	for _, s := range List() {
		b.Run(s.Name, func(b *testing.B) {
			seeds, events, cpu := runSeeds(b, s)
			b.ReportMetric(float64(seeds)/cpu, "seeds/cpu-s")
			b.ReportMetric(float64(events)/cpu, "events/cpu-s")
		})
	}
}

// runSeeds runs s on seeds 1, 2, ... for as long as the benchmark loops and
// returns the seeds run, their events and the CPU-seconds they took.
func runSeeds(b *testing.B, s Scenario) (seeds, events uint64, cpu float64) {
	cpu0 := cpuSeconds()
	for b.Loop() {
		seeds++
		r, err := Run(s, RunOptions{Seed: seeds})
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	return seeds, events, cpuSeconds() - cpu0
}

// cpuSeconds is the CPU time this process has used so far.
func cpuSeconds() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

// BenchmarkGrowth runs the standard scenario at 300, 3,000 and 30,000
// messages, its duration scaled with the count (300 messages in 30 s), and
// reports CPU-seconds per run: the speed issue asks that 30,000 cost at
// most 12 times 3,000. Each size runs the same seeds.
//
//	go test ./scenarios -run '^$' -bench Growth -benchtime 3x
func BenchmarkGrowth(b *testing.B) {
	base, err := Lookup("acks-all-idempotent")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{300, 3_000, 30_000} {
		s := base
		s.Workload.Messages = n
		s.Workload.DurationMs = base.Workload.DurationMs * n / base.Workload.Messages
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			seeds, events, cpu := runSeeds(b, s)
			b.ReportMetric(cpu/float64(seeds), "cpu-s/run")
			b.ReportMetric(float64(events)/float64(seeds), "events/run")
		})
	}
}
