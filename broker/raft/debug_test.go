package raft_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDebugSeed replays one TestRandomized seed with its liveness phase
// traced: RAFT_SEED=N [RAFT_VOTERS=5] go test -run TestDebugSeed -v.
func TestDebugSeed(t *testing.T) {
	seed, err := strconv.Atoi(os.Getenv("RAFT_SEED"))
	if err != nil {
		t.Skip()
	}
	voters, _ := strconv.Atoi(os.Getenv("RAFT_VOTERS"))
	if voters == 0 {
		voters = 3
	}
	s := &sim{t: t, seed: uint64(seed), voters: voters}
	var b strings.Builder
	msg := s.runTraced(300, &b)
	out := b.String()
	if len(out) > 20000 {
		out = out[:20000]
	}
	t.Logf("%s\n%s", out, msg)
}
