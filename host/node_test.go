package host_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

// A plain TCP client speaking Kafka's framing — a 4-byte big-endian length,
// then the bytes — talks to a process: its frames arrive as env frames even
// when TCP splits them anywhere, and the answers come back framed the same.
func TestKafkaClientFramingReachesTheProcess(t *testing.T) {
	n := startNode(t, echo())
	c := rawDial(t, n.Addr())

	frames := [][]byte{{}, []byte("hello"), bytes.Repeat([]byte("kafka"), 40_000), {0, 0, 0, 0}}
	var stream []byte
	for _, f := range frames {
		stream = append(stream, kafkaFrame(f)...)
	}
	// Dribble the first bytes out one or two at a time, so that a length
	// prefix and a frame both arrive in pieces.
	rest := stream
	for k := 0; len(rest) > 0; k++ {
		n := len(rest)
		if k < 40 {
			n = min(n, 1+k%2)
		}
		if _, err := c.Write(rest[:n]); err != nil {
			t.Fatalf("write: %v", err)
		}
		rest = rest[n:]
	}
	for i, want := range frames {
		if got := readKafkaFrame(t, c); !bytes.Equal(got, want) {
			t.Errorf("echo of frame %d: got %d bytes, want %d bytes %q...", i, len(got), len(want), want[:min(len(want), 8)])
		}
	}
}

// A length above FrameBytesMax, or a negative one, closes the connection
// before anything is allocated; the process is told, and the node keeps
// serving others.
func TestFrameLengthBeyondTheMaximumClosesTheConnection(t *testing.T) {
	var closed counter
	logs := &syncBuffer{}
	n := startNode(t, once(callbacks{
		received: func(e env.Env, c env.ConnID, f []byte) { e.Send(c, f) },
		closed:   func(e env.Env, c env.ConnID) { closed.add(1) },
	}), func(o *host.Options) { o.FrameBytesMax = 1024; o.Log = logs })

	c := rawDial(t, n.Addr())
	max := bytes.Repeat([]byte{7}, 1024)
	c.Write(kafkaFrame(max))
	if got := readKafkaFrame(t, c); !bytes.Equal(got, max) {
		t.Fatalf("a frame of exactly FrameBytesMax came back as %d bytes", len(got))
	}
	c.Write(binary.BigEndian.AppendUint32(nil, 1025))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
		t.Fatalf("after a 1025-byte length the read gave %v, want the connection closed", err)
	}
	eventually(t, "the process hearing Closed", func() bool { return closed.get() == 1 })

	neg := rawDial(t, n.Addr())
	neg.Write([]byte{0x80, 0, 0, 0})
	if _, err := neg.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
		t.Fatalf("after a negative length the read gave %v, want the connection closed", err)
	}
	eventually(t, "the process hearing Closed again", func() bool { return closed.get() == 2 })

	ok := rawDial(t, n.Addr())
	ok.Write(kafkaFrame([]byte("still there?")))
	if got := readKafkaFrame(t, ok); string(got) != "still there?" {
		t.Fatalf("a new connection got %q", got)
	}
	for _, want := range []string{"frame length 1025 exceeds the maximum of 1024 bytes", "frame length -2147483648 is negative"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, logs)
		}
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(err.Error(), "reset")
}

// A process sends frames and closes at once: the frames queued before Close
// still reach the peer, then the connection ends.
func TestCloseFlushesWhatWasSentBeforeIt(t *testing.T) {
	const frames = 100
	payload := bytes.Repeat([]byte("x"), 10_000)
	n := startNode(t, once(callbacks{
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			for range frames {
				e.Send(c, payload)
			}
			e.Close(c)
		},
	}))
	c := rawDial(t, n.Addr())
	for i := range frames {
		if got := readKafkaFrame(t, c); !bytes.Equal(got, payload) {
			t.Fatalf("frame %d: got %d bytes, want %d", i, len(got), len(payload))
		}
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the last frame the read gave %v, want EOF", err)
	}
}

