package raft

import (
	"errors"

	"github.com/kafkasim/kafkasim/internal/invariant"
)

// Check names the first invariant the node breaks, or is nil; the runtime
// (and every test) asks after every step. A node that passes records its
// high watermark as the floor for the rest of its life.
//
//   - hw-end: the high watermark is at most the log end, the flushed end
//     at most the log end.
//   - hw-monotonic: the high watermark never moves back.
//   - role: a leader leads its own epoch, voted for itself and names
//     itself; a candidate voted for itself and knows no leader; a follower
//     names another voter; a resigned node names itself.
//   - persisted: the quorum state in memory is the one last persisted.
//   - log-epochs: offsets are positions, epochs never decrease along the
//     log and none is above the current epoch.
//   - snapshot: the latest snapshot covers only committed entries, and the
//     log starts where it ends (or at 0 before any is taken).
//   - in-step: no rule broken inside a step (a truncation below the high
//     watermark or the log start).
func (n *Node) Check() error {
	fail := func(rule, format string, args ...any) error {
		return errors.New(invariant.Message("raft", "node %d: %s: "+format, append([]any{n.cfg.ID, rule}, args...)...))
	}
	end := n.LogEnd()
	if n.hw > end {
		return fail("hw-end", "high watermark %d past log end %d", n.hw, end)
	}
	if n.flushed > end || n.flushed < n.start {
		return fail("hw-end", "flushed end %d outside the log [%d, %d)", n.flushed, n.start, end)
	}
	if id := n.latest.ID; id.EndOffset > n.hw || id.EndOffset < n.start || (n.start > 0 && n.start != id.EndOffset) {
		return fail("snapshot", "snapshot %v outside the committed log: start %d, high watermark %d", id, n.start, n.hw)
	}
	if n.hw < n.hwFloor {
		return fail("hw-monotonic", "high watermark moved back from %d to %d", n.hwFloor, n.hw)
	}
	if n.cfg.Observer && (n.role != Unattached && n.role != Follower || n.votedFor != NoID) {
		return fail("observer", "an observer is %s, voted %d", n.role, n.votedFor)
	}
	switch n.role {
	case Leader:
		if n.leaderEpoch != n.epoch || n.votedFor != n.cfg.ID || n.leader != n.cfg.ID {
			return fail("role", "leader of epoch %d in epoch %d voted %d names leader %d", n.leaderEpoch, n.epoch, n.votedFor, n.leader)
		}
	case Candidate:
		if n.votedFor != n.cfg.ID || n.leader != NoID {
			return fail("role", "candidate in epoch %d voted %d names leader %d", n.epoch, n.votedFor, n.leader)
		}
	case Follower:
		if n.leader == NoID || n.leader == n.cfg.ID || !n.isVoter(n.leader) {
			return fail("role", "follower names leader %d", n.leader)
		}
	case Resigned:
		if n.leader != n.cfg.ID || n.votedFor != n.cfg.ID {
			return fail("role", "resigned voted %d names leader %d", n.votedFor, n.leader)
		}
	case Unattached:
		if n.leader != NoID {
			return fail("role", "unattached names leader %d", n.leader)
		}
	}
	if st := n.QuorumState(); st != n.stored {
		return fail("persisted", "quorum state %+v not persisted (last %+v)", st, n.stored)
	}
	// Entries only append or truncate, so the prefix seen in order before
	// stays in order; the last entry's epoch is the largest.
	from := max(n.epochsChecked, n.start)
	prev := n.lastEpoch(from)
	for i := from; i < end; i++ {
		e := n.log[i-n.start]
		if e.Offset != i {
			return fail("log-epochs", "entry at position %d has offset %d", i, e.Offset)
		}
		if e.Epoch < prev {
			return fail("log-epochs", "entry %d has epoch %d after epoch %d", i, e.Epoch, prev)
		}
		prev = e.Epoch
	}
	if last := n.lastEpoch(end); last > n.epoch {
		return fail("log-epochs", "entry %d has epoch %d above the current epoch %d", end-1, last, n.epoch)
	}
	n.epochsChecked = end
	if n.violation != "" {
		return fail("in-step", "%s", n.violation)
	}
	n.hwFloor = n.hw
	return nil
}
