// Package demo is a small self-contained workload for the simulator: nodes
// that keep connections to each other, stream numbered frames, append what
// they receive to disk and sync now and then, under a fault schedule drawn
// from the seed. It exercises every part of the world, so it serves the
// determinism tests, the simulator benchmark and `kafkasim demo`.
package demo

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
)

// Options shape a demo run.
type Options struct {
	Seed     uint64
	Nodes    int           // default 5
	Duration time.Duration // simulated; default 60 s
	Faults   bool          // inject a seeded fault schedule
	// TickInterval is how often each node sends to each peer; default 1 ms.
	TickInterval time.Duration
}

// Result is what a demo run reports.
type Result struct {
	TraceHash string
	Events    uint64
	Frames    int // frames received by processes
	Elapsed   time.Duration
}

type chatter struct {
	e     env.Env
	peers []string
	tick  time.Duration
	out   map[string]env.ConnID
	seq   uint64
	got   *int
}

func (c *chatter) Start(e env.Env) {
	c.e = e
	c.out = map[string]env.ConnID{}
	if data, err := e.Disk().ReadFile("received"); err == nil {
		e.Log("recovered", "bytes", len(data))
	}
	e.AfterFunc(c.tick, c.onTick)
}

func (c *chatter) onTick() {
	for _, p := range c.peers {
		conn, ok := c.out[p]
		if !ok {
			c.out[p] = c.e.Dial(p)
			continue
		}
		var b [16]byte
		c.seq++
		binary.BigEndian.PutUint64(b[:], c.seq)
		binary.BigEndian.PutUint64(b[8:], c.e.Rand().Uint64())
		c.e.Send(conn, b[:])
	}
	if c.seq%100 == 0 {
		_ = c.e.Disk().Sync("received")
	}
	c.e.AfterFunc(c.tick, c.onTick)
}

func (c *chatter) Connected(env.ConnID, string, bool) {}

func (c *chatter) Received(conn env.ConnID, frame []byte) {
	*c.got++
	if len(frame) >= 8 && binary.BigEndian.Uint64(frame)%64 == 0 {
		_ = c.e.Disk().Append("received", frame[:8])
	}
}

func (c *chatter) Closed(conn env.ConnID) {
	for p, oc := range c.out {
		if oc == conn {
			delete(c.out, p)
		}
	}
}

// Run builds and runs one demo world.
func Run(o Options) (Result, error) {
	if o.Nodes == 0 {
		o.Nodes = 5
	}
	if o.Duration == 0 {
		o.Duration = time.Minute
	}
	if o.TickInterval == 0 {
		o.TickInterval = time.Millisecond
	}
	w := sim.New(sim.Options{Seed: o.Seed})
	names := make([]string, o.Nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%d", i)
	}
	got := 0
	for _, name := range names {
		var peers []string
		for _, p := range names {
			if p != name {
				peers = append(peers, p)
			}
		}
		w.AddNode(name, func() env.Process { return &chatter{peers: peers, tick: o.TickInterval, got: &got} }).Start()
	}
	if o.Faults {
		schedule(w, names, o.Duration)
	}
	if err := w.RunFor(o.Duration); err != nil {
		return Result{}, err
	}
	return Result{TraceHash: w.Trace().HashString(), Events: w.Events(), Frames: got, Elapsed: w.Elapsed()}, nil
}

// schedule plants a fault every second or so, drawn from the world's
// "faults" stream, and heals everything before the end.
func schedule(w *sim.World, names []string, d time.Duration) {
	r := w.Rand("faults")
	for at := time.Second; at < d-5*time.Second; at += time.Duration(500+r.Intn(1500)) * time.Millisecond {
		n := names[r.Intn(len(names))]
		m := names[r.Intn(len(names))]
		kind := r.Intn(7)
		w.At(w.Now().Add(at), func() {
			switch kind {
			case 0:
				w.Node(n).Crash()
				w.After(time.Second, w.Node(n).Start)
			case 1:
				w.Node(n).PowerLoss(true)
				w.After(2*time.Second, w.Node(n).Start)
			case 2:
				w.Partition([]string{n})
				w.After(3*time.Second, w.Heal)
			case 3:
				w.Node(n).Pause()
				w.After(time.Second, w.Node(n).Resume)
			case 4:
				if n != m {
					w.Clog(n, m, 2*time.Second)
				}
			case 5:
				if n != m {
					w.ResetLink(n, m)
				}
			case 6:
				w.Node(n).SkewClock(time.Duration(r.Intn(2000)-1000) * time.Millisecond)
			}
		})
	}
}
