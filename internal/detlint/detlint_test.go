package detlint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// deterministic are the packages whose code must take time, randomness and
// concurrency from the world only.
var deterministic = []string{"env", "sim", "broker", "apps"}

func TestDeterministicPackagesUseOnlyTheWorld(t *testing.T) {
	root := filepath.Join("..", "..")
	var dirs []string
	for _, d := range deterministic {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			dirs = append(dirs, filepath.Join(root, d))
		}
	}
	findings, err := Scan(dirs...)
	require.NoError(t, err)
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}

func TestScanCatchesEachForbiddenConstruct(t *testing.T) {
	dir := t.TempDir()
	src := `package bad

import (
	"crypto/rand"
	mr "math/rand"
	tm "time"
)

func f() {
	go func() {}()
	_ = tm.Now()
	tm.Sleep(1)
	<-tm.After(1)
	_ = tm.NewTimer(1)
	_ = mr.Int()
	_, _ = rand.Read(nil)
	_ = tm.Duration(3) // allowed: a type, not the clock
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad_test.go"), []byte("package bad\nimport \"time\"\nvar _ = time.Now()\n"), 0o644))
	findings, err := Scan(dir)
	require.NoError(t, err)
	var whats []string
	for _, f := range findings {
		whats = append(whats, f.What)
	}
	require.Equal(t, []string{
		"imports crypto/rand (use env.Rand from the world)",
		"imports math/rand (use env.Rand from the world)",
		"go statement (a process has one event loop; schedule an event instead)",
		"time.Now (use env.Now / env.AfterFunc)",
		"time.Sleep (use env.Now / env.AfterFunc)",
		"time.After (use env.Now / env.AfterFunc)",
		"time.NewTimer (use env.Now / env.AfterFunc)",
	}, whats, "test files are exempt; time.Duration is fine")
}
