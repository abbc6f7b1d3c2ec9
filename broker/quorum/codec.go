package quorum

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic is the metadata log's topic; it has the one partition 0.
const Topic = "__cluster_metadata"

// MetadataTopicID is Kafka's Uuid.METADATA_TOPIC_ID (0, 1), the topic id
// Fetch v13+ names the metadata topic by.
var MetadataTopicID = [16]byte{15: 1}

// API keys of the quorum RPCs.
const (
	keyFetch            int16 = 1
	keyApiVersions      int16 = 18
	keyVote             int16 = 52
	keyBeginQuorumEpoch int16 = 53
	keyEndQuorumEpoch   int16 = 54
	keyDescribeQuorum   int16 = 55
	keyFetchSnapshot    int16 = 59
)

// Ranges are the quorum APIs and versions a voter serves and calls, those
// of Kafka 4.x's KRaft controllers where kmsg encodes them: Vote 0-2
// (v2: PreVote, KIP-996), BeginQuorumEpoch 0-1, EndQuorumEpoch 0-1 and
// Fetch 12-17 (v12 brings LastFetchedEpoch and DivergingEpoch; v13+ name
// the topic by id, v15+ the replica by ReplicaState; a Fetch answer may
// name the leader's snapshot), FetchSnapshot 0-1 (KIP-630) and
// DescribeQuorum 0-2.
var Ranges = []wire.Range{
	{Key: keyFetchSnapshot, Min: 0, Max: 1},
	{Key: keyFetch, Min: 12, Max: 17},
	{Key: keyVote, Min: 0, Max: 2},
	{Key: keyBeginQuorumEpoch, Min: 0, Max: 1},
	{Key: keyEndQuorumEpoch, Min: 0, Max: 1},
	{Key: keyDescribeQuorum, Min: 0, Max: 2},
}

// Versions are Ranges plus ApiVersions: what a process whose server only
// serves the quorum passes to rpc.NewServer.
var Versions = wire.NewVersions(append(slices.Clone(Ranges), wire.Range{Key: keyApiVersions, Min: 0, Max: 3})...)

// Kafka error codes used outside the core's.
const (
	errInvalidRequest int16 = 42 // INVALID_REQUEST
	errUnknownTopic   int16 = 3  // UNKNOWN_TOPIC_OR_PARTITION
)

// Entries as record batches.
//
// Every entry is one batch of one record, base offset the entry's offset,
// PartitionLeaderEpoch the entry's epoch, timestamps 0 (so every replica
// encodes an entry to the same bytes). A data entry's record has a null
// key and the data as value. The leader-change entry's record has the
// control key of KRaft's LEADER_CHANGE (version 0, type 2) and a
// LeaderChangeMessage value — but its batch does not carry the control
// attribute: broker/log accepts only transaction markers as control
// batches. LeaderID in that message is -1: raft.Entry does not carry the
// epoch's leader.

var leaderChangeKey = []byte{0, 0, 0, 2}

func encodeEntry(en raft.Entry, voters []int32) record.Batch {
	h := record.NewHeader()
	h.BaseOffset = en.Offset
	h.PartitionLeaderEpoch = en.Epoch
	var rec record.Record
	if en.LeaderChange {
		m := kmsg.NewLeaderChangeMessage()
		m.LeaderID = -1
		for _, v := range voters {
			lv := kmsg.NewLeaderChangeMessageVoter()
			lv.VoterID = v
			m.Voters = append(m.Voters, lv)
		}
		rec.Key = leaderChangeKey
		rec.Value = m.AppendTo(nil)
	} else {
		rec.Value = en.Data
	}
	b, err := record.Encode(h, []record.Record{rec})
	if err != nil {
		panic("quorum: encode entry: " + err.Error()) // uncompressed: cannot fail
	}
	return b
}

func encodeEntries(es []raft.Entry, voters []int32) []byte {
	var out []byte
	for _, en := range es {
		out = append(out, encodeEntry(en, voters)...)
	}
	return out
}

