package sink

import (
	"errors"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/sim/disk"
	"github.com/stretchr/testify/require"
)

// A consumer stored its output and its offset in one acknowledged write;
// the store's process then crashes. After the restart both are there.
func TestAcknowledgedWriteSurvivesCrash(t *testing.T) {
	w := newWorld(t, 1, ServerOptions{})
	res := w.mustWrite(puts("out/order-7", "shipped", "offset/orders-0", "8"))
	require.Equal(t, uint64(1), res.Revision)

	w.sink().Crash()
	w.run(time.Second)
	w.sink().Start()
	w.run(10 * time.Millisecond)

	require.Equal(t, kv("out/order-7", "shipped", "offset/orders-0", "8"), w.read("out/order-7", "offset/orders-0"))
	require.Equal(t, uint64(1), w.server().Recovery().Revision)
}

// The same, but the machine loses power mid-writeback of later,
// unacknowledged writes (group commit keeps them in the page cache for a
// while): what was acknowledged is still there.
func TestAcknowledgedWriteSurvivesPowerLoss(t *testing.T) {
	for seed := range uint64(10) {
		w := newWorld(t, seed, ServerOptions{SyncDelay: 5 * time.Millisecond})
		w.mustWrite(puts("out/a", "1", "offset/p0", "1"))
		w.mustWrite(puts("out/b", "2", "offset/p0", "2"))
		late := w.write(puts("out/c", "3", "offset/p0", "3"), nil, time.Second)
		w.run(3 * time.Millisecond) // arrived, not yet synced

		w.sink().PowerLoss(true)
		w.run(time.Second)
		w.sink().Start()
		w.await(late, 2*time.Second)
		require.True(t, Indefinite(late.err), "seed %d: the write in the window was never answered: %v", seed, late.err)

		got := w.read("out/a", "out/b", "out/c", "offset/p0")
		require.Equal(t, "1", got["out/a"], "seed %d", seed)
		require.Equal(t, "2", got["out/b"], "seed %d", seed)
		if got["out/c"] == "" {
			require.Equal(t, "2", got["offset/p0"], "seed %d: offset moved without its output", seed)
		} else {
			require.Equal(t, "3", got["offset/p0"], "seed %d: output kept without its offset", seed)
		}
	}
}

// Two writes wait in the group-commit window when the power goes, and the
// disk was part-way through writing them back. Whatever survives is a
// prefix of the log — nothing, the first write, or both — and each write
// is there whole or not at all, never some of its keys.
func TestPowerLossTearingUnacknowledgedWritesLeavesNoPartialEffect(t *testing.T) {
	value := string(make([]byte, 200))
	first := puts("a/0", value, "a/1", value, "a/2", value, "a/3", value)
	second := puts("b/0", value, "b/1", value, "b/2", value, "b/3", value)
	all := []string{"a/0", "a/1", "a/2", "a/3", "b/0", "b/1", "b/2", "b/3"}
	seen := map[string]int{}
	for seed := range uint64(30) {
		w := newWorld(t, seed, ServerOptions{SyncDelay: 50 * time.Millisecond})
		o1 := w.write(first, nil, time.Second)
		o2 := w.write(second, nil, time.Second)
		w.run(10 * time.Millisecond)
		require.Len(t, w.server().pending, 2, "both writes wait for the sync")

		w.sink().PowerLoss(true)
		w.run(time.Second)
		w.sink().Start()
		w.await(o1, 2*time.Second)
		w.await(o2, 2*time.Second)
		require.True(t, Indefinite(o1.err) && Indefinite(o2.err), "seed %d: %v, %v", seed, o1.err, o2.err)

		got := w.read(all...)
		var kept string
		switch len(got) {
		case 0:
			kept = "none"
		case 4:
			require.Contains(t, got, "a/0", "seed %d: the second write survived without the first", seed)
			kept = "first"
		case 8:
			kept = "both"
		default:
			t.Fatalf("seed %d: a write survived in part: %d of 8 keys", seed, len(got))
		}
		seen[kept]++
		if tail := w.server().Recovery().Tail; tail != "" {
			require.Equal(t, "torn", tail, "seed %d", seed)
			seen["torn"]++
		}
	}
	t.Logf("outcomes over 30 power losses: %v", seen)
	require.Positive(t, seen["torn"], "no power loss tore a record: the test lost its point")
	require.Positive(t, seen["none"])
	require.Positive(t, seen["first"]+seen["both"])
}

