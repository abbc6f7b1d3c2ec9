package sink

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// ServerOptions tune a Server. Zero fields take DefaultServerOptions' value,
// except SyncDelay, whose zero is meaningful.
type ServerOptions struct {
	// SyncDelay is the group-commit window: a write is appended to the log
	// at once and acknowledged after the sync that follows it, SyncDelay
	// later, together with every write that arrived meanwhile. 0 syncs each
	// write before the next event. A power loss inside the window loses
	// (or, torn, cuts) the writes of the window — none of them was
	// acknowledged.
	SyncDelay time.Duration
	// LogBytesMax is the log size past which the server writes a snapshot
	// and empties the log (once the log is also larger than the state, so
	// compaction costs at most what appending did).
	LogBytesMax int64
	// RequestsQueuedMax bounds the requests of one connection waiting for a
	// sync; a client that pipelines more is cut off.
	RequestsQueuedMax int
	// RecoveryRetryInterval is the wait before retrying a recovery that a
	// disk fault interrupted (a failed read or sync).
	RecoveryRetryInterval time.Duration
}

// DefaultServerOptions are the values used for zero fields.
var DefaultServerOptions = ServerOptions{
	LogBytesMax:           1 << 20,
	RequestsQueuedMax:     1024,
	RecoveryRetryInterval: 100 * time.Millisecond,
}

func (o ServerOptions) withDefaults() ServerOptions {
	d := DefaultServerOptions
	if o.LogBytesMax == 0 {
		o.LogBytesMax = d.LogBytesMax
	}
	if o.RequestsQueuedMax == 0 {
		o.RequestsQueuedMax = d.RequestsQueuedMax
	}
	if o.RecoveryRetryInterval == 0 {
		o.RecoveryRetryInterval = d.RecoveryRetryInterval
	}
	return o
}

// Server is the sink store: an env.Process serving one node's durable
// key/value state. Make a fresh one per boot:
//
//	w.AddNode("sink", func() env.Process { return sink.NewServer(opts) })
type Server struct {
	opts ServerOptions
	e    env.Env

	st       *storage
	state    *state
	recovery Recovery
	ready    bool   // recovered: serving
	halted   string // why the server stopped serving for good, or ""

	conns map[env.ConnID]*serverConn

	// pending are the writes appended to the log since its last sync, in
	// log order, with what each replaced; outbox is every response that
	// waits for that sync, in the order the requests came. While a write is
	// pending nothing is answered, so no answer ever depends on a state
	// that is not durable.
	pending   [][]Entry
	outbox    []outgoing
	syncTimer env.TimerID
}

type serverConn struct {
	id     env.ConnID
	peer   string
	queued int // entries in the outbox
	closed bool
}

// outgoing is an answer waiting for the sync.
type outgoing struct {
	sc   *serverConn
	req  *request  // a read, answered from the state at release
	resp *response // a write's answer; a write that succeeded has statusOK
}

// NewServer returns a server that recovers its state when started.
func NewServer(opts ServerOptions) *Server {
	return &Server{opts: opts.withDefaults(), conns: map[env.ConnID]*serverConn{}}
}

// Start implements env.Process: recover from the disk, then serve.
func (s *Server) Start(e env.Env) {
	s.e = e
	s.recover()
}

func (s *Server) recover() {
	st, state, rec, err := recoverStorage(s.e.Disk())
	if errors.Is(err, errSnapshotCorrupt) {
		s.halt(err.Error())
		return
	}
	if err != nil {
		s.e.Log("sink-recovery-failed", "error", err.Error(), "retry-in", s.opts.RecoveryRetryInterval)
		s.e.AfterFunc(s.opts.RecoveryRetryInterval, s.recover)
		return
	}
	s.st, s.state, s.recovery, s.ready = st, state, rec, true
	s.e.Log("sink-recovered", "revision", rec.Revision, "snapshot-revision", rec.SnapshotRevision,
		"records", rec.Records, "tail", rec.Tail, "truncated-bytes", rec.TruncatedBytes, "keys", len(state.entries))
	if rec.Tail == recordCorrupt.String() {
		s.e.Log("sink-log-corrupt", "revision", rec.Revision, "truncated-bytes", rec.TruncatedBytes)
	}
	s.maybeCompact()
}

// Recovery is what the last Start found on the disk (zero until recovered).
func (s *Server) Recovery() Recovery { return s.recovery }

// Stop implements env.Stopper: a clean shutdown syncs and answers the
// writes still pending.
func (s *Server) Stop() {
	if s.ready && len(s.pending) > 0 {
		s.syncNow()
	}
}