// decodeEntries reads entries from whole batches.
func decodeEntries(raw []byte) ([]raft.Entry, error) {
	batches, err := record.Split(raw)
	if err != nil {
		return nil, err
	}
	var out []raft.Entry
	for _, b := range batches {
		if err := b.VerifyCRC(); err != nil {
			return nil, err
		}
		recs, err := b.DecodeRecords()
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			en := raft.Entry{Offset: b.BaseOffset() + int64(r.OffsetDelta), Epoch: b.PartitionLeaderEpoch()}
			if r.Key != nil {
				if !slices.Equal(r.Key, leaderChangeKey) {
					return nil, fmt.Errorf("entry %d: unknown control key %x", en.Offset, r.Key)
				}
				en.LeaderChange = true
			} else if r.Value != nil {
				en.Data = slices.Clone(r.Value)
			}
			out = append(out, en)
		}
	}
	return out, nil
}

// Requests: core → kmsg (what this voter sends) and kmsg → core (what it
// serves). Each carries the one partition __cluster_metadata/0.

func encodeRequest(m raft.Message, to int32, voters []int32) kmsg.Request {
	switch m := m.(type) {
	case raft.VoteRequest:
		req := kmsg.NewPtrVoteRequest()
		req.VoterID = to
		p := kmsg.NewVoteRequestTopicPartition()
		p.CandidateEpoch, p.CandidateID = m.CandidateEpoch, m.CandidateID
		p.LastOffsetEpoch, p.LastOffset, p.PreVote = m.LastOffsetEpoch, m.LastOffset, m.PreVote
		t := kmsg.NewVoteRequestTopic()
		t.Topic, t.Partitions = Topic, []kmsg.VoteRequestTopicPartition{p}
		req.Topics = []kmsg.VoteRequestTopic{t}
		return req
	case raft.BeginQuorumEpochRequest:
		req := kmsg.NewPtrBeginQuorumEpochRequest()
		req.VoterID = to
		p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
		p.LeaderID, p.LeaderEpoch = m.LeaderID, m.LeaderEpoch
		t := kmsg.NewBeginQuorumEpochRequestTopic()
		t.Topic, t.Partitions = Topic, []kmsg.BeginQuorumEpochRequestTopicPartition{p}
		req.Topics = []kmsg.BeginQuorumEpochRequestTopic{t}
		return req
	case raft.EndQuorumEpochRequest:
		req := kmsg.NewPtrEndQuorumEpochRequest()
		p := kmsg.NewEndQuorumEpochRequestTopicPartition()
		p.LeaderID, p.LeaderEpoch = m.LeaderID, m.LeaderEpoch
		p.PreferredSuccessors = slices.Clone(m.PreferredSuccessors)
		for _, s := range m.PreferredSuccessors {
			c := kmsg.NewEndQuorumEpochRequestTopicPartitionPreferredCandidate()
			c.CandidateID = s
			p.PreferredCandidates = append(p.PreferredCandidates, c)
		}
		t := kmsg.NewEndQuorumEpochRequestTopic()
		t.Topic, t.Partitions = Topic, []kmsg.EndQuorumEpochRequestTopicPartition{p}
		req.Topics = []kmsg.EndQuorumEpochRequestTopic{t}
		return req
	case raft.FetchRequest:
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = m.ReplicaID
		req.ReplicaState.ID, req.ReplicaState.Epoch = m.ReplicaID, -1
		req.MaxWaitMillis = int32(m.MaxWait / time.Millisecond)
		req.MinBytes = 0
		req.MaxBytes = 8 << 20
		req.SessionID, req.SessionEpoch = 0, -1 // sessionless
		p := kmsg.NewFetchRequestTopicPartition()
		p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = m.CurrentLeaderEpoch, m.FetchOffset, m.LastFetchedEpoch
		p.LogStartOffset, p.PartitionMaxBytes = -1, 8<<20
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID, t.Partitions = Topic, MetadataTopicID, []kmsg.FetchRequestTopicPartition{p}
		req.Topics = []kmsg.FetchRequestTopic{t}
		return req
	case raft.FetchSnapshotRequest:
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.ReplicaID = m.ReplicaID
		req.MaxBytes = 8 << 20
		if m.MaxBytes > 0 {
			req.MaxBytes = int32(m.MaxBytes)
		}
		p := kmsg.NewFetchSnapshotRequestTopicPartition()
		p.CurrentLeaderEpoch, p.Position = m.CurrentLeaderEpoch, m.Position
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch = m.SnapshotID.EndOffset, m.SnapshotID.Epoch
		t := kmsg.NewFetchSnapshotRequestTopic()
		t.Topic, t.Partitions = Topic, []kmsg.FetchSnapshotRequestTopicPartition{p}
		req.Topics = []kmsg.FetchSnapshotRequestTopic{t}
		return req
	}
	panic(fmt.Sprintf("quorum: %T is not a request", m))
}

