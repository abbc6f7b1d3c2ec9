package disk

import (
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/kafkasim/kafkasim/env"
	"github.com/stretchr/testify/require"
)

func TestSyncedBytesSurvivePowerLossUnsyncedDoNot(t *testing.T) {
	d := New()
	require.NoError(t, d.Append("f", []byte("durable")))
	require.NoError(t, d.Sync("f"))
	require.NoError(t, d.Append("f", []byte("+cache")))
	lost := d.PowerLoss(false, env.NewRand(1))
	require.Equal(t, int64(6), lost)
	got, err := d.ReadFile("f")
	require.NoError(t, err)
	require.Equal(t, "durable", string(got))
}

func TestTornPowerLossKeepsAnInOrderPrefixOfUnsyncedWrites(t *testing.T) {
	for seed := range uint64(200) {
		d := New()
		require.NoError(t, d.Append("f", []byte("AAAA")))
		require.NoError(t, d.Sync("f"))
		require.NoError(t, d.Append("f", []byte("BBBB")))
		require.NoError(t, d.Append("f", []byte("CCCC")))
		d.PowerLoss(true, env.NewRand(seed))
		got, _ := d.ReadFile("f")
		full := "AAAABBBBCCCC"
		require.LessOrEqual(t, len(got), len(full))
		require.Equal(t, full[:len(got)], string(got), "seed %d: not a prefix", seed)
		require.GreaterOrEqual(t, len(got), 4, "synced bytes lost")
	}
}

func TestOverwriteThenPowerLossRestoresTheSyncedImage(t *testing.T) {
	d := New()
	require.NoError(t, d.WriteAt("f", []byte("0123456789"), 0))
	require.NoError(t, d.Sync("f"))
	require.NoError(t, d.WriteAt("f", []byte("xx"), 3))
	require.NoError(t, d.Truncate("f", 8))
	got, _ := d.ReadFile("f")
	require.Equal(t, "012xx567", string(got))
	d.PowerLoss(false, env.NewRand(1))
	got, _ = d.ReadFile("f")
	require.Equal(t, "01234567", string(got), "the overwrite was never synced; the truncation is durable")
}

func TestFailedSyncMakesNothingDurable(t *testing.T) {
	d := New()
	require.NoError(t, d.Append("f", []byte("data")))
	d.FailSyncs(1)
	require.ErrorIs(t, d.Sync("f"), env.ErrIO)
	d.PowerLoss(false, env.NewRand(1))
	got, _ := d.ReadFile("f")
	require.Empty(t, got)
}

func TestReadErrorHitsOnlyMatchingFilesAndOnlyNTimes(t *testing.T) {
	d := New()
	require.NoError(t, d.Append("log/a", []byte("a")))
	require.NoError(t, d.Append("meta", []byte("m")))
	d.FailReads("log/", 1)
	_, err := d.ReadFile("meta")
	require.NoError(t, err)
	_, err = d.ReadFile("log/a")
	require.ErrorIs(t, err, env.ErrIO)
	_, err = d.ReadFile("log/a")
	require.NoError(t, err)
}

func TestCorruptFlipsExactlyOneBit(t *testing.T) {
	d := New()
	orig := []byte("some bytes on the platter")
	require.NoError(t, d.Append("f", orig))
	require.NoError(t, d.Sync("f"))
	name, off, ok := d.Corrupt("", env.NewRand(3))
	require.True(t, ok)
	require.Equal(t, "f", name)
	got, _ := d.ReadFile("f")
	diff := 0
	for i := range got {
		if got[i] != orig[i] {
			diff++
			require.Equal(t, off, int64(i))
		}
	}
	require.Equal(t, 1, diff)
	d.PowerLoss(false, env.NewRand(1))
	again, _ := d.ReadFile("f")
	require.Equal(t, got, again, "rot is on the platter, not in the cache")
}

func TestReadAtPastEndAndMissingFiles(t *testing.T) {
	d := New()
	_, err := d.ReadFile("nope")
	require.True(t, errors.Is(err, fs.ErrNotExist))
	require.NoError(t, d.WriteAt("f", []byte("xy"), 3)) // gap is zero-filled
	got, _ := d.ReadFile("f")
	require.Equal(t, []byte{0, 0, 0, 'x', 'y'}, got)
	buf := make([]byte, 4)
	n, err := d.ReadAt("f", buf, 3)
	require.Equal(t, 2, n)
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, d.Remove("missing"))
}

func TestRenameReplacesAndListIsSorted(t *testing.T) {
	d := New()
	for _, n := range []string{"b/2", "a", "b/1", "c"} {
		require.NoError(t, d.Append(n, []byte(n)))
	}
	require.Equal(t, []string{"b/1", "b/2"}, d.List("b/"))
	require.NoError(t, env.WriteFileAtomic(d, "a", []byte("new")))
	got, _ := d.ReadFile("a")
	require.Equal(t, "new", string(got))
	d.PowerLoss(false, env.NewRand(1))
	got, _ = d.ReadFile("a")
	require.Equal(t, "new", string(got), "an atomic write is durable")
	require.Equal(t, []string{"a", "b/1", "b/2", "c"}, d.List(""))
}