// Connected implements env.Process.
func (s *Server) Connected(c env.ConnID, peer string, inbound bool) {
	if !inbound {
		s.e.Close(c) // the server dials nobody
		return
	}
	s.conns[c] = &serverConn{id: c, peer: peer}
}

// Closed implements env.Process.
func (s *Server) Closed(c env.ConnID) {
	if sc := s.conns[c]; sc != nil {
		sc.closed = true
		delete(s.conns, c)
	}
}

// Received implements env.Process: one request per frame.
func (s *Server) Received(c env.ConnID, frame []byte) {
	sc := s.conns[c]
	if sc == nil {
		return
	}
	if len(frame) > FrameBytesMax {
		s.drop(sc, fmt.Sprintf("frame of %d bytes exceeds %d", len(frame), FrameBytesMax))
		return
	}
	req, err := decodeRequest(frame)
	if err != nil {
		s.drop(sc, err.Error())
		return
	}
	if sc.queued >= s.opts.RequestsQueuedMax {
		s.e.Log("sink-too-many-requests", "peer", sc.peer, "queued", sc.queued)
		s.closeConn(sc)
		return
	}
	switch {
	case !s.ready:
		why := "recovering"
		if s.halted != "" {
			why = "halted: " + s.halted
		}
		s.respond(sc, &response{id: req.id, op: req.op, status: statusUnavailable, message: why})
	case req.op == opWrite:
		s.handleWrite(sc, req)
	default:
		s.handleRead(sc, req)
	}
}

// drop closes a connection that sent a malformed frame.
func (s *Server) drop(sc *serverConn, why string) {
	s.e.Log("sink-bad-request", "peer", sc.peer, "conn", uint64(sc.id), "error", why)
	s.closeConn(sc)
}

func (s *Server) closeConn(sc *serverConn) {
	sc.closed = true
	delete(s.conns, sc.id)
	s.e.Close(sc.id)
}

func (s *Server) handleWrite(sc *serverConn, req *request) {
	if err := validateWrite(req.puts, req.conds); err != nil {
		s.respond(sc, &response{id: req.id, op: opWrite, status: statusInvalid, message: err.Error()})
		return
	}
	// Conditions are judged against the state including pending writes:
	// they come first in the log, so they come first in the order.
	if i, v := s.state.check(req.conds); i >= 0 {
		s.respond(sc, &response{id: req.id, op: opWrite, status: statusConditionFailed, index: i, version: v})
		return
	}
	undo := s.state.apply(req.puts)
	revision := s.state.revision
	err, cutErr := s.st.append(appendRecord(nil, revision, req.puts))
	if cutErr != nil {
		s.halt(fmt.Sprintf("append failed (%v) and the log could not be cut back (%v)", err, cutErr))
		return
	}
	if err != nil {
		s.state.undo(undo)
		s.e.Log("sink-append-failed", "revision", revision, "error", err.Error())
		s.respond(sc, &response{id: req.id, op: opWrite, status: statusStorage, message: err.Error()})
		return
	}
	s.pending = append(s.pending, undo)
	s.enqueue(outgoing{sc: sc, resp: &response{id: req.id, op: opWrite, status: statusOK, revision: revision}})
	if s.opts.SyncDelay == 0 {
		s.syncNow()
		return
	}
	if s.syncTimer == 0 {
		s.syncTimer = s.e.AfterFunc(s.opts.SyncDelay, func() {
			s.syncTimer = 0
			s.syncNow()
		})
	}
}

func (s *Server) handleRead(sc *serverConn, req *request) {
	var err error
	if req.op == opGet {
		err = validateKeys(req.keys)
	} else {
		err = validateScan(req.scan)
	}
	if err != nil {
		s.respond(sc, &response{id: req.id, op: req.op, status: statusInvalid, message: err.Error()})
		return
	}
	if len(s.outbox) > 0 {
		s.enqueue(outgoing{sc: sc, req: req})
		return
	}
	s.send(sc, s.read(req))
}

// read answers a read from the state as it is now.
func (s *Server) read(req *request) *response {
	resp := &response{id: req.id, op: req.op, revision: s.state.revision}
	if req.op == opGet {
		resp.entries = make([]Entry, len(req.keys))
		for i, k := range req.keys {
			resp.entries[i] = s.state.get(k)
		}
		return resp
	}
	resp.entries, resp.more = s.state.scan(req.scan)
	return resp
}

