package raft_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/env"
)

// cluster is a runtime for N nodes: each has a disk (the log, of which a
// prefix is durable, and the persisted quorum state), and messages wait in
// one queue until delivered, dropped or duplicated. It carries out effects
// in order and checks, after each, that the node's log is the disk's.
type cluster struct {
	ids     []int32
	cfg     func(id int32) raft.Config
	nodes   map[int32]*raft.Node // nil while crashed
	disks   map[int32]*disk
	queue   []envelope
	cut     map[int32]bool    // isolated: what it sends and what is sent to it is lost
	links   map[[2]int32]bool // cut links, both ways
	now     env.Time
	out     *strings.Builder // effects are printed here if set
	failure string           // the first harness-level failure
	// onInstall, if set, hears of every snapshot a node installs.
	onInstall func(id int32, s raft.Snapshot)
}

// disk holds the log from offset start (what snapshots cover is deleted),
// durable up to offset durable, the latest snapshot (always durable: the
// runtime syncs it before anything after it) and the quorum state.
type disk struct {
	log     []raft.Entry
	start   int64
	durable int64
	snap    raft.Snapshot
	state   raft.QuorumState
}

func (d *disk) end() int64 { return d.start + int64(len(d.log)) }

// loseUnflushed drops the log's tail past what is durable.
func (d *disk) loseUnflushed() { d.log = d.log[:max(d.durable-d.start, 0)] }

type envelope struct {
	from, to int32
	msg      raft.Message
}

func (e envelope) String() string { return fmt.Sprintf("%d->%d %s", e.from, e.to, e.msg) }

func newCluster(voters int, cfg func(id int32) raft.Config) *cluster {
	c := &cluster{cfg: cfg, nodes: map[int32]*raft.Node{}, disks: map[int32]*disk{}, cut: map[int32]bool{}, links: map[[2]int32]bool{}}
	for i := 1; i <= voters; i++ {
		id := int32(i)
		c.ids = append(c.ids, id)
		c.disks[id] = &disk{state: raft.QuorumState{Epoch: 0, VotedID: raft.NoID, LeaderID: raft.NoID}}
	}
	for _, id := range c.ids {
		c.start(id)
	}
	return c
}

// addObserver starts observer id (its Config must say Observer).
func (c *cluster) addObserver(id int32) {
	c.ids = append(c.ids, id)
	c.disks[id] = &disk{state: raft.QuorumState{Epoch: 0, VotedID: raft.NoID, LeaderID: raft.NoID}}
	c.start(id)
}

func (c *cluster) start(id int32) {
	d := c.disks[id]
	d.loseUnflushed()
	c.nodes[id] = raft.New(c.cfg(id), d.state, d.snap, d.log, c.now)
	c.apply(id)
}

// crash loses the node's memory and the unflushed tail of its log; the
// quorum state and the durable log stay. Messages to it are lost.
func (c *cluster) crash(id int32) {
	c.nodes[id] = nil
	d := c.disks[id]
	d.loseUnflushed()
	c.queue = slices.DeleteFunc(c.queue, func(e envelope) bool { return e.to == id })
}

func (c *cluster) flush(id int32) {
	n := c.nodes[id]
	if n == nil {
		return
	}
	d := c.disks[id]
	d.durable = d.end()
	n.Flushed(d.durable)
	c.apply(id)
}

func (c *cluster) tick(id int32, now env.Time) {
	if now > c.now {
		c.now = now
	}
	if n := c.nodes[id]; n != nil {
		n.Tick(now)
		c.apply(id)
	}
}

func (c *cluster) deliver(e envelope) {
	n := c.nodes[e.to]
	if n == nil || c.blocked(e.from, e.to) {
		return
	}
	if c.out != nil {
		fmt.Fprintf(c.out, "%s\n", e)
	}
	n.Receive(e.from, e.msg, c.now)
	c.apply(e.to)
}

// failRequest tells the sender of e that it will have no answer.
func (c *cluster) failRequest(e envelope) {
	n := c.nodes[e.from]
	if n == nil {
		return
	}
	if c.out != nil {
		fmt.Fprintf(c.out, "failed %s\n", e)
	}
	n.RequestFailed(e.to, e.msg, c.now)
	c.apply(e.from)
}

func (c *cluster) propose(id int32, data string) (int64, error) {
	n := c.nodes[id]
	if n == nil {
		return -1, fmt.Errorf("node %d is down", id)
	}
	off, err := n.Propose([]byte(data))
	c.apply(id)
	return off, err
}

