package host_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

// patience bounds every wait in these tests: long enough for a loaded
// machine under the race detector, short enough that a hang fails fast.
const patience = 10 * time.Second

// startNode starts a node on a free loopback port with a fresh data
// directory, and stops it when the test ends. tweak may adjust the options.
func startNode(t *testing.T, factory func() env.Process, tweak ...func(*host.Options)) *host.Node {
	t.Helper()
	opts := host.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Log: io.Discard}
	for _, f := range tweak {
		f(&opts)
	}
	n, err := host.Start(opts, factory)
	if err != nil {
		t.Fatalf("starting a node: %v", err)
	}
	t.Cleanup(n.Stop)
	return n
}

// eventually polls cond until it holds, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, patience)
		}
		time.Sleep(time.Millisecond)
	}
}

// callbacks is a process made of optional reactions.
type callbacks struct {
	e         env.Env
	start     func(e env.Env)
	connected func(e env.Env, c env.ConnID, peer string, inbound bool)
	received  func(e env.Env, c env.ConnID, f []byte)
	closed    func(e env.Env, c env.ConnID)
}

func (p *callbacks) Start(e env.Env) {
	p.e = e
	if p.start != nil {
		p.start(e)
	}
}
func (p *callbacks) Connected(c env.ConnID, peer string, inbound bool) {
	if p.connected != nil {
		p.connected(p.e, c, peer, inbound)
	}
}
func (p *callbacks) Received(c env.ConnID, f []byte) {
	if p.received != nil {
		p.received(p.e, c, f)
	}
}
func (p *callbacks) Closed(c env.ConnID) {
	if p.closed != nil {
		p.closed(p.e, c)
	}
}

func once(p callbacks) func() env.Process {
	return func() env.Process { q := p; return &q }
}

// echo answers every frame with itself.
func echo() func() env.Process {
	return once(callbacks{received: func(e env.Env, c env.ConnID, f []byte) { e.Send(c, f) }})
}

// counter is a mutex-guarded count shared by a node's loop and the test.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add(d int) { c.mu.Lock(); c.n += d; c.mu.Unlock() }
func (c *counter) get() int  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// rawDial opens a plain TCP connection, as a Kafka client would, with a
// deadline so that no read or write in a test can hang.
func rawDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.SetDeadline(time.Now().Add(patience))
	t.Cleanup(func() { c.Close() })
	return c
}

// kafkaFrame is f with Kafka's 4-byte big-endian length in front.
func kafkaFrame(f []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(f))), f...)
}

// readKafkaFrame reads one length-prefixed frame.
func readKafkaFrame(t *testing.T, r io.Reader) []byte {
	t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("reading a frame length: %v", err)
	}
	f := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, f); err != nil {
		t.Fatalf("reading a %d-byte frame: %v", len(f), err)
	}
	return f
}

// syncBuffer is a bytes.Buffer safe to write from a node and read from the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
