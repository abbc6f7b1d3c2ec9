package sink

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// One client writes, reads and suffers every fault the world has: sink
// crashes, power losses (torn or not), partitions, connection resets,
// pauses, failed syncs — under random group-commit windows and compaction
// thresholds. Afterwards the store must hold exactly the acknowledged
// writes plus some of the indefinite ones, each whole, in one order in
// which every applied write's conditions held; no definitely failed write;
// and every read must have seen the state at the revision it reported.
//
// Each write puts a marker key of its own, m/<write>, so the final state
// says which writes took effect and, by the marker's version, in what
// order.
func TestStoreHoldsTheAcknowledgedWritesPlusSomeIndefiniteOnesInOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		opts := ServerOptions{
			SyncDelay:   rapid.SampledFrom([]time.Duration{0, time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}).Draw(rt, "syncDelay"),
			LogBytesMax: rapid.SampledFrom([]int64{200, 1 << 20}).Draw(rt, "logBytesMax"),
		}
		w := makeWorld(rt, rapid.Uint64().Draw(rt, "seed"), opts, false)
		h := &workload{}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 13).Draw(rt, "action") {
			case 0, 1, 2, 3, 4, 5:
				h.write(rt, w)
			case 6, 7:
				h.read(w)
			case 8:
				w.sink().Crash()
				w.After(rapid.SampledFrom([]time.Duration{0, 50 * time.Millisecond, time.Second}).Draw(rt, "down"), w.sink().Start)
			case 9:
				torn := rapid.Bool().Draw(rt, "torn")
				at := rapid.SampledFrom([]time.Duration{0, time.Millisecond, 3 * time.Millisecond}).Draw(rt, "powerLossIn")
				off := rapid.SampledFrom([]time.Duration{10 * time.Millisecond, time.Second}).Draw(rt, "off")
				w.After(at, func() {
					w.sink().PowerLoss(torn)
					w.After(off, w.sink().Start)
				})
			case 10:
				w.Partition([]string{"app"}, []string{"sink"})
				w.After(rapid.SampledFrom([]time.Duration{10 * time.Millisecond, 2 * time.Second}).Draw(rt, "split"), w.Heal)
			case 11:
				w.ResetLink("app", "sink")
			case 12:
				w.sink().Pause()
				w.After(rapid.SampledFrom([]time.Duration{5 * time.Millisecond, 1500 * time.Millisecond}).Draw(rt, "pause"), w.sink().Resume)
			case 13:
				w.sink().FailSyncs(rapid.IntRange(1, 2).Draw(rt, "syncFailures"))
			}
			w.run(rapid.SampledFrom([]time.Duration{0, time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond}).Draw(rt, "wait"))
		}

		// Heal everything and let every call end.
		w.run(3 * time.Second)
		w.Heal()
		w.sink().Resume()
		w.sink().Start()
		w.run(3 * time.Second)
		for i, wr := range h.writes {
			require.True(rt, wr.out.done, "write %d never finished", i)
		}
		h.check(rt, w.scanAll())
	})
}

// workload is the client's side of the story: what it asked and heard.
type workload struct {
	writes   []*issuedWrite
	reads    []*outcome[GetResult]
	versions []uint64 // revisions acknowledged so far, for conditions
}

type issuedWrite struct {
	puts  []Put
	conds []Condition
	out   *outcome[Result]
}

// dataKeys are the keys writes fight over.
var dataKeys = []string{"d/0", "d/1", "d/2", "d/3"}

func marker(i int) string { return fmt.Sprintf("m/%04d", i) }

