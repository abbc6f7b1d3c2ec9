package broker

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group admin APIs, as Kafka's GroupCoordinator serves them for classic
// groups: ListGroups and DescribeGroups read the coordinator's cache;
// DeleteGroups and OffsetDelete write tombstones to the group's offsets
// partition and answer once they are committed there, so that a new
// coordinator, loading the partition, forgets what was deleted too.

// listed reports whether g exists as Kafka's ListGroups sees groups: one
// with members, committed offsets or offsets pending in a transaction. A
// group whose last record is a tombstone leaves nothing.
func (g *group) listed() bool {
	return len(g.members) > 0 || len(g.offsets) > 0 || len(g.pendingTxnOffsets) > 0 || g.state != groupEmpty || g.consumer != nil || g.share != nil
}

// typeName is the group's type as ListGroups names it.
func (g *group) typeName() string {
	switch {
	case g.consumer != nil:
		return "consumer"
	case g.share != nil:
		return "share"
	}
	return "classic"
}

// stateName is the group's state as ListGroups names it.
func (g *group) stateName() string {
	switch {
	case g.consumer != nil:
		return g.consumer.state()
	case g.share != nil:
		return g.share.state()
	}
	return g.state.String()
}

// protocolTypeName is the group's protocol type: a consumer group's is
// "consumer", a share group's "share", as Kafka lists them.
func (g *group) protocolTypeName() string {
	switch {
	case g.consumer != nil:
		return "consumer"
	case g.share != nil:
		return "share"
	}
	return g.protocolType
}

