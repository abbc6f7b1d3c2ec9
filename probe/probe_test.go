package probe_test

import (
	"testing"

	"github.com/kafkasim/kafkasim/probe"
	"github.com/stretchr/testify/require"
)

func TestEveryProbeIsNamedOnceWithADoc(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range probe.Catalogue {
		require.False(t, seen[p.Name], "%s listed twice", p.Name)
		seen[p.Name] = true
		require.NotEmpty(t, p.Doc, p.Name)
		require.Contains(t, []string{"broker", "controller", "application", "harness", "world"}, p.Where, p.Name)
		require.True(t, probe.Known(p.Name))
	}
	require.False(t, probe.Known("no-such-probe"))
	require.Equal(t, len(probe.Catalogue), len(probe.Names()))
}

func TestCountsSumAndLookUpByName(t *testing.T) {
	a := probe.FromMap(map[string]uint64{"leader-elected": 2, "unclean-election": 1, "never": 0})
	require.Equal(t, probe.Counts{{Name: "leader-elected", Hits: 2}, {Name: "unclean-election", Hits: 1}}, a, "sorted, zeros dropped")
	b := probe.FromMap(map[string]uint64{"leader-elected": 3, "producer-fenced": 4})
	sum := a.Add(b)
	require.Equal(t, uint64(5), sum.Hits("leader-elected"))
	require.Equal(t, uint64(4), sum.Hits("producer-fenced"))
	require.Equal(t, uint64(1), sum.Hits("unclean-election"))
	require.Zero(t, sum.Hits("transaction-prepared"))
	require.Zero(t, probe.Counts(nil).Hits("leader-elected"))
}
