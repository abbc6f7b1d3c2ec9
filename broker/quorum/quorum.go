package quorum

import (
	"errors"
	"fmt"
	"slices"
	"time"

	klog "github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/internal/invariant"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is one voter, or one observer.
type Config struct {
	ID int32
	// Voters maps every voter's id (this one's included, unless it is an
	// observer) to the address its process listens on: 1, 3 or 5 of them
	// (controller.quorum.voters).
	Voters map[int32]string
	// Observer makes this node an observer (raft.Config.Observer), as a
	// broker is: it only fetches, from its log end, and its log is never
	// synced on its behalf (KafkaRaftClient.appendAsFollower flushes only
	// for voters), so a power loss may take the unsynced tail; the node
	// fetches it again.
	Observer bool
	// Raft carries the quorum timeouts (quorum.*.ms); its ID, Voters and
	// Jitter are filled in by the voter (Jitter from the env's Rand).
	Raft raft.Config
	// ClientID is the client id of the voter's requests to its peers.
	ClientID string
	// TickInterval bounds how long the core's timers go unlooked-at where
	// it keeps no single deadline (raft.Node.NextTick: a follower's fetch
	// loop); 0 is 10ms.
	TickInterval time.Duration
	// FlushDelay is how long appended entries wait in the page cache
	// before the log is synced (a stand-in for fsync latency and group
	// commit); the core counts them only once synced. 0 syncs at the end
	// of the step that appended them.
	FlushDelay time.Duration
	// NoFsync counts entries as durable without syncing the log (the
	// metadata.log.fsync knob off): a power loss then drops what the
	// quorum took for committed.
	NoFsync bool

	// OnCommitted is called for every entry, in offset order, once it is
	// below the high watermark: exactly once per entry per process life;
	// after a restart from offset 0 again (the log is replayed). The
	// leader-change entries are delivered too (LeaderChange set).
	OnCommitted func(e raft.Entry)
	// OnApplied, if set, is called once the entries a step committed have
	// all gone to OnCommitted, and when the leader's high watermark as this
	// node knows it (LeaderHighWatermark) changed: where a reader publishes
	// what they made, once it has caught up.
	OnApplied func()
	// OnSnapshot, if set, is called with the snapshot the state machine
	// must reset to: at the start, with the latest on disk (before the
	// entries after it go to OnCommitted), and when a follower installs
	// one fetched from the leader. Entries below its end are never
	// delivered after it.
	OnSnapshot func(s raft.Snapshot)
	// OnRoleChange, if set, is called after a step that changed the
	// voter's role, epoch or known leader, and once at the start.
	OnRoleChange func(role raft.Role, epoch, leader int32)
}

// Voter is one controller's quorum member: a raft.Node run over Kafka's
// wire protocol and the env's disk. All its methods run on the process's
// event loop.
type Voter struct {
	cfg     Config
	e       env.Env
	router  *rpc.Router
	node    *raft.Node
	log     *klog.Log
	ids     []int32 // sorted voter ids
	clients map[int32]*rpc.Client
	timeout time.Duration

	tickTimer env.TimerID // the armed tick (armTick), 0 if none
	tickAt    env.Time
	busy      bool           // inside run: effects are being carried out
	halted    bool           // a disk failure halted the process
	pending   []*rpc.Request // served requests waiting for run
	inbound   *rpc.Request   // the request whose Receive's effects are being applied
	from      int32          // its sender
	// held are fetches the core holds (raft.Node.Parked), by the voter that
	// sent them: a later step\'s FetchResponse to that voter answers it.
	held     map[int32]*rpc.Request
	answered bool
	appended bool // log appended since the last flush
	flushArm bool // a delayed flush is pending

	delivered int64 // entries given to OnCommitted
	lastHW    int64
	lastLHW   int64 // LeaderHighWatermark at the last observe, -1 if unknown
	lastRole  raft.Role
	lastEpoch int32
	lastLead  int32
}

// Start restores the voter from e's disk — the quorum-state file and the
// metadata log, flushed whole first — and starts its core and tick timer.
// router is the process's, whose Server hands quorum requests to Handle.
// An unreadable state file or log is an error (the process should halt).
func Start(e env.Env, router *rpc.Router, cfg Config) (*Voter, error) {
	if _, ok := cfg.Voters[cfg.ID]; ok == cfg.Observer {
		if cfg.Observer {
			return nil, fmt.Errorf("quorum: observer %d is among the voters", cfg.ID)
		}
		return nil, fmt.Errorf("quorum: node %d is not among the voters", cfg.ID)
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = 10 * time.Millisecond
	}
	v := &Voter{cfg: cfg, e: e, router: router, clients: map[int32]*rpc.Client{}, lastLHW: -1}
	for id := range cfg.Voters {
		v.ids = append(v.ids, id)
	}
	slices.Sort(v.ids)
	st, err := readState(e.Disk())
	if err != nil {
		return nil, fmt.Errorf("quorum: %w", err)
	}
	snap, err := readLatestSnapshot(e.Disk())
	if err != nil {
		return nil, fmt.Errorf("quorum: %w", err)
	}
	l, entries, err := openLog(e.Disk(), snap.ID.Epoch)
	if ce := (*EpochCorruptionError)(nil); errors.As(err, &ce) {
		e.Log("quorum-log-cut", "id", cfg.ID, "entry", ce.Offset, "epoch", ce.Epoch, "after", ce.Prev, "cut-at", ce.CutAt)
		e.Probe(probe.CorruptBatchDetected, Topic)
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("quorum: metadata log: %w", err)
	}
	if l.LogStartOffset() > snap.ID.EndOffset {
		return nil, fmt.Errorf("quorum: metadata log starts at %d, past the latest snapshot %v", l.LogStartOffset(), snap.ID)
	}
	v.log = l
	rc := cfg.Raft
	rc.ID, rc.Voters, rc.Observer = cfg.ID, slices.Clone(v.ids), cfg.Observer
	rnd := e.Rand()
	rc.Jitter = func(max time.Duration) time.Duration { return time.Duration(rnd.Int63n(int64(max))) }
	v.timeout = rc.RequestTimeout
	if v.timeout <= 0 {
		v.timeout = 2 * time.Second
	}
	v.node = raft.New(rc, st, snap, entries, e.Now())
	if snap.ID.EndOffset > 0 {
		v.delivered = snap.ID.EndOffset
		if cfg.OnSnapshot != nil {
			cfg.OnSnapshot(snap)
		}
	}
	// The first observe reports the role the node starts in (the only
	// voter leads from New on): OnRoleChange hears of every role.
	v.lastRole, v.lastEpoch, v.lastLead = v.node.Role(), -1, v.node.LeaderID()
	e.Log("quorum-start", "id", cfg.ID, "role", v.node.Role().String(), "epoch", st.Epoch, "voted", st.VotedID,
		"leader", st.LeaderID, "snapshot", snap.ID.String(), "log-end", v.node.LogEnd(), "recovered-truncated-at", l.Recovery().TruncatedAt)
	v.run()
	return v, nil
}

// Accessors.

func (v *Voter) ID() int32            { return v.cfg.ID }
func (v *Voter) Role() raft.Role      { return v.node.Role() }
func (v *Voter) HighWatermark() int64 { return v.node.HighWatermark() }

// LeaderHighWatermark is raft.Node.LeaderHighWatermark.
func (v *Voter) LeaderHighWatermark() (int64, bool) { return v.node.LeaderHighWatermark() }
func (v *Voter) LogEnd() int64                      { return v.node.LogEnd() }
func (v *Voter) Leader() (int32, int32)             { return v.node.LeaderID(), v.node.Epoch() }

// Entries returns the entries in [from, to); those below HighWatermark are
// committed.
func (v *Voter) Entries(from, to int64) []raft.Entry { return v.node.Entries(from, to) }

// Propose appends data to the metadata log as the leader; it commits once
// the high watermark passes offset. A non-leader answers
// raft.NotLeaderError.
func (v *Voter) Propose(data []byte) (offset int64, err error) {
	if v.halted {
		return -1, fmt.Errorf("quorum: halted")
	}
	off, err := v.node.Propose(data)
	v.run()
	return off, err
}

// Snapshot has the node keep the state machine's snapshot data of the
// committed entries below end; the log's prefix is then deleted
// (raft.Node.Snapshot).
func (v *Voter) Snapshot(end int64, data []byte) error {
	if v.halted {
		return fmt.Errorf("quorum: halted")
	}
	err := v.node.Snapshot(end, data)
	v.run()
	return err
}

// LogStart is the first offset the metadata log holds.
func (v *Voter) LogStart() int64 { return v.node.LogStart() }

// Handle serves a request if it is one of the quorum's (Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot) and reports
// whether it was.
// The core answers within the step; the answer is the rpc response.
func (v *Voter) Handle(r *rpc.Request) bool {
	switch req := r.Body.(type) {
	case *kmsg.VoteRequest, *kmsg.BeginQuorumEpochRequest, *kmsg.EndQuorumEpochRequest, *kmsg.FetchRequest, *kmsg.FetchSnapshotRequest:
	case *kmsg.DescribeQuorumRequest:
		r.Respond(v.describe(req)) // read only: no step of the core
		return true
	default:
		return false
	}
	v.pending = append(v.pending, r)
	v.run()
	return true
}

func (v *Voter) tick() {
	v.tickTimer, v.tickAt = 0, 0
	if v.halted {
		return
	}
	v.node.Tick(v.e.Now())
	v.run()
}

// armTick sets the tick timer for the core's next deadline (NextTick), at
// most TickInterval away where the core polls: a voter alone in its
// quorum, leading, sets none, and a quiet one wakes only when a timer of
// its role may fire.
func (v *Voter) armTick() {
	now := v.e.Now()
	at := v.node.NextTick(now, v.cfg.TickInterval)
	if at == 0 || (v.tickTimer != 0 && v.tickAt <= at) {
		return
	}
	if at <= now {
		at = now.Add(v.cfg.TickInterval) // a deadline Tick has already seen: never a zero-delay loop
	}
	if v.tickTimer != 0 {
		v.e.Cancel(v.tickTimer)
	}
	v.tickAt = at
	v.tickTimer = v.e.AfterFunc(at.Sub(now), v.tick)
}

// run carries out the core's effects until none are left: it is the only
// place effects are applied, and it does not nest (a request served while
// effects are applied — the rpc server hands over a connection's next
// request as soon as the previous is answered — waits in pending).
func (v *Voter) run() {
	if v.busy || v.halted {
		return
	}
	v.busy = true
	defer func() {
		v.busy = false
		if !v.halted {
			v.armTick()
		}
	}()
	for !v.halted {
		if effs := v.node.Ready(); len(effs) > 0 {
			v.apply(effs)
			continue
		}
		if v.appended && v.cfg.FlushDelay <= 0 {
			v.flush()
			continue
		}
		if v.appended && !v.flushArm {
			v.flushArm = true
			v.e.AfterFunc(v.cfg.FlushDelay, func() {
				v.flushArm = false
				if !v.halted && v.appended {
					v.flush()
					v.run()
				}
			})
		}
		if v.observe() {
			continue
		}
		if len(v.pending) > 0 {
			r := v.pending[0]
			v.pending[0] = nil
			v.pending = v.pending[1:]
			v.serve(r)
			continue
		}
		return
	}
}

// serve feeds one request to the core and applies the step's effects,
// among which the core's answer to the requester is the rpc response.
func (v *Voter) serve(r *rpc.Request) {
	from, msg, ok := decodeRequest(r.Body)
	if !ok {
		r.Respond(errorResponse(r.Body, errUnknownTopic))
		return
	}
	v.inbound, v.from, v.answered = r, from, false
	v.node.Receive(from, msg, v.e.Now())
	v.apply(v.node.Ready())
	switch {
	case v.answered || v.halted:
	case v.node.Parked(from):
		// Held until the leader has records for it or its wait is over.
		if old := v.held[from]; old != nil {
			old.Respond(errorResponse(old.Body, errInvalidRequest)) // superseded
		}
		if v.held == nil {
			v.held = map[int32]*rpc.Request{}
		}
		v.held[from] = r
	default:
		// The core ignored it (a sender that is not a voter, or names
		// another id than its own).
		r.Respond(errorResponse(r.Body, errInvalidRequest))
	}
	v.inbound = nil
}

// apply carries out effects in order.
func (v *Voter) apply(effs []raft.Effect) {
	d := v.e.Disk()
	for _, ef := range effs {
		if v.halted {
			return
		}
		switch ef := ef.(type) {
		case raft.PersistQuorumState:
			if err := writeState(d, ef, v.ids); err != nil {
				v.halt(fmt.Sprintf("quorum-state write: %v", err))
				return
			}
		case raft.AppendLog:
			if _, err := v.log.AppendAsFollower(encodeEntries(ef.Entries, v.ids)); err != nil {
				v.halt(fmt.Sprintf("metadata log append: %v", err))
				return
			}
			v.appended = true
		case raft.TruncateLog:
			end, err := v.log.TruncateTo(ef.To)
			if err != nil {
				v.halt(fmt.Sprintf("metadata log truncate: %v", err))
				return
			}
			if end != ef.To {
				invariant.Fail("quorum", "node %d: truncation to %d left the log ending at %d", v.cfg.ID, ef.To, end)
			}
			v.e.Log("quorum-truncate", "to", ef.To)
		case raft.WriteSnapshot:
			if err := writeSnapshot(d, ef.S); err != nil {
				v.halt(fmt.Sprintf("snapshot write: %v", err))
				return
			}
			v.e.Log("quorum-snapshot", "id", v.cfg.ID, "snapshot", ef.S.ID.String(), "bytes", len(ef.S.Data))
		case raft.DeleteLogPrefix:
			if err := v.log.IncrementLogStartOffset(ef.To); err != nil {
				v.halt(fmt.Sprintf("metadata log start: %v", err))
				return
			}
			if _, err := v.log.DeleteSegmentsBelow(ef.To); err != nil {
				v.halt(fmt.Sprintf("metadata log segments: %v", err))
				return
			}
		case raft.InstallSnapshot:
			if err := writeSnapshot(d, ef.S); err != nil {
				v.halt(fmt.Sprintf("snapshot write: %v", err))
				return
			}
			if err := v.log.TruncateFullyAndStartAt(ef.S.ID.EndOffset); err != nil {
				v.halt(fmt.Sprintf("metadata log restart at %d: %v", ef.S.ID.EndOffset, err))
				return
			}
			v.appended = false
			v.e.Log("quorum-snapshot-installed", "id", v.cfg.ID, "snapshot", ef.S.ID.String(), "bytes", len(ef.S.Data))
			v.e.Probe(probe.MetadataSnapshotInstalled, v.e.Name())
			v.delivered = max(v.delivered, ef.S.ID.EndOffset)
			if v.cfg.OnSnapshot != nil {
				v.cfg.OnSnapshot(ef.S)
			}
		case raft.Send:
			v.send(ef.To, ef.Msg)
		}
	}
}

// send maps a core Send: a response answers the request being served; a
// request goes out on the peer's client, its answer fed back to the core.
func (v *Voter) send(to int32, m raft.Message) {
	if isResponse(m) {
		if r := v.inbound; r != nil && !v.answered && to == v.from && answers(m, r.Header.Key) {
			v.answered = true
			r.Respond(encodeResponse(m, r.Body, v.ids))
			return
		}
		if r := v.held[to]; r != nil && answers(m, r.Header.Key) {
			delete(v.held, to)
			r.Respond(encodeResponse(m, r.Body, v.ids))
			return
		}
		v.e.Log("quorum-unmatched-response", "to", to, "msg", m.String())
		return
	}
	c := v.client(to)
	if c == nil {
		return
	}
	c.Do(encodeRequest(m, to, v.ids), v.timeout, func(resp kmsg.Response, err error) {
		if v.halted {
			return
		}
		var msg raft.Message
		ok := err == nil
		if ok {
			msg, ok = decodeResponse(m, resp)
		}
		if !ok {
			// No answer (the connection failed, was closed or timed out,
			// which Kafka's NetworkClient reports as a disconnection), or
			// one that does not decode: KafkaNetworkChannel hands the core
			// BROKER_NOT_AVAILABLE, and it backs off before asking again.
			v.node.RequestFailed(to, m, v.e.Now())
		} else {
			v.node.Receive(to, msg, v.e.Now())
		}
		v.run()
	})
}

func (v *Voter) client(id int32) *rpc.Client {
	if c := v.clients[id]; c != nil {
		return c
	}
	addr, ok := v.cfg.Voters[id]
	if !ok {
		return nil
	}
	c := rpc.NewClient(v.router, addr, rpc.ClientOptions{ClientID: v.cfg.ClientID, Speaks: Versions})
	v.clients[id] = c
	return c
}

// flush syncs the log and tells the core.
func (v *Voter) flush() {
	v.appended = false
	if v.cfg.NoFsync || v.cfg.Observer {
		v.node.Flushed(v.log.LogEndOffset())
		return
	}
	if err := v.log.Flush(); err != nil {
		v.halt(fmt.Sprintf("metadata log flush: %v", err))
		return
	}
	v.node.Flushed(v.log.LogEndOffset())
}

// observe checks the core, traces role changes and delivers commits. It
// reports whether it called a hook (which may have stepped the core).
func (v *Voter) observe() bool {
	if err := v.node.Check(); err != nil {
		if v.cfg.NoFsync {
			// Expected without fsync: a power loss took entries the quorum
			// had counted committed, and this node now holds what Raft
			// forbids (a truncation below its high watermark, say). Kafka's
			// metadata log throws there and the controller exits; so does
			// this one. With fsync it is a bug, and the run fails with it.
			v.halt("quorum: " + err.Error() + " (metadata.log.fsync=false: committed entries lost)")
			return false
		}
		panic(err.Error())
	}
	if v.log.LogEndOffset() != v.node.LogEnd() {
		invariant.Fail("quorum", "node %d: metadata log ends at %d, core log at %d", v.cfg.ID, v.log.LogEndOffset(), v.node.LogEnd())
	}
	hw := v.node.HighWatermark()
	if hw < v.lastHW {
		invariant.Fail("quorum", "node %d: high watermark moved back from %d to %d", v.cfg.ID, v.lastHW, hw)
	}
	v.lastHW = hw
	called := false
	role, epoch, lead := v.node.Role(), v.node.Epoch(), v.node.LeaderID()
	if role != v.lastRole || epoch != v.lastEpoch || lead != v.lastLead {
		v.lastRole, v.lastEpoch, v.lastLead = role, epoch, lead
		v.e.Log(roleEvent(role), "id", v.cfg.ID, "epoch", epoch, "leader", lead, "voted", v.node.VotedFor(),
			"log-end", v.node.LogEnd(), "hw", hw)
		if v.cfg.OnRoleChange != nil {
			v.cfg.OnRoleChange(role, epoch, lead)
			called = true
		}
	}
	lhw, ok := v.node.LeaderHighWatermark()
	if !ok {
		lhw = -1
	}
	if v.delivered < hw || lhw != v.lastLHW {
		v.lastLHW = lhw
		for _, en := range v.node.Entries(v.delivered, hw) {
			v.delivered = en.Offset + 1
			if v.cfg.OnCommitted != nil {
				v.cfg.OnCommitted(en)
				called = true
			}
		}
		if v.cfg.OnApplied != nil && !v.halted {
			v.cfg.OnApplied()
			called = true
		}
	}
	return called
}

func roleEvent(r raft.Role) string {
	switch r {
	case raft.Leader:
		return "quorum-elected"
	case raft.Resigned:
		return "quorum-resigned"
	case raft.Follower:
		return "quorum-following"
	case raft.Candidate:
		return "quorum-candidate"
	case raft.Prospective:
		return "quorum-prospective"
	}
	return "quorum-unattached"
}

// halt stops the process, as Kafka halts on a failed metadata log or
// quorum-state write.
func (v *Voter) halt(reason string) {
	v.halted = true
	v.e.Halt(reason)
}
