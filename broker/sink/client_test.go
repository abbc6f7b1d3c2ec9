package sink

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A consumer instance (generation 1) stores its offsets under an epoch
// key. Its successor takes over by bumping the epoch; from then on the old
// instance — a zombie that does not know it was replaced — has every write
// refused, definitely, and the store keeps the successor's state.
func TestConditionalWriteFencesAZombieConsumer(t *testing.T) {
	w := newWorld(t, 1, ServerOptions{})
	w.mustWrite(puts("epoch/group-a", "1", "offset/p0", "10"), IfAbsent("epoch/group-a"))

	// The successor reads the offsets and fences generation 1.
	w.mustWrite(puts("epoch/group-a", "2"), IfValue("epoch/group-a", []byte("1")))

	zombie := w.write(puts("out/late", "dup", "offset/p0", "11"), []Condition{IfValue("epoch/group-a", []byte("1"))}, time.Second)
	w.await(zombie, 2*time.Second)
	require.ErrorIs(t, zombie.err, ErrConditionFailed)
	require.True(t, Definite(zombie.err))
	ce := errorsAs[*ConditionError](t, zombie.err)
	require.Equal(t, 0, ce.Index)
	require.Equal(t, uint64(2), ce.Version, "the epoch key was last put by revision 2")
	require.Equal(t, kv("epoch/group-a", "2", "offset/p0", "10"), w.read("epoch/group-a", "offset/p0", "out/late"))

	w.mustWrite(puts("out/p0-10", "done", "offset/p0", "11"), IfValue("epoch/group-a", []byte("2")))
	require.Equal(t, kv("epoch/group-a", "2", "offset/p0", "11"), w.read("epoch/group-a", "offset/p0", "out/late"))
}

// Compare-and-set on versions: a write conditioned on the version of the
// offsets it read succeeds once; a second writer that read the same
// version loses, and learns the version that beat it.
func TestVersionConditionLetsOnlyOneOfTwoWritersWin(t *testing.T) {
	w := newWorld(t, 2, ServerOptions{})
	first := w.mustWrite(puts("offset/p0", "5"))
	read := w.get([]string{"offset/p0", "offset/p1"}, time.Second)
	w.await(read, time.Second)
	require.NoError(t, read.err)
	require.Equal(t, Entry{Key: "offset/p0", Value: []byte("5"), Version: first.Revision}, read.val.Entries[0])
	require.False(t, read.val.Entries[1].Present())

	a := w.write(puts("offset/p0", "6"), []Condition{IfVersion("offset/p0", first.Revision)}, time.Second)
	b := w.write(puts("offset/p0", "7"), []Condition{IfVersion("offset/p0", first.Revision)}, time.Second)
	w.await(a, time.Second)
	w.await(b, time.Second)
	require.NoError(t, a.err)
	require.ErrorIs(t, b.err, ErrConditionFailed)
	require.Equal(t, a.val.Revision, errorsAs[*ConditionError](t, b.err).Version)
	require.Equal(t, kv("offset/p0", "6"), w.read("offset/p0"))
}

// The network splits the consumer from the store right after it sent a
// write. The write times out — indefinite: the consumer cannot know — and
// once the partition heals the request, which waited in the network,
// lands after all: the store holds the whole write. (Had the split lasted
// past the stall timeout the connection would have reset and the write
// been lost whole; either way, never in part.)
func TestPartitionedWriteTimesOutIndefinitelyAndMayLandAfterHeal(t *testing.T) {
	w := newWorld(t, 3, ServerOptions{})
	w.mustWrite(puts("offset/p0", "1"))
	o := &outcome[Result]{}
	w.Node("app").Exec(func() {
		w.client().Write(puts("out/2", "two", "offset/p0", "2"), nil, 500*time.Millisecond, o.set)
		w.Partition([]string{"app"}, []string{"sink"})
	})
	w.await(o, time.Second)
	require.ErrorIs(t, o.err, ErrTimeout)
	require.True(t, Indefinite(o.err))
	require.Equal(t, kv("offset/p0", "1"), w.server().stateOf("out/2", "offset/p0"), "nothing arrived during the partition")

	w.Heal()
	w.run(time.Second)
	require.Equal(t, kv("out/2", "two", "offset/p0", "2"), w.read("out/2", "offset/p0"))
}

