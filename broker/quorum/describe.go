package quorum

import (
	"net"
	"strconv"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errNotLeaderOrFollower is NOT_LEADER_OR_FOLLOWER: only the leader
// describes the quorum.
const errNotLeaderOrFollower int16 = 6

// describe answers DescribeQuorum as KafkaRaftClient.handleDescribeQuorumRequest
// does: only the leader knows every voter's progress (a follower answers
// NOT_LEADER_OR_FOLLOWER for the partition); each voter's log end is the
// offset of its last fetch (-1 if none this epoch), its timestamps the
// wall clock's milliseconds of its last fetch and of the last fetch from
// the leader's end (-1 if none); v2 adds every voter's endpoint.
func (v *Voter) describe(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	now, wall := v.e.Now(), v.e.WallClock()
	millis := func(t env.Time) int64 {
		if t == 0 {
			return -1
		}
		return wall.Add(-now.Sub(t)).UnixMilli()
	}
	for _, rt := range req.Topics {
		tr := kmsg.NewDescribeQuorumResponseTopic()
		tr.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			pr := kmsg.NewDescribeQuorumResponseTopicPartition()
			pr.Partition = rp.Partition
			switch {
			case rt.Topic != Topic || rp.Partition != 0:
				pr.ErrorCode = errUnknownTopic
			case v.node.Role() != raft.Leader:
				pr.ErrorCode = errNotLeaderOrFollower
				pr.LeaderID, pr.LeaderEpoch = v.node.LeaderID(), v.node.Epoch()
			default:
				pr.LeaderID, pr.LeaderEpoch, pr.HighWatermark = v.cfg.ID, v.node.Epoch(), v.node.HighWatermark()
				replica := func(st raft.VoterState) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
					rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
					rs.ReplicaID, rs.LogEndOffset = st.ID, st.LogEnd
					if st.LogEnd >= 0 {
						rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = millis(st.LastFetch), millis(st.CaughtUp)
					}
					return rs
				}
				for _, st := range v.node.VoterStates() {
					pr.CurrentVoters = append(pr.CurrentVoters, replica(st))
				}
				for _, st := range v.node.ObserverStates() {
					pr.Observers = append(pr.Observers, replica(st))
				}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	for _, id := range v.ids {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = id
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name = "CONTROLLER"
		host, port, err := net.SplitHostPort(v.cfg.Voters[id])
		if err != nil {
			host = v.cfg.Voters[id] // a simulated node's name has no port
		}
		p, _ := strconv.Atoi(port)
		l.Host, l.Port = host, uint16(p)
		n.Listeners = append(n.Listeners, l)
		resp.Nodes = append(resp.Nodes, n)
	}
	return resp
}