// respond answers now, or after the pending sync if anything waits for it,
// so that one connection's answers keep their order.
func (s *Server) respond(sc *serverConn, resp *response) {
	if len(s.outbox) > 0 {
		s.enqueue(outgoing{sc: sc, resp: resp})
		return
	}
	s.send(sc, resp)
}

func (s *Server) enqueue(o outgoing) {
	o.sc.queued++
	s.outbox = append(s.outbox, o)
}

func (s *Server) send(sc *serverConn, resp *response) {
	if !sc.closed {
		s.e.Send(sc.id, encodeResponse(resp))
	}
}

// syncNow makes the pending writes durable and releases the outbox. If the
// sync fails the pending writes are undone, in memory and on the disk, and
// answered with a storage error: they certainly did not happen.
func (s *Server) syncNow() {
	if s.syncTimer != 0 {
		s.e.Cancel(s.syncTimer)
		s.syncTimer = 0
	}
	assert(len(s.outbox) == 0 || len(s.pending) > 0, "%d answers wait for a sync with no write pending", len(s.outbox))
	failed := false
	if err := s.st.sync(); err != nil {
		failed = true
		from := s.state.revision - uint64(len(s.pending)) + 1
		s.e.Log("sink-sync-failed", "error", err.Error(), "revisions", fmt.Sprintf("%d-%d", from, s.state.revision))
		for i := len(s.pending) - 1; i >= 0; i-- {
			s.state.undo(s.pending[i])
		}
		if cutErr := s.st.rollback(); cutErr != nil {
			s.pending = nil
			s.halt(fmt.Sprintf("sync failed (%v) and the log could not be cut back (%v)", err, cutErr))
			return
		}
	}
	assert(s.st.logBytes == s.st.durableBytes, "log has %d unsynced bytes after a sync", s.st.logBytes-s.st.durableBytes)
	clear(s.pending)
	s.pending = s.pending[:0]
	for _, o := range s.outbox {
		o.sc.queued--
		resp := o.resp
		switch {
		case o.req != nil:
			resp = s.read(o.req)
		case failed && resp.op == opWrite && (resp.status == statusOK || resp.status == statusConditionFailed):
			// A failed condition was judged against writes now undone.
			resp = &response{id: resp.id, op: opWrite, status: statusStorage, message: "sync failed; write rolled back"}
		}
		s.send(o.sc, resp)
	}
	clear(s.outbox)
	s.outbox = s.outbox[:0]
	if !failed {
		s.maybeCompact()
	}
}

func (s *Server) maybeCompact() {
	if s.st.logBytes <= max(s.opts.LogBytesMax, s.state.bytes) || len(s.pending) > 0 {
		return
	}
	before := s.st.logBytes
	if err := s.st.compact(s.state); err != nil {
		s.e.Log("sink-compaction-failed", "error", err.Error())
		return
	}
	s.e.Log("sink-compacted", "revision", s.state.revision, "log-bytes", before, "state-bytes", s.state.bytes)
}

// halt stops serving for good (until a restart): the disk is in a state
// the server cannot vouch for. Connections are cut, so every write in
// flight ends indefinite; later requests are answered unavailable.
func (s *Server) halt(why string) {
	s.e.Log("sink-halted", "reason", why)
	s.ready = false
	s.halted = why
	s.pending = nil
	s.outbox = nil
	if s.syncTimer != 0 {
		s.e.Cancel(s.syncTimer)
		s.syncTimer = 0
	}
	for _, id := range slices.Sorted(maps.Keys(s.conns)) {
		s.closeConn(s.conns[id])
	}
}

// checkInvariants walks the server's whole state; tests call it after
// every step.
func (s *Server) checkInvariants() {
	if !s.ready {
		return
	}
	s.state.checkInvariants()
	assert(s.st.durableBytes <= s.st.logBytes, "durable log bytes %d past log bytes %d", s.st.durableBytes, s.st.logBytes)
	assert((len(s.pending) == 0) == (s.st.logBytes == s.st.durableBytes), "%d writes pending but %d log bytes unsynced", len(s.pending), s.st.logBytes-s.st.durableBytes)
	assert(uint64(len(s.pending)) <= s.state.revision, "%d writes pending at revision %d", len(s.pending), s.state.revision)
	queued := map[*serverConn]int{}
	for _, o := range s.outbox {
		queued[o.sc]++
	}
	for _, id := range slices.Sorted(maps.Keys(s.conns)) {
		sc := s.conns[id]
		assert(sc.queued == queued[sc], "connection %d counts %d queued answers, outbox holds %d", sc.id, sc.queued, queued[sc])
	}
}