// The world folds these operations into its trace hash; an overwrite that a
// power loss undoes changes no size, so only its report tells it happened.
func TestTheObserverHearsEveryChangeAndWhatPowerLossUndid(t *testing.T) {
	d := New()
	var ops []string
	d.Observe(func(op Op) { ops = append(ops, op.Kind.String()+" "+op.Name) })
	require.NoError(t, d.WriteAt("f", []byte("0123"), 0))
	require.NoError(t, d.Sync("f"))
	require.NoError(t, d.WriteAt("f", []byte("x"), 1))
	require.NoError(t, d.Append("g", []byte("synced")))
	require.NoError(t, d.Sync("g"))
	require.Equal(t, int64(0), d.PowerLoss(false, env.NewRand(1)), "no file shrank")
	require.NoError(t, d.Rename("g", "h"))
	require.NoError(t, d.Truncate("h", 2))
	require.NoError(t, d.Remove("h"))
	require.NoError(t, d.Remove("never-was"))
	require.Equal(t, []string{
		"write f", "sync f", "write f", "write g", "sync g",
		"power-loss f", // g was synced: unchanged, unreported
		"rename g", "truncate h", "remove h",
	}, ops)
}

// A file's version stays while it only grows and changes whenever bytes
// already in it may have: what lets a reader resume where it stopped.
func TestAVersionChangesWhenWrittenBytesMayHave(t *testing.T) {
	d := New()
	o := d.Onlooker()
	_, ok := o.Version("f")
	require.False(t, ok)
	require.NoError(t, d.Append("f", []byte("abc")))
	v0, ok := o.Version("f")
	require.True(t, ok)
	require.NoError(t, d.Append("f", []byte("def")))
	require.NoError(t, d.Sync("f"))
	v, _ := o.Version("f")
	require.Equal(t, v0, v, "an append and a sync keep the version")
	steps := []struct {
		name string
		do   func()
	}{
		{"an overwrite", func() { require.NoError(t, d.WriteAt("f", []byte("X"), 1)) }},
		{"a truncation", func() { require.NoError(t, d.Truncate("f", 2)) }},
		{"a flipped bit", func() { d.Corrupt("f", env.NewRand(1)) }},
		{"a power loss that drops bytes", func() { require.NoError(t, d.Append("f", []byte("unsynced"))); d.PowerLoss(false, env.NewRand(1)) }},
		{"another file under the name", func() {
			require.NoError(t, d.Append("g", []byte("abc")))
			require.NoError(t, d.Rename("g", "f"))
		}},
	}
	for _, s := range steps {
		before, _ := o.Version("f")
		s.do()
		after, _ := o.Version("f")
		require.NotEqual(t, before, after, s.name)
	}
}

func TestAMemoLastsWhileTheFileOnlyGrows(t *testing.T) {
	d := New()
	d.SetMemo("f", "nothing to keep it on")
	_, ok := d.Memo("f")
	require.False(t, ok, "a memo on a missing file")
	set := func(name string) {
		require.NoError(t, d.Append(name, []byte("0123456789")))
		d.SetMemo(name, name+" verified")
	}
	kept := func(name string) bool {
		v, ok := d.Memo(name)
		require.True(t, !ok || v == name+" verified")
		return ok
	}
	set("f")
	require.NoError(t, d.Append("f", []byte("more")))
	require.NoError(t, d.Sync("f"))
	require.NoError(t, d.WriteAt("f", []byte("end"), 14))
	require.True(t, kept("f"), "appends, a sync and a write at the end keep it")
	require.NoError(t, d.Rename("f", "g"))
	v, ok := d.Memo("g")
	require.True(t, ok, "the memo goes with the bytes")
	require.Equal(t, "f verified", v)
	_, ok = d.Memo("f")
	require.False(t, ok)

	for _, tc := range []struct {
		name   string
		change func(name string)
	}{
		{"an overwrite", func(n string) { require.NoError(t, d.WriteAt(n, []byte("x"), 3)) }},
		{"a truncation", func(n string) { require.NoError(t, d.Truncate(n, 4)) }},
		{"a power loss", func(n string) { d.PowerLoss(false, env.NewRand(1)) }},
		{"bit rot", func(n string) { d.Corrupt(n, env.NewRand(1)) }},
		{"another file renamed over it", func(n string) {
			require.NoError(t, d.Append("other", []byte("x")))
			require.NoError(t, d.Rename("other", n))
		}},
		{"removing it", func(n string) {
			require.NoError(t, d.Remove(n))
			require.NoError(t, d.Append(n, []byte("x")))
		}},
	} {
		set(tc.name)
		tc.change(tc.name)
		require.False(t, kept(tc.name), "%s drops the memo", tc.name)
	}

	set("h")
	c := d.Clone()
	_, ok = c.Memo("h")
	require.False(t, ok, "a clone keeps no memos")
	want, _ := d.Peek("h")
	got, _ := c.Peek("h")
	require.Equal(t, want, got)
}
