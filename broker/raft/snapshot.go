package raft

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/env"
)

// Snapshots (KIP-630). A node's state machine may take a snapshot of what
// the committed entries below some offset made (Snapshot): the node keeps
// it as its latest, the runtime writes it durably (WriteSnapshot), and the
// log then starts where the snapshot ends — the entries it covers are
// deleted (DeleteLogPrefix), as KafkaMetadataLog.deleteBeforeSnapshot does
// once retention allows (here at once). A fetch from below the leader's
// log start, or whose last fetched epoch the log start has passed
// (KafkaMetadataLog.validateOffsetAndEpoch), is answered with the leader's
// latest snapshot id instead of records; the follower then fetches that
// snapshot in chunks (FetchSnapshot, from position 0 up to its size),
// installs it — its log truncated fully to start at the snapshot's end
// (UnifiedLog.truncateFullyAndStartAt), InstallSnapshot for the runtime,
// which hands it to the state machine — and fetches on from there. A
// restarted node starts from its latest snapshot and the entries after it.

// SnapshotID names a snapshot: the state after every entry below EndOffset;
// Epoch is the epoch of the entry at EndOffset-1 (Kafka's OffsetAndEpoch).
type SnapshotID struct {
	EndOffset int64
	Epoch     int32
}

func (id SnapshotID) String() string { return fmt.Sprintf("%d-%d", id.EndOffset, id.Epoch) }

// Snapshot is a snapshot and its bytes (the state machine's, opaque here).
// The zero Snapshot is none.
type Snapshot struct {
	ID   SnapshotID
	Data []byte
}

// snapshotFetch is a follower's snapshot being fetched (FollowerState's
// fetchingSnapshot): the bytes so far.
type snapshotFetch struct {
	id   SnapshotID
	data []byte
}

// FetchSnapshotRequest asks the leader for the bytes of snapshot SnapshotID
// from Position (FetchSnapshotRequest.json, one partition).
type FetchSnapshotRequest struct {
	ReplicaID          int32
	CurrentLeaderEpoch int32
	SnapshotID         SnapshotID
	Position           int64
	MaxBytes           int
}

// FetchSnapshotResponse carries Bytes of the snapshot from Position, and
// the snapshot's whole Size.
type FetchSnapshotResponse struct {
	ErrorCode   ErrorCode
	LeaderEpoch int32
	LeaderID    int32
	SnapshotID  SnapshotID
	Size        int64
	Position    int64
	Bytes       []byte
}

func (FetchSnapshotRequest) isMessage()  {}
func (FetchSnapshotResponse) isMessage() {}

func (m FetchSnapshotRequest) String() string {
	return fmt.Sprintf("FetchSnapshot{replica=%d snapshot=%v position=%d current-epoch=%d}", m.ReplicaID, m.SnapshotID, m.Position, m.CurrentLeaderEpoch)
}

func (m FetchSnapshotResponse) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FetchSnapshotResponse{%sepoch=%d leader=%d snapshot=%v", errPrefix(m.ErrorCode), m.LeaderEpoch, m.LeaderID, m.SnapshotID)
	if m.ErrorCode == None {
		fmt.Fprintf(&b, " position=%d size=%d bytes=%q", m.Position, m.Size, m.Bytes)
	}
	b.WriteString("}")
	return b.String()
}

// Effects of snapshots, in the order they must happen.

// WriteSnapshot: the node took snapshot S; write it durably before any
// effect after it (DeleteLogPrefix relies on it).
type WriteSnapshot struct{ S Snapshot }

// DeleteLogPrefix: entries below To are in the snapshot; the log's start
// moves there and what lies below may be deleted.
type DeleteLogPrefix struct{ To int64 }

// InstallSnapshot: the follower fetched the leader's snapshot S. Write it
// durably, truncate the log fully to start at its end, and hand it to the
// state machine, which resets to it; entries after it follow as usual.
type InstallSnapshot struct{ S Snapshot }

func (WriteSnapshot) isEffect()   {}
func (DeleteLogPrefix) isEffect() {}
func (InstallSnapshot) isEffect() {}

