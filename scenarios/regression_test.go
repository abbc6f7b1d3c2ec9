package scenarios_test

import (
	"path/filepath"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/scenarios"
	"github.com/stretchr/testify/require"
)

// Every seed that once found a bug, saved by --save-failures (or by hand)
// under testdata/regressions/, must hold now: its claim, at its seed,
// under its schedule.
func TestEverySavedRegressionStaysFixed(t *testing.T) {
	files, err := filepath.Glob("testdata/regressions/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files, "the corpus is empty")
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			g, err := scenarios.LoadRegression(path)
			require.NoError(t, err)
			r, err := g.Replay()
			require.NoError(t, err)
			require.True(t, r.Holds, "%s\nfound then: %s\nnow: %s", g.Why, g.Found, r.Summary())
		})
	}
}

// A claim's failing seed saved as a regression replays as it failed,
// shrunk, from the file alone.
func TestAFailingSeedSavedAsARegressionReplaysItsFailure(t *testing.T) {
	s, err := scenarios.Lookup("acks1-leader-failover")
	require.NoError(t, err)
	s.Name, s.Refutes, s.Expect = "acks1-claimed-at-least-once", "", checkers.AtLeastOnce
	require.NoError(t, s.Validate())
	r, err := scenarios.Run(s, scenarios.RunOptions{Seed: 2})
	require.NoError(t, err)
	require.False(t, r.Holds, "acks=1 loses acknowledged writes at seed 2")

	g, err := scenarios.NewRegression(s, 2, r, 100)
	require.NoError(t, err)
	require.Less(t, len(g.Faults), len(r.Schedule), "shrunk")
	path, err := g.Save(t.TempDir())
	require.NoError(t, err)
	require.Equal(t, "acks1-claimed-at-least-once-seed-2.json", filepath.Base(path))

	back, err := scenarios.LoadRegression(path)
	require.NoError(t, err)
	again, err := back.Replay()
	require.NoError(t, err)
	require.False(t, again.Holds, back.Why)
	require.Equal(t, r.Failure, again.Failure)
	require.Equal(t, "safety", back.Found)

	twin, err := scenarios.Lookup("acks1-leader-failover")
	require.NoError(t, err)
	_, err = scenarios.NewRegression(twin, 2, r, 100)
	require.ErrorContains(t, err, "weak twin")
}
