package historytest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
)

func TestGeneratedLogHistoriesAreValid(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		h := historytest.Log(historytest.DefaultLogConfig(200, 1+int(seed%4), 1+int(seed%16)), r)
		if err := h.Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func TestGeneratedPipelineHistoriesAreValid(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		h := historytest.Pipeline(historytest.PipelineConfig{Partitions: 1 + int(seed%3), Producers: 2, Messages: 40, LatencyMax: 100}, r)
		if err := h.Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func TestGenerationIsAPureFunctionOfItsChoices(t *testing.T) {
	a := historytest.Log(historytest.DefaultLogConfig(300, 4, 8), rand.New(rand.NewPCG(7, 7)))
	b := historytest.Log(historytest.DefaultLogConfig(300, 4, 8), rand.New(rand.NewPCG(7, 7)))
	if len(a) != len(b) {
		t.Fatalf("lengths differ: %d vs %d", len(a), len(b))
	}
	for i := range a {
		ja, _ := a[i].MarshalJSON()
		jb, _ := b[i].MarshalJSON()
		if string(ja) != string(jb) {
			t.Fatalf("op %d differs:\n%s\n%s", i, ja, jb)
		}
	}
}

func TestEveryDefectFindsAPlaceInARichHistory(t *testing.T) {
	for _, name := range historytest.DefectNames() {
		found := false
		for seed := uint64(0); seed < 20 && !found; seed++ {
			r := rand.New(rand.NewPCG(seed, 3))
			var h history.History
			if name == "duplicate-output" || name == "drop-output" {
				h = historytest.Pipeline(historytest.PipelineConfig{Partitions: 2, Producers: 2, Messages: 30, LatencyMax: 100}, r)
			} else {
				h = historytest.Log(historytest.DefaultLogConfig(200, 2, 4), r)
			}
			bad, _, ok := historytest.Defects[name](h, r)
			if ok {
				found = true
				if err := bad.Validate(); err != nil {
					t.Fatalf("%s produced an invalid history: %v", name, err)
				}
			}
		}
		if !found {
			t.Errorf("defect %s never applicable", name)
		}
	}
}
