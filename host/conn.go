package host

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// conn is one TCP connection of a node: a reader goroutine handing frames to
// the loop and a writer goroutine draining the frames the loop queued.
type conn struct {
	n    *Node
	peer string
	// listener names the listener an accepted connection came in on ("" the
	// main one, and for a dialed connection). Set before registration.
	listener string

	// Owned by the loop.
	id env.ConnID
	up bool // the socket exists and its goroutines run

	// nc is set before the conn is registered with its node (by the accepting
	// or dialing goroutine) and never changes afterwards.
	nc net.Conn

	mu      sync.Mutex
	cond    sync.Cond // signals the writer
	queue   [][]byte  // frames not yet handed to the socket
	queued  int       // bytes queued or being written
	closing bool      // the process closed it: flush, then close the socket
	dead    bool      // the socket is closed; drop everything

	closeOnce sync.Once
}

func newConn(n *Node, peer string) *conn {
	c := &conn{n: n, peer: peer}
	c.cond.L = &c.mu
	return c
}

// startIO starts the connection's reader and writer. Called on the loop.
func (n *Node) startIO(c *conn) {
	n.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

// enqueue queues a frame for the writer. It reports false when that would
// take the connection past max queued bytes.
func (c *conn) enqueue(frame []byte, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead || c.closing {
		return true // a no-op: Closed has been or will be delivered
	}
	if c.queued+len(frame) > max {
		return false
	}
	c.queue = append(c.queue, frame)
	c.queued += len(frame)
	c.cond.Signal()
	return true
}

// closeGracefully lets the writer flush what is queued, for at most linger,
// and then close the socket.
func (c *conn) closeGracefully(linger time.Duration) {
	c.mu.Lock()
	c.closing = true
	c.cond.Signal()
	c.mu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(linger))
}

// shutdown closes the socket at once, dropping what is queued. Both
// goroutines then leave; the reader reports the connection broken.
func (c *conn) shutdown() {
	c.closeOnce.Do(func() {
		c.nc.Close()
		c.mu.Lock()
		c.dead = true
		c.queue = nil
		c.cond.Broadcast()
		c.mu.Unlock()
		c.n.unregister(c)
	})
}

func (c *conn) readLoop() {
	defer c.n.wg.Done()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		frame, err := readFrame(r, c.n.opts.FrameBytesMax)
		if err != nil {
			var bad *badFrameError
			if errors.As(err, &bad) {
				c.n.log.Warn("closing connection: bad frame length", "peer", c.peer, "err", err)
			}
			c.shutdown()
			c.n.post(brokenEvent{c})
			return
		}
		if !c.n.post(receivedEvent{c: c, frame: frame}) {
			return
		}
	}
}

// badFrameError is a length prefix no frame may have.
type badFrameError struct {
	size int32
	max  int
}

func (e *badFrameError) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("frame length %d is negative", e.size)
	}
	return fmt.Sprintf("frame length %d exceeds the maximum of %d bytes", e.size, e.max)
}

// readChunkBytes is how much of a long frame is allocated ahead of the bytes
// actually arriving: a peer that announces 100 MiB and sends 10 bytes costs
// at most this much.
const readChunkBytes = 1 << 20

// readFrame reads one Kafka-framed frame: a 4-byte big-endian length, then
// that many bytes.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	if size < 0 || int64(size) > int64(max) {
		return nil, &badFrameError{size: size, max: max}
	}
	if size <= readChunkBytes {
		frame := make([]byte, size)
		if _, err := io.ReadFull(r, frame); err != nil {
			return nil, noEOF(err)
		}
		return frame, nil
	}
	frame := make([]byte, 0, readChunkBytes)
	for len(frame) < int(size) {
		n := min(int(size)-len(frame), readChunkBytes)
		frame = slices.Grow(frame, n)
		m, err := io.ReadFull(r, frame[len(frame):len(frame)+n])
		frame = frame[:len(frame)+m]
		if err != nil {
			return nil, noEOF(err)
		}
	}
	return frame, nil
}

// noEOF turns an end of stream inside a frame into the error it is.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// coalesceBytesMax is the largest frame copied into the writer's scratch
// buffer; longer frames go to the socket as their own iovec, uncopied.
const coalesceBytesMax = 4 << 10

func (c *conn) writeLoop() {
	defer c.n.wg.Done()
	var (
		scratch []byte
		pieces  []bigFrame
		out     net.Buffers
	)
	c.mu.Lock()
	for {
		for len(c.queue) == 0 && !c.closing && !c.dead {
			c.cond.Wait()
		}
		if c.dead {
			c.mu.Unlock()
			return
		}
		if len(c.queue) == 0 {
			// Closed by the process and everything flushed.
			c.mu.Unlock()
			c.shutdown()
			return
		}
		batch := c.queue
		c.queue = nil
		c.mu.Unlock()

		scratch, pieces, out = scratch[:0], pieces[:0], out[:0]
		bytes := 0
		for _, f := range batch {
			bytes += len(f)
			scratch = binary.BigEndian.AppendUint32(scratch, uint32(len(f)))
			if len(f) <= coalesceBytesMax {
				scratch = append(scratch, f...)
				continue
			}
			pieces = append(pieces, bigFrame{at: len(scratch), frame: f})
		}
		start := 0
		for _, p := range pieces {
			out = append(out, scratch[start:p.at], p.frame)
			start = p.at
		}
		if start < len(scratch) {
			out = append(out, scratch[start:])
		}
		w := out // WriteTo consumes its receiver
		_, err := w.WriteTo(c.nc)
		clear(out)
		clear(pieces)
		if cap(scratch) > readChunkBytes {
			scratch = nil // a burst of small frames should not pin memory
		}
		if err != nil {
			c.shutdown()
			return
		}
		c.mu.Lock()
		c.queued -= bytes
	}
}

// bigFrame is a frame written from its own buffer, after the scratch bytes
// up to at.
type bigFrame struct {
	at    int
	frame []byte
}
