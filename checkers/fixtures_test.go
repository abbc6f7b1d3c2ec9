package checkers_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
	"math/rand/v2"
)

// Saved histories, as `kafkasim check FILE` reads them, with the verdict
// each must get.
func TestSavedHistoriesGetTheirVerdicts(t *testing.T) {
	want := map[string]struct {
		observed  checkers.Guarantee
		anomalies string
	}{
		"log-correct.jsonl":           {checkers.ExactlyOnce, ""},
		"log-lost-write.jsonl":        {checkers.AtMostOnce, "lost-write,nonlinearizable,output-loss,poll-skip"},
		"pipeline-exactly-once.jsonl": {checkers.ExactlyOnce, ""},
		"pipeline-output-dup.jsonl":   {checkers.AtLeastOnce, "output-dup"},
	}
	files, err := filepath.Glob("testdata/histories/*.jsonl")
	if err != nil || len(files) != len(want) {
		t.Fatalf("fixtures %v (%v), want %d", files, err, len(want))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := history.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			v := mustCheck(t, h, checkers.Options{Order: checkers.KeyOrder})
			var names []string
			for _, a := range v.Anomalies {
				names = append(names, a.Name)
			}
			w := want[filepath.Base(path)]
			if v.Observed != w.observed || strings.Join(names, ",") != w.anomalies {
				t.Fatalf("got %s %v, want %s %s:\n%s", v.Observed, names, w.observed, w.anomalies, v.Summary())
			}
		})
	}
}

// The same history checked twice, in any GOMAXPROCS, gives the same
// verdict: no map order reaches the output.
func TestCheckingIsDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 17))
		h := historytest.Log(historytest.DefaultLogConfig(300, 4, 16), r)
		for _, name := range historytest.DefectNames() {
			if bad, _, ok := historytest.Defects[name](h, r); ok {
				h = bad
			}
		}
		first := mustCheck(t, h, checkers.Options{WitnessesMax: 50, Order: checkers.KeyOrder})
		for i := 0; i < 3; i++ {
			again := mustCheck(t, h, checkers.Options{WitnessesMax: 50, Order: checkers.KeyOrder})
			if !reflect.DeepEqual(first, again) {
				t.Fatalf("seed %d: verdicts differ:\n%s\n---\n%s", seed, first.Summary(), again.Summary())
			}
		}
	}
}
