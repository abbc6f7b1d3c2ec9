package sink

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
)

// writer is a client process that keeps depth writes in flight, each an
// output key of its own plus its offset key: the consumer pattern's shape.
type writer struct {
	e      env.Env
	c      *Client
	depth  int
	seq    int
	acked  *int
	failed *int
}

func (p *writer) Start(e env.Env) {
	p.e = e
	p.c = NewClient(e, "sink", ClientOptions{})
	for range p.depth {
		p.next()
	}
}

func (p *writer) next() {
	p.seq++
	out := fmt.Appendf(nil, "out/%s/%08d", p.e.Name(), p.seq)
	ps := []Put{{Key: string(out), Value: out}, {Key: "offset/" + p.e.Name(), Value: out[len(out)-8:]}}
	p.c.Write(ps, nil, time.Second, func(_ Result, err error) {
		if err != nil {
			*p.failed++
			p.e.AfterFunc(50*time.Millisecond, p.next)
			return
		}
		*p.acked++
		p.next()
	})
}

func (p *writer) Connected(c env.ConnID, peer string, inbound bool) { p.c.Connected(c, peer, inbound) }
func (p *writer) Received(c env.ConnID, frame []byte)               { p.c.Received(c, frame) }
func (p *writer) Closed(c env.ConnID)                               { p.c.Closed(c) }

type writersRun struct {
	acked, failed int
	hash          string
	events        uint64
}

// runWriters runs a sink and clients writers for d, optionally under a
// seeded schedule of sink crashes, power losses and partitions.
func runWriters(seed uint64, clients, depth int, d time.Duration, opts ServerOptions, faults bool) (writersRun, error) {
	var r writersRun
	w := sim.New(sim.Options{Seed: seed})
	w.AddNode("sink", func() env.Process { return NewServer(opts) }).Start()
	var names []string
	for i := range clients {
		name := fmt.Sprintf("app-%d", i)
		names = append(names, name)
		w.AddNode(name, func() env.Process { return &writer{depth: depth, acked: &r.acked, failed: &r.failed} }).Start()
	}
	if faults {
		rnd := w.Rand("faults")
		for at := 200 * time.Millisecond; at < d-time.Second; at += time.Duration(100+rnd.Intn(400)) * time.Millisecond {
			kind, who := rnd.Intn(3), names[rnd.Intn(len(names))]
			w.After(at, func() {
				switch kind {
				case 0:
					w.Node("sink").Crash()
					w.After(100*time.Millisecond, w.Node("sink").Start)
				case 1:
					w.Node("sink").PowerLoss(true)
					w.After(200*time.Millisecond, w.Node("sink").Start)
				case 2:
					w.Partition([]string{who})
					w.After(300*time.Millisecond, w.Heal)
				}
			})
		}
	}
	err := w.RunFor(d)
	r.hash, r.events = w.Trace().HashString(), w.Events()
	return r, err
}

// The same seed gives the same run, event for event, whatever GOMAXPROCS.
func TestSameSeedSameTraceHash(t *testing.T) {
	opts := ServerOptions{SyncDelay: time.Millisecond, LogBytesMax: 16 << 10}
	first, err := runWriters(7, 3, 4, 5*time.Second, opts, true)
	require.NoError(t, err)
	require.Positive(t, first.acked)
	require.Positive(t, first.failed, "the faults bit")
	for _, procs := range []int{1, 2} {
		old := runtime.GOMAXPROCS(procs)
		again, err := runWriters(7, 3, 4, 5*time.Second, opts, true)
		runtime.GOMAXPROCS(old)
		require.NoError(t, err)
		require.Equal(t, first, again, "GOMAXPROCS=%d changed the run", procs)
	}
	other, err := runWriters(8, 3, 4, 5*time.Second, opts, true)
	require.NoError(t, err)
	require.NotEqual(t, first.hash, other.hash)
}

// BenchmarkWrites measures acknowledged sink writes per wall second: 4
// clients keep 8 writes each in flight against one store syncing every
// write (SyncDelay 0) or group-committing every millisecond.
func BenchmarkWrites(b *testing.B) {
	for _, delay := range []time.Duration{0, time.Millisecond} {
		b.Run(fmt.Sprintf("SyncDelay=%v", delay), func(b *testing.B) {
			var acked int
			var simulated time.Duration
			for i := 0; b.Loop(); i++ {
				r, err := runWriters(uint64(i), 4, 8, time.Second, ServerOptions{SyncDelay: delay}, false)
				if err != nil {
					b.Fatal(err)
				}
				acked += r.acked
				simulated += time.Second
			}
			wall := b.Elapsed().Seconds()
			b.ReportMetric(float64(acked)/wall, "writes/s")
			b.ReportMetric(simulated.Seconds()/wall, "sim-x")
			b.ReportMetric(float64(acked)/simulated.Seconds(), "writes/sim-s")
		})
	}
}
