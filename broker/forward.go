package broker

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requests the active controller decides, which a broker forwards as a
// KRaft broker does (Kafka's ForwardingManager): the controller's answer
// goes back to the client as it is.

// forwardToController sends a request the active controller decides and
// answers with its response (adapted by adapt, if given); if the
// controller cannot be reached in time, every resource gets
// REQUEST_TIMED_OUT (fail builds that answer).
func (b *Broker) forwardToController(r *rpc.Request, fwd kmsg.Request, fail func(code int16, msg string) kmsg.Response, adapt ...func(kmsg.Response)) {
	b.controller.Do(fwd, b.cfg.BrokerSessionTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			r.Respond(fail(kerr.RequestTimedOut.Code, fmt.Sprintf("controller: %v", err)))
			return
		}
		for _, f := range adapt {
			f(resp)
		}
		r.Respond(resp)
	})
}

// handleDeleteTopics forwards to the controller. Names given in v0-5's
// topic_names travel as v6's topics too, so the controller reads one list
// whatever version the broker and the controller speak.
func (b *Broker) handleDeleteTopics(r *rpc.Request, req *kmsg.DeleteTopicsRequest) {
	fwd := kmsg.NewPtrDeleteTopicsRequest()
	fwd.TimeoutMillis = req.TimeoutMillis
	if r.Header.Version >= 6 {
		fwd.Topics = req.Topics
		for _, t := range req.Topics {
			if t.Topic != nil && t.TopicID == [16]byte{} {
				fwd.TopicNames = append(fwd.TopicNames, *t.Topic)
			}
		}
	} else {
		fwd.TopicNames = req.TopicNames
		for _, n := range req.TopicNames {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			fwd.Topics = append(fwd.Topics, t)
		}
	}
	b.forwardToController(r, fwd, func(code int16, msg string) kmsg.Response {
		out := kmsg.NewPtrDeleteTopicsResponse()
		for _, t := range fwd.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, code, kmsg.StringPtr(msg)
			out.Topics = append(out.Topics, rt)
		}
		return out
	}, func(resp kmsg.Response) {
		// The controller answers in the version the broker speaks to it;
		// Kafka's Envelope keeps the client's, whose DeleteTopics before v3
		// has no TOPIC_DELETION_DISABLED (ControllerApis: INVALID_REQUEST).
		if dr, ok := resp.(*kmsg.DeleteTopicsResponse); ok && r.Header.Version < 3 {
			for i := range dr.Topics {
				if dr.Topics[i].ErrorCode == kerr.TopicDeletionDisabled.Code {
					dr.Topics[i].ErrorCode = kerr.InvalidRequest.Code
				}
			}
		}
	})
}

// handleCreatePartitions forwards to the controller.
func (b *Broker) handleCreatePartitions(r *rpc.Request, req *kmsg.CreatePartitionsRequest) {
	fwd := kmsg.NewPtrCreatePartitionsRequest()
	fwd.Topics, fwd.TimeoutMillis, fwd.ValidateOnly = req.Topics, req.TimeoutMillis, req.ValidateOnly
	b.forwardToController(r, fwd, func(code int16, msg string) kmsg.Response {
		out := kmsg.NewPtrCreatePartitionsResponse()
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, kmsg.StringPtr(msg)
			out.Topics = append(out.Topics, rt)
		}
		return out
	})
}

// handleElectLeaders forwards to the controller (Kafka's brokers forward
// ElectLeaders too).
func (b *Broker) handleElectLeaders(r *rpc.Request, req *kmsg.ElectLeadersRequest) {
	fwd := kmsg.NewPtrElectLeadersRequest()
	fwd.ElectionType, fwd.Topics, fwd.TimeoutMillis = req.ElectionType, req.Topics, req.TimeoutMillis
	b.forwardToController(r, fwd, func(code int16, msg string) kmsg.Response {
		out := kmsg.NewPtrElectLeadersResponse()
		out.ErrorCode = code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, part := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = part, code, kmsg.StringPtr(msg)
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
		return out
	})
}
