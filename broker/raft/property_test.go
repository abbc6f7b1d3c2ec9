package raft_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/env"
)

// TestRandomized is Kafka's RaftEventSimulationTest in small: for each
// seed, a cluster of 3 or 5 voters runs a few hundred random steps —
// ticks, proposals, flushes, deliveries out of order, drops, duplicates,
// crashes that lose unflushed entries, partitions — then the faults stop.
// After every step it checks each node's invariants and:
//
//   - one leader per epoch: no two nodes ever lead the same epoch;
//   - committed entries stay: an entry below some node's high watermark
//     is the same on every node whose high watermark later passes it;
//   - (per node, by Check) the high watermark never moves back while the
//     node lives;
//
// and, once the faults stop, liveness: a leader is elected and a proposal
// commits within a bounded number of rounds, and reaches every observer.
// Odd seeds add two observers (ids 101 and 102), crashed, cut and restarted
// like the voters; what they hold below their high watermark is checked
// against the committed entries as a voter's is. Nodes take snapshots at
// their high watermark now and then (the state: a digest of the committed
// entries below it), dropping the log below; a node that installs a
// fetched snapshot must get exactly the digest of the committed entries it
// covers, fetched in chunks of a few bytes. A failure names its seed.
func TestRandomized(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 50
	}
	allInstalls := 0
	defer func() {
		if allInstalls == 0 && !t.Failed() {
			t.Errorf("no snapshot was ever fetched: the test does not reach FetchSnapshot")
		}
	}()
	for _, voters := range []int{3, 5} {
		t.Run(fmt.Sprintf("voters=%d", voters), func(t *testing.T) {
			var elections, commits, snapshots, installs int
			for seed := range uint64(seeds) {
				s := &sim{t: t, seed: seed, voters: voters}
				if msg := s.run(1000); msg != "" {
					t.Fatalf("seed %d, %d voters: %s\n%s", seed, voters, msg, s.c.state())
				}
				elections += len(s.leaderOf)
				commits += int(s.maxHW)
				snapshots += s.snapshots
				installs += s.installs
			}
			t.Logf("%d seeds: %d epochs with a leader, %d entries committed (max hw summed), %d snapshots taken, %d installed", seeds, elections, commits, snapshots, installs)
			allInstalls += installs
		})
	}
}

type sim struct {
	t      *testing.T
	seed   uint64
	voters int
	rng    *env.Rand
	c      *cluster

	leaderOf  map[int32]int32      // epoch -> the node that led it
	committed map[int64]raft.Entry // offset -> the committed entry
	verified  map[int32]int64      // per node life: entries below this checked against committed
	maxHW     int64
	proposals int
	snapshots int // taken
	installs  int // fetched and installed
	trace     *strings.Builder
}

func (s *sim) run(steps int) string {
	s.rng = env.NewRand(s.seed*2654435761 + uint64(s.voters))
	ids := make([]int32, s.voters)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	s.leaderOf, s.committed, s.verified = map[int32]int32{}, map[int64]raft.Entry{}, map[int32]int64{}
	// Small fetches, so a follower can hold part of a new leader's log
	// (an older epoch's entries without the leader's own).
	fetchMax := 1 + int(s.seed%3)
	base := defaultConfig(ids, func(id int32) func(time.Duration) time.Duration {
		r := s.rng.Fork(fmt.Sprintf("jitter-%d", id))
		return func(max time.Duration) time.Duration { return time.Duration(r.Int63n(int64(max))) }
	})
	c := newCluster(s.voters, func(id int32) raft.Config {
		cfg := base(id)
		cfg.FetchMaxEntries = fetchMax
		cfg.FetchSnapshotMaxBytes = 5
		return cfg
	})
	s.c = c
	c.onInstall = func(id int32, snap raft.Snapshot) {
		if want := s.digest(snap.ID.EndOffset); string(snap.Data) != want {
			c.fail("node %d installed snapshot %v holding %q, the committed entries below it make %q", id, snap.ID, snap.Data, want)
		}
		s.installs++
	}
	if s.seed%2 == 1 {
		c.addObserver(101)
		c.addObserver(102)
	}
	for range steps {
		switch p := s.rng.Intn(100); {
		case p < 25:
			c.now = c.now.Add(s.rng.Duration(10*time.Millisecond, 400*time.Millisecond))
			for _, id := range c.ids {
				c.tick(id, c.now)
			}
		case p < 65:
			if len(c.queue) == 0 {
				break
			}
			i := s.rng.Intn(len(c.queue))
			e := c.queue[i]
			switch q := s.rng.Intn(100); {
			case q < 10: // lost
				c.queue = slices.Delete(c.queue, i, i+1)
			case q < 15: // duplicated: delivered and left queued
				c.deliver(e)
			default: // delivered, out of order
				c.queue = slices.Delete(c.queue, i, i+1)
				c.deliver(e)
			}
		case p < 74:
			s.propose(c.ids[s.rng.Intn(len(c.ids))])
		case p < 77:
			s.snapshot(c.ids[s.rng.Intn(len(c.ids))])
		case p < 87:
			c.flush(c.ids[s.rng.Intn(len(c.ids))])
		case p < 90:
			// A crash, of a leader half the time: its unflushed tail is
			// lost.
			id := c.ids[s.rng.Intn(len(c.ids))]
			if ls := c.leaders(); len(ls) > 0 && s.rng.Chance(0.5) {
				id = ls[0]
			}
			if c.nodes[id] != nil {
				c.crash(id)
				delete(s.verified, id)
			}
		case p < 96:
			if id := c.ids[s.rng.Intn(len(c.ids))]; c.nodes[id] == nil {
				c.start(id)
			}
		case p < 97:
			c.cut[c.ids[s.rng.Intn(len(c.ids))]] = true
		default:
			clear(c.cut)
		}
		if msg := s.observe(); msg != "" {
			return msg
		}
	}
	return s.liveness()
}

