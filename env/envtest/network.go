package envtest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// A client dials a server twice. Each end learns of each connection once,
// the server as inbound with the dialer's address as peer, the client as
// outbound with the address it dialed as peer and the ConnID Dial returned.
func testDialConnectsBothEnds(t *testing.T, h Harness) {
	var j journal
	var serverName guarded[string]
	server := h.Start(factory(proc{
		start: func(e env.Env) { serverName.set(e.Name()) },
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			j.add("server: connected conn %d inbound=%v peer-known=%v", c, inbound, peer != "")
		},
		closed: func(e env.Env, c env.ConnID) { j.add("server: closed conn %d", c) },
	}))
	dialed := map[env.ConnID]bool{} // owned by the client's loop
	h.Start(factory(proc{
		start: func(e env.Env) {
			a, b := e.Dial(server), e.Dial(server)
			if a == b {
				j.add("client: Dial returned conn %d twice", a)
			}
			dialed[a], dialed[b] = true, true
		},
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			j.add("client: connected dialed-conn=%v inbound=%v peer-is-server=%v", dialed[c], inbound, peer == server)
		},
		closed: func(e env.Env, c env.ConnID) { j.add("client: closed conn %d", c) },
	}))

	waitFor(t, h, "both connections connected at both ends", func() bool { return j.len() >= 4 })
	settle(h)

	if got := serverName.get(); got != server {
		t.Errorf("server's Env.Name is %q, but Start returned address %q", got, server)
	}
	client := j.of("client:")
	want := "client: connected dialed-conn=true inbound=false peer-is-server=true"
	if len(client) != 2 || client[0] != want || client[1] != want {
		t.Errorf("client saw %q, want %q twice", client, want)
	}
	srv := j.of("server:")
	if len(srv) != 2 || srv[0] == srv[1] {
		t.Fatalf("server saw %q, want two connections with distinct ids", srv)
	}
	for _, l := range srv {
		if !strings.HasSuffix(l, "inbound=true peer-known=true") {
			t.Errorf("server saw %q, want an inbound connection with a peer address", l)
		}
	}
}

// frameSizes covers the empty frame, the sizes around a 4-byte length
// prefix, a typical request, several megabytes, and then a burst of many
// small frames.
func frameSizes() []int {
	sizes := []int{0, 1, 3, 4, 5, 100, 4096, 65536 + 3, 1<<20 + 7, 4 << 20}
	for i := range 500 {
		sizes = append(sizes, i%97)
	}
	return sizes
}

// frame returns frame number k of the given size, its bytes a function of k
// and position so that a lost, duplicated, reordered, cut or spliced frame
// shows.
func frame(k, size int) []byte {
	f := make([]byte, size)
	for i := range f {
		f[i] = byte(k*131 + i*7 + i>>8)
	}
	return f
}

// The client sends frames of every size; the server records them and echoes
// each back. Both sides receive every frame whole, once, in order.
func testFramesArriveWholeAndInOrder(t *testing.T, h Harness) {
	sizes := frameSizes()
	var atServer, atClient guarded[[][]byte]
	server := h.Start(factory(proc{
		received: func(e env.Env, c env.ConnID, f []byte) {
			atServer.update(func(v *[][]byte) { *v = append(*v, f) })
			e.Send(c, f)
		},
	}))
	h.Start(factory(proc{
		start: func(e env.Env) { e.Dial(server) },
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			for k, n := range sizes {
				e.Send(c, frame(k, n))
			}
		},
		received: func(e env.Env, c env.ConnID, f []byte) {
			atClient.update(func(v *[][]byte) { *v = append(*v, f) })
		},
	}))

	waitFor(t, h, "every frame echoed back", func() bool { return len(atClient.get()) >= len(sizes) })
	settle(h)

	for side, got := range map[string][][]byte{"server": atServer.get(), "client": atClient.get()} {
		if len(got) != len(sizes) {
			t.Errorf("%s received %d frames, want %d", side, len(got), len(sizes))
		}
		for k := range min(len(got), len(sizes)) {
			if want := frame(k, sizes[k]); !bytes.Equal(got[k], want) {
				t.Errorf("%s: frame %d is %d bytes and differs from the %d bytes sent", side, k, len(got[k]), len(want))
				break
			}
		}
	}
}