// The split comes after the write reached the store and before the
// answer came back: the write is durable, the consumer hears nothing,
// times out, and finds the whole write when it reads again.
func TestPartitionBeforeTheAnswerLeavesTheWriteWhole(t *testing.T) {
	w := newWorld(t, 4, ServerOptions{SyncDelay: 20 * time.Millisecond})
	o := w.write(puts("out/1", "one", "offset/p0", "1"), nil, 300*time.Millisecond)
	w.run(5 * time.Millisecond)
	require.Len(t, w.server().pending, 1, "the write reached the store")
	w.Partition([]string{"app"}, []string{"sink"})
	w.await(o, time.Second)
	require.ErrorIs(t, o.err, ErrTimeout)
	require.True(t, Indefinite(o.err))

	w.Heal()
	require.Equal(t, kv("out/1", "one", "offset/p0", "1"), w.read("out/1", "offset/p0"))
}

// With the store down, a write cannot be sent: the client keeps redialing
// with backoff until the call's deadline and then fails it definitely.
// When the store comes back the client reconnects on its own.
func TestWriteToADownStoreIsNotSentAndTheClientReconnects(t *testing.T) {
	w := newWorld(t, 5, ServerOptions{})
	w.sink().Crash()
	o := w.write(puts("k", "v"), nil, 2*time.Second)
	w.await(o, 3*time.Second)
	require.ErrorIs(t, o.err, ErrNotSent)
	require.True(t, Definite(o.err))
	dials := strings.Count(w.trace.String(), `"kind":"refused"`)
	require.GreaterOrEqual(t, dials, 3, "the client redials")
	require.LessOrEqual(t, dials, 10, "with backoff, not in a loop")

	w.sink().Start()
	w.mustWrite(puts("k", "v"))
}

// Calls are pipelined on one connection: ten writes sent back to back are
// acknowledged in order with consecutive revisions, and a read behind them
// sees them all.
func TestPipelinedWritesAreAcknowledgedInOrder(t *testing.T) {
	w := newWorld(t, 6, ServerOptions{SyncDelay: time.Millisecond})
	var revs []uint64
	w.Node("app").Exec(func() {
		for i := range 10 {
			w.client().Write(puts(keysN("k", 10)[i], "v"), nil, time.Second, func(r Result, err error) {
				require.NoError(t, err)
				revs = append(revs, r.Revision)
			})
		}
	})
	s := w.scan(ScanRange{Prefix: "k"}, time.Second)
	w.await(s, time.Second)
	require.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, revs)
	require.Len(t, s.val.Entries, 10)
	require.Equal(t, uint64(10), s.val.Revision)
}

// A read never sees a write before it is durable: the answer to a Get
// that arrives during a write's group-commit window waits for the sync,
// and if the power goes first the read is lost with the write.
func TestReadsWaitForTheSyncOfEarlierWrites(t *testing.T) {
	w := newWorld(t, 7, ServerOptions{SyncDelay: 30 * time.Millisecond})
	wr := w.write(puts("k", "v"), nil, time.Second)
	w.run(5 * time.Millisecond)
	rd := w.get([]string{"k"}, time.Second)
	w.run(10 * time.Millisecond)
	require.False(t, rd.done, "answered before the write was durable")
	w.await(rd, time.Second)
	require.True(t, wr.done, "the write is acknowledged no later than the read behind it")
	require.Equal(t, "v", string(rd.val.Entries[0].Value))

	wr = w.write(puts("k", "lost"), nil, 500*time.Millisecond)
	w.run(5 * time.Millisecond)
	rd = w.get([]string{"k"}, 500*time.Millisecond)
	w.run(5 * time.Millisecond)
	w.sink().PowerLoss(false)
	w.await(rd, time.Second)
	w.await(wr, time.Second)
	require.True(t, Indefinite(rd.err) && Indefinite(wr.err), "%v / %v", rd.err, wr.err)
	w.sink().Start()
	require.Equal(t, kv("k", "v"), w.read("k"))
}

// Scan walks a prefix in key order, a page at a time.
func TestScanPagesThroughAPrefixInKeyOrder(t *testing.T) {
	w := newWorld(t, 8, ServerOptions{})
	w.mustWrite(puts("out/c", "3", "out/a", "1", "other", "x", "out/b", "2", "out/d", "4", "outside", "y"))
	w.mustWrite([]Put{{Key: "out/b", Delete: true}})

	var got []string
	after := ""
	for {
		s := w.scan(ScanRange{Prefix: "out/", After: after, Limit: 2}, time.Second)
		w.await(s, time.Second)
		require.NoError(t, s.err)
		for _, e := range s.val.Entries {
			got = append(got, e.Key+"="+string(e.Value))
			after = e.Key
		}
		if !s.val.More {
			break
		}
	}
	require.Equal(t, []string{"out/a=1", "out/c=3", "out/d=4"}, got)
}

