package inflight

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/stretchr/testify/require"
)

// A toy protocol: a request is one byte; the server answers it with the
// same byte after 5 ms, except 'h' (held forever). With handshake set, the
// client sends '?' first and is ready only once it is answered.
var (
	errNotSent     = errors.New("not sent in time")
	errTimeout     = errors.New("timed out")
	errOthers      = errors.New("in flight when another timed out")
	errDisconnect  = errors.New("disconnected")
	errClosed      = errors.New("closed")
	errUnencodable = errors.New("unencodable")
)

type server struct{ e env.Env }

func (s *server) Start(e env.Env)                    { s.e = e }
func (s *server) Connected(env.ConnID, string, bool) {}
func (s *server) Closed(env.ConnID)                  {}
func (s *server) Received(c env.ConnID, f []byte) {
	if f[0] == 'h' {
		return
	}
	s.e.AfterFunc(5*time.Millisecond, func() { s.e.Send(c, f) })
}

type client struct {
	e         env.Env
	conn      *Conn[byte, byte]
	handshake bool
	dialed    int
	forgotten int
	ends      []string // "<req>:<answer or error>", in the order calls ended
}

func (c *client) Start(e env.Env) {
	c.e = e
	c.conn = New[byte, byte](e, "server", proto{c}, Options{
		ReconnectBackoff: 50 * time.Millisecond, ReconnectBackoffMax: time.Second,
		Errors: Errors{NotSentInTime: errNotSent, Timeout: errTimeout, InflightOnTimeout: errOthers, Disconnected: errDisconnect, Closed: errClosed},
	})
}
func (c *client) Connected(conn env.ConnID, _ string, _ bool) { c.conn.Connected(conn) }
func (c *client) Closed(conn env.ConnID)                      { c.conn.Closed(conn) }
func (c *client) Received(conn env.ConnID, f []byte) {
	for i, k := range c.conn.Inflight() {
		if k.Req == f[0] {
			c.conn.End(i, f[0], nil)
			return
		}
	}
}

func (c *client) call(req byte, timeout time.Duration) {
	c.conn.Enqueue(req, timeout, func(resp byte, err error) {
		if err != nil {
			c.ends = append(c.ends, fmt.Sprintf("%c:%v", req, err))
			return
		}
		if req == 'n' {
			c.ends = append(c.ends, "n:sent")
			return
		}
		c.ends = append(c.ends, fmt.Sprintf("%c:%c", req, resp))
	})
}

type proto struct{ c *client }

func (p proto) Dialed(env.ConnID)              { p.c.dialed++ }
func (p proto) Forget(env.ConnID)              { p.c.forgotten++ }
func (p proto) Failed(_ byte, err error) error { return err }
func (p proto) Handshake(conn env.ConnID) bool {
	if !p.c.handshake {
		return true
	}
	p.c.conn.Push('?', func(byte, error) { p.c.conn.MarkReady() })
	p.c.e.Send(conn, []byte{'?'})
	return false
}
func (p proto) Send(conn env.ConnID, q byte) (bool, error) {
	switch q {
	case 'x':
		return false, errUnencodable
	case 'n':
		p.c.e.Send(conn, []byte{q})
		return false, nil // no answer expected
	}
	p.c.e.Send(conn, []byte{q})
	return true, nil
}

func world(t *testing.T, handshake bool) (*sim.World, *client) {
	w := sim.New(sim.Options{Seed: 3})
	w.AddNode("server", func() env.Process { return &server{} }).Start()
	w.AddNode("client", func() env.Process { return &client{handshake: handshake} }).Start()
	require.NoError(t, w.RunFor(time.Millisecond))
	return w, w.Node("client").Process().(*client)
}

func TestCallsArePipelinedAndEndInAnswerOrder(t *testing.T) {
	for _, handshake := range []bool{false, true} {
		w, c := world(t, handshake)
		w.Node("client").Exec(func() {
			for _, r := range []byte("abcnx") {
				c.call(r, time.Second)
			}
		})
		require.NoError(t, w.RunFor(time.Second))
		// n expects no answer and x cannot be encoded: both end as they
		// are sent, before the answers to a, b and c.
		require.Equal(t, []string{"n:sent", "x:unencodable", "a:a", "b:b", "c:c"}, c.ends, "handshake %v", handshake)
		require.Equal(t, 1, c.dialed)
	}
}

func TestAHeldCallTimesOutDropsTheConnectionAndTakesTheOthersInFlightWithIt(t *testing.T) {
	w, c := world(t, false)
	w.Node("client").Exec(func() {
		c.call('h', 100*time.Millisecond)
		c.call('h', time.Second)
	})
	require.NoError(t, w.RunFor(101*time.Millisecond))
	require.Equal(t, []string{"h:timed out", "h:in flight when another timed out"}, c.ends)
	require.Equal(t, 1, c.forgotten, "the Conn closed the connection itself")
	w.Node("client").Exec(func() { c.call('b', time.Second) })
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, "b:b", c.ends[2], "a new connection after the backoff")
	require.Equal(t, 2, c.dialed)
}

func TestACallNoConnectionTookIsNotSent(t *testing.T) {
	w, c := world(t, false)
	w.Node("server").Crash()
	w.Node("client").Exec(func() { c.call('a', 300*time.Millisecond) })
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, []string{"a:not sent in time"}, c.ends)
	require.Greater(t, c.dialed, 1, "refused dials are retried with backoff")
	require.Less(t, c.dialed, 10, "with backoff, not at every instant")
}

func TestAServerCrashEndsWhatWasInFlightAndRedialsForWhatWaits(t *testing.T) {
	w, c := world(t, true)
	w.Node("client").Exec(func() { c.call('a', 10*time.Second) })
	require.NoError(t, w.RunFor(7*time.Millisecond)) // handshake answered, 'a' sent
	w.Node("server").Restart()
	require.NoError(t, w.RunFor(100*time.Millisecond))
	require.Equal(t, []string{"a:disconnected"}, c.ends)
	w.Node("client").Exec(func() { c.call('b', 10*time.Second) })
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, []string{"a:disconnected", "b:b"}, c.ends)
}

func TestCloseEndsEverythingOnce(t *testing.T) {
	w, c := world(t, true)
	w.Node("client").Exec(func() {
		c.call('h', 0)
	})
	require.NoError(t, w.RunFor(20*time.Millisecond))
	w.Node("client").Exec(func() {
		c.conn.Close()
		c.conn.Close()
	})
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, []string{"h:disconnected"}, c.ends)
	require.True(t, c.conn.Shut())
	// A call waiting when Close comes (here: before the handshake answered).
	w, c = world(t, true)
	w.Node("client").Exec(func() {
		c.call('a', time.Second)
		c.conn.Close()
	})
	require.NoError(t, w.RunFor(time.Second))
	require.Equal(t, []string{"a:closed"}, c.ends)
}
