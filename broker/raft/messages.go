package raft

import (
	"fmt"
	"strings"
	"time"
)

// ErrorCode is a Kafka protocol error code, with Kafka's numbers.
type ErrorCode int16

const (
	None                ErrorCode = 0
	NotLeaderOrFollower ErrorCode = 6  // NOT_LEADER_OR_FOLLOWER
	FencedLeaderEpoch   ErrorCode = 74 // FENCED_LEADER_EPOCH
	UnknownLeaderEpoch  ErrorCode = 75 // UNKNOWN_LEADER_EPOCH
)

func (e ErrorCode) String() string {
	switch e {
	case None:
		return "NONE"
	case NotLeaderOrFollower:
		return "NOT_LEADER_OR_FOLLOWER"
	case FencedLeaderEpoch:
		return "FENCED_LEADER_EPOCH"
	case UnknownLeaderEpoch:
		return "UNKNOWN_LEADER_EPOCH"
	}
	return fmt.Sprintf("ERROR_%d", int16(e))
}

// Message is one of the quorum RPCs below. Field names follow Kafka's
// JSON schemas (VoteRequest.json, BeginQuorumEpochRequest.json,
// EndQuorumEpochRequest.json, FetchRequest.json and their responses), one
// partition (the __cluster_metadata topic's only one) flattened into the
// message; a runtime maps them onto kmsg. Requests and responses carry no
// correlation: the core tolerates duplicated, reordered and stale ones.
type Message interface {
	isMessage()
	String() string
}

// VoteRequest asks for a vote (KIP-595) or, with PreVote, asks whether the
// receiver would grant one in the next epoch (KIP-996). A pre-vote carries
// the prospective's current, unbumped epoch and changes nothing on the
// receiver.
type VoteRequest struct {
	PreVote         bool
	CandidateEpoch  int32
	CandidateID     int32
	LastOffsetEpoch int32 // epoch of the candidate's last entry (0 if none)
	LastOffset      int64 // the candidate's log end offset
}

// VoteResponse answers a VoteRequest with the responder's epoch and
// known leader (-1 if none).
type VoteResponse struct {
	ErrorCode   ErrorCode
	LeaderEpoch int32
	LeaderID    int32
	VoteGranted bool
}

// BeginQuorumEpochRequest is the new leader announcing itself.
type BeginQuorumEpochRequest struct {
	LeaderEpoch int32
	LeaderID    int32
}

// BeginQuorumEpochResponse acknowledges it.
type BeginQuorumEpochResponse struct {
	ErrorCode   ErrorCode
	LeaderEpoch int32
	LeaderID    int32
}

// EndQuorumEpochRequest is a leader resigning; PreferredSuccessors lists
// the other voters, most caught up first, so the first may stand at once.
type EndQuorumEpochRequest struct {
	LeaderEpoch         int32
	LeaderID            int32
	PreferredSuccessors []int32
}

// EndQuorumEpochResponse acknowledges it.
type EndQuorumEpochResponse struct {
	ErrorCode   ErrorCode
	LeaderEpoch int32
	LeaderID    int32
}

// FetchRequest is a follower pulling from FetchOffset (its flushed log
// end), whose previous entry has LastFetchedEpoch.
type FetchRequest struct {
	ReplicaID          int32
	FetchOffset        int64
	LastFetchedEpoch   int32
	CurrentLeaderEpoch int32
	// MaxWait is how long the leader may hold a fetch it has nothing for
	// (MaxWaitMs; 0 answers at once).
	MaxWait time.Duration
}