// The disk fails the sync of a write. The server undoes it, in memory and
// on the disk, and says so definitely; a crash afterwards does not bring
// it back from the page cache, and the store keeps working.
func TestFailedSyncRollsTheWriteBackDefinitely(t *testing.T) {
	w := newWorld(t, 3, ServerOptions{})
	w.mustWrite(puts("offset/p0", "1"))
	w.sink().FailSyncs(1)
	o := w.write(puts("out/x", "x", "offset/p0", "2"), nil, time.Second)
	w.await(o, 2*time.Second)
	require.ErrorIs(t, o.err, ErrStorage)
	require.True(t, Definite(o.err))
	require.Equal(t, kv("offset/p0", "1"), w.read("out/x", "offset/p0"))

	w.sink().Restart()
	w.run(10 * time.Millisecond)
	require.Equal(t, kv("offset/p0", "1"), w.read("out/x", "offset/p0"))
	res := w.mustWrite(puts("out/x", "x", "offset/p0", "2"))
	require.Equal(t, uint64(2), res.Revision, "the rolled-back write's revision is free again")
}

// The disk fails the reads of a rebooting store. It answers "unavailable"
// (definite) until a retry of the recovery succeeds, and loses nothing.
func TestRecoveryRetriesAfterAReadFault(t *testing.T) {
	w := newWorld(t, 4, ServerOptions{RecoveryRetryInterval: 200 * time.Millisecond})
	w.mustWrite(puts("offset/p0", "41"))
	w.sink().Crash()
	w.run(100 * time.Millisecond)
	w.sink().FailReads("sink/", 1)
	w.sink().Start()
	o := w.get([]string{"offset/p0"}, time.Second)
	w.await(o, 2*time.Second)
	require.ErrorIs(t, o.err, ErrUnavailable)
	require.True(t, Definite(o.err))
	require.True(t, w.logged("sink-recovery-failed"))

	w.run(300 * time.Millisecond)
	require.Equal(t, kv("offset/p0", "41"), w.read("offset/p0"))
}

// A bit flips in the middle of the log. Recovery cuts the log at the
// damaged record — that write and every later one are lost, as they must
// be with a single copy — and serves the consistent prefix before it,
// naming the damage in the trace.
func TestCorruptRecordCutsTheLogAtTheDamage(t *testing.T) {
	w := newWorld(t, 5, ServerOptions{})
	w.mustWrite(puts("out/1", "a", "offset/p0", "1"))
	end1 := w.server().st.logBytes
	w.mustWrite(puts("out/2", "b", "offset/p0", "2"))
	w.mustWrite(puts("out/3", "c", "offset/p0", "3"))
	w.sink().Crash()

	d := w.sink().Disk()
	b := make([]byte, 1)
	_, err := d.ReadAt(logFile, b, end1+recordHeaderBytes+2)
	require.NoError(t, err)
	b[0] ^= 0x10
	require.NoError(t, d.WriteAt(logFile, b, end1+recordHeaderBytes+2))
	require.NoError(t, d.Sync(logFile))

	w.sink().Start()
	w.run(10 * time.Millisecond)
	rec := w.server().Recovery()
	require.Equal(t, "corrupt", rec.Tail)
	require.Equal(t, uint64(1), rec.Revision)
	require.True(t, w.logged("sink-log-corrupt"))
	require.Equal(t, kv("out/1", "a", "offset/p0", "1"), w.read("out/1", "out/2", "out/3", "offset/p0"))
}