func (h *workload) write(rt *rapid.T, w *world) {
	i := len(h.writes)
	wr := &issuedWrite{out: &outcome[Result]{}}
	wr.puts = append(wr.puts, Put{Key: marker(i), Value: []byte{}})
	for _, k := range rapid.SliceOfNDistinct(rapid.SampledFrom(dataKeys), 1, 3, rapid.ID[string]).Draw(rt, "keys") {
		if rapid.IntRange(0, 4).Draw(rt, "delete") == 0 {
			wr.puts = append(wr.puts, Put{Key: k, Delete: true})
		} else {
			wr.puts = append(wr.puts, Put{Key: k, Value: fmt.Appendf(nil, "w%d", i)})
		}
	}
	switch rapid.IntRange(0, 3).Draw(rt, "condition") {
	case 1:
		v := uint64(0)
		if len(h.versions) > 0 && rapid.Bool().Draw(rt, "knownVersion") {
			v = rapid.SampledFrom(h.versions).Draw(rt, "version")
		}
		wr.conds = []Condition{IfVersion("d/0", v)}
	case 2:
		wr.conds = []Condition{IfValue("d/1", fmt.Appendf(nil, "w%d", rapid.IntRange(0, i).Draw(rt, "valueOf")))}
	}
	h.writes = append(h.writes, wr)
	w.Node("app").Exec(func() {
		w.client().Write(wr.puts, wr.conds, time.Second, func(r Result, err error) {
			wr.out.set(r, err)
			if err == nil {
				h.versions = append(h.versions, r.Revision)
			}
		})
	})
}

func (h *workload) read(w *world) {
	o := &outcome[GetResult]{}
	h.reads = append(h.reads, o)
	w.Node("app").Exec(func() { w.client().Get(dataKeys, time.Second, o.set) })
}

// check holds the final state against the history.
func (h *workload) check(t tb, final ScanResult) {
	t.Helper()
	order := map[uint64]int{} // revision → write
	got := map[string]Entry{}
	for _, e := range final.Entries {
		got[e.Key] = e
		if strings.HasPrefix(e.Key, "m/") {
			var i int
			_, err := fmt.Sscanf(e.Key, "m/%04d", &i)
			require.NoError(t, err)
			_, dup := order[e.Version]
			require.False(t, dup, "two writes at revision %d", e.Version)
			order[e.Version] = i
		}
	}
	require.Len(t, order, int(final.Revision), "revisions 1..%d are not all writes of ours", final.Revision)

	for i, wr := range h.writes {
		m, applied := got[marker(i)]
		switch err := wr.out.err; {
		case err == nil:
			require.True(t, applied, "acknowledged write %d (revision %d) is lost", i, wr.out.val.Revision)
			require.Equal(t, wr.out.val.Revision, m.Version, "acknowledged write %d is at another revision", i)
		case Definite(err):
			require.False(t, applied, "write %d failed definitely (%v) but took effect", i, err)
		}
	}

	// Replay the applied writes in revision order; the reads of each
	// revision must have seen that state.
	reads := map[uint64][]*outcome[GetResult]{}
	for _, r := range h.reads {
		require.True(t, r.done, "a read never finished")
		if r.err == nil {
			require.LessOrEqual(t, r.val.Revision, final.Revision, "a read saw revision %d, past the end", r.val.Revision)
			reads[r.val.Revision] = append(reads[r.val.Revision], r)
		}
	}
	model := newState()
	checkReads := func(rev uint64) {
		for _, r := range reads[rev] {
			for _, e := range r.val.Entries {
				require.Equal(t, model.get(e.Key), e, "a read at revision %d", rev)
			}
		}
	}
	checkReads(0)
	for rev := uint64(1); rev <= final.Revision; rev++ {
		wr := h.writes[order[rev]]
		i, _ := model.check(wr.conds)
		require.Equal(t, -1, i, "write %d applied at revision %d though its condition %v fails there", order[rev], rev, wr.conds)
		model.apply(wr.puts)
		checkReads(rev)
	}
	want := map[string]Entry{}
	for _, k := range model.sortedKeys() {
		want[k] = model.get(k)
	}
	require.Equal(t, want, got, "the store is not the replay of its writes")
}

// scanAll reads the whole store through the client, page by page,
// retrying failed pages.
func (w *world) scanAll() ScanResult {
	w.t.Helper()
	var all ScanResult
	after := ""
	for tries := 0; ; tries++ {
		require.Less(w.t, tries, 100, "scanning the store kept failing")
		o := w.scan(ScanRange{After: after}, time.Second)
		w.await(o, 5*time.Second)
		if o.err != nil {
			w.run(100 * time.Millisecond)
			continue
		}
		all.Entries = append(all.Entries, o.val.Entries...)
		all.Revision = o.val.Revision
		if !o.val.More {
			break
		}
		after = o.val.Entries[len(o.val.Entries)-1].Key
	}
	require.True(w.t, slices.IsSortedFunc(all.Entries, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) }))
	return all
}

var _ = testing.Short
