package scenarios

import (
	"reflect"
	"testing"
)

// TestAClaimAndItsTwinSharingAWorldGetFromOneRunWhatTwoRunsGive runs each
// group of catalogue scenarios that differ only in their claims (the
// matrix runs such a group once a seed) both ways, shared and one by one,
// and wants the same results: trace, verdict, failure, probes untested.
func TestAClaimAndItsTwinSharingAWorldGetFromOneRunWhatTwoRunsGive(t *testing.T) {
	groups := GroupByWorld(List())
	shared := 0
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		shared++
		for seed := uint64(1); seed <= 2; seed++ {
			rs, err := RunShared(g, RunOptions{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range g {
				alone, err := Run(s, RunOptions{Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				got := rs[i]
				if got.Scenario != s.Name || got.TraceHash != alone.TraceHash || got.Holds != alone.Holds || got.Failure != alone.Failure ||
					got.Observed != alone.Observed || !reflect.DeepEqual(got.Untested, alone.Untested) || !reflect.DeepEqual(got.Verdict.Anomalies, alone.Verdict.Anomalies) {
					t.Errorf("%s seed %d: shared run gives %s %v %q %s untested %v, alone %s %v %q %s untested %v", s.Name, seed,
						got.TraceHash, got.Holds, got.Failure, got.Observed, got.Untested,
						alone.TraceHash, alone.Holds, alone.Failure, alone.Observed, alone.Untested)
				}
			}
		}
	}
	if shared == 0 {
		t.Skip("no two catalogue scenarios share a world")
	}
	t.Logf("%d groups share a world", shared)
}

func TestScenariosWhoseWorldsDifferAreNotRunShared(t *testing.T) {
	a, _ := Lookup("acks-all-idempotent")
	b, _ := Lookup("acks0")
	if SameWorld(a, b) {
		t.Fatal("acks-all-idempotent and acks0 share a world")
	}
	if _, err := RunShared([]Scenario{a, b}, RunOptions{Seed: 1}); err == nil {
		t.Fatal("RunShared ran two worlds as one")
	}
}
