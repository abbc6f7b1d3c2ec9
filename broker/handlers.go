package broker

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serve dispatches one request. Requests on one connection are served one
// at a time, in order, as Kafka does.
func (b *Broker) serve(r *rpc.Request) {
	defer b.checkInvariants()
	switch req := r.Body.(type) {
	case *kmsg.ProduceRequest:
		b.handleProduce(r, req)
	case *kmsg.FetchRequest:
		b.handleFetch(r, req)
	case *kmsg.ListOffsetsRequest:
		r.Respond(b.handleListOffsets(req))
	case *kmsg.MetadataRequest:
		r.Respond(b.handleMetadata(listenerName(r.Listener), req))
	case *kmsg.OffsetForLeaderEpochRequest:
		r.Respond(b.handleOffsetForLeaderEpoch(req))
	case *kmsg.CreateTopicsRequest:
		b.handleCreateTopics(r, req)
	case *kmsg.DeleteTopicsRequest:
		b.handleDeleteTopics(r, req)
	case *kmsg.CreatePartitionsRequest:
		b.handleCreatePartitions(r, req)
	case *kmsg.ElectLeadersRequest:
		b.handleElectLeaders(r, req)
	case *kmsg.DescribeTopicPartitionsRequest:
		b.handleDescribeTopicPartitions(r, req)
	case *kmsg.DescribeLogDirsRequest:
		r.Respond(b.handleDescribeLogDirs(req))
	case *kmsg.DescribeProducersRequest:
		r.Respond(b.handleDescribeProducers(req))
	case *kmsg.DescribeTransactionsRequest:
		r.Respond(b.txns.handleDescribeTransactions(req))
	case *kmsg.ListTransactionsRequest:
		r.Respond(b.txns.handleListTransactions(req))
	case *kmsg.DeleteRecordsRequest:
		b.handleDeleteRecords(r, req)
	case *kmsg.ListGroupsRequest:
		r.Respond(b.groups.handleListGroups(req))
	case *kmsg.DescribeGroupsRequest:
		r.Respond(b.groups.handleDescribeGroups(req))
	case *kmsg.DeleteGroupsRequest:
		b.groups.handleDeleteGroups(r, req)
	case *kmsg.OffsetDeleteRequest:
		b.groups.handleOffsetDelete(r, req)
	case *kmsg.DescribeClusterRequest:
		r.Respond(b.handleDescribeCluster(listenerName(r.Listener), req))
	case *kmsg.DescribeConfigsRequest:
		r.Respond(b.handleDescribeConfigs(req))
	case *kmsg.AlterConfigsRequest:
		b.handleAlterConfigs(r, req)
	case *kmsg.IncrementalAlterConfigsRequest:
		b.handleIncrementalAlterConfigs(r, req)
	case *kmsg.DescribeQuorumRequest:
		b.handleDescribeQuorum(r, req)
	case *kmsg.InitProducerIDRequest:
		b.handleInitProducerID(r, req)
	case *kmsg.FindCoordinatorRequest:
		r.Respond(b.handleFindCoordinator(listenerName(r.Listener), req))
	case *kmsg.OffsetCommitRequest:
		b.groups.handleOffsetCommit(r, req)
	case *kmsg.OffsetFetchRequest:
		r.Respond(b.groups.handleOffsetFetch(req))
	case *kmsg.JoinGroupRequest:
		b.groups.handleJoinGroup(r, req)
	case *kmsg.SyncGroupRequest:
		b.groups.handleSyncGroup(r, req)
	case *kmsg.HeartbeatRequest:
		b.groups.handleHeartbeat(r, req)
	case *kmsg.LeaveGroupRequest:
		b.groups.handleLeaveGroup(r, req)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		b.groups.handleConsumerGroupHeartbeat(r, req)
	case *kmsg.ShareGroupHeartbeatRequest:
		b.groups.handleShareGroupHeartbeat(r, req)
	case *kmsg.ShareGroupDescribeRequest:
		r.Respond(b.groups.handleShareGroupDescribe(req))
	case *kmsg.DescribeShareGroupOffsetsRequest:
		b.groups.handleDescribeShareGroupOffsets(r, req)
	case *kmsg.AlterShareGroupOffsetsRequest:
		b.groups.handleAlterShareGroupOffsets(r, req)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		b.groups.handleDeleteShareGroupOffsets(r, req)
	case *kmsg.InitializeShareGroupStateRequest:
		b.shares.handleInitializeShareGroupState(r, req)
	case *kmsg.ReadShareGroupStateSummaryRequest:
		b.shares.handleReadShareGroupStateSummary(r, req)
	case *kmsg.DeleteShareGroupStateRequest:
		b.shares.handleDeleteShareGroupState(r, req)
	case *kmsg.ConsumerGroupDescribeRequest:
		r.Respond(b.groups.handleConsumerGroupDescribe(req))
	case *kmsg.TxnOffsetCommitRequest:
		b.groups.handleTxnOffsetCommit(r, req)
	case *kmsg.AddPartitionsToTxnRequest:
		b.txns.handleAddPartitionsToTxn(r, req)
	case *kmsg.AddOffsetsToTxnRequest:
		b.txns.handleAddOffsetsToTxn(r, req)
	case *kmsg.EndTxnRequest:
		b.txns.handleEndTxn(r, req)
	case *kmsg.ShareFetchRequest:
		b.shares.handleShareFetch(r, req)
	case *kmsg.ShareAcknowledgeRequest:
		b.shares.handleShareAcknowledge(r, req)
	case *kmsg.WriteTxnMarkersRequest:
		b.txns.handleWriteTxnMarkers(r, req)
	default:
		b.e.Log("unhandled-request", "api", r.Header.Name())
		r.CloseConn()
	}
}

