package broker

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share group offsets admin APIs (KIP-932): DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets go to the group's
// coordinator, which asks for (or sets, or deletes) the share-partition
// state where it lives. In Kafka that is the share coordinator
// (ReadShareGroupStateSummary, InitializeShareGroupState and
// DeleteShareGroupState, by group:topic-id:partition); here the state
// lives at each partition's leader (share_fetch.go), so the group
// coordinator sends those same requests to the leaders. Altering and
// deleting need an empty group (NON_EMPTY_GROUP otherwise); altering a
// group that does not exist creates it, empty.
//
// Not modelled: the lag of DescribeShareGroupOffsets v1 (Kafka computes it
// from the partition's latest offset: -1 here, unknown).

// shareStateTimeout bounds a leader's answer to the coordinator.
const shareStateTimeout = 10 * time.Second

// shareStateCall sends a share-state request to leader, or serves it
// here if this broker leads.
func (c *groupCoordinator) shareStateCall(leader int32, req kmsg.Request, done func(kmsg.Response)) {
	b := c.b
	if leader == b.opts.ID {
		done(b.shares.serveShareState(req))
		return
	}
	if c.sharePeers == nil {
		c.sharePeers = map[int32]*rpc.Client{}
	}
	peer, ok := b.peerClient(c.sharePeers, leader, "-share")
	if !ok {
		done(nil)
		return
	}
	peer.Do(req, shareStateTimeout, func(resp kmsg.Response, err error) {
		if err != nil {
			resp = nil
		}
		done(resp)
	})
}

// byLeader groups partitions by their leader; those without one get
// LEADER_NOT_AVAILABLE, unknown ones UNKNOWN_TOPIC_OR_PARTITION, in
// codes.
func (c *groupCoordinator) byLeader(tps []metadata.TopicPartition, codes map[metadata.TopicPartition]int16) (map[int32][]metadata.TopicPartition, []int32) {
	out := map[int32][]metadata.TopicPartition{}
	for _, tp := range tps {
		ps, ok := c.b.image.Partition(tp)
		switch {
		case !ok:
			codes[tp] = kerr.UnknownTopicOrPartition.Code
			continue
		case ps.Leader == metadata.NoLeader:
			codes[tp] = kerr.LeaderNotAvailable.Code
			continue
		}
		out[ps.Leader] = append(out[ps.Leader], tp)
	}
	return out, slices.Sorted(maps.Keys(out))
}

// shareStateTopics writes tps (one leader's, sorted) by topic id.
func (c *groupCoordinator) shareStateTopics(tps []metadata.TopicPartition, add func(id [16]byte, p int32)) {
	for _, tp := range tps {
		add(c.b.image.Topics[tp.Topic].ID, tp.Partition)
	}
}

// fanOut sends one request per leader of tps (sorted) and calls done once
// every answer is in, with each partition's outcome read by read.
func (c *groupCoordinator) fanOut(tps []metadata.TopicPartition, request func(tps []metadata.TopicPartition) kmsg.Request,
	read func(resp kmsg.Response, out map[metadata.TopicPartition]int16), done func(map[metadata.TopicPartition]int16)) {
	codes := map[metadata.TopicPartition]int16{}
	groups, leaders := c.byLeader(tps, codes)
	waiting := len(leaders) + 1
	finish := func() {
		if waiting--; waiting == 0 {
			done(codes)
		}
	}
	for _, l := range leaders {
		mine := groups[l]
		c.shareStateCall(l, request(mine), func(resp kmsg.Response) {
			if resp == nil {
				for _, tp := range mine {
					codes[tp] = kerr.CoordinatorNotAvailable.Code
				}
			} else {
				read(resp, codes)
			}
			finish()
		})
	}
	finish()
}

func (c *groupCoordinator) nameOf(id [16]byte) string {
	return c.b.topicNames[id]
}

// deleteShareState asks the leaders of tps to drop group's share state.
func (c *groupCoordinator) deleteShareState(group string, tps partitionSet, done func(map[metadata.TopicPartition]int16)) {
	c.fanOut(tps.sorted(), func(mine []metadata.TopicPartition) kmsg.Request {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = group
		c.shareStateTopics(mine, func(id [16]byte, p int32) {
			if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != id {
				t := kmsg.NewDeleteShareGroupStateRequestTopic()
				t.TopicID = id
				req.Topics = append(req.Topics, t)
			}
			rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			rp.Partition = p
			req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, rp)
		})
		return req
	}, func(resp kmsg.Response, out map[metadata.TopicPartition]int16) {
		for _, t := range resp.(*kmsg.DeleteShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				out[metadata.TopicPartition{Topic: c.nameOf(t.TopicID), Partition: p.Partition}] = p.ErrorCode
			}
		}
	}, done)
}

