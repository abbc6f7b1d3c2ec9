package broker

import (
	"cmp"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckEachReportsTheSmallestKey: with several entries broken, the
// panic names the smallest one whatever order the map iterates in.
func TestCheckEachReportsTheSmallestKey(t *testing.T) {
	m := map[string]int{}
	for i := range 50 {
		m[fmt.Sprintf("k%02d", i)] = i
	}
	check := func(k string, v int) string {
		if v%7 == 3 {
			return invariantf("%s broken", k)
		}
		return ""
	}
	for range 100 {
		require.PanicsWithValue(t, "broker invariant: k03 broken", func() { checkEach(m, cmp.Compare[string], check) })
	}
	require.NotPanics(t, func() { checkEach(m, cmp.Compare[string], func(string, int) string { return "" }) })
}
