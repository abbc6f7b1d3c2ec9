package controller

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serve hands quorum requests to the voter and the controller's own to a
// decision; a controller that is not the active one answers
// NOT_CONTROLLER, and the broker asks again.
func (c *Controller) serve(r *rpc.Request) {
	if c.voter != nil && c.voter.Handle(r) {
		return
	}
	var d decision
	switch req := r.Body.(type) {
	case *kmsg.BrokerRegistrationRequest:
		d = c.registration(r, req)
	case *kmsg.BrokerHeartbeatRequest:
		if b := c.st.Brokers[req.BrokerID]; c.active && b != nil && b.Epoch == req.BrokerEpoch {
			c.sessions[req.BrokerID] = c.e.Now() // the session lives in memory: now, not once decided
		}
		d = c.heartbeat(r, req)
	case *kmsg.AlterPartitionRequest:
		d = c.alterPartition(r, req)
	case *kmsg.CreateTopicsRequest:
		d = c.createTopics(r, req)
	case *kmsg.DeleteTopicsRequest:
		d = c.deleteTopics(r, req)
	case *kmsg.CreatePartitionsRequest:
		d = c.createPartitions(r, req)
	case *kmsg.ElectLeadersRequest:
		d = c.electLeaders(r, req)
	case *kmsg.AlterConfigsRequest:
		d = c.alterConfigs(r, req)
	case *kmsg.IncrementalAlterConfigsRequest:
		d = c.incrementalAlterConfigs(r, req)
	case *kmsg.AllocateProducerIDsRequest:
		d = c.allocateProducerIDs(r, req)
	default:
		r.CloseConn()
		return
	}
	c.enqueue(d)
}

// notController answers resp with NOT_CONTROLLER set by set.
func notController(r *rpc.Request, resp kmsg.Response, set func(code int16)) func() {
	return func() {
		set(kerr.NotController.Code)
		r.Respond(resp)
	}
}

// election is the rule leaderless partitions are led by.
func (c *Controller) election(topic string) election {
	var overrides map[string]string
	if t := c.st.Topics[topic]; t != nil {
		overrides = t.Configs
	}
	switch {
	case c.cfg.Defects.Has(defect.ElectionIgnoresISR):
		return anyLive
	case c.cfg.Settings(overrides).UncleanLeaderElection:
		return unclean // the topic's unclean.leader.election.enable, else the cluster's
	}
	return clean
}

func (c *Controller) registration(r *rpc.Request, req *kmsg.BrokerRegistrationRequest) decision {
	resp := kmsg.NewPtrBrokerRegistrationResponse()
	return decision{refuse: notController(r, resp, func(code int16) { resp.ErrorCode = code }), decide: func() ([]metadata.Record, func()) {
		var endpoints []metadata.Endpoint
		for _, l := range req.Listeners {
			addr := l.Host // a simulated node's main listener has no port
			if l.Port != 0 {
				addr = metadata.JoinAddr(l.Host, int32(l.Port))
			}
			endpoints = append(endpoints, metadata.Endpoint{Listener: l.Name, Addr: addr})
		}
		respond := func() { r.Respond(resp) }
		old := c.st.Brokers[req.BrokerID]
		if old != nil && old.Incarnation == req.IncarnationID {
			resp.BrokerEpoch = old.Epoch // a retry of a registration that went through
			return nil, respond
		}
		if old != nil && !old.Fenced {
			// The old incarnation's session is still valid: the new one waits
			// until it expires, so leadership moves away first (as Kafka does).
			resp.ErrorCode = kerr.DuplicateBrokerRegistration.Code
			return nil, respond
		}
		// The broker epoch is the offset of the entry that registers it.
		rec := metadata.BrokerRecord{ID: req.BrokerID, Endpoints: endpoints, Epoch: c.voter.LogEnd(), Incarnation: req.IncarnationID}
		return []metadata.Record{{Broker: &rec}}, func() {
			c.sessions[req.BrokerID] = c.e.Now()
			c.e.Log("broker-registered", "broker", req.BrokerID, "endpoints", endpoints, "epoch", rec.Epoch)
			resp.BrokerEpoch = rec.Epoch
			respond()
		}
	}}
}