// handleDescribeShareGroupOffsets serves DescribeShareGroupOffsets (key
// 90): each group's share-partition start offsets, read from the
// partitions' leaders; all initialized partitions when a group names no
// topics.
func (c *groupCoordinator) handleDescribeShareGroupOffsets(r *rpc.Request, req *kmsg.DescribeShareGroupOffsetsRequest) {
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	resp.Groups = make([]kmsg.DescribeShareGroupOffsetsResponseGroup, len(req.Groups))
	waiting := 1
	finish := func() {
		if waiting--; waiting == 0 {
			c.b.respond(r, resp)
		}
	}
	for i, rg := range req.Groups {
		dg := &resp.Groups[i]
		*dg = kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		dg.GroupID = rg.GroupID
		_, code := c.serving(rg.GroupID)
		g := c.groups[rg.GroupID]
		if code == 0 && (g == nil || g.share == nil) {
			code = kerr.GroupIDNotFound.Code
		}
		if code != 0 {
			dg.ErrorCode = code
			continue
		}
		var tps []metadata.TopicPartition
		if rg.Topics == nil {
			tps = g.share.initialized.sorted()
		} else {
			for _, rt := range rg.Topics {
				for _, p := range rt.Partitions {
					tps = append(tps, metadata.TopicPartition{Topic: rt.Topic, Partition: p})
				}
			}
		}
		type summary struct {
			code  int16
			start int64
		}
		got := map[metadata.TopicPartition]summary{}
		var ask []metadata.TopicPartition
		for _, tp := range tps {
			switch {
			case c.b.image.Topics[tp.Topic] == nil:
				got[tp] = summary{code: kerr.UnknownTopicOrPartition.Code}
			case !g.share.initialized[tp]:
				got[tp] = summary{start: -1}
			default:
				ask = append(ask, tp)
			}
		}
		slices.SortFunc(ask, metadata.TopicPartition.Compare)
		answer := func(codes map[metadata.TopicPartition]int16) {
			for tp, code := range codes {
				if code != 0 {
					got[tp] = summary{code: code, start: -1}
				}
			}
			for _, tp := range tps {
				t := c.b.image.Topics[tp.Topic]
				if n := len(dg.Topics); n == 0 || dg.Topics[n-1].Topic != tp.Topic {
					dt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
					dt.Topic = tp.Topic
					if t != nil {
						dt.TopicID = t.ID
					}
					dg.Topics = append(dg.Topics, dt)
				}
				dp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				s := got[tp]
				dp.Partition, dp.StartOffset, dp.LeaderEpoch, dp.Lag, dp.ErrorCode = tp.Partition, s.start, -1, -1, s.code
				dg.Topics[len(dg.Topics)-1].Partitions = append(dg.Topics[len(dg.Topics)-1].Partitions, dp)
			}
			finish()
		}
		waiting++
		group := rg.GroupID
		c.fanOut(ask, func(mine []metadata.TopicPartition) kmsg.Request {
			req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			req.GroupID = group
			c.shareStateTopics(mine, func(id [16]byte, p int32) {
				if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != id {
					t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
					t.TopicID = id
					req.Topics = append(req.Topics, t)
				}
				rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
				rp.Partition, rp.LeaderEpoch = p, -1
				req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, rp)
			})
			return req
		}, func(resp kmsg.Response, out map[metadata.TopicPartition]int16) {
			for _, t := range resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
				for _, p := range t.Partitions {
					tp := metadata.TopicPartition{Topic: c.nameOf(t.TopicID), Partition: p.Partition}
					out[tp] = p.ErrorCode
					got[tp] = summary{code: p.ErrorCode, start: p.StartOffset}
				}
			}
		}, answer)
	}
	finish()
}