func (e WriteSnapshot) String() string   { return fmt.Sprintf("write-snapshot %v %q", e.S.ID, e.S.Data) }
func (e DeleteLogPrefix) String() string { return fmt.Sprintf("delete-log-prefix to=%d", e.To) }
func (e InstallSnapshot) String() string {
	return fmt.Sprintf("install-snapshot %v %q", e.S.ID, e.S.Data)
}

// Error codes of FetchSnapshot.
const (
	SnapshotNotFound   ErrorCode = 98 // SNAPSHOT_NOT_FOUND
	PositionOutOfRange ErrorCode = 99 // POSITION_OUT_OF_RANGE
)

// restore sets the log and snapshot a node restarts with: the log's
// entries start at its first one's offset, at most the snapshot's end (a
// crash between WriteSnapshot and DeleteLogPrefix leaves entries the
// snapshot covers: they are dropped again now); with no snapshot at 0.
func (n *Node) restore(snap Snapshot, log []Entry) {
	n.latest = Snapshot{ID: snap.ID, Data: slices.Clone(snap.Data)}
	n.start, n.startEpoch = 0, 0
	if len(log) > 0 {
		n.start = log[0].Offset
	} else {
		n.start = snap.ID.EndOffset
	}
	if n.start > snap.ID.EndOffset || (n.start > 0 && snap.ID.EndOffset == 0) {
		panic(fmt.Sprintf("raft: node %d: log starts at %d past its snapshot %v", n.cfg.ID, n.start, snap.ID))
	}
	n.log = slices.Clone(log)
	n.flushed = n.LogEnd()
	if end := snap.ID.EndOffset; end > 0 {
		if end > n.LogEnd() {
			panic(fmt.Sprintf("raft: node %d: snapshot %v past its log end %d", n.cfg.ID, snap.ID, n.LogEnd()))
		}
		if end > n.start {
			if got := n.lastEpoch(end); got != snap.ID.Epoch {
				panic(fmt.Sprintf("raft: node %d: snapshot %v but the entry at %d has epoch %d", n.cfg.ID, snap.ID, end-1, got))
			}
			n.dropPrefix(end, snap.ID.Epoch)
		}
		n.startEpoch = snap.ID.Epoch
		n.hw = end // what a snapshot holds was committed
	}
}

// Snapshot records that the state machine took a snapshot of the
// committed entries below end, its state data: the node's latest, written
// and then the log's prefix dropped. end must be committed (at most the
// high watermark), in the log, and past the latest snapshot.
func (n *Node) Snapshot(end int64, data []byte) error {
	switch {
	case end > n.hw:
		return fmt.Errorf("raft: snapshot at %d past the high watermark %d", end, n.hw)
	case end <= n.latest.ID.EndOffset || end <= n.start:
		return fmt.Errorf("raft: snapshot at %d not past the latest %v", end, n.latest.ID)
	case end > n.LogEnd():
		return fmt.Errorf("raft: snapshot at %d past the log end %d", end, n.LogEnd())
	}
	epoch := n.lastEpoch(end)
	n.latest = Snapshot{ID: SnapshotID{EndOffset: end, Epoch: epoch}, Data: slices.Clone(data)}
	n.emit(WriteSnapshot{S: n.latest})
	n.dropPrefix(end, epoch)
	return nil
}

// LatestSnapshot is the node's latest snapshot (its bytes shared: read only).
func (n *Node) LatestSnapshot() Snapshot { return n.latest }

// dropPrefix deletes the entries below end (a snapshot holds them).
func (n *Node) dropPrefix(end int64, epoch int32) {
	n.log = slices.Clone(n.log[end-n.start:])
	n.start, n.startEpoch = end, epoch
	n.flushed = max(n.flushed, end)
	n.emit(DeleteLogPrefix{To: end})
}

// needsSnapshot is the snapshot half of KafkaMetadataLog.validateOffsetAndEpoch:
// the leader has a snapshot at its log start and the fetch is from below
// it, or from it with another epoch, or with an epoch older than it.
func (n *Node) needsSnapshot(offset int64, lastEpoch int32) bool {
	if n.start == 0 {
		return false
	}
	return offset < n.start || (offset == n.start && lastEpoch != n.startEpoch) || lastEpoch < n.startEpoch
}