// A peer that accepts but never reads fills the kernel's buffers; the
// frames queued behind them reach SendQueueBytesMax, and the connection is
// reset and the process told rather than memory growing without bound.
func TestPeerThatNeverReadsIsResetAtTheSendQueueBound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never read
		}
	}()

	var closed, sent counter
	frame := make([]byte, 256<<10)
	n := startNode(t, once(callbacks{
		start: func(e env.Env) { e.Dial(ln.Addr().String()) },
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			var pump func()
			pump = func() {
				if closed.get() > 0 || sent.get() > 4000 {
					return
				}
				for range 16 {
					e.Send(c, frame)
					sent.add(1)
				}
				e.AfterFunc(time.Millisecond, pump)
			}
			pump()
		},
		closed: func(e env.Env, c env.ConnID) { closed.add(1) },
	}), func(o *host.Options) { o.SendQueueBytesMax = 1 << 20 })

	eventually(t, "the stuck connection being reset", func() bool { return closed.get() == 1 })
	_ = n
}

// A timer re-arming itself with no delay does not starve the network: the
// loop runs only the timers due when it woke, then looks at the sockets.
func TestBusyTimersDoNotStarveConnections(t *testing.T) {
	n := startNode(t, once(callbacks{
		start: func(e env.Env) {
			var spin func()
			spin = func() { e.AfterFunc(0, spin) }
			spin()
		},
		received: func(e env.Env, c env.ConnID, f []byte) { e.Send(c, f) },
	}))
	c := rawDial(t, n.Addr())
	for i := range 20 {
		c.Write(kafkaFrame([]byte{byte(i)}))
		if got := readKafkaFrame(t, c); len(got) != 1 || got[0] != byte(i) {
			t.Fatalf("echo %d: got %v", i, got)
		}
	}
}

// Do runs functions on the node's loop, serialized with the process: the
// loop-owned counter below needs no lock, and the race detector agrees.
// After Stop, Do refuses.
func TestDoRunsOnTheLoop(t *testing.T) {
	var loopOwned int
	n := startNode(t, once(callbacks{start: func(e env.Env) {
		var tick func()
		tick = func() { loopOwned++; e.AfterFunc(100*time.Microsecond, tick) }
		tick()
	}}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if err := n.Do(func() { loopOwned++ }); err != nil {
					t.Errorf("Do: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var seen int
	n.Do(func() { seen = loopOwned })
	if seen < 800 {
		t.Errorf("counter is %d after 800 Do calls", seen)
	}
	n.Stop()
	ran := false
	if err := n.Do(func() { ran = true }); !errors.Is(err, host.ErrStopped) || ran {
		t.Errorf("Do after Stop: err %v, ran %v; want ErrStopped and not run", err, ran)
	}
}

// Two nodes flood each other, timers tick and Do calls arrive from several
// goroutines while both nodes stop, each from several goroutines at once.
// Stop returns promptly, every goroutine the nodes started is gone, and the
// race detector sees nothing.
func TestStopUnderLoadIsCleanAndLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()

	var echoed counter
	pingPong := func(dial string) func() env.Process {
		return once(callbacks{
			start: func(e env.Env) {
				if dial != "" {
					e.Dial(dial)
				}
				var tick func()
				tick = func() { e.AfterFunc(time.Millisecond, tick) }
				tick()
			},
			connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
				for range 64 {
					e.Send(c, make([]byte, 1000))
				}
			},
			received: func(e env.Env, c env.ConnID, f []byte) { e.Send(c, f); echoed.add(1) },
		})
	}
	b := startNode(t, pingPong(""))
	a := startNode(t, pingPong(b.Addr()))
	eventually(t, "the flood starting", func() bool { return echoed.get() > 1000 })

	var wg sync.WaitGroup
	for _, n := range []*host.Node{a, b} {
		for range 3 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for n.Do(func() {}) == nil {
				}
			}()
			go func() {
				defer wg.Done()
				n.Stop()
			}()
		}
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(patience):
		t.Fatalf("Stop did not return within %v", patience)
	}
	eventually(t, "the nodes' goroutines exiting", func() bool { return runtime.NumGoroutine() <= before })
}