// A client sends right after Dial, before it hears Connected: the frames
// follow the handshake and arrive, as on TCP, where a kernel buffers what is
// written to a socket still connecting.
func testFramesSentBeforeConnected(t *testing.T, h Harness) {
	var j journal
	server := h.Start(factory(proc{
		received: func(e env.Env, c env.ConnID, f []byte) { j.add("server: received %q", f) },
	}))
	h.Start(factory(proc{
		start: func(e env.Env) {
			c := e.Dial(server)
			e.Send(c, []byte("first"))
			e.Send(c, []byte("second"))
		},
	}))

	waitFor(t, h, "both frames arriving", func() bool { return j.len() >= 2 })
	settle(h)

	if got, want := j.all(), []string{`server: received "first"`, `server: received "second"`}; !slices.Equal(got, want) {
		t.Errorf("server saw %q, want %q", got, want)
	}
}

// The dialer sends a frame and closes. The server is told the connection
// closed; the dialer is not told of its own Close, and a Send or Close after
// it does nothing.
func testCloseTellsThePeerNotTheCloser(t *testing.T, h Harness) {
	var j journal
	server := h.Start(factory(proc{
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) { j.add("server: connected") },
		received:  func(e env.Env, c env.ConnID, f []byte) { j.add("server: received %q", f) },
		closed:    func(e env.Env, c env.ConnID) { j.add("server: closed") },
	}))
	h.Start(factory(proc{
		start: func(e env.Env) { e.Dial(server) },
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			e.Send(c, []byte("before close"))
			e.Close(c)
			e.Send(c, []byte("after close"))
			e.Close(c)
			j.add("client: closed it")
		},
		closed: func(e env.Env, c env.ConnID) { j.add("client: told of its own close") },
	}))

	waitFor(t, h, "the server learning the connection closed", func() bool { return j.has("server: closed") })
	settle(h)

	// Whether a frame sent just before Close arrives is the network's
	// business: both stories are correct.
	srv := j.of("server:")
	withFrame := []string{"server: connected", `server: received "before close"`, "server: closed"}
	withoutFrame := []string{"server: connected", "server: closed"}
	if !slices.Equal(srv, withFrame) && !slices.Equal(srv, withoutFrame) {
		t.Errorf("server saw %q, want %q or %q", srv, withFrame, withoutFrame)
	}
	if got, want := j.of("client:"), []string{"client: closed it"}; !slices.Equal(got, want) {
		t.Errorf("client saw %q, want %q", got, want)
	}
}

// The accepting side closes at once; the dialer is told.
func testAcceptorCloseTellsTheDialer(t *testing.T, h Harness) {
	var j journal
	server := h.Start(factory(proc{
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			e.Close(c)
			j.add("server: closed it")
		},
		closed: func(e env.Env, c env.ConnID) { j.add("server: told of its own close") },
	}))
	var dialed env.ConnID // owned by the client's loop
	h.Start(factory(proc{
		start:     func(e env.Env) { dialed = e.Dial(server) },
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) { j.add("client: connected") },
		closed:    func(e env.Env, c env.ConnID) { j.add("client: closed dialed-conn=%v", c == dialed) },
	}))

	waitFor(t, h, "the client learning the connection closed", func() bool {
		return len(j.of("client: closed")) > 0
	})
	settle(h)

	// The client may or may not see Connected before Closed: the server can
	// close before the client's end has heard it was accepted.
	cl := j.of("client:")
	if last := cl[len(cl)-1]; last != "client: closed dialed-conn=true" || len(j.of("client: closed")) != 1 {
		t.Errorf("client saw %q, want one Closed of the connection it dialed, last", cl)
	}
	if got, want := j.of("server:"), []string{"server: closed it"}; !slices.Equal(got, want) {
		t.Errorf("server saw %q, want %q", got, want)
	}
}

