package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Election types of ElectLeaders (KIP-460).
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

// electLeaders runs the elections an operator asks for
// (kafka-leader-election.sh), as Kafka's
// ReplicationControlManager.electLeaders does: preferred moves leadership
// to a partition's first replica if it is live and in the ISR (else
// PREFERRED_LEADER_NOT_AVAILABLE); unclean elects a leaderless partition a
// leader from its live ISR, failing that any live replica, which becomes
// the ISR (else ELIGIBLE_LEADERS_NOT_AVAILABLE), whatever
// unclean.leader.election.enable says. A partition that has the leader the
// election would give is ELECTION_NOT_NEEDED, and left out of the answer
// when the request names no partitions (every partition is meant).
func (c *Controller) electLeaders(r *rpc.Request, req *kmsg.ElectLeadersRequest) decision {
	resp := kmsg.NewPtrElectLeadersResponse()
	refuse := func() {
		resp.ErrorCode, resp.Topics = kerr.NotController.Code, nil
		r.Respond(resp)
	}
	return decision{refuse: refuse, decide: func() ([]metadata.Record, func()) {
		resp.ErrorCode, resp.Topics = 0, nil
		if req.ElectionType != electPreferred && req.ElectionType != electUnclean {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return nil, func() { r.Respond(resp) }
		}
		type ask struct {
			topic      string
			partitions []int32
		}
		var asks []ask
		all := req.Topics == nil
		if all {
			for _, name := range slices.Sorted(maps.Keys(c.st.Topics)) {
				a := ask{topic: name}
				for p := range c.st.Topics[name].Partitions {
					a.partitions = append(a.partitions, int32(p))
				}
				asks = append(asks, a)
			}
		}
		for _, rt := range req.Topics {
			asks = append(asks, ask{topic: rt.Topic, partitions: rt.Partitions})
		}
		var rs []metadata.Record
		for _, a := range asks {
			tr := kmsg.NewElectLeadersResponseTopic()
			tr.Topic = a.topic
			for _, part := range a.partitions {
				q, code, msg := c.elect(a.topic, part, req.ElectionType)
				if code == kerr.ElectionNotNeeded.Code && all {
					continue
				}
				if code == 0 {
					rs = append(rs, metadata.Record{Partition: &q})
					c.e.Log("leader-election-requested", "partition", q.TopicPartition.String(), "type", req.ElectionType, "leader", q.Leader, "leaderEpoch", q.LeaderEpoch)
				}
				pr := kmsg.NewElectLeadersResponseTopicPartition()
				pr.Partition, pr.ErrorCode = part, code
				if msg != "" {
					pr.ErrorMessage = kmsg.StringPtr(msg)
				}
				tr.Partitions = append(tr.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, tr)
		}
		return rs, func() { r.Respond(resp) }
	}}
}

// elect is the partition after the election of the given type, or why
// there is none.
func (c *Controller) elect(topic string, part int32, typ int8) (metadata.Partition, int16, string) {
	t := c.st.Topics[topic]
	if t == nil || part < 0 || int(part) >= len(t.Partitions) {
		return metadata.Partition{}, kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("no partition %s-%d", topic, part)
	}
	p := t.Partitions[part]
	q := p.Clone()
	switch typ {
	case electPreferred:
		preferred := p.Replicas[0]
		if p.Leader == preferred {
			return p, kerr.ElectionNotNeeded.Code, ""
		}
		if !p.InISR(preferred) || !c.st.Live(preferred) {
			return p, kerr.PreferredLeaderNotAvailable.Code, fmt.Sprintf("preferred replica %d of %s-%d is not live in the ISR %v", preferred, topic, part, p.ISR)
		}
		q.Leader = preferred
	default:
		if p.Leader != metadata.NoLeader {
			return p, kerr.ElectionNotNeeded.Code, ""
		}
		electLeader(&q, c.st.Live, unclean)
		if q.Leader == metadata.NoLeader {
			return p, kerr.EligibleLeadersNotAvailable.Code, fmt.Sprintf("no replica of %s-%d is live", topic, part)
		}
	}
	q.LeaderEpoch++
	q.PartitionEpoch++
	return q, 0, ""
}