// A store that has taken many writes keeps its log small: it snapshots
// the state and empties the log. The snapshot and what follows it survive
// a power loss.
func TestCompactionBoundsTheLogAndSurvivesPowerLoss(t *testing.T) {
	w := newWorld(t, 6, ServerOptions{LogBytesMax: 4096})
	keys := keysN("out/", 10)
	for i := range 300 {
		w.mustWrite([]Put{{Key: keys[i%10], Value: []byte{byte(i)}}, {Key: "offset/p0", Value: []byte{byte(i >> 8), byte(i)}}})
		size, _ := w.sink().Disk().Size(logFile)
		require.LessOrEqual(t, size, int64(4096+200), "write %d: the log outgrew its bound", i)
	}
	require.True(t, w.logged("sink-compacted"))
	w.sink().PowerLoss(false)
	w.sink().Start()
	w.run(10 * time.Millisecond)
	rec := w.server().Recovery()
	require.Equal(t, uint64(300), rec.Revision)
	require.Positive(t, rec.SnapshotRevision)
	got := w.read(append(keys, "offset/p0")...)
	require.Equal(t, string([]byte{1, 43}), got["offset/p0"]) // 299
	require.Equal(t, string([]byte{299 % 256}), got["out/09"])
}

// A compaction crashed after writing its snapshot and before emptying the
// log: recovery skips the log records the snapshot already holds.
func TestRecoverySkipsLogRecordsTheSnapshotHolds(t *testing.T) {
	d := disk.New()
	s := newState()
	var log []byte
	for i := range 5 {
		p := puts("k", string(rune('a'+i)))
		s.apply(p)
		log = appendRecord(log, s.revision, p)
		if i == 2 {
			require.NoError(t, d.WriteAt(snapshotFile, encodeSnapshot(s), 0))
		}
	}
	require.NoError(t, d.WriteAt(logFile, log, 0))
	require.NoError(t, d.Sync(snapshotFile))
	require.NoError(t, d.Sync(logFile))

	_, got, rec, err := recoverStorage(d)
	require.NoError(t, err)
	require.Equal(t, Recovery{Revision: 5, SnapshotRevision: 3, Records: 2}, rec)
	require.Equal(t, "e", string(got.get("k").Value))
	require.Equal(t, uint64(5), got.get("k").Version)
}

// A snapshot that fails its checksum cannot be rebuilt from anything: the
// store halts and answers unavailable instead of serving a made-up state.
func TestCorruptSnapshotHaltsTheStore(t *testing.T) {
	w := newWorld(t, 7, ServerOptions{LogBytesMax: 64})
	for i := range 10 {
		w.mustWrite(puts("offset/p0", string(rune('0'+i)), "out/x", "0123456789012345678901234567890123456789"))
	}
	require.True(t, w.logged("sink-compacted"))
	w.sink().Crash()
	snap, err := w.sink().Disk().ReadFile(snapshotFile)
	require.NoError(t, err)
	snap[len(snap)/2] ^= 1
	require.NoError(t, w.sink().Disk().WriteAt(snapshotFile, snap, 0))
	w.sink().Start()
	w.run(10 * time.Millisecond)

	o := w.get([]string{"offset/p0"}, time.Second)
	w.await(o, 2*time.Second)
	require.ErrorIs(t, o.err, ErrUnavailable)
	require.True(t, w.logged("sink-halted"))
}

// errorsAs is errors.As for tests that want the target back.
func errorsAs[T error](t *testing.T, err error) T {
	t.Helper()
	var target T
	require.True(t, errors.As(err, &target), "%v is not a %T", err, target)
	return target
}

// The store crashes with a write still in its group-commit window; the
// operating system kept the page cache, so recovery finds the write and
// serves it. Having served it, the store must never lose it: recovery
// syncs the log before answering anyone, and a power loss right after the
// read takes nothing back.
func TestWriteRecoveredFromThePageCacheIsDurableBeforeItIsServed(t *testing.T) {
	w := newWorld(t, 8, ServerOptions{SyncDelay: 50 * time.Millisecond})
	o := w.write(puts("out/1", "one", "offset/p0", "1"), nil, time.Second)
	w.run(5 * time.Millisecond)
	require.Len(t, w.server().pending, 1)
	w.sink().Crash()
	w.await(o, 2*time.Second)
	require.True(t, Indefinite(o.err))
	w.sink().Start()
	require.Equal(t, kv("out/1", "one", "offset/p0", "1"), w.read("out/1", "offset/p0"), "recovery replays the page cache")

	w.sink().PowerLoss(false)
	w.sink().Start()
	require.Equal(t, kv("out/1", "one", "offset/p0", "1"), w.read("out/1", "offset/p0"), "what was read survives a power loss")
}