// decodeRequest maps a served request onto the core's message and the
// voter it comes from (the id it names: candidate, leader or replica). ok
// is false for a request that does not address __cluster_metadata/0.
func decodeRequest(body kmsg.Request) (from int32, m raft.Message, ok bool) {
	switch req := body.(type) {
	case *kmsg.VoteRequest:
		if len(req.Topics) != 1 || req.Topics[0].Topic != Topic || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
			return 0, nil, false
		}
		p := req.Topics[0].Partitions[0]
		return p.CandidateID, raft.VoteRequest{PreVote: p.PreVote, CandidateEpoch: p.CandidateEpoch, CandidateID: p.CandidateID,
			LastOffsetEpoch: p.LastOffsetEpoch, LastOffset: p.LastOffset}, true
	case *kmsg.BeginQuorumEpochRequest:
		if len(req.Topics) != 1 || req.Topics[0].Topic != Topic || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
			return 0, nil, false
		}
		p := req.Topics[0].Partitions[0]
		return p.LeaderID, raft.BeginQuorumEpochRequest{LeaderEpoch: p.LeaderEpoch, LeaderID: p.LeaderID}, true
	case *kmsg.EndQuorumEpochRequest:
		if len(req.Topics) != 1 || req.Topics[0].Topic != Topic || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
			return 0, nil, false
		}
		p := req.Topics[0].Partitions[0]
		succ := slices.Clone(p.PreferredSuccessors)
		if req.Version >= 1 && len(p.PreferredCandidates) > 0 {
			succ = succ[:0]
			for _, c := range p.PreferredCandidates {
				succ = append(succ, c.CandidateID)
			}
		}
		return p.LeaderID, raft.EndQuorumEpochRequest{LeaderEpoch: p.LeaderEpoch, LeaderID: p.LeaderID, PreferredSuccessors: succ}, true
	case *kmsg.FetchRequest:
		if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
			return 0, nil, false
		}
		t := req.Topics[0]
		if req.Version >= 13 && t.TopicID != MetadataTopicID || req.Version < 13 && t.Topic != Topic {
			return 0, nil, false
		}
		id := req.ReplicaID
		if req.Version >= 15 {
			id = req.ReplicaState.ID
		}
		p := t.Partitions[0]
		return id, raft.FetchRequest{ReplicaID: id, FetchOffset: p.FetchOffset, LastFetchedEpoch: p.LastFetchedEpoch,
			CurrentLeaderEpoch: p.CurrentLeaderEpoch, MaxWait: time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond}, true
	case *kmsg.FetchSnapshotRequest:
		if len(req.Topics) != 1 || req.Topics[0].Topic != Topic || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
			return 0, nil, false
		}
		p := req.Topics[0].Partitions[0]
		return req.ReplicaID, raft.FetchSnapshotRequest{ReplicaID: req.ReplicaID, CurrentLeaderEpoch: p.CurrentLeaderEpoch,
			SnapshotID: raft.SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch},
			Position:   p.Position, MaxBytes: int(max(req.MaxBytes, 0))}, true
	}
	return 0, nil, false
}

