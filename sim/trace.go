package sim

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim/disk"
)

type traceKind uint8

const (
	traceStart traceKind = iota + 1
	traceBoot
	traceCrash
	tracePowerLoss
	tracePause
	traceResume
	traceSkew
	traceDrift
	traceTimer
	traceExec
	traceSend
	traceDeliver
	traceDial
	traceAccept
	traceConnected
	traceRefused
	traceClosed
	traceBlocked
	traceStall
	traceLog
	traceFault
	traceFunc
	traceDisk
)

var traceKindNames = [...]string{
	traceStart: "start", traceBoot: "boot", traceCrash: "crash", tracePowerLoss: "power-loss",
	tracePause: "pause", traceResume: "resume", traceSkew: "skew", traceDrift: "drift",
	traceTimer: "timer", traceExec: "exec", traceSend: "send", traceDeliver: "deliver",
	traceDial: "dial", traceAccept: "accept", traceConnected: "connected", traceRefused: "refused",
	traceClosed: "closed", traceBlocked: "blocked", traceStall: "stall-reset", traceLog: "log",
	traceFault: "fault", traceFunc: "func", traceDisk: "disk",
}

func (k traceKind) String() string { return traceKindNames[k] }

// record is one trace event as kept in the ring: compact, formatted only
// when someone looks.
type record struct {
	at         env.Time
	kind       traceKind
	node, peer int32 // node indices, -1 for none
	id         uint64
	arg        uint64
	text       string
}

// Trace folds every event of a world into a running 64-bit hash, keeps the
// last few events for display, and optionally writes all of them as JSON
// lines. Two runs are the same run exactly when their hashes agree.
type Trace struct {
	w     *World
	hash  uint64
	count uint64
	ring  []record
	next  int
	json  io.Writer
	err   error // first error writing JSON
	// scratch is reused to fold a disk operation's names without
	// allocating.
	scratch []byte
}

func newTrace(w *World, ring int, jsonOut io.Writer) *Trace {
	return &Trace{w: w, hash: 0xcbf29ce484222325, ring: make([]record, 0, ring), json: jsonOut}
}

// Hash is the running hash of every event so far.
func (t *Trace) Hash() uint64 { return t.hash }

// HashString is Hash as 16 hex digits, the form runs print.
func (t *Trace) HashString() string { return fmt.Sprintf("%016x", t.hash) }

// Count is the number of events traced.
func (t *Trace) Count() uint64 { return t.count }

// Err is the first error writing the JSON trace, if any.
func (t *Trace) Err() error { return t.err }

func (t *Trace) fold(x uint64) {
	h := (t.hash ^ x) * 0x9e3779b97f4a7c15
	t.hash = h ^ h>>29
}

func (t *Trace) foldString(s string) { foldBytes(t, s) }