// snapshot has node id take a snapshot at its high watermark, if past its
// latest: its state is the digest of the committed entries below.
func (s *sim) snapshot(id int32) {
	n := s.c.nodes[id]
	if n == nil || n.HighWatermark() <= max(n.LatestSnapshot().ID.EndOffset, n.LogStart()) {
		return
	}
	end := n.HighWatermark()
	if err := n.Snapshot(end, []byte(s.digest(end))); err != nil {
		s.c.fail("snapshot of node %d at %d: %v", id, end, err)
	}
	s.c.apply(id)
	s.snapshots++
}

// digest is the state the committed entries below end make: FNV-1a over
// their offsets, epochs and data.
func (s *sim) digest(end int64) string {
	h := uint64(14695981039346656037)
	for off := range end {
		e, ok := s.committed[off]
		if !ok {
			return fmt.Sprintf("missing %d", off)
		}
		for _, b := range []byte(fmt.Sprintf("%d/%d/%v/%s;", e.Offset, e.Epoch, e.LeaderChange, e.Data)) {
			h = (h ^ uint64(b)) * 1099511628211
		}
	}
	return fmt.Sprintf("d%x", h)
}

func (s *sim) runTraced(steps int, b *strings.Builder) string {
	s.trace = b
	return s.run(steps)
}

func (s *sim) propose(id int32) {
	if n := s.c.nodes[id]; n != nil && n.Role() == raft.Leader {
		s.proposals++
		if _, err := s.c.propose(id, fmt.Sprintf("v%d", s.proposals)); err != nil {
			s.c.fail("propose on leader %d: %v", id, err)
		}
	}
}

// liveness heals everything, then runs rounds of 50ms: every node ticks,
// every queued message is delivered, every node flushes. Within 20s of
// simulated time a leader must commit a proposal of its own epoch.
func (s *sim) liveness() string {
	c := s.c
	if s.trace != nil {
		c.out = s.trace
	}
	clear(c.cut)
	for _, id := range c.ids {
		if c.nodes[id] == nil {
			c.start(id)
		}
	}
	var leader int32 = raft.NoID
	var epoch int32
	var off int64 = -1
	for round := range 400 {
		c.now = c.now.Add(50 * time.Millisecond)
		for _, id := range c.ids {
			c.tick(id, c.now)
		}
		batch := c.queue
		c.queue = nil
		for _, e := range batch {
			c.deliver(e)
		}
		for _, id := range c.ids {
			c.flush(id)
		}
		if msg := s.observe(); msg != "" {
			return msg
		}
		ls := c.leaders()
		if len(ls) == 0 {
			continue
		}
		n := c.nodes[ls[0]]
		if ls[0] != leader || n.Epoch() != epoch {
			leader, epoch = ls[0], n.Epoch()
			s.proposals++
			var err error
			if off, err = c.propose(leader, fmt.Sprintf("live%d", s.proposals)); err != nil {
				return fmt.Sprintf("propose on leader %d: %v", leader, err)
			}
			continue
		}
		if n.HighWatermark() > off && s.observersReached(off) {
			_ = round
			return ""
		}
	}
	return fmt.Sprintf("liveness: no proposal committed within 20s after the faults stopped (leader %d epoch %d offset %d)", leader, epoch, off)
}

// observersReached reports whether every observer's high watermark is
// past off.
func (s *sim) observersReached(off int64) bool {
	for _, id := range s.c.ids {
		if id > 100 && s.c.nodes[id].HighWatermark() <= off {
			return false
		}
	}
	return true
}

func (s *sim) observe() string {
	c := s.c
	if c.failure != "" {
		return c.failure
	}
	for _, id := range c.ids {
		n := c.nodes[id]
		if n == nil {
			continue
		}
		if n.Role() == raft.Leader {
			if prev, ok := s.leaderOf[n.Epoch()]; ok && prev != id {
				return fmt.Sprintf("one leader per epoch: nodes %d and %d both led epoch %d", prev, id, n.Epoch())
			}
			s.leaderOf[n.Epoch()] = id
		}
		hw := n.HighWatermark()
		s.maxHW = max(s.maxHW, hw)
		from := s.verified[id]
		for _, e := range n.Entries(from, hw) {
			want, ok := s.committed[e.Offset]
			if !ok {
				s.committed[e.Offset] = e
				continue
			}
			if !sameEntries([]raft.Entry{e}, []raft.Entry{want}) {
				return fmt.Sprintf("committed entries stay: node %d holds %v below its high watermark %d, committed was %v", id, e, hw, want)
			}
		}
		s.verified[id] = max(from, hw)
	}
	return ""
}