// Closing and dialing race with a peer that stops: nothing panics, nothing
// leaks, and every Dial ends in Connected or Closed.
func TestDialsToAStoppingPeerAllEnd(t *testing.T) {
	target := startNode(t, echo())
	var outcomes counter
	const dials = 50
	n := startNode(t, once(callbacks{
		start: func(e env.Env) {
			for i := range dials {
				c := e.Dial(target.Addr())
				if i%5 == 0 {
					e.Close(c) // closed while dialing: no outcome reported
					outcomes.add(1)
				}
			}
		},
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) { outcomes.add(1) },
		closed:    func(e env.Env, c env.ConnID) { outcomes.add(1) },
	}))
	target.Stop()
	// Each connection is Connected then Closed, or just Closed when the dial
	// lost the race: at least one outcome per dial.
	eventually(t, "every dial reaching an outcome", func() bool { return outcomes.get() >= dials })
	_ = n
}

func TestStartRefusesIncompleteOptions(t *testing.T) {
	factory := func() env.Process { return &callbacks{} }
	for _, tc := range []struct {
		name string
		opts host.Options
		want string
	}{
		{"no listen address", host.Options{DataDir: t.TempDir()}, "Listen is empty"},
		{"no data directory", host.Options{Listen: "127.0.0.1:0"}, "DataDir is empty"},
		{"negative bound", host.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), FrameBytesMax: -1}, "negative bound"},
		{"frame larger than a Kafka length", host.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), FrameBytesMax: 1 << 31}, "4-byte"},
		{"bad address", host.Options{Listen: "127.0.0.1:http-nope", DataDir: t.TempDir()}, "listen on 127.0.0.1:http-nope"},
	} {
		n, err := host.Start(tc.opts, factory)
		if err == nil {
			n.Stop()
			t.Errorf("%s: Start succeeded", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
	}
}

// Now is the wall clock, and never runs backwards.
func TestNowIsTheWallClock(t *testing.T) {
	var e env.Env
	n := startNode(t, once(callbacks{start: func(x env.Env) { e = x }}))
	var a, b env.Time
	n.Do(func() { a = e.Now(); b = e.Now() })
	if d := time.Duration(time.Now().UnixNano() - int64(a)); d < 0 || d > time.Second {
		t.Errorf("Now is %v off the wall clock", d)
	}
	if b < a {
		t.Errorf("Now ran backwards: %v then %v", a, b)
	}
}

// A given seed fixes the node's stream to env.NewRand(seed); without one,
// two nodes draw different streams.
func TestSeedFixesTheRandomStream(t *testing.T) {
	draw := func(seed *uint64) uint64 {
		var e env.Env
		n := startNode(t, once(callbacks{start: func(x env.Env) { e = x }}),
			func(o *host.Options) { o.Seed = seed })
		var v uint64
		n.Do(func() { v = e.Rand().Uint64() })
		return v
	}
	seed := uint64(42)
	if got, want := draw(&seed), env.NewRand(42).Uint64(); got != want {
		t.Errorf("seeded 42, first draw %d, want %d", got, want)
	}
	if a, b := draw(nil), draw(nil); a == b {
		t.Errorf("two unseeded nodes drew the same first number %d", a)
	}
}

// Log writes one structured line naming the node.
func TestLogWritesStructuredLines(t *testing.T) {
	logs := &syncBuffer{}
	n := startNode(t, once(callbacks{start: func(e env.Env) {
		e.Log("became leader", "partition", "orders-0", "epoch", 7)
	}}), func(o *host.Options) { o.Log = logs })
	n.Do(func() {})
	line := logs.String()
	for _, want := range []string{`msg="became leader"`, "node=" + n.Addr(), "partition=orders-0", "epoch=7"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
}