func (c *Controller) heartbeat(r *rpc.Request, req *kmsg.BrokerHeartbeatRequest) decision {
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	return decision{refuse: notController(r, resp, func(code int16) { resp.ErrorCode = code }), decide: func() ([]metadata.Record, func()) {
		b := c.st.Brokers[req.BrokerID]
		if b == nil || b.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			resp.IsFenced = true
			return nil, func() { r.Respond(resp) }
		}
		c.sessions[req.BrokerID] = c.e.Now()
		// Caught up once the broker has applied the entry that registered
		// it (BrokerHeartbeatManager: CurrentMetadataOffset at least the
		// registration's offset); only then may it be unfenced.
		caughtUp := req.CurrentMetadataOffset >= b.Epoch
		answer := func() {
			resp.IsCaughtUp = caughtUp
			resp.IsFenced = c.st.Brokers[req.BrokerID].Fenced
			r.Respond(resp)
		}
		if !req.WantFence && caughtUp && (b.Fenced || c.offlineFor(req.BrokerID)) {
			if b.Fenced {
				c.e.Log("broker-unfenced", "broker", req.BrokerID)
			}
			return c.fencing(req.BrokerID, false, "unfence"), answer
		}
		return nil, answer
	}}
}

func (c *Controller) alterPartition(r *rpc.Request, req *kmsg.AlterPartitionRequest) decision {
	resp := kmsg.NewPtrAlterPartitionResponse()
	return decision{refuse: notController(r, resp, func(code int16) { resp.ErrorCode = code; resp.Topics = nil }), decide: func() ([]metadata.Record, func()) {
		respond := func() { r.Respond(resp) }
		b := c.st.Brokers[req.BrokerID]
		if b == nil || b.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return nil, respond
		}
		var rs []metadata.Record
		for _, rt := range req.Topics {
			tr := kmsg.NewAlterPartitionResponseTopic()
			tr.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				pr := kmsg.NewAlterPartitionResponseTopicPartition()
				pr.Partition = rp.Partition
				t := c.st.Topics[rt.Topic]
				if t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
					pr.ErrorCode = kerr.UnknownTopicOrPartition.Code
					tr.Partitions = append(tr.Partitions, pr)
					continue
				}
				p := t.Partitions[rp.Partition]
				switch {
				case rp.LeaderEpoch < p.LeaderEpoch:
					pr.ErrorCode = kerr.FencedLeaderEpoch.Code
				case p.Leader != req.BrokerID || rp.LeaderEpoch > p.LeaderEpoch:
					pr.ErrorCode = kerr.NotLeaderForPartition.Code
				case rp.PartitionEpoch != p.PartitionEpoch:
					pr.ErrorCode = kerr.InvalidUpdateVersion.Code
				case !validISR(p, rp.NewISR, c.st.Live):
					pr.ErrorCode = kerr.IneligibleReplica.Code
				default:
					q := p.Clone()
					q.ISR = slices.Clone(rp.NewISR)
					q.PartitionEpoch++
					rs = append(rs, metadata.Record{Partition: &q})
					c.e.Log("isr-change", "partition", p.TopicPartition.String(), "isr", fmt.Sprintf("%v->%v", p.ISR, q.ISR), "partitionEpoch", q.PartitionEpoch)
					p = q
				}
				// The answer carries the state the decision makes.
				pr.LeaderID, pr.LeaderEpoch, pr.ISR, pr.PartitionEpoch = p.Leader, p.LeaderEpoch, slices.Clone(p.ISR), p.PartitionEpoch
				tr.Partitions = append(tr.Partitions, pr)
			}
			resp.Topics = append(resp.Topics, tr)
		}
		return rs, respond
	}}
}

func (c *Controller) allocateProducerIDs(r *rpc.Request, req *kmsg.AllocateProducerIDsRequest) decision {
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	return decision{refuse: notController(r, resp, func(code int16) { resp.ErrorCode = code }), decide: func() ([]metadata.Record, func()) {
		b := c.st.Brokers[req.BrokerID]
		if b == nil || b.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return nil, func() { r.Respond(resp) }
		}
		start := c.st.NextProducerID
		return []metadata.Record{{ProducerIDs: start + ProducerIDBlock}}, func() {
			resp.ProducerIDStart, resp.ProducerIDLen = start, ProducerIDBlock
			r.Respond(resp)
		}
	}}
}