// fetchSnapshot starts fetching the leader's snapshot id.
func (n *Node) fetchSnapshot(id SnapshotID, now env.Time) {
	n.snapFetch = &snapshotFetch{id: id}
	n.sendFetchSnapshot(now)
}

func (n *Node) sendFetchSnapshot(now env.Time) {
	f := n.snapFetch
	n.fetchInFlight, n.fetchSentAt = true, now
	n.send(n.leader, FetchSnapshotRequest{ReplicaID: n.cfg.ID, CurrentLeaderEpoch: n.epoch, SnapshotID: f.id,
		Position: int64(len(f.data)), MaxBytes: n.cfg.FetchSnapshotMaxBytes})
}

// onFetchSnapshot is the leader's handleFetchSnapshotRequest: only its
// latest snapshot is served, in chunks of at most MaxBytes.
func (n *Node) onFetchSnapshot(from int32, m FetchSnapshotRequest, now env.Time) {
	if m.ReplicaID != from {
		return
	}
	resp := FetchSnapshotResponse{LeaderEpoch: n.epoch, LeaderID: n.leader, SnapshotID: m.SnapshotID, Position: m.Position}
	size := int64(len(n.latest.Data))
	switch {
	case m.CurrentLeaderEpoch < n.epoch:
		resp.ErrorCode = FencedLeaderEpoch
	case m.CurrentLeaderEpoch > n.epoch:
		resp.ErrorCode = UnknownLeaderEpoch
	case n.role != Leader:
		resp.ErrorCode = NotLeaderOrFollower
	case m.SnapshotID != n.latest.ID || n.latest.ID.EndOffset == 0:
		resp.ErrorCode = SnapshotNotFound
	case m.Position < 0 || m.Position > size || (m.Position == size && size > 0):
		resp.ErrorCode = PositionOutOfRange
	default:
		n.remote(from).lastFetch = now // a fetching voter counts for check quorum
		end := size
		if m.MaxBytes > 0 {
			end = min(size, m.Position+int64(m.MaxBytes))
		}
		resp.Size, resp.Bytes = size, slices.Clone(n.latest.Data[m.Position:end])
	}
	n.send(from, resp)
}

// onFetchSnapshotResponse takes a chunk; the last one installs the snapshot.
func (n *Node) onFetchSnapshotResponse(from int32, m FetchSnapshotResponse, now env.Time) {
	if n.learn(m.LeaderEpoch, m.LeaderID, now) {
		return
	}
	f := n.snapFetch
	if n.role != Follower || from != n.leader || m.LeaderEpoch != n.epoch || f == nil || m.SnapshotID != f.id {
		return
	}
	if m.ErrorCode != None {
		// Gone (a newer snapshot replaced it) or out of range: fetch
		// again, which names the leader's snapshot now.
		n.snapFetch, n.fetchInFlight = nil, false
		n.retryAfter = now.Add(n.cfg.RetryBackoff)
		return
	}
	if m.Position != int64(len(f.data)) {
		return // an answer to an earlier request
	}
	n.fetchInFlight = false
	n.hasFetched = true
	n.fetchDeadline = now.Add(n.cfg.FetchTimeout)
	f.data = append(f.data, m.Bytes...)
	if int64(len(f.data)) < m.Size {
		n.sendFetchSnapshot(now)
		return
	}
	n.install(Snapshot{ID: f.id, Data: f.data}, now)
}

// install makes a fetched snapshot the node's latest and starts the log
// afresh at its end (truncateFullyAndStartAt).
func (n *Node) install(s Snapshot, now env.Time) {
	n.snapFetch = nil
	n.latest = s
	n.emit(InstallSnapshot{S: s})
	n.log = nil
	n.start, n.startEpoch = s.ID.EndOffset, s.ID.Epoch
	n.flushed = n.start
	n.hw = max(n.hw, n.start)
	n.maybeFetch(now)
}
