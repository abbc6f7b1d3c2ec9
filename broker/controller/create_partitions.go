package controller

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createPartitions grows topics, as Kafka's
// ReplicationControlManager.createPartitions does: a topic named twice in
// one request fails every copy (INVALID_REQUEST, ControllerApis); an
// unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a count that is not an
// increase INVALID_PARTITIONS; explicit assignments must be one per new
// partition, each of the topic's replication factor, on distinct
// registered brokers with at least one of them live
// (INVALID_REPLICA_ASSIGNMENT); without them the new partitions are placed
// as a new topic's are. Each new partition is one record (Kafka's
// PartitionRecord), led by its first live replica, its live replicas the
// ISR; with validate_only nothing is written.
func (c *Controller) createPartitions(r *rpc.Request, req *kmsg.CreatePartitionsRequest) decision {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	answer := func(topic string, code int16, msg string) {
		tr := kmsg.NewCreatePartitionsResponseTopic()
		tr.Topic, tr.ErrorCode = topic, code
		if msg != "" {
			tr.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	refuse := func() {
		resp.Topics = resp.Topics[:0]
		for _, rt := range req.Topics {
			answer(rt.Topic, kerr.NotController.Code, "")
		}
		r.Respond(resp)
	}
	return decision{refuse: refuse, decide: func() ([]metadata.Record, func()) {
		resp.Topics = resp.Topics[:0]
		named := map[string]int{}
		for _, rt := range req.Topics {
			named[rt.Topic]++
		}
		budget := PartitionsPerRequestMax
		var rs []metadata.Record
		for _, rt := range req.Topics {
			if named[rt.Topic] > 1 {
				answer(rt.Topic, kerr.InvalidRequest.Code, fmt.Sprintf("topic %q named more than once", rt.Topic))
				continue
			}
			added, code, msg := c.newPartitions(rt, budget)
			if code == 0 {
				budget -= len(added)
				if !req.ValidateOnly {
					for i := range added {
						rs = append(rs, metadata.Record{NewPartition: &added[i]})
					}
					c.e.Log("partitions-created", "topic", rt.Topic, "added", len(added), "count", rt.Count)
				}
			}
			answer(rt.Topic, code, msg)
		}
		return rs, func() { r.Respond(resp) }
	}}
}

// newPartitions are the partitions rt adds to its topic, or why not.
func (c *Controller) newPartitions(rt kmsg.CreatePartitionsRequestTopic, budget int) ([]metadata.Partition, int16, string) {
	t := c.st.Topics[rt.Topic]
	if t == nil {
		return nil, kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %q does not exist", rt.Topic)
	}
	have := len(t.Partitions)
	switch count := int(rt.Count); {
	case count == have:
		return nil, kerr.InvalidPartitions.Code, fmt.Sprintf("topic %q already has %d partition(s)", rt.Topic, have)
	case count < have:
		return nil, kerr.InvalidPartitions.Code, fmt.Sprintf("topic %q has %d partition(s); %d would not be an increase", rt.Topic, have, count)
	case count-have > budget:
		return nil, kerr.PolicyViolation.Code, fmt.Sprintf("topic %q: %d new partitions would pass the %d one request may create", rt.Topic, count-have, PartitionsPerRequestMax)
	}
	additional, rf := int(rt.Count)-have, len(t.Partitions[0].Replicas)
	if rt.Assignment == nil {
		live := c.liveBrokers()
		if rf > len(live) {
			return nil, kerr.InvalidReplicationFactor.Code, fmt.Sprintf("topic %q: replication factor %d with %d live brokers", rt.Topic, rf, len(live))
		}
		return c.place(rt.Topic, have, additional, rf, live), 0, ""
	}
	if len(rt.Assignment) != additional {
		return nil, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("topic %q: %d new partition(s) but %d assignment(s)", rt.Topic, additional, len(rt.Assignment))
	}
	var out []metadata.Partition
	for i, a := range rt.Assignment {
		np, code, msg := c.manualPartition(rt.Topic, have+i, a.Replicas, rf)
		if code != 0 {
			return nil, code, msg
		}
		out = append(out, np)
	}
	return out, 0, ""
}
