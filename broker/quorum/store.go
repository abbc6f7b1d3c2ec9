package quorum

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	klog "github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/env"
)

// StateFile is the quorum-state file's name on the voter's disk.
const StateFile = "quorum-state"

// stateFile is Kafka's FileQuorumStateStore JSON (data_version 0).
type stateFile struct {
	ClusterID     string       `json:"clusterId"`
	LeaderID      int32        `json:"leaderId"`
	LeaderEpoch   int32        `json:"leaderEpoch"`
	VotedID       int32        `json:"votedId"`
	AppliedOffset int64        `json:"appliedOffset"`
	CurrentVoters []stateVoter `json:"currentVoters"`
	DataVersion   int16        `json:"data_version"`
}

type stateVoter struct {
	VoterID int32 `json:"voterId"`
}

// readState reads the quorum-state file; a missing file is epoch 0, no
// vote, no leader. Missing fields in a present file take those values too.
func readState(d env.Disk) (raft.QuorumState, error) {
	st := raft.QuorumState{Epoch: 0, VotedID: raft.NoID, LeaderID: raft.NoID}
	data, err := d.ReadFile(StateFile)
	if errors.Is(err, env.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	f := stateFile{LeaderID: raft.NoID, VotedID: raft.NoID}
	if err := json.Unmarshal(data, &f); err != nil {
		return st, fmt.Errorf("%s: %w", StateFile, err)
	}
	return raft.QuorumState{Epoch: f.LeaderEpoch, VotedID: f.VotedID, LeaderID: f.LeaderID}, nil
}

// writeState replaces the quorum-state file durably (written to a
// temporary file, synced, renamed over it).
func writeState(d env.Disk, st raft.PersistQuorumState, voters []int32) error {
	f := stateFile{LeaderID: st.LeaderID, LeaderEpoch: st.Epoch, VotedID: st.VotedID}
	for _, v := range voters {
		f.CurrentVoters = append(f.CurrentVoters, stateVoter{VoterID: v})
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return env.WriteFileAtomic(d, StateFile, data)
}

// openLog opens the metadata log, flushes what a crash left in the page
// cache (so all of it is durable before the core counts it flushed), and
// reads its entries. Their epochs must not drop below startEpoch (the
// latest snapshot's) or the one before; where one does, openLog cuts the
// log and returns the good part with an *EpochCorruptionError.
func openLog(d env.Disk, startEpoch int32) (*klog.Log, []raft.Entry, error) {
	l, err := klog.Open(d, klog.Config{Topic: Topic, Partition: 0, SegmentBytesMax: 1 << 20})
	if err != nil {
		return nil, nil, err
	}
	if err := l.Flush(); err != nil {
		return nil, nil, err
	}
	start := l.LogStartOffset()
	raw, err := l.Read(start, math.MaxInt32, l.LogEndOffset())
	if err != nil {
		return nil, nil, err
	}
	es, err := decodeEntries(raw)
	if err != nil {
		return nil, nil, err
	}
	for i, en := range es {
		if en.Offset != start+int64(i) {
			return nil, nil, fmt.Errorf("metadata log: entry at position %d from %d has offset %d", i, start, en.Offset)
		}
	}
	if start+int64(len(es)) != l.LogEndOffset() {
		return nil, nil, fmt.Errorf("metadata log: read %d entries from %d of a log ending at %d", len(es), start, l.LogEndOffset())
	}
	if i := firstEpochDrop(es, startEpoch); i < len(es) {
		// A batch's leader epoch is outside Kafka's CRC (and here the
		// header sidecar that covers it was unusable too), so an epoch
		// below the one before it is a flipped bit in one of the two
		// batches: cut the log from the earlier, as recovery cuts a batch
		// failing its checksum; the leader sends the rest again. (Kafka's
		// LeaderEpochFileCache.assign drops non-monotonic epochs on load;
		// the batches keep theirs.) A flip upward in the last batch looks
		// like a newer epoch and cannot be told apart, as in Kafka.
		prev, at := startEpoch, es[i].Offset
		if i > 0 {
			prev, at = es[i-1].Epoch, es[i-1].Offset
		}
		if _, err := l.TruncateTo(at); err != nil {
			return nil, nil, err
		}
		cut := &EpochCorruptionError{Offset: es[i].Offset, Epoch: es[i].Epoch, Prev: prev, CutAt: l.LogEndOffset()}
		return l, es[:l.LogEndOffset()-start], cut
	}
	return l, es, nil
}

// EpochCorruptionError says where openLog cut a metadata log whose
// leader epochs could not be right; the log it returns is good.
type EpochCorruptionError struct {
	Offset      int64 // the entry whose epoch dropped
	Epoch, Prev int32
	CutAt       int64 // the log end after the cut
}

func (e *EpochCorruptionError) Error() string {
	return fmt.Sprintf("metadata log: entry %d has leader epoch %d after %d: cut at %d", e.Offset, e.Epoch, e.Prev, e.CutAt)
}

// firstEpochDrop is the position of the first entry whose epoch is below
// the one before it (startEpoch, the snapshot's, before the first), or
// len(es).
func firstEpochDrop(es []raft.Entry, startEpoch int32) int {
	prev := startEpoch
	for i, en := range es {
		if en.Epoch < prev {
			return i
		}
		prev = en.Epoch
	}
	return len(es)
}