// handleAlterShareGroupOffsets serves AlterShareGroupOffsets (key 91):
// the start offsets of an empty share group's partitions set at their
// leaders (their in-flight state discarded), then the partitions recorded
// as initialized.
func (c *groupCoordinator) handleAlterShareGroupOffsets(r *rpc.Request, req *kmsg.AlterShareGroupOffsetsRequest) {
	resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	p, code := c.serving(req.GroupID)
	var g *group
	if code == 0 {
		// A group this creates is written at once, on its own: the
		// initialized partitions come in a later step (group_write.go).
		w := c.beginWrite(req.GroupID)
		var e *heartbeatError
		if g, e = c.shareGroupFor(&w, req.GroupID, true); e != nil {
			code = e.code
			resp.ErrorMessage = kmsg.StringPtr(e.msg)
		} else if len(g.share.members) > 0 {
			code = kerr.NonEmptyGroup.Code
		} else {
			code = c.write(p, w, func(int16) {})
		}
	}
	if code != 0 {
		resp.ErrorCode = code
		c.b.respond(r, resp)
		return
	}
	offsets := map[metadata.TopicPartition]int64{}
	var tps []metadata.TopicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			offsets[tp] = rp.StartOffset
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, metadata.TopicPartition.Compare)
	group := req.GroupID
	c.fanOut(tps, func(mine []metadata.TopicPartition) kmsg.Request {
		ireq := kmsg.NewPtrInitializeShareGroupStateRequest()
		ireq.GroupID = group
		c.shareStateTopics(mine, func(id [16]byte, p int32) {
			if n := len(ireq.Topics); n == 0 || ireq.Topics[n-1].TopicID != id {
				t := kmsg.NewInitializeShareGroupStateRequestTopic()
				t.TopicID = id
				ireq.Topics = append(ireq.Topics, t)
			}
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p, -1, offsets[metadata.TopicPartition{Topic: c.nameOf(id), Partition: p}]
			ireq.Topics[len(ireq.Topics)-1].Partitions = append(ireq.Topics[len(ireq.Topics)-1].Partitions, rp)
		})
		return ireq
	}, func(resp kmsg.Response, out map[metadata.TopicPartition]int16) {
		for _, t := range resp.(*kmsg.InitializeShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				out[metadata.TopicPartition{Topic: c.nameOf(t.TopicID), Partition: p.Partition}] = p.ErrorCode
			}
		}
	}, func(codes map[metadata.TopicPartition]int16) {
		done := partitionSet{}
		for _, tp := range tps {
			if codes[tp] == 0 {
				done[tp] = true
			}
		}
		w := c.beginWrite(group)
		if c.groups[group] == g && g.share != nil {
			c.markShareInitialized(&w, g, done)
		}
		c.write(p, w, func(code int16) {
			for _, rt := range req.Topics {
				at := kmsg.NewAlterShareGroupOffsetsResponseTopic()
				at.Topic = rt.Topic
				if t := c.b.image.Topics[rt.Topic]; t != nil {
					at.TopicID = t.ID
				}
				for _, rp := range rt.Partitions {
					ap := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
					ap.Partition = rp.Partition
					ap.ErrorCode = codes[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
					if ap.ErrorCode == 0 {
						ap.ErrorCode = code
					}
					at.Partitions = append(at.Partitions, ap)
				}
				resp.Topics = append(resp.Topics, at)
			}
			c.b.respond(r, resp)
		})
	})
}

// handleDeleteShareGroupOffsets serves DeleteShareGroupOffsets (key 92):
// an empty share group's state of the topics named deleted at the
// leaders, and the topics no longer recorded as initialized.
func (c *groupCoordinator) handleDeleteShareGroupOffsets(r *rpc.Request, req *kmsg.DeleteShareGroupOffsetsRequest) {
	resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	p, code := c.serving(req.GroupID)
	g := c.groups[req.GroupID]
	switch {
	case code != 0:
	case g == nil || g.share == nil:
		code = kerr.GroupIDNotFound.Code
	case len(g.share.members) > 0:
		code = kerr.NonEmptyGroup.Code
	}
	if code != 0 {
		resp.ErrorCode = code
		c.b.respond(r, resp)
		return
	}
	del := partitionSet{}
	for _, rt := range req.Topics {
		for tp := range g.share.initialized {
			if tp.Topic == rt.Topic {
				del[tp] = true
			}
		}
	}
	group := req.GroupID
	c.deleteShareState(group, del, func(codes map[metadata.TopicPartition]int16) {
		w := c.beginWrite(group)
		if c.groups[group] == g && g.share != nil {
			changed := false
			for tp := range del {
				if codes[tp] == 0 {
					delete(g.share.initialized, tp)
					changed = true
				}
			}
			if changed {
				w.add(encodeShareStatePartitionMetadataKey(group), c.encodeShareStatePartitionMetadataValue(g.share.initialized))
			}
		}
		c.write(p, w, func(code int16) {
			for _, rt := range req.Topics {
				dt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
				dt.Topic = rt.Topic
				t := c.b.image.Topics[rt.Topic]
				switch {
				case t == nil:
					dt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					dt.TopicID = t.ID
					dt.ErrorCode = code
					for _, tp := range slices.SortedFunc(maps.Keys(del), metadata.TopicPartition.Compare) {
						if tp.Topic == rt.Topic && codes[tp] != 0 && dt.ErrorCode == 0 {
							dt.ErrorCode = codes[tp]
						}
					}
				}
				resp.Topics = append(resp.Topics, dt)
			}
			c.b.respond(r, resp)
		})
	})
}

