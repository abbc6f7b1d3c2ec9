package metalog

import (
	"encoding/json"
	"fmt"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/quorum"
	"github.com/kafkasim/kafkasim/broker/raft"
)

// Loader applies the committed metadata log to a State.
type Loader struct {
	St    *metadata.State
	Chain quorum.Chain
	// Applied is the offset of the last entry applied (or the last one a
	// loaded snapshot covers), -1 before any.
	Applied int64

	maxBytes      int64 // metadata.log.max.record.bytes.between.snapshots; 0 never
	sinceSnapshot int64 // bytes applied since the last snapshot taken or loaded
}

// New is a loader before the log's first entry, snapshotting every
// maxBytes of applied entries (0: never).
func New(maxBytes int64) *Loader {
	return &Loader{St: metadata.NewState(), Applied: -1, maxBytes: maxBytes}
}

// Apply applies one committed entry; leader-change entries carry the
// epoch of the active controller from there on.
func (l *Loader) Apply(en raft.Entry) error {
	if en.Offset != l.Applied+1 {
		return fmt.Errorf("metadata entry %d applied after %d", en.Offset, l.Applied)
	}
	l.Chain.Extend(en)
	l.Applied = en.Offset
	l.sinceSnapshot += int64(len(en.Data))
	if en.LeaderChange {
		l.St.Epoch = en.Epoch
		return nil
	}
	rs, err := metadata.DecodeRecords(en.Data)
	if err != nil {
		return fmt.Errorf("metadata entry %d: %w", en.Offset, err)
	}
	for _, r := range rs {
		l.St.Apply(r)
	}
	return nil
}

// snapshotData is a snapshot's bytes.
type snapshotData struct {
	Chain   uint64            `json:"chain"`
	Records []metadata.Record `json:"records"`
}

// Load replaces the state with snapshot s's.
func (l *Loader) Load(s raft.Snapshot) error {
	var d snapshotData
	if err := json.Unmarshal(s.Data, &d); err != nil {
		return fmt.Errorf("metadata snapshot %v does not decode: %w", s.ID, err)
	}
	st := metadata.NewState()
	for _, r := range d.Records {
		st.Apply(r)
	}
	st.Epoch = s.ID.Epoch
	l.St, l.Applied, l.sinceSnapshot = st, s.ID.EndOffset-1, 0
	l.Chain.Reset(s.ID.EndOffset, d.Chain)
	return nil
}

// Encode is the snapshot of what the loader has applied.
func (l *Loader) Encode() []byte {
	data, err := json.Marshal(snapshotData{Chain: l.Chain.Last(), Records: l.St.Records()})
	if err != nil {
		panic(fmt.Sprintf("metalog: snapshot does not encode: %v", err))
	}
	return data
}

// MaybeSnapshot has the node keep a snapshot of everything applied once
// enough has been applied since the last one.
func (l *Loader) MaybeSnapshot(v *quorum.Voter) error {
	if l.maxBytes <= 0 || l.sinceSnapshot < l.maxBytes || l.Applied < 0 {
		return nil
	}
	l.sinceSnapshot = 0
	return v.Snapshot(l.Applied+1, l.Encode())
}