// Dialing an address nobody listens at ends in Closed, never Connected.
func testDialingNobodyGivesClosed(t *testing.T, h Harness) {
	var j journal
	nobody := h.Unreachable()
	var dialed env.ConnID
	h.Start(factory(proc{
		start:     func(e env.Env) { dialed = e.Dial(nobody) },
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) { j.add("connected to %s", peer) },
		closed:    func(e env.Env, c env.ConnID) { j.add("closed dialed-conn=%v", c == dialed) },
	}))

	waitFor(t, h, "the failed dial reporting Closed", func() bool { return j.len() > 0 })
	settle(h)

	if got, want := j.all(), []string{"closed dialed-conn=true"}; !slices.Equal(got, want) {
		t.Errorf("dialing %s: got %q, want %q", nobody, got, want)
	}
}

// A client talks to a server, which restarts. The client is told its
// connection closed, dials again, and is answered by the new instance at the
// same address.
func testRestartClosesConnections(t *testing.T, h Harness) {
	var j journal
	var boots guarded[int]
	server := h.Start(func() env.Process {
		var boot int
		boots.update(func(b *int) { *b++; boot = *b })
		return &proc{received: func(e env.Env, c env.ConnID, f []byte) {
			e.Send(c, fmt.Appendf(nil, "boot %d", boot))
		}}
	})
	h.Start(factory(proc{
		start: func(e env.Env) { e.Dial(server) },
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			e.Send(c, []byte("which boot are you?"))
		},
		received: func(e env.Env, c env.ConnID, f []byte) { j.add("client: answered by %s", f) },
		closed: func(e env.Env, c env.ConnID) {
			j.add("client: closed")
			// Retry with a backoff, as a real client would: the server may
			// not be back yet.
			e.AfterFunc(10*time.Millisecond, func() { e.Dial(server) })
		},
	}))

	waitFor(t, h, "an answer from the first boot", func() bool { return j.has("client: answered by boot 1") })
	h.Restart(server)
	waitFor(t, h, "an answer from the second boot", func() bool { return j.has("client: answered by boot 2") })

	story := j.all()
	first := slices.Index(story, "client: closed")
	if first < 0 || first > slices.Index(story, "client: answered by boot 2") {
		t.Errorf("client saw %q: want its connection closed by the restart before the second boot answers", story)
	}
}

// A server listens on its main address and on two named listeners. Each
// inbound connection knows the listener it came in on; a dialed one knows
// none; every listener keeps its address across a restart.
func testListenersTellConnectionsApart(t *testing.T, h Harness) {
	var j journal
	var addrs guarded[[3]string] // main, INTERNAL, ADMIN as the server sees them
	server := h.Start(factory(proc{
		start: func(e env.Env) {
			addrs.set([3]string{e.ListenerAddr(""), e.ListenerAddr("INTERNAL"), e.ListenerAddr("ADMIN")})
			if a := e.ListenerAddr("NOPE"); a != "" {
				j.add("server: ListenerAddr of a listener it lacks is %q", a)
			}
		},
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			j.add("server: inbound=%v listener=%q", inbound, e.Listener(c))
		},
	}), "INTERNAL", "ADMIN")
	waitFor(t, h, "the server started", func() bool { return addrs.get()[1] != "" })
	a := addrs.get()
	if a[0] != server || a[1] == server || a[2] == server || a[1] == a[2] || a[2] == "" {
		t.Fatalf("server's listener addresses (main, INTERNAL, ADMIN) are %q; want the main one %q and two others, all distinct", a, server)
	}
	h.Start(factory(proc{
		start: func(e env.Env) {
			for _, to := range a {
				e.Dial(to)
			}
		},
		connected: func(e env.Env, c env.ConnID, peer string, inbound bool) {
			j.add("client: inbound=%v listener=%q", inbound, e.Listener(c))
		},
	}))
	waitFor(t, h, "three connections connected at both ends", func() bool { return j.len() >= 6 })
	settle(h)
	got := j.all()
	slices.Sort(got)
	want := []string{
		`client: inbound=false listener=""`, `client: inbound=false listener=""`, `client: inbound=false listener=""`,
		`server: inbound=true listener=""`, `server: inbound=true listener="ADMIN"`, `server: inbound=true listener="INTERNAL"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("connections seen:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	addrs.set([3]string{})
	h.Restart(server)
	waitFor(t, h, "the server restarted", func() bool { return addrs.get()[1] != "" })
	if b := addrs.get(); b != a {
		t.Errorf("after a restart the listener addresses are %q, were %q", b, a)
	}
}
