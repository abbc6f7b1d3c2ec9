package checkers_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
	"pgregory.net/rapid"
)

// rapidChoices lets the history generator draw its choices from rapid, so a
// failing case shrinks choice by choice.
type rapidChoices struct{ t *rapid.T }

func (c rapidChoices) IntN(n int) int {
	if n <= 1 {
		return 0
	}
	return rapid.IntRange(0, n-1).Draw(c.t, "choice")
}

func drawLogConfig(t *rapid.T) historytest.LogConfig {
	return historytest.LogConfig{
		Partitions:        rapid.IntRange(1, 4).Draw(t, "partitions"),
		Clients:           rapid.IntRange(1, 64).Draw(t, "clients"),
		Ops:               rapid.IntRange(1, 80).Draw(t, "ops"),
		PollPercent:       rapid.IntRange(0, 80).Draw(t, "poll%"),
		IndefinitePercent: rapid.IntRange(0, 30).Draw(t, "indefinite%"),
		FailPercent:       rapid.IntRange(0, 20).Draw(t, "fail%"),
		TxnPercent:        rapid.IntRange(0, 50).Draw(t, "txn%"),
		CommittedPercent:  rapid.IntRange(0, 100).Draw(t, "committed%"),
		SeekPercent:       rapid.IntRange(0, 10).Draw(t, "seek%"),
		BatchMax:          rapid.IntRange(1, 4).Draw(t, "batch"),
		LatencyMax:        int64(rapid.IntRange(1, 5000).Draw(t, "latency")),
		GapMax:            int64(rapid.IntRange(0, 2000).Draw(t, "gap")),
	}
}

func mustCheck(t interface {
	Fatalf(string, ...any)
}, h history.History, opts checkers.Options) checkers.Verdict {
	v, err := checkers.Check(h, opts)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return v
}

func TestHistoriesOfACorrectLogUnderRandomConcurrencyAreAlwaysAccepted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := historytest.Log(drawLogConfig(t), rapidChoices{t})
		v := mustCheck(t, h, checkers.Options{Order: checkers.KeyOrder})
		if len(v.Anomalies) > 0 || !v.Holds(checkers.ExactlyOnce) {
			t.Fatalf("correct history rejected:\n%s", v.Summary())
		}
	})
}

func TestAnIndefiniteWriteIsNeverReportedAsFailed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := historytest.Log(drawLogConfig(t), rapidChoices{t})
		h, _, _ = historytest.AckedAsIndefinite(h, rapidChoices{t})
		v := mustCheck(t, h, checkers.Options{Order: checkers.KeyOrder})
		if len(v.Anomalies) > 0 {
			t.Fatalf("acknowledged writes turned indefinite made a correct history look wrong:\n%s", v.Summary())
		}
	})
}

// Each injected defect is caught and named.
func TestEveryInjectedDefectIsCaughtAndNamed(t *testing.T) {
	for _, name := range []string{"drop-acked-write", "duplicate-value", "swap-offsets", "read-aborted", "read-failed-write"} {
		t.Run(name, func(t *testing.T) {
			applied := 0
			rapid.Check(t, func(t *rapid.T) {
				cfg := drawLogConfig(t)
				cfg.Ops += 10
				h := historytest.Log(cfg, rapidChoices{t})
				bad, want, ok := historytest.Defects[name](h, rapidChoices{t})
				if !ok {
					return
				}
				applied++
				v := mustCheck(t, bad, checkers.Options{})
				if _, found := v.Anomaly(want); !found {
					t.Fatalf("%s not named:\n%s", want, v.Summary())
				}
				if v.Holds(checkers.ExactlyOnce) {
					t.Fatalf("exactly-once claimed despite %s", want)
				}
			})
			if applied < 10 {
				t.Fatalf("defect applied in only %d cases", applied)
			}
		})
	}
}

func TestPipelineDefectsAreCaughtAndNamed(t *testing.T) {
	for _, name := range []string{"", "drop-output", "duplicate-output"} {
		t.Run("defect="+name, func(t *testing.T) {
			for seed := uint64(0); seed < uint64(cases(200)); seed++ {
				r := rand.New(rand.NewPCG(seed, 5))
				h := historytest.Pipeline(historytest.PipelineConfig{Partitions: 1 + r.IntN(3), Producers: 1 + r.IntN(3), Messages: 1 + r.IntN(40), LatencyMax: 1 + int64(r.IntN(200))}, r)
				want := ""
				if name != "" {
					var ok bool
					if h, want, ok = historytest.Defects[name](h, r); !ok {
						continue
					}
				}
				v := mustCheck(t, h, checkers.Options{Order: checkers.KeyOrder})
				if want == "" {
					if len(v.Anomalies) > 0 || !v.Holds(checkers.ExactlyOnce) {
						t.Fatalf("seed %d: correct pipeline rejected:\n%s", seed, v.Summary())
					}
					continue
				}
				if _, found := v.Anomaly(want); !found {
					t.Fatalf("seed %d: %s not named:\n%s", seed, want, v.Summary())
				}
			}
		})
	}
}