// EpochEndOffset is FetchResponse's DivergingEpoch: the largest epoch at
// or below the fetcher's LastFetchedEpoch in the leader's log, and the
// offset where it ends there.
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// FetchResponse answers a FetchRequest. LeaderEpoch and LeaderID are
// Kafka's CurrentLeader; Records are the entries from FetchOffset, empty
// when DivergingEpoch is set or on error.
type FetchResponse struct {
	ErrorCode      ErrorCode
	LeaderEpoch    int32
	LeaderID       int32
	HighWatermark  int64
	DivergingEpoch *EpochEndOffset
	// SnapshotID is the leader's latest snapshot, set when the fetch is
	// from what the leader's log no longer holds (no records then).
	SnapshotID *SnapshotID
	Records    []Entry

	// FetchOffset and LastFetchedEpoch echo the request answered. They
	// are not wire fields: Kafka matches a response to its request by
	// correlation id, and a runtime fills them from the request it
	// matched. A follower acts only on the answer to a fetch from where it
	// stands now, so a late or duplicated answer cannot truncate entries
	// it has since fetched.
	FetchOffset      int64
	LastFetchedEpoch int32
}

func (VoteRequest) isMessage()              {}
func (VoteResponse) isMessage()             {}
func (BeginQuorumEpochRequest) isMessage()  {}
func (BeginQuorumEpochResponse) isMessage() {}
func (EndQuorumEpochRequest) isMessage()    {}
func (EndQuorumEpochResponse) isMessage()   {}
func (FetchRequest) isMessage()             {}
func (FetchResponse) isMessage()            {}

func (m VoteRequest) String() string {
	kind := "Vote"
	if m.PreVote {
		kind = "PreVote"
	}
	return fmt.Sprintf("%s{epoch=%d candidate=%d last=(%d,%d)}", kind, m.CandidateEpoch, m.CandidateID, m.LastOffsetEpoch, m.LastOffset)
}

func (m VoteResponse) String() string {
	return fmt.Sprintf("VoteResponse{%sepoch=%d leader=%d granted=%v}", errPrefix(m.ErrorCode), m.LeaderEpoch, m.LeaderID, m.VoteGranted)
}

func (m BeginQuorumEpochRequest) String() string {
	return fmt.Sprintf("BeginQuorumEpoch{epoch=%d leader=%d}", m.LeaderEpoch, m.LeaderID)
}

func (m BeginQuorumEpochResponse) String() string {
	return fmt.Sprintf("BeginQuorumEpochResponse{%sepoch=%d leader=%d}", errPrefix(m.ErrorCode), m.LeaderEpoch, m.LeaderID)
}

func (m EndQuorumEpochRequest) String() string {
	return fmt.Sprintf("EndQuorumEpoch{epoch=%d leader=%d successors=%v}", m.LeaderEpoch, m.LeaderID, m.PreferredSuccessors)
}

func (m EndQuorumEpochResponse) String() string {
	return fmt.Sprintf("EndQuorumEpochResponse{%sepoch=%d leader=%d}", errPrefix(m.ErrorCode), m.LeaderEpoch, m.LeaderID)
}

func (m FetchRequest) String() string {
	return fmt.Sprintf("Fetch{replica=%d offset=%d last-epoch=%d current-epoch=%d wait=%v}", m.ReplicaID, m.FetchOffset, m.LastFetchedEpoch, m.CurrentLeaderEpoch, m.MaxWait)
}

func (m FetchResponse) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FetchResponse{%sepoch=%d leader=%d hw=%d", errPrefix(m.ErrorCode), m.LeaderEpoch, m.LeaderID, m.HighWatermark)
	if m.DivergingEpoch != nil {
		fmt.Fprintf(&b, " diverging=(epoch=%d end=%d)", m.DivergingEpoch.Epoch, m.DivergingEpoch.EndOffset)
	}
	if m.SnapshotID != nil {
		fmt.Fprintf(&b, " snapshot=%v", *m.SnapshotID)
	}
	if len(m.Records) > 0 {
		fmt.Fprintf(&b, " records=%s", formatEntries(m.Records))
	}
	b.WriteString("}")
	return b.String()
}

func errPrefix(e ErrorCode) string {
	if e == None {
		return ""
	}
	return e.String() + " "
}

func formatEntries(es []Entry) string {
	var b strings.Builder
	b.WriteString("[")
	for i, e := range es {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(e.String())
	}
	b.WriteString("]")
	return b.String()
}