// Requests that break the protocol's rules fail definitely before they
// are sent; the store never sees them.
func TestInvalidRequestsFailBeforeSending(t *testing.T) {
	w := newWorld(t, 9, ServerOptions{})
	cases := map[string]*outcome[Result]{
		"no puts":       w.write(nil, nil, time.Second),
		"empty key":     w.write(puts("", "v"), nil, time.Second),
		"key put twice": w.write(puts("k", "1", "k", "2"), nil, time.Second),
		"unknown kind":  w.write(puts("k", "1"), []Condition{{Key: "k", Kind: 9}}, time.Second),
		"huge value":    w.write([]Put{{Key: "k", Value: make([]byte, ValueBytesMax+1)}}, nil, time.Second),
	}
	w.run(10 * time.Millisecond)
	for name, o := range cases {
		require.True(t, o.done, name)
		require.ErrorIs(t, o.err, ErrInvalid, name)
		require.True(t, Definite(o.err), name)
	}
	require.Zero(t, w.server().state.revision)
}

// The server enforces the same rules on a request that slipped past a
// client: it answers invalid, definitely, and keeps the connection.
func TestServerAnswersARuleBreakingRequestInvalid(t *testing.T) {
	w := newWorld(t, 10, ServerOptions{})
	w.Node("app").Exec(func() {
		a := w.app()
		c := a.e.Dial("sink")
		a.e.Send(c, encodeRequest(&request{id: 1, op: opWrite, puts: puts("k", "1", "k", "2")}))
	})
	w.run(10 * time.Millisecond)
	require.Len(t, w.app().other, 1)
	for c, events := range w.app().other {
		require.Equal(t, []string{"connected", "received"}, events, "conn %d", c)
		got, err := decodeResponse(w.app().frames[c][0])
		require.NoError(t, err)
		require.Equal(t, statusInvalid, got.status)
		require.Contains(t, got.message, `key "k" put twice`)
	}
}

// A peer that sends garbage is cut off with a trace line naming what was
// wrong; the store carries on serving everyone else. The app's own raw
// connection is not mistaken for the sink client's.
func TestMalformedFrameClosesTheConnection(t *testing.T) {
	w := newWorld(t, 11, ServerOptions{})
	w.mustWrite(puts("k", "v"))
	w.Node("app").Exec(func() {
		a := w.app()
		c := a.e.Dial("sink")
		a.e.Send(c, []byte{magic, 1, byte(opWrite), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	})
	w.run(100 * time.Millisecond)
	require.True(t, w.logged("sink-bad-request"))
	require.Len(t, w.app().other, 1)
	for _, events := range w.app().other {
		require.Equal(t, []string{"connected", "closed"}, events)
	}
	require.Equal(t, kv("k", "v"), w.read("k"), "the client's own connection is untouched")
}

// A response the client cannot parse closes its connection and fails the
// calls in flight indefinitely.
func TestMalformedResponseFailsCallsIndefinitely(t *testing.T) {
	w := newWorld(t, 12, ServerOptions{SyncDelay: 50 * time.Millisecond})
	o := w.write(puts("k", "v"), nil, time.Second)
	w.run(10 * time.Millisecond)
	w.Node("app").Exec(func() { w.client().Received(w.client().conn.ID(), []byte{magic, 7}) })
	w.await(o, time.Second)
	require.ErrorIs(t, o.err, ErrBadResponse)
	require.True(t, Indefinite(o.err))
	require.True(t, w.logged("sink-bad-response"))
	require.Equal(t, kv("k", "v"), w.read("k"), "the write happened all the same")
}

// Closing the client fails what it holds: calls sent indefinitely,
// calls not yet sent definitely.
func TestClosingTheClientFailsOutstandingCalls(t *testing.T) {
	w := newWorld(t, 13, ServerOptions{SyncDelay: 50 * time.Millisecond})
	w.mustWrite(puts("a", "0")) // connected
	sent := &outcome[Result]{}
	w.Node("app").Exec(func() {
		w.client().Write(puts("a", "1"), nil, time.Second, sent.set)
		w.client().Close()
	})
	w.run(10 * time.Millisecond)
	require.ErrorIs(t, sent.err, ErrDisconnected)
	require.True(t, Indefinite(sent.err))

	w = newWorld(t, 14, ServerOptions{})
	w.Partition([]string{"app"}, []string{"sink"})
	unsent := &outcome[Result]{}
	w.Node("app").Exec(func() {
		w.client().Write(puts("b", "2"), nil, time.Second, unsent.set)
		w.client().Close()
	})
	w.run(10 * time.Millisecond)
	require.ErrorIs(t, unsent.err, ErrNotSent)
	require.True(t, Definite(unsent.err))
}

func (s *Server) stateOf(keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if e := s.state.get(k); e.Present() {
			out[k] = string(e.Value)
		}
	}
	return out
}
