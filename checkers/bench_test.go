package checkers_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
	"github.com/kafkasim/kafkasim/model"
)

var (
	benchMu        sync.Mutex
	benchHistories = map[string]history.History{}
)

// benchHistory is a correct history with ops client operations over
// partitions, 8 concurrent clients, every feature mixed in (indefinite and
// failed sends, transactions, read_committed polls, seeks).
func benchHistory(ops, partitions int) history.History {
	benchMu.Lock()
	defer benchMu.Unlock()
	k := fmt.Sprint(ops, "/", partitions)
	if h, ok := benchHistories[k]; ok {
		return h
	}
	h := historytest.Log(historytest.DefaultLogConfig(ops, partitions, 8), rand.New(rand.NewPCG(uint64(ops), uint64(partitions))))
	benchHistories = map[string]history.History{k: h} // keep one: 1M ops is large
	return h
}

// BenchmarkCheck fully checks (validation, partition logs, committed
// offsets, anomalies, delivery) correct histories of 10k, 100k and 1M
// operations over 1, 8 and 64 partitions, with the fast log checker and
// with porcupine (appends chained in offset order, see model.LogInput).
// Porcupine is skipped where CHECKING.md measured it exhausting memory —
// 1M operations (over 14 GiB on 1 and 8 partitions, 2.3 GB on 64) — and
// on 100k operations in one partition, where it is quadratic in the
// partition's length (2 GB in CHECKING.md; no answer within 120 s here).
func BenchmarkCheck(b *testing.B) {
	for _, ops := range []int{10_000, 100_000, 1_000_000} {
		for _, parts := range []int{1, 8, 64} {
			for _, mode := range []string{"fast", "porcupine"} {
				name := fmt.Sprintf("ops=%d/partitions=%d/%s", ops, parts, mode)
				b.Run(name, func(b *testing.B) {
					if mode == "porcupine" && skipPorcupine(ops, parts) {
						b.Skip("porcupine exhausts memory here (CHECKING.md)")
					}
					h := benchHistory(ops, parts)
					opts := checkers.Options{}
					if mode == "porcupine" {
						opts.Linearizability = checkers.Porcupine
						opts.PorcupineTimeout = 120 * time.Second
					}
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					cpu0 := cpuTime()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						v, err := checkers.Check(h, opts)
						if err != nil {
							b.Fatal(err)
						}
						if len(v.Anomalies) > 0 || v.Inconclusive {
							b.Fatalf("correct history not accepted:\n%s", v.Summary())
						}
					}
					b.StopTimer()
					b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
					runtime.ReadMemStats(&after)
					b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/1e6, "MB-alloc/op")
					b.ReportMetric(float64(len(h))*float64(b.N)/b.Elapsed().Seconds(), "hist-ops/s")
				})
			}
		}
	}
}

// BenchmarkCheckLogHighConcurrency is the case porcupine took ~24 s and
// 4.6 GB on (10k operations, one partition, 32 concurrent clients); the
// fast checker makes it routine, up to 256 clients.
func BenchmarkCheckLogHighConcurrency(b *testing.B) {
	for _, clients := range []int{32, 256} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			h := historytest.Log(historytest.DefaultLogConfig(10_000, 1, clients), rand.New(rand.NewPCG(1, uint64(clients))))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if v, err := checkers.Check(h, checkers.Options{}); err != nil || len(v.Anomalies) > 0 {
					b.Fatalf("%v %v", err, v.Anomalies)
				}
			}
		})
	}
}

// skipPorcupine: where porcupine is not run (see BenchmarkCheck).
func skipPorcupine(ops, parts int) bool {
	return ops >= 1_000_000 || (ops >= 100_000 && parts == 1)
}

// cpuTime is the CPU time this process has used: on a shared machine it
// measures the check, where wall time measures the neighbours too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLogCheck compares the partition-log checkers alone, fast and
// porcupine, on the histories of BenchmarkCheck already resolved into
// partition logs; "resolve" times that shared step (model.Logs).
func BenchmarkLogCheck(b *testing.B) {
	for _, ops := range []int{10_000, 100_000, 1_000_000} {
		for _, parts := range []int{1, 8, 64} {
			for _, mode := range []string{"resolve", "fast", "porcupine"} {
				b.Run(fmt.Sprintf("ops=%d/partitions=%d/%s", ops, parts, mode), func(b *testing.B) {
					if mode == "porcupine" && skipPorcupine(ops, parts) {
						b.Skip("porcupine exhausts memory here (CHECKING.md)")
					}
					logs := model.Logs(benchHistory(ops, parts))
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					cpu0 := cpuTime()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if mode == "resolve" {
							model.Logs(benchHistory(ops, parts))
							continue
						}
						for _, l := range logs {
							var res porcupine.CheckResult
							if mode == "fast" {
								res = checkers.CheckLog(l).Result
							} else {
								res = model.CheckLog(l, 120*time.Second)
							}
							if res != porcupine.Ok {
								b.Fatalf("%s: %s", l.TP, res)
							}
						}
					}
					b.StopTimer()
					b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
					runtime.ReadMemStats(&after)
					b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/1e6, "MB-alloc/op")
				})
			}
		}
	}
}

// BenchmarkValidateAndResolve times the first phase of Check on the
// histories of BenchmarkCheck: validating every operation and resolving
// the history into the flat arrays every later phase reads
// (model.ValidateAndResolve). It is the phase that reads the whole history
// from memory, so it is where a million-operation check pays its cache
// misses.
func BenchmarkValidateAndResolve(b *testing.B) {
	for _, ops := range []int{100_000, 1_000_000} {
		for _, parts := range []int{1, 64} {
			b.Run(fmt.Sprintf("ops=%d/partitions=%d", ops, parts), func(b *testing.B) {
				h := benchHistory(ops, parts)
				runtime.GC()
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := model.ValidateAndResolve(h); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			})
		}
	}
}