// foldBytes folds s's length and then its bytes, eight at a time.
func foldBytes[S string | []byte](t *Trace, s S) {
	t.fold(uint64(len(s)))
	for len(s) >= 8 {
		t.fold(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
		s = s[8:]
	}
	var x uint64
	for i := 0; i < len(s); i++ {
		x |= uint64(s[i]) << (8 * i)
	}
	t.fold(x)
}

func (t *Trace) add(r record) {
	r.at = t.w.now
	t.count++
	t.fold(uint64(r.at))
	t.fold(uint64(r.kind) | uint64(uint32(r.node))<<8 | uint64(uint32(r.peer))<<40)
	t.fold(r.id)
	t.fold(r.arg)
	if r.text != "" && r.kind != traceDisk { // a disk line is folded field by field (disk)
		t.foldString(r.text)
	}
	if cap(t.ring) > 0 {
		if len(t.ring) < cap(t.ring) {
			t.ring = append(t.ring, r)
		} else {
			t.ring[t.next] = r
			t.next = (t.next + 1) % cap(t.ring)
		}
	}
	if t.json != nil && t.err == nil {
		b, err := json.Marshal(t.event(r))
		if err == nil {
			_, err = t.json.Write(append(b, '\n'))
		}
		t.err = err
	}
}

func index(n *Node) int32 {
	if n == nil {
		return -1
	}
	return int32(n.index)
}

func (t *Trace) node(k traceKind, n, peer *Node, arg uint64) {
	t.add(record{kind: k, node: index(n), peer: index(peer), arg: arg})
}

func (t *Trace) conn(k traceKind, n, peer *Node, conn, arg uint64) {
	t.add(record{kind: k, node: index(n), peer: index(peer), id: conn, arg: arg})
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (t *Trace) frame(k traceKind, n, peer *Node, conn uint64, data []byte) (digest uint32) {
	digest = crc32.Checksum(data, castagnoli)
	t.add(record{kind: k, node: index(n), peer: index(peer), id: conn, arg: uint64(len(data)) | uint64(digest)<<32})
	return digest
}

func (t *Trace) world(k eventKind) {
	t.add(record{kind: traceFunc, node: -1, peer: -1, arg: uint64(k)})
}

// fault records an action of the nemesis or the harness.
func (t *Trace) fault(n *Node, what, detail string) {
	text := what
	if detail != "" {
		text += " " + detail
	}
	t.add(record{kind: traceFault, node: index(n), peer: -1, text: text})
}

// disk records an operation on n's disk: its kind, offset, size and the
// written bytes' checksum fold into the hash with the file's name; the
// readable line is made only for a JSON trace.
func (t *Trace) disk(n *Node, op disk.Op) {
	r := record{kind: traceDisk, node: index(n), peer: -1, id: uint64(op.Off), arg: uint64(op.N) | uint64(op.Sum)<<32}
	t.scratch = append(append(append(t.scratch[:0], op.Name...), 0), op.To...)
	foldBytes(t, t.scratch) // as foldString(op.Name + "\x00" + op.To), without the string
	t.fold(uint64(op.Kind))
	if t.json != nil {
		r.text = fmt.Sprintf("%s %s", op.Kind, op.Name)
		switch op.Kind {
		case disk.OpWrite:
			r.text += fmt.Sprintf(" @%d+%d crc %08x", op.Off, op.N, op.Sum)
		case disk.OpSync:
			r.text += fmt.Sprintf(" durable %d", op.Off)
		case disk.OpTruncate:
			r.text += fmt.Sprintf(" to %d", op.Off)
		case disk.OpRename:
			r.text += " -> " + op.To
		case disk.OpPowerLoss:
			r.text += fmt.Sprintf(" left %d bytes (lost %d) crc %08x", op.Off, op.N, op.Sum)
		}
	}
	t.add(r)
}

// Note records a line from the harness (a workload step, a phase change).
func (t *Trace) Note(what string, kv ...any) {
	t.add(record{kind: traceFault, node: -1, peer: -1, text: formatLine(what, kv)})
}

func (t *Trace) log(n *Node, msg string, kv []any) {
	t.add(record{kind: traceLog, node: index(n), peer: -1, text: formatLine(msg, kv)})
}

// formatLine renders a log line as "msg k=v k=v". Values print with %v,
// which sorts maps; a pointer would print an address and break determinism,
// so log values, not pointers.
func formatLine(msg string, kv []any) string {
	if len(kv) == 0 {
		return msg
	}
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i < len(kv); i += 2 {
		b.WriteByte(' ')
		fmt.Fprint(&b, kv[i])
		b.WriteByte('=')
		if i+1 < len(kv) {
			fmt.Fprint(&b, kv[i+1])
		} else {
			b.WriteString("MISSING")
		}
	}
	return b.String()
}

// Event is one traced event, ready to read.
type Event struct {
	At     time.Duration `json:"at"` // since the world began
	Kind   string        `json:"kind"`
	Node   string        `json:"node,omitempty"`
	Peer   string        `json:"peer,omitempty"`
	Conn   uint64        `json:"conn,omitempty"`
	Arg    uint64        `json:"arg,omitempty"`
	Bytes  int           `json:"bytes,omitempty"`
	Digest uint32        `json:"crc,omitempty"`
	Text   string        `json:"text,omitempty"`
}

func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12s %-11s", e.At, e.Kind)
	if e.Node != "" {
		fmt.Fprintf(&b, " %s", e.Node)
	}
	if e.Peer != "" {
		fmt.Fprintf(&b, " peer=%s", e.Peer)
	}
	if e.Conn != 0 {
		fmt.Fprintf(&b, " conn=%d", e.Conn)
	}
	if e.Bytes != 0 || e.Digest != 0 {
		fmt.Fprintf(&b, " bytes=%d crc=%08x", e.Bytes, e.Digest)
	} else if e.Arg != 0 {
		fmt.Fprintf(&b, " arg=%d", e.Arg)
	}
	if e.Text != "" {
		fmt.Fprintf(&b, " %s", e.Text)
	}
	return b.String()
}

func (t *Trace) event(r record) Event {
	e := Event{At: r.at.Sub(t.w.opts.Epoch), Kind: r.kind.String(), Conn: r.id, Text: r.text}
	if r.node >= 0 {
		e.Node = t.w.nodes[r.node].name
	}
	if r.peer >= 0 {
		e.Peer = t.w.nodes[r.peer].name
	}
	if r.kind == traceSend || r.kind == traceDeliver {
		e.Bytes, e.Digest = int(uint32(r.arg)), uint32(r.arg>>32)
	} else {
		e.Arg = r.arg
	}
	return e
}

// Tail returns the most recent events kept in the ring, oldest first.
func (t *Trace) Tail() []Event {
	out := make([]Event, 0, len(t.ring))
	for i := range t.ring {
		out = append(out, t.event(t.ring[(t.next+i)%len(t.ring)]))
	}
	return out
}
