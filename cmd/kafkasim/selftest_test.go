package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/broker/defect"
)

// The checkers' own test: every realistic broker bug of the catalogue,
// planted in every broker, is caught by the matrix's claims within the
// self-test's default bound (20 seeds of every claim). A defect that gets
// through means a check is missing.
func TestEveryPlantedDefectIsCaughtByTheClaims(t *testing.T) {
	results := selfTest(defect.All(), 20, 0, func(selfTestResult) {})
	if len(results) < 12 {
		t.Fatalf("the catalogue holds %d defects; the self-test wants at least a dozen", len(results))
	}
	for _, r := range results {
		switch {
		case r.Error != "":
			t.Errorf("%s: harness error: %s", r.Defect, r.Error)
		case !r.Caught:
			t.Errorf("%s got past every claim in %d runs", r.Defect, r.Runs)
		default:
			t.Logf("%s: %s seed %d (%s: %s)", r.Defect, r.Scenario, r.Seed, r.Failure, strings.Join(r.Anomalies, ", "))
		}
	}
}

// The self-test's answer does not depend on which worker was quick: one
// worker or many, the same catch.
func TestTheSelfTestReportsTheSameCatchOnAnyNumberOfWorkers(t *testing.T) {
	ds := []defect.Defect{defect.SequenceGapAccepted, defect.RetriedBatchAppendedAgain}
	one := selfTest(ds, 20, 1, func(selfTestResult) {})
	many := selfTest(ds, 20, 4, func(selfTestResult) {})
	for i := range one {
		if one[i].Scenario != many[i].Scenario || one[i].Seed != many[i].Seed || one[i].Runs != many[i].Runs {
			t.Fatalf("%s: one worker caught it with %s seed %d, four with %s seed %d", one[i].Defect, one[i].Scenario, one[i].Seed, many[i].Scenario, many[i].Seed)
		}
	}
}

func TestSelfTestRefusesAnUnknownDefect(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"selftest", "--defects", "no-such-bug"}, &out, &errs); code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	if !strings.Contains(errs.String(), `unknown defect "no-such-bug"`) {
		t.Fatalf("stderr %q does not name the defect", errs.String())
	}
}