// answers reports whether core response m answers a request of API key.
func answers(m raft.Message, key int16) bool {
	switch m.(type) {
	case raft.VoteResponse:
		return key == keyVote
	case raft.BeginQuorumEpochResponse:
		return key == keyBeginQuorumEpoch
	case raft.EndQuorumEpochResponse:
		return key == keyEndQuorumEpoch
	case raft.FetchResponse:
		return key == keyFetch
	case raft.FetchSnapshotResponse:
		return key == keyFetchSnapshot
	}
	return false
}

func isResponse(m raft.Message) bool {
	switch m.(type) {
	case raft.VoteResponse, raft.BeginQuorumEpochResponse, raft.EndQuorumEpochResponse, raft.FetchResponse, raft.FetchSnapshotResponse:
		return true
	}
	return false
}

// encodeResponse is the core's answer m to served request req.
func encodeResponse(m raft.Message, req kmsg.Request, voters []int32) kmsg.Response {
	switch m := m.(type) {
	case raft.VoteResponse:
		resp := kmsg.NewPtrVoteResponse()
		p := kmsg.NewVoteResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch, p.VoteGranted = int16(m.ErrorCode), m.LeaderID, m.LeaderEpoch, m.VoteGranted
		t := kmsg.NewVoteResponseTopic()
		t.Topic, t.Partitions = Topic, []kmsg.VoteResponseTopicPartition{p}
		resp.Topics = []kmsg.VoteResponseTopic{t}
		return resp
	case raft.BeginQuorumEpochResponse:
		resp := kmsg.NewPtrBeginQuorumEpochResponse()
		p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch = int16(m.ErrorCode), m.LeaderID, m.LeaderEpoch
		t := kmsg.NewBeginQuorumEpochResponseTopic()
		t.Topic, t.Partitions = Topic, []kmsg.BeginQuorumEpochResponseTopicPartition{p}
		resp.Topics = []kmsg.BeginQuorumEpochResponseTopic{t}
		return resp
	case raft.EndQuorumEpochResponse:
		resp := kmsg.NewPtrEndQuorumEpochResponse()
		p := kmsg.NewEndQuorumEpochResponseTopicPartition()
		p.ErrorCode, p.LeaderID, p.LeaderEpoch = int16(m.ErrorCode), m.LeaderID, m.LeaderEpoch
		t := kmsg.NewEndQuorumEpochResponseTopic()
		t.Topic, t.Partitions = Topic, []kmsg.EndQuorumEpochResponseTopicPartition{p}
		resp.Topics = []kmsg.EndQuorumEpochResponseTopic{t}
		return resp
	case raft.FetchResponse:
		resp := kmsg.NewPtrFetchResponse()
		p := kmsg.NewFetchResponseTopicPartition()
		p.ErrorCode, p.HighWatermark = int16(m.ErrorCode), m.HighWatermark
		p.LastStableOffset, p.LogStartOffset = m.HighWatermark, 0
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = m.LeaderID, m.LeaderEpoch
		if d := m.DivergingEpoch; d != nil {
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = d.Epoch, d.EndOffset
		}
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch = -1, -1
		if id := m.SnapshotID; id != nil {
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = id.EndOffset, id.Epoch
		}
		p.RecordBatches = encodeEntries(m.Records, voters)
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID, t.Partitions = Topic, MetadataTopicID, []kmsg.FetchResponseTopicPartition{p}
		resp.Topics = []kmsg.FetchResponseTopic{t}
		return resp
	case raft.FetchSnapshotResponse:
		resp := kmsg.NewPtrFetchSnapshotResponse()
		p := kmsg.NewFetchSnapshotResponseTopicPartition()
		p.ErrorCode, p.Size, p.Position, p.Bytes = int16(m.ErrorCode), m.Size, m.Position, m.Bytes
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch = m.SnapshotID.EndOffset, m.SnapshotID.Epoch
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = m.LeaderID, m.LeaderEpoch
		t := kmsg.NewFetchSnapshotResponseTopic()
		t.Topic, t.Partitions = Topic, []kmsg.FetchSnapshotResponseTopicPartition{p}
		resp.Topics = []kmsg.FetchSnapshotResponseTopic{t}
		return resp
	}
	panic(fmt.Sprintf("quorum: %T is not a response", m))
}