// apply carries out the node's effects in order, then checks it.
func (c *cluster) apply(id int32) {
	n := c.nodes[id]
	d := c.disks[id]
	for _, e := range n.Ready() {
		if c.out != nil {
			fmt.Fprintf(c.out, "  %d: %s\n", id, e)
		}
		switch e := e.(type) {
		case raft.PersistQuorumState:
			d.state = raft.QuorumState{Epoch: e.Epoch, VotedID: e.VotedID, LeaderID: e.LeaderID}
		case raft.AppendLog:
			for _, en := range e.Entries {
				if en.Offset != d.end() {
					c.fail("node %d: append at %d to a log ending at %d", id, en.Offset, d.end())
				}
				d.log = append(d.log, en)
			}
		case raft.TruncateLog:
			if e.To > d.end() || e.To < d.start {
				c.fail("node %d: truncate to %d of a log [%d, %d)", id, e.To, d.start, d.end())
			}
			d.log = d.log[:min(max(e.To-d.start, 0), int64(len(d.log)))]
			d.durable = min(d.durable, e.To)
		case raft.WriteSnapshot:
			d.snap = e.S
		case raft.DeleteLogPrefix:
			if e.To < d.start || e.To > d.end() || e.To > d.snap.ID.EndOffset {
				c.fail("node %d: delete below %d of a log [%d, %d) with snapshot %v", id, e.To, d.start, d.end(), d.snap.ID)
			}
			d.log = slices.Clone(d.log[min(max(e.To-d.start, 0), int64(len(d.log))):])
			d.start = e.To
			d.durable = max(d.durable, e.To)
		case raft.InstallSnapshot:
			d.snap = e.S
			d.log, d.start, d.durable = nil, e.S.ID.EndOffset, e.S.ID.EndOffset
			if c.onInstall != nil {
				c.onInstall(id, e.S)
			}
		case raft.Send:
			if c.blocked(id, e.To) {
				continue
			}
			c.queue = append(c.queue, envelope{from: id, to: e.To, msg: e.Msg})
		}
	}
	if st := n.QuorumState(); st != d.state {
		c.fail("node %d: quorum state %+v, persisted %+v", id, st, d.state)
	}
	if got := n.Entries(0, n.LogEnd()); !sameEntries(got, d.log) || n.LogStart() != d.start {
		c.fail("node %d: core log %v from %d, disk log %v from %d", id, got, n.LogStart(), d.log, d.start)
	}
	if err := n.Check(); err != nil {
		c.fail("%v", err)
	}
}

func (c *cluster) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.out != nil {
		fmt.Fprintf(c.out, "INVARIANT: %s\n", msg)
	}
	if c.failure == "" {
		c.failure = msg
	}
}

func sameEntries(a, b []raft.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y raft.Entry) bool {
		return x.Offset == y.Offset && x.Epoch == y.Epoch && x.LeaderChange == y.LeaderChange && string(x.Data) == string(y.Data)
	})
}

func (c *cluster) leaders() []int32 {
	var out []int32
	for _, id := range c.ids {
		if n := c.nodes[id]; n != nil && n.Role() == raft.Leader {
			out = append(out, id)
		}
	}
	return out
}

func (c *cluster) state() string {
	var b strings.Builder
	for _, id := range c.ids {
		n := c.nodes[id]
		if n == nil {
			fmt.Fprintf(&b, "%d: down\n", id)
			continue
		}
		fmt.Fprintf(&b, "%d: %s epoch=%d voted=%d leader=%d end=%d flushed=%d hw=%d",
			id, n.Role(), n.Epoch(), n.VotedFor(), n.LeaderID(), n.LogEnd(), n.FlushedEnd(), n.HighWatermark())
		if n.LogStart() > 0 {
			fmt.Fprintf(&b, " start=%d snapshot=%v", n.LogStart(), n.LatestSnapshot().ID)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func defaultConfig(voters []int32, jitter func(id int32) func(time.Duration) time.Duration) func(id int32) raft.Config {
	return func(id int32) raft.Config {
		cfg := raft.Config{ID: id, Voters: voters, Observer: !slices.Contains(voters, id)}
		if jitter != nil {
			cfg.Jitter = jitter(id)
		}
		return cfg
	}
}

func (c *cluster) blocked(from, to int32) bool {
	return c.cut[from] || c.cut[to] || c.links[[2]int32{from, to}] || c.links[[2]int32{to, from}]
}
