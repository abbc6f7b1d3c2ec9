package faults_test

import (
	"testing"

	"github.com/kafkasim/kafkasim/internal/detlint"
	"github.com/stretchr/testify/require"
)

// Schedules must replay byte for byte, so this package takes randomness
// from env.Rand or rapid only, and never reads the wall clock.
func TestFaultsUseOnlyTheWorldsTimeAndRandomness(t *testing.T) {
	findings, err := detlint.Scan(".")
	require.NoError(t, err)
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}