// errorResponse answers a quorum request the core did not: the response
// kind with a top-level error code.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		r.ErrorCode = code
	case *kmsg.BeginQuorumEpochResponse:
		r.ErrorCode = code
	case *kmsg.EndQuorumEpochResponse:
		r.ErrorCode = code
	case *kmsg.FetchResponse:
		r.ErrorCode = code
	case *kmsg.FetchSnapshotResponse:
		r.ErrorCode = code
	}
	return resp
}

// decodeResponse maps the answer to sent request m onto the core's
// message; ok is false for an answer with a top-level error or of the
// wrong shape, which the core never sees (it resends on its timers). A
// FetchResponse's FetchOffset and LastFetchedEpoch are filled from the
// request it answers.
func decodeResponse(m raft.Message, resp kmsg.Response) (raft.Message, bool) {
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, false
		}
		p := r.Topics[0].Partitions[0]
		return raft.VoteResponse{ErrorCode: raft.ErrorCode(p.ErrorCode), LeaderEpoch: p.LeaderEpoch, LeaderID: p.LeaderID, VoteGranted: p.VoteGranted}, true
	case *kmsg.BeginQuorumEpochResponse:
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, false
		}
		p := r.Topics[0].Partitions[0]
		return raft.BeginQuorumEpochResponse{ErrorCode: raft.ErrorCode(p.ErrorCode), LeaderEpoch: p.LeaderEpoch, LeaderID: p.LeaderID}, true
	case *kmsg.EndQuorumEpochResponse:
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, false
		}
		p := r.Topics[0].Partitions[0]
		return raft.EndQuorumEpochResponse{ErrorCode: raft.ErrorCode(p.ErrorCode), LeaderEpoch: p.LeaderEpoch, LeaderID: p.LeaderID}, true
	case *kmsg.FetchResponse:
		req, isFetch := m.(raft.FetchRequest)
		if !isFetch || r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, false
		}
		p := r.Topics[0].Partitions[0]
		out := raft.FetchResponse{ErrorCode: raft.ErrorCode(p.ErrorCode), LeaderEpoch: p.CurrentLeader.LeaderEpoch,
			LeaderID: p.CurrentLeader.LeaderID, HighWatermark: p.HighWatermark,
			FetchOffset: req.FetchOffset, LastFetchedEpoch: req.LastFetchedEpoch}
		if p.DivergingEpoch.EndOffset >= 0 && p.DivergingEpoch.Epoch >= 0 {
			out.DivergingEpoch = &raft.EpochEndOffset{Epoch: p.DivergingEpoch.Epoch, EndOffset: p.DivergingEpoch.EndOffset}
		}
		if p.SnapshotID.EndOffset >= 0 && p.SnapshotID.Epoch >= 0 {
			out.SnapshotID = &raft.SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
		}
		if len(p.RecordBatches) > 0 {
			es, err := decodeEntries(p.RecordBatches)
			if err != nil {
				return nil, false
			}
			out.Records = es
		}
		return out, true
	case *kmsg.FetchSnapshotResponse:
		if _, isReq := m.(raft.FetchSnapshotRequest); !isReq || r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return nil, false
		}
		p := r.Topics[0].Partitions[0]
		return raft.FetchSnapshotResponse{ErrorCode: raft.ErrorCode(p.ErrorCode), LeaderEpoch: p.CurrentLeader.LeaderEpoch,
			LeaderID: p.CurrentLeader.LeaderID, SnapshotID: raft.SnapshotID{EndOffset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch},
			Size: p.Size, Position: p.Position, Bytes: p.Bytes}, true
	}
	return nil, false
}