// checkInvariants asserts every replica's invariants; it runs after every
// request and every replication step.
func (b *Broker) checkInvariants() {
	checkEach(b.partitions, metadata.TopicPartition.Compare, func(_ metadata.TopicPartition, p *partition) string {
		return p.invariantViolation()
	})
	b.groups.checkInvariants()
	b.txns.checkInvariants()
	b.shares.checkInvariants()
}

// handleMetadata answers with the brokers' endpoints on the listener the
// request came in on; a broker without one is left out, and a partition it
// leads answers LISTENER_NOT_FOUND (Kafka's KRaftMetadataCache).
func (b *Broker) handleMetadata(listener string, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	resp.ClusterID = &b.opts.ClusterID
	resp.ControllerID = b.opts.ID // this broker forwards admin requests
	for _, br := range b.image.Brokers {
		addr, ok := br.AddrOn(listener)
		if !ok {
			continue
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID = br.ID
		rb.Host, rb.Port = metadata.SplitAddr(addr)
		resp.Brokers = append(resp.Brokers, rb)
	}
	var names []string
	if req.Topics == nil {
		names = b.image.TopicNames()
	} else {
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	for _, name := range names {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		t := b.image.Topics[name]
		if t == nil {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if req.Topics != nil && (req.AllowAutoTopicCreation || req.Version < 4) {
				rt.ErrorCode = b.autoCreateTopic(name)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = t.ID
		rt.IsInternal = metadata.Internal(name)
		for _, p := range t.Partitions {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Leader = p.Leader
			rp.LeaderEpoch = p.LeaderEpoch
			rp.Replicas = slices.Clone(p.Replicas)
			rp.ISR = slices.Clone(p.ISR)
			rp.OfflineReplicas, rp.ErrorCode = b.partitionHealth(listener, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// leading returns this broker's replica of tp if it leads it in the epoch a
// client believes current (KIP-320: -1 skips the check, and so does
// kip320.fetch.epoch.validation=false), else the Kafka error to answer.
func (b *Broker) leading(tp metadata.TopicPartition, currentEpoch int32) (*partition, int16) {
	p := b.partitions[tp]
	switch {
	case b.image.Topics[tp.Topic] == nil:
		return nil, kerr.UnknownTopicOrPartition.Code
	case p == nil || !p.leading():
		return nil, kerr.NotLeaderForPartition.Code
	case !b.cfg.FetchEpochValidation || currentEpoch < 0:
		return p, 0
	case currentEpoch < p.epoch():
		return nil, kerr.FencedLeaderEpoch.Code
	case currentEpoch > p.epoch():
		return nil, kerr.UnknownLeaderEpoch.Code
	}
	return p, 0
}

func (b *Broker) handleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	for _, rt := range req.Topics {
		tr := kmsg.NewOffsetForLeaderEpochResponseTopic()
		tr.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			pr := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			pr.Partition = rp.Partition
			pr.LeaderEpoch, pr.EndOffset = -1, -1
			p, code := b.leading(metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.CurrentLeaderEpoch)
			pr.ErrorCode = code
			if code == 0 {
				pr.LeaderEpoch, pr.EndOffset = p.log.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp
}

// handleCreateTopics forwards to the controller, as a KRaft broker does.
func (b *Broker) handleCreateTopics(r *rpc.Request, req *kmsg.CreateTopicsRequest) {
	fwd := kmsg.NewPtrCreateTopicsRequest()
	fwd.Topics = req.Topics
	fwd.TimeoutMillis = req.TimeoutMillis
	fwd.ValidateOnly = req.ValidateOnly
	b.controller.Do(fwd, b.cfg.BrokerSessionTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			out := kmsg.NewPtrCreateTopicsResponse()
			for _, t := range req.Topics {
				rt := kmsg.NewCreateTopicsResponseTopic()
				rt.Topic = t.Topic
				rt.ErrorCode = kerr.RequestTimedOut.Code
				msg := fmt.Sprintf("controller: %v", err)
				rt.ErrorMessage = &msg
				out.Topics = append(out.Topics, rt)
			}
			r.Respond(out)
			return
		}
		r.Respond(resp)
	})
}

// handleDescribeQuorum forwards to the controllers, as a KRaft broker does
// (only the quorum's leader describes it: the controller channel moves on
// from one that answers NOT_LEADER_OR_FOLLOWER, and the client asks again).
func (b *Broker) handleDescribeQuorum(r *rpc.Request, req *kmsg.DescribeQuorumRequest) {
	fwd := kmsg.NewPtrDescribeQuorumRequest()
	fwd.Topics = req.Topics
	b.controller.Do(fwd, b.cfg.BrokerSessionTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			out := kmsg.NewPtrDescribeQuorumResponse()
			out.ErrorCode = kerr.RequestTimedOut.Code
			msg := fmt.Sprintf("controller: %v", err)
			out.ErrorMessage = &msg
			r.Respond(out)
			return
		}
		r.Respond(resp)
	})
}

// producerIDBlock hands out producer ids from blocks the controller
// allocates; a request waits while a block is fetched.
type producerIDBlock struct {
	next, end int64
	fetching  bool
	waiting   []func(id int64, code int16)
}

func (b *Broker) allocateProducerID(done func(id int64, code int16)) {
	pb := &b.producerIDs
	if pb.next < pb.end {
		id := pb.next
		pb.next++
		done(id, 0)
		return
	}
	pb.waiting = append(pb.waiting, done)
	if pb.fetching || b.brokerEpoch < 0 {
		if b.brokerEpoch < 0 {
			pb.waiting = pb.waiting[:len(pb.waiting)-1]
			done(-1, kerr.CoordinatorNotAvailable.Code)
		}
		return
	}
	pb.fetching = true
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = b.opts.ID, b.brokerEpoch
	b.controller.Do(req, b.cfg.BrokerSessionTimeout, func(resp kmsg.Response, err error) {
		pb.fetching = false
		waiting := pb.waiting
		pb.waiting = nil
		if err == nil && resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode == 0 {
			ar := resp.(*kmsg.AllocateProducerIDsResponse)
			pb.next, pb.end = ar.ProducerIDStart, ar.ProducerIDStart+int64(ar.ProducerIDLen)
		}
		if pb.next >= pb.end {
			for _, w := range waiting {
				w(-1, kerr.CoordinatorNotAvailable.Code) // retriable: the client asks again
			}
			return
		}
		for _, w := range waiting {
			b.allocateProducerID(w)
		}
	})
}

// handleInitProducerID gives an idempotent producer a fresh id at epoch 0;
// transactional ids go to the transaction coordinator.
func (b *Broker) handleInitProducerID(r *rpc.Request, req *kmsg.InitProducerIDRequest) {
	if req.TransactionalID != nil {
		b.txns.handleInitProducerID(r, req)
		return
	}
	b.allocateProducerID(func(id int64, code int16) {
		resp := kmsg.NewPtrInitProducerIDResponse()
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = id, 0, code
		if code != 0 {
			resp.ProducerID, resp.ProducerEpoch = -1, -1
		}
		r.Respond(resp)
	})
}