// serveShareState answers a group coordinator's share-state request from
// this leader's share partitions (what Kafka's share coordinator answers
// from __share_group_state).
func (m *shareManager) serveShareState(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		return m.initializeShareGroupState(req)
	case *kmsg.ReadShareGroupStateSummaryRequest:
		return m.readShareGroupStateSummary(req)
	case *kmsg.DeleteShareGroupStateRequest:
		return m.deleteShareGroupState(req)
	}
	panic(fmt.Sprintf("share state request %T", req))
}

func (m *shareManager) handleInitializeShareGroupState(r *rpc.Request, req *kmsg.InitializeShareGroupStateRequest) {
	if !m.b.clusterAction(r) {
		r.CloseConn()
		return
	}
	r.Respond(m.initializeShareGroupState(req))
}

func (m *shareManager) handleReadShareGroupStateSummary(r *rpc.Request, req *kmsg.ReadShareGroupStateSummaryRequest) {
	if !m.b.clusterAction(r) {
		r.CloseConn()
		return
	}
	r.Respond(m.readShareGroupStateSummary(req))
}

func (m *shareManager) handleDeleteShareGroupState(r *rpc.Request, req *kmsg.DeleteShareGroupStateRequest) {
	if !m.b.clusterAction(r) {
		r.CloseConn()
		return
	}
	r.Respond(m.deleteShareGroupState(req))
}

// leadingShare finds the partition of topic id this broker leads.
func (m *shareManager) leadingShare(id [16]byte, partition int32) (*partition, int16) {
	name, ok := m.b.topicNames[id]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	return m.b.leading(metadata.TopicPartition{Topic: name, Partition: partition}, -1)
}

// initializeShareGroupState gives each partition a fresh share partition
// at the start offset asked (the records in flight, and their locks,
// dropped), with the next state epoch.
func (m *shareManager) initializeShareGroupState(req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, rt := range req.Topics {
		t := kmsg.NewInitializeShareGroupStateResponseTopic()
		t.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			pr := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			pr.Partition = rp.Partition
			p, code := m.leadingShare(rt.TopicID, rp.Partition)
			switch {
			case code != 0:
				pr.ErrorCode = code
			case rp.StartOffset < 0:
				pr.ErrorCode = kerr.InvalidRequest.Code
			default:
				k := shareKey{group: req.GroupID, tp: p.tp}
				epoch := int32(1)
				if old := m.partitions[k]; old != nil {
					epoch = old.stateEpoch + 1
					m.drop(old)
				}
				m.newSharePartition(k, p, rp.StartOffset, epoch)
			}
			t.Partitions = append(t.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// readShareGroupStateSummary is each partition's start offset and state
// epoch; one without state is -1.
func (m *shareManager) readShareGroupStateSummary(req *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	for _, rt := range req.Topics {
		t := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		t.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			pr := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			pr.Partition, pr.StartOffset, pr.StateEpoch, pr.LeaderEpoch = rp.Partition, -1, -1, -1
			p, code := m.leadingShare(rt.TopicID, rp.Partition)
			if code != 0 {
				pr.ErrorCode = code
			} else if sp := m.partitions[shareKey{group: req.GroupID, tp: p.tp}]; sp != nil && m.live(sp) {
				pr.StartOffset, pr.StateEpoch, pr.LeaderEpoch = sp.st.startOffset, sp.stateEpoch, sp.epoch
				pr.DeliveryCompleteCount = int32(sp.st.deliveryComplete())
			}
			t.Partitions = append(t.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// deleteShareGroupState drops each partition's share partition.
func (m *shareManager) deleteShareGroupState(req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupStateResponseTopic()
		t.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			pr := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			pr.Partition = rp.Partition
			p, code := m.leadingShare(rt.TopicID, rp.Partition)
			if code != 0 {
				pr.ErrorCode = code
			} else if sp := m.partitions[shareKey{group: req.GroupID, tp: p.tp}]; sp != nil {
				m.b.e.Log("share-partition-deleted", "share-partition", sp.key.String())
				m.drop(sp)
			}
			t.Partitions = append(t.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
