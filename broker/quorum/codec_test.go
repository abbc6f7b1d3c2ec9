package quorum

import (
	"testing"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var voters = []int32{1, 2, 3}

// overTheWire encodes req at version v as a frame and parses it back as a
// server does.
func overTheWire(t *testing.T, req kmsg.Request, v int16) kmsg.Request {
	t.Helper()
	req.SetVersion(v)
	frame := wire.AppendRequest(nil, req, 7, "v1")
	_, body, err := wire.ParseRequest(frame, Versions)
	require.NoError(t, err)
	return body
}

// answerOverTheWire encodes resp to the request with header of req at v
// and parses it back as a client does.
func answerOverTheWire(t *testing.T, req kmsg.Request, resp kmsg.Response) kmsg.Response {
	t.Helper()
	frame := wire.AppendResponse(nil, wire.RequestHeader{Key: req.Key(), Version: req.GetVersion(), CorrelationID: 7}, resp)
	got, err := wire.ParseResponse(frame, req)
	require.NoError(t, err)
	return got
}

func TestRequestsRoundTrip(t *testing.T) {
	cases := []struct {
		m        raft.Message
		from     int32
		versions []int16
	}{
		{raft.VoteRequest{PreVote: true, CandidateEpoch: 4, CandidateID: 2, LastOffsetEpoch: 3, LastOffset: 17}, 2, []int16{2}},
		{raft.VoteRequest{CandidateEpoch: 5, CandidateID: 3, LastOffsetEpoch: 3, LastOffset: 17}, 3, []int16{0, 1, 2}},
		{raft.BeginQuorumEpochRequest{LeaderEpoch: 5, LeaderID: 3}, 3, []int16{0, 1}},
		{raft.EndQuorumEpochRequest{LeaderEpoch: 5, LeaderID: 3, PreferredSuccessors: []int32{1, 2}}, 3, []int16{0, 1}},
		{raft.FetchRequest{ReplicaID: 1, FetchOffset: 9, LastFetchedEpoch: 4, CurrentLeaderEpoch: 5}, 1, []int16{12, 13, 15, 17}},
	}
	for _, c := range cases {
		for _, v := range c.versions {
			body := overTheWire(t, encodeRequest(c.m, 1, voters), v)
			from, m, ok := decodeRequest(body)
			require.True(t, ok, "%s v%d", c.m, v)
			require.Equal(t, c.from, from, "%s v%d", c.m, v)
			require.Equal(t, c.m, m, "v%d", v)
		}
	}
}

func TestResponsesRoundTrip(t *testing.T) {
	entries := []raft.Entry{{Offset: 9, Epoch: 4, LeaderChange: true}, {Offset: 10, Epoch: 5, Data: []byte("x")}, {Offset: 11, Epoch: 5, Data: []byte{}}}
	fetch := raft.FetchRequest{ReplicaID: 1, FetchOffset: 9, LastFetchedEpoch: 4, CurrentLeaderEpoch: 5}
	cases := []struct {
		req  raft.Message
		resp raft.Message
		vs   []int16
	}{
		{raft.VoteRequest{PreVote: true, CandidateEpoch: 4, CandidateID: 2}, raft.VoteResponse{LeaderEpoch: 4, LeaderID: -1, VoteGranted: true}, []int16{2}},
		{raft.BeginQuorumEpochRequest{LeaderEpoch: 5, LeaderID: 3}, raft.BeginQuorumEpochResponse{ErrorCode: raft.FencedLeaderEpoch, LeaderEpoch: 6, LeaderID: 2}, []int16{0, 1}},
		{raft.EndQuorumEpochRequest{LeaderEpoch: 5, LeaderID: 3}, raft.EndQuorumEpochResponse{LeaderEpoch: 5, LeaderID: 3}, []int16{0, 1}},
		{fetch, raft.FetchResponse{LeaderEpoch: 5, LeaderID: 3, HighWatermark: 10, Records: entries, FetchOffset: 9, LastFetchedEpoch: 4}, []int16{12, 13, 17}},
		{fetch, raft.FetchResponse{LeaderEpoch: 5, LeaderID: 3, HighWatermark: 8, DivergingEpoch: &raft.EpochEndOffset{Epoch: 0, EndOffset: 0}, FetchOffset: 9, LastFetchedEpoch: 4}, []int16{12, 17}},
		{fetch, raft.FetchResponse{ErrorCode: raft.NotLeaderOrFollower, LeaderEpoch: 5, LeaderID: -1, HighWatermark: -1, FetchOffset: 9, LastFetchedEpoch: 4}, []int16{12, 17}},
	}
	for _, c := range cases {
		for _, v := range c.vs {
			req := encodeRequest(c.req, 3, voters)
			req.SetVersion(v)
			served := overTheWire(t, req, v)
			got := answerOverTheWire(t, req, encodeResponse(c.resp, served, voters))
			m, ok := decodeResponse(c.req, got)
			require.True(t, ok, "%s v%d", c.resp, v)
			require.Equal(t, c.resp, m, "v%d", v)
		}
	}
}

func TestErrorResponseIsNotFedToTheCore(t *testing.T) {
	req := encodeRequest(raft.FetchRequest{ReplicaID: 1}, 3, voters)
	req.SetVersion(17)
	_, ok := decodeResponse(raft.FetchRequest{ReplicaID: 1}, answerOverTheWire(t, req, errorResponse(req, errInvalidRequest)))
	require.False(t, ok)
}

func TestEntriesAreBatchesWithTheirEpoch(t *testing.T) {
	es := []raft.Entry{{Offset: 0, Epoch: 1, LeaderChange: true}, {Offset: 1, Epoch: 1, Data: []byte("a")}, {Offset: 2, Epoch: 3, Data: nil}}
	raw := encodeEntries(es, voters)
	got, err := decodeEntries(raw)
	require.NoError(t, err)
	require.Equal(t, es, got)
	b := encodeEntry(es[2], voters)
	require.Equal(t, int32(3), b.PartitionLeaderEpoch())
	require.Equal(t, int64(2), b.BaseOffset())
	require.Equal(t, raw, encodeEntries(es, voters), "encoding is a function of the entry")
}
