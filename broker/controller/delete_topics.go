package controller

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteTopics removes topics by name (v0-5: TopicNames) or by name or id
// (v6: Topics), as Kafka's ControllerApis.deleteTopics and
// ReplicationControlManager.deleteTopic do: a name or id given twice
// fails every copy with INVALID_REQUEST, an entry naming both or neither
// likewise, an unknown name UNKNOWN_TOPIC_OR_PARTITION, an unknown id
// UNKNOWN_TOPIC_ID. Each deleted topic is one RemoveTopicRecord, all of
// them in one batch. The cluster's internal topics cannot be deleted
// (INVALID_REQUEST): their coordinators live in them. With
// delete.topic.enable=false every entry is TOPIC_DELETION_DISABLED
// (INVALID_REQUEST before v3).
func (c *Controller) deleteTopics(r *rpc.Request, req *kmsg.DeleteTopicsRequest) decision {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	type ask struct {
		name string
		id   [16]byte
	}
	var asks []ask
	if r.Header.Version >= 6 {
		for _, t := range req.Topics {
			a := ask{id: t.TopicID}
			if t.Topic != nil {
				a.name = *t.Topic
			}
			asks = append(asks, a)
		}
	} else {
		for _, n := range req.TopicNames {
			asks = append(asks, ask{name: n})
		}
	}
	answer := func(name string, id [16]byte, code int16, msg string) {
		tr := kmsg.NewDeleteTopicsResponseTopic()
		if name != "" {
			tr.Topic = kmsg.StringPtr(name)
		}
		tr.TopicID, tr.ErrorCode = id, code
		if msg != "" {
			tr.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	refuse := func() {
		resp.Topics = resp.Topics[:0]
		for _, a := range asks {
			answer(a.name, a.id, kerr.NotController.Code, "")
		}
		r.Respond(resp)
	}
	return decision{refuse: refuse, decide: func() ([]metadata.Record, func()) {
		resp.Topics = resp.Topics[:0]
		if !c.cfg.DeleteTopicEnable {
			// ControllerApis.deleteTopics: TopicDeletionDisabledException
			// from v3, InvalidRequestException before.
			code := kerr.TopicDeletionDisabled.Code
			if r.Header.Version < 3 {
				code = kerr.InvalidRequest.Code
			}
			for _, a := range asks {
				answer(a.name, a.id, code, "topic deletion is disabled (delete.topic.enable=false)")
			}
			return nil, func() { r.Respond(resp) }
		}
		// Resolve every entry first: a topic named more than once, by
		// name or by id or both, fails every entry naming it.
		topics := make([]*metadata.Topic, len(asks))
		refs := map[string]int{}
		for i, a := range asks {
			if a.name != "" && a.id == [16]byte{} {
				topics[i] = c.st.Topics[a.name]
				refs[a.name]++ // unknown names count too: a duplicate is refused as such
			} else if a.name == "" && a.id != [16]byte{} {
				if topics[i] = c.topicByID(a.id); topics[i] != nil {
					refs[topics[i].Name]++
				}
			}
		}
		var rs []metadata.Record
		for i, a := range asks {
			t := topics[i]
			switch {
			case a.name == "" && a.id == [16]byte{}:
				answer("", a.id, kerr.InvalidRequest.Code, "neither topic name nor id given")
			case a.name != "" && a.id != [16]byte{}:
				answer(a.name, a.id, kerr.InvalidRequest.Code, fmt.Sprintf("topic %q: give a name or an id, not both", a.name))
			case a.name != "" && refs[a.name] > 1:
				answer(a.name, a.id, kerr.InvalidRequest.Code, fmt.Sprintf("topic %q named more than once", a.name))
			case t != nil && refs[t.Name] > 1:
				answer(a.name, a.id, kerr.InvalidRequest.Code, fmt.Sprintf("topic id %x (topic %q) named more than once", a.id, t.Name))
			case t == nil && a.name != "":
				answer(a.name, a.id, kerr.UnknownTopicOrPartition.Code, "")
			case t == nil:
				answer("", a.id, kerr.UnknownTopicID.Code, "")
			case metadata.Internal(t.Name):
				answer(t.Name, a.id, kerr.InvalidRequest.Code, fmt.Sprintf("topic %q is internal and cannot be deleted", t.Name))
			default:
				rs = append(rs, metadata.Record{RemoveTopic: &metadata.RemoveTopicRecord{Name: t.Name, ID: t.ID}})
				c.e.Log("topic-deleted", "topic", t.Name, "partitions", len(t.Partitions))
				answer(t.Name, t.ID, 0, "")
			}
		}
		return rs, func() { r.Respond(resp) }
	}}
}

// topicByID is the topic with id, or nil.
func (c *Controller) topicByID(id [16]byte) *metadata.Topic {
	for _, t := range c.st.Topics {
		if t.ID == id {
			return t // ids are unique: which map entry holds it decides nothing
		}
	}
	return nil
}
