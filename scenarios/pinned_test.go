package scenarios

import (
	"os"
	"testing"
)

// pinnedHashes are trace hashes and event counts of a few catalogue runs,
// one per fault class and workload kind. Work that only makes the simulator
// faster (issue 17) must leave every one of them as it is; a change that is
// meant to change behaviour updates them in the same commit and says why
// (last: the catalogue's metadata quorum has three controllers, not one,
// so every run has two more nodes, their elections and their fetches; and
// the nemesis's leader-with-the-controller partitions keep the whole
// quorum on the leader's side).
// KAFKASIM_PRINT_PINS=1 prints the current values.
var pinnedHashes = []struct {
	scenario string
	seed     uint64
	hash     string
	events   uint64
}{
	{"acks0", 1, "a3cb6355c17a4e95", 5238},
	{"acks0@all", 1, "348cdad5ab60fbc9", 5447},
	{"acks-all-idempotent", 1, "6f862f1c129c53a4", 6804},
	{"acks-all-fsync-correlated-power@power", 1, "368674da05004521", 7489},
	{"pipeline-process-then-commit@clock", 1, "ccb62bcfe4263237", 11992},
	{"eos-consume-transform-produce", 1, "68f73897b82cfc1d", 15969},
	{"eos-zombie-group-coordinator", 1, "8875ff50878fa242", 20024},
}

func TestSpeedWorkLeavesTheseTraceHashesAsTheyWere(t *testing.T) {
	for _, p := range pinnedHashes {
		s, err := Lookup(p.scenario)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(s, RunOptions{Seed: p.seed})
		if err != nil {
			t.Fatalf("%s seed %d: %v", p.scenario, p.seed, err)
		}
		got := r.TraceHash
		if os.Getenv("KAFKASIM_PRINT_PINS") != "" {
			t.Logf("{%q, %d, %q, %d},", p.scenario, p.seed, got, r.Events)
			continue
		}
		if got != p.hash || r.Events != p.events {
			t.Errorf("%s seed %d: trace hash %s after %d events, pinned %s after %d", p.scenario, p.seed, got, r.Events, p.hash, p.events)
		}
	}
}