// handleListGroups lists the groups this broker coordinates, filtered by
// state (v4+) and type (v5+: "classic", "consumer" or "share"); while one of
// its offsets partitions is still loading the answer is
// COORDINATOR_LOAD_IN_PROGRESS with what is loaded.
func (c *groupCoordinator) handleListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	for _, tp := range slices.SortedFunc(maps.Keys(c.b.partitions), metadata.TopicPartition.Compare) {
		if p := c.b.partitions[tp]; tp.Topic == metadata.OffsetsTopic && p.leading() {
			if epoch, ok := c.loaded[tp.Partition]; !ok || epoch != p.epoch() {
				resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[id]
		if !g.listed() {
			continue
		}
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, g.stateName()) }) {
			continue
		}
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(s string) bool { return strings.EqualFold(s, g.typeName()) }) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, g.protocolTypeName(), g.stateName(), g.typeName()
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// handleDescribeGroups describes each group as Kafka's
// GroupCoordinator.handleDescribeGroup does: the protocol and the members'
// metadata and assignments only once the group is Stable (while it
// rebalances the protocol is not yet chosen); a group it does not know is
// Dead with no members.
func (c *groupCoordinator) handleDescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = -2147483648 // not requested or not known, as Kafka answers without an authorizer
		if _, code := c.serving(id); code != 0 {
			dg.ErrorCode = code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		g := c.groups[id]
		if g == nil || !g.listed() || g.consumer != nil || g.share != nil {
			// Kafka describes only classic groups here (classicGroup
			// refuses a consumer group): the others are Dead to it.
			dg.State = groupDead.String()
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg.State, dg.ProtocolType = g.state.String(), g.protocolType
		stable := g.state == groupStable
		if stable {
			dg.Protocol = g.protocol
		}
		for _, m := range g.sortedMembers() {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.clientHost
			if m.instanceID != "" {
				dm.InstanceID = kmsg.StringPtr(m.instanceID)
			}
			if stable {
				dm.ProtocolMetadata, dm.MemberAssignment = m.metadata(g.protocol), m.assignment
			}
			dg.Members = append(dg.Members, dm)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// handleDeleteGroups deletes empty groups: a group with members is
// NON_EMPTY_GROUP, one it does not know GROUP_ID_NOT_FOUND. Each deleted
// group's offsets and metadata get tombstones in its offsets partition;
// the group answers once they are committed.
func (c *groupCoordinator) handleDeleteGroups(r *rpc.Request, req *kmsg.DeleteGroupsRequest) {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, len(req.Groups))
	waiting := 1
	finish := func() {
		if waiting--; waiting == 0 {
			c.b.respond(r, resp)
		}
	}
	for i, id := range req.Groups {
		resp.Groups[i] = kmsg.NewDeleteGroupsResponseGroup()
		resp.Groups[i].Group = id
		p, code := c.serving(id)
		g := c.groups[id]
		switch {
		case code != 0:
		case g == nil || !g.listed():
			code = kerr.GroupIDNotFound.Code
		case len(g.members) > 0 || g.state != groupEmpty || (g.consumer != nil && len(g.consumer.members) > 0) || (g.share != nil && len(g.share.members) > 0):
			code = kerr.NonEmptyGroup.Code
		case len(g.pendingTxnOffsets) > 0:
			// Kafka waits for the transaction; refusing keeps the
			// transaction's offsets from outliving the group.
			code = kerr.NonEmptyGroup.Code
		}
		if code != 0 {
			resp.Groups[i].ErrorCode = code
			continue
		}
		var recs []record.Record
		for _, tp := range slices.SortedFunc(maps.Keys(g.offsets), metadata.TopicPartition.Compare) {
			recs = append(recs, record.Record{Key: encodeOffsetKey(id, tp)})
		}
		switch {
		case g.consumer != nil:
			for _, k := range consumerGroupTombstoneKeys(id) {
				recs = append(recs, record.Record{Key: k})
			}
		case g.share != nil:
			for _, k := range shareGroupTombstoneKeys(id) {
				recs = append(recs, record.Record{Key: k})
			}
		default:
			recs = append(recs, record.Record{Key: encodeGroupKey(id)})
		}
		waiting++
		c.b.appendReplicated(p, recs, func(code int16) {
			resp.Groups[i].ErrorCode = code
			if code == 0 && c.groups[id] == g {
				delete(c.groups, id)
				c.b.e.Log("group-deleted", "group", id)
				if g.share != nil {
					// Kafka deletes the share-partition state first
					// (DeleteShareGroupState to the share coordinator);
					// here the leaders drop theirs after.
					c.deleteShareState(id, g.share.initialized, func(map[metadata.TopicPartition]int16) {})
				}
			}
			finish()
		})
	}
	finish()
}

// handleOffsetDelete deletes a group's committed offsets of the partitions
// named, as Kafka's GroupCoordinator.handleDeleteOffsets does: refused per
// partition with GROUP_SUBSCRIBED_TO_TOPIC while a member of a consumer
// group subscribes to its topic; a group it does not know is
// GROUP_ID_NOT_FOUND.
func (c *groupCoordinator) handleOffsetDelete(r *rpc.Request, req *kmsg.OffsetDeleteRequest) {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	p, code := c.serving(req.Group)
	g := c.groups[req.Group]
	if code == 0 && (g == nil || !g.listed()) {
		code = kerr.GroupIDNotFound.Code
	}
	if code != 0 {
		resp.ErrorCode = code
		c.b.respond(r, resp)
		return
	}
	subscribed := g.subscribedTopics()
	var recs []record.Record
	var deleted []metadata.TopicPartition
	for _, rt := range req.Topics {
		tr := kmsg.NewOffsetDeleteResponseTopic()
		tr.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			pr := kmsg.NewOffsetDeleteResponseTopicPartition()
			pr.Partition = rp.Partition
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			switch {
			case subscribed[rt.Topic]:
				pr.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := g.offsets[tp]; ok {
					recs = append(recs, record.Record{Key: encodeOffsetKey(req.Group, tp)})
					deleted = append(deleted, tp)
				}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	if len(recs) == 0 {
		c.b.respond(r, resp)
		return
	}
	c.b.appendReplicated(p, recs, func(code int16) {
		if code != 0 {
			for ti := range resp.Topics {
				for pi := range resp.Topics[ti].Partitions {
					if resp.Topics[ti].Partitions[pi].ErrorCode == 0 {
						resp.Topics[ti].Partitions[pi].ErrorCode = code
					}
				}
			}
		} else if c.groups[req.Group] == g {
			for _, tp := range deleted {
				delete(g.offsets, tp)
			}
			c.b.e.Log("offsets-deleted", "group", req.Group, "partitions", len(deleted))
		}
		c.b.respond(r, resp)
	})
}

// subscribedTopics are the topics a consumer group's members subscribe to,
// read from their ConsumerProtocolSubscription metadata in the group's
// protocol (what Kafka's GroupMetadata.isSubscribedToTopic reads).
func (g *group) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	if g.consumer != nil { // by name, and what regexes resolved to
		for _, m := range g.consumer.sortedMembers() {
			for _, t := range m.subscribedTopics {
				out[t] = true
			}
		}
		for t := range g.consumer.topics {
			out[t] = true
		}
		return out
	}
	if g.protocolType != "consumer" {
		return out
	}
	for _, m := range g.sortedMembers() {
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(m.metadata(g.protocol)); err != nil {
			continue
		}
		for _, t := range sub.Topics {
			out[t] = true
		}
	}
	return out
}

// handleDescribeCluster describes the cluster as a KRaft broker does: its
// brokers' endpoints on the request's listener and, as the controller, a
// live broker (clients send admin requests there and it forwards them).
// Describing the controllers (v1 EndpointType 2, KIP-919) is for the
// controllers themselves: UNSUPPORTED_ENDPOINT_TYPE here.
func (b *Broker) handleDescribeCluster(listener string, req *kmsg.DescribeClusterRequest) *kmsg.DescribeClusterResponse {
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("endpoint type %d: a broker describes brokers (1)", req.EndpointType))
		return resp
	}
	resp.ClusterID = b.opts.ClusterID
	resp.ControllerID = b.opts.ID
	resp.ClusterAuthorizedOperations = -2147483648
	for _, br := range b.image.Brokers {
		addr, ok := br.AddrOn(listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID = br.ID
		rb.Host, rb.Port = metadata.SplitAddr(addr)
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp
}
