package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ID is the controller's node id in UpdateMetadata (brokers are 0..N).
const ID int32 = 3000

// Versions are the APIs the controller serves.
var Versions = wire.NewVersions(
	wire.Range{Key: 18, Min: 0, Max: 3}, // ApiVersions
	wire.Range{Key: 19, Min: 0, Max: 7}, // CreateTopics
	wire.Range{Key: 56, Min: 0, Max: 1}, // AlterPartition (topic names)
	wire.Range{Key: 62, Min: 0, Max: 1}, // BrokerRegistration
	wire.Range{Key: 63, Min: 0, Max: 1}, // BrokerHeartbeat
	wire.Range{Key: 67, Min: 0, Max: 0}, // AllocateProducerIds
)

// pushVersions are the APIs the controller calls on brokers.
var pushVersions = wire.NewVersions(
	wire.Range{Key: 6, Min: metadata.UpdateMetadataVersion, Max: metadata.UpdateMetadataVersion},
)

// ProducerIDBlock is how many producer ids a broker gets at a time.
const ProducerIDBlock = 1000

// Controller is the controller process.
type Controller struct {
	cfg   config.Cluster
	e     env.Env
	store store
	st    *state
	rt    *rpc.Router
	push  map[int32]*pusher
}

// New returns a controller process with cfg.
func New(cfg config.Cluster) *Controller { return &Controller{cfg: cfg} }

// Start implements env.Process: replay the metadata log, bump the
// controller epoch, and give every registered broker one session timeout to
// heartbeat before fencing it.
func (c *Controller) Start(e env.Env) {
	c.e = e
	c.store = store{disk: e.Disk()}
	c.st = newState()
	c.push = map[int32]*pusher{}
	if err := c.store.load(c.st.apply); err != nil {
		e.Halt(fmt.Sprintf("metadata log: %v", err))
		return
	}
	if !c.commit(record{Epoch: c.st.epoch + 1}) {
		return
	}
	now := e.Now()
	for _, b := range c.st.brokers {
		b.lastHeartbeat = now
	}
	c.rt = rpc.NewRouter(e, rpc.NewServer(Versions, c.serve))
	e.Log("controller-start", "epoch", c.st.epoch, "brokers", len(c.st.brokers), "topics", len(c.st.topics))
	c.tick()
	c.pushAll()
}

func (c *Controller) Connected(id env.ConnID, peer string, inbound bool) {
	c.rt.Connected(id, peer, inbound)
}
func (c *Controller) Received(id env.ConnID, frame []byte) { c.rt.Received(id, frame) }
func (c *Controller) Closed(id env.ConnID)                 { c.rt.Closed(id) }

// commit makes records durable, then applies them. A failed write halts
// the controller, as Kafka halts on a failed metadata write.
func (c *Controller) commit(rs ...record) bool {
	if err := c.store.append(rs...); err != nil {
		c.e.Halt(fmt.Sprintf("metadata log append: %v", err))
		return false
	}
	for _, r := range rs {
		c.st.apply(r)
	}
	return true
}

func (c *Controller) serve(r *rpc.Request) {
	switch req := r.Body.(type) {
	case *kmsg.BrokerRegistrationRequest:
		r.Respond(c.handleRegistration(req))
	case *kmsg.BrokerHeartbeatRequest:
		r.Respond(c.handleHeartbeat(req))
	case *kmsg.AlterPartitionRequest:
		r.Respond(c.handleAlterPartition(req))
	case *kmsg.CreateTopicsRequest:
		r.Respond(c.handleCreateTopics(req))
	case *kmsg.AllocateProducerIDsRequest:
		r.Respond(c.handleAllocateProducerIDs(req))
	default:
		r.CloseConn()
	}
}

// tick fences brokers whose session has expired.
func (c *Controller) tick() {
	now := c.e.Now()
	for _, id := range c.st.brokerIDs() {
		b := c.st.brokers[id]
		if !b.fenced && now.Sub(b.lastHeartbeat) > c.cfg.BrokerSessionTimeout {
			c.e.Log("broker-session-expired", "broker", id, "silent", now.Sub(b.lastHeartbeat))
			c.fenceBroker(id)
		}
	}
	c.e.AfterFunc(c.cfg.BrokerHeartbeatInterval/2, c.tick)
}

// fenceBroker fences a broker and moves its leaderships.
func (c *Controller) fenceBroker(id int32) { c.setFenced(id, true, "fence", fence) }

// unfenceBroker lets a broker back in and elects it where partitions wait.
func (c *Controller) unfenceBroker(id int32) { c.setFenced(id, false, "unfence", unfence) }

// setFenced records a broker's new fencing state, applies rule to every
// partition, commits what changed and tells the brokers.
func (c *Controller) setFenced(id int32, fenced bool, why string, rule func(metadata.Partition, int32, func(int32) bool, election) (metadata.Partition, bool)) {
	c.st.brokers[id].fenced = fenced
	var rs []record
	for _, p := range c.st.partitions() {
		if q, changed := rule(p, id, c.st.live, c.election()); changed {
			rs = append(rs, record{Partition: &q})
			c.logElection(why, id, p, q)
		}
	}
	if len(rs) > 0 && !c.commit(rs...) {
		return
	}
	c.pushAll()
}

// election is the rule leaderless partitions are led by.
func (c *Controller) election() election {
	switch {
	case c.cfg.Defects.Has(defect.ElectionIgnoresISR):
		return anyLive
	case c.cfg.UncleanLeaderElection:
		return unclean
	}
	return clean
}

// offlineFor reports whether some leaderless partition could be led by
// broker id — after a controller restart, brokers are live without having
// been unfenced, and offline partitions wait for them.
func (c *Controller) offlineFor(id int32) bool {
	for _, p := range c.st.partitions() {
		if _, ok := unfence(p, id, c.st.live, c.election()); ok {
			return true
		}
	}
	return false
}

func (c *Controller) logElection(why string, broker int32, p, q metadata.Partition) {
	if q.Leader != p.Leader && q.Leader != metadata.NoLeader && p.LeaderEpoch >= 0 {
		if !p.InISR(q.Leader) {
			c.e.Probe(probe.UncleanElection, p.TopicPartition.String())
		}
	}
	if p.Leader != metadata.NoLeader && q.Leader != p.Leader {
		c.e.Probe(probe.LeaderFailover, p.TopicPartition.String())
	}
	c.e.Log("partition-change", "why", why, "broker", broker, "partition", p.TopicPartition.String(),
		"leader", fmt.Sprintf("%d->%d", p.Leader, q.Leader), "epoch", q.LeaderEpoch, "isr", fmt.Sprint(q.ISR))
}

func (c *Controller) handleRegistration(req *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := kmsg.NewPtrBrokerRegistrationResponse()
	addr := ""
	if len(req.Listeners) > 0 {
		l := req.Listeners[0]
		addr = l.Host // a simulated node's name has no port
		if l.Port != 0 {
			addr = metadata.JoinAddr(l.Host, int32(l.Port))
		}
	}
	old := c.st.brokers[req.BrokerID]
	if old != nil && old.Incarnation == req.IncarnationID {
		resp.BrokerEpoch = old.Epoch // a retry of a registration that went through
		return resp
	}
	if old != nil && !old.fenced {
		// The old incarnation's session is still valid: the new one waits
		// until it expires, so leadership moves away first (as Kafka does).
		resp.ErrorCode = kerr.DuplicateBrokerRegistration.Code
		return resp
	}
	rec := brokerRecord{ID: req.BrokerID, Addr: addr, Epoch: c.store.records, Incarnation: req.IncarnationID}
	if !c.commit(record{Broker: &rec}) {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	b := c.st.brokers[req.BrokerID]
	b.fenced = true // until its first heartbeat asking to be unfenced
	b.lastHeartbeat = c.e.Now()
	c.e.Log("broker-registered", "broker", req.BrokerID, "addr", addr, "epoch", rec.Epoch)
	resp.BrokerEpoch = rec.Epoch
	c.pushTo(req.BrokerID)
	return resp
}

func (c *Controller) handleHeartbeat(req *kmsg.BrokerHeartbeatRequest) *kmsg.BrokerHeartbeatResponse {
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	b := c.st.brokers[req.BrokerID]
	if b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		resp.IsFenced = true
		return resp
	}
	b.lastHeartbeat = c.e.Now()
	if !req.WantFence && (b.fenced || c.offlineFor(req.BrokerID)) {
		if b.fenced {
			c.e.Log("broker-unfenced", "broker", req.BrokerID)
		}
		c.unfenceBroker(req.BrokerID)
	}
	resp.IsCaughtUp = true
	resp.IsFenced = b.fenced
	return resp
}

func (c *Controller) handleAlterPartition(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := kmsg.NewPtrAlterPartitionResponse()
	b := c.st.brokers[req.BrokerID]
	if b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	var rs []record
	for _, rt := range req.Topics {
		tr := kmsg.NewAlterPartitionResponseTopic()
		tr.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			pr := kmsg.NewAlterPartitionResponseTopicPartition()
			pr.Partition = rp.Partition
			t := c.st.topics[rt.Topic]
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
			case !validISR(p, rp.NewISR, c.st.live):
				pr.ErrorCode = kerr.IneligibleReplica.Code
			default:
				q := p.Clone()
				q.ISR = slices.Clone(rp.NewISR)
				q.PartitionEpoch++
				rs = append(rs, record{Partition: &q})
				c.e.Log("isr-change", "partition", p.TopicPartition.String(), "isr", fmt.Sprintf("%v->%v", p.ISR, q.ISR), "partitionEpoch", q.PartitionEpoch)
				p = q
			}
			pr.LeaderID, pr.LeaderEpoch, pr.ISR, pr.PartitionEpoch = p.Leader, p.LeaderEpoch, slices.Clone(p.ISR), p.PartitionEpoch
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	if len(rs) > 0 {
		if !c.commit(rs...) {
			return resp // the controller halted; the broker will retry elsewhere
		}
		// The response carries the committed state, which the commit made.
		c.pushAll()
	}
	return resp
}

func (c *Controller) handleAllocateProducerIDs(req *kmsg.AllocateProducerIDsRequest) *kmsg.AllocateProducerIDsResponse {
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	b := c.st.brokers[req.BrokerID]
	if b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	start := c.st.nextProducerID
	if !c.commit(record{ProducerIDs: start + ProducerIDBlock}) {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	resp.ProducerIDStart, resp.ProducerIDLen = start, ProducerIDBlock
	return resp
}

// Pushes: every broker gets the latest image, one request at a time; a
// change while one is in flight sends another after it.

type pusher struct {
	client   *rpc.Client
	inflight bool
	dirty    bool
	retry    env.TimerID
}

func (c *Controller) pushAll() {
	for _, id := range c.st.brokerIDs() {
		c.pushTo(id)
	}
}

func (c *Controller) pushTo(id int32) {
	b := c.st.brokers[id]
	p := c.push[id]
	if p == nil || p.client.Addr() != b.Addr {
		if p != nil {
			p.client.Close()
		}
		p = &pusher{client: rpc.NewClient(c.rt, b.Addr, rpc.ClientOptions{ClientID: "controller", Speaks: pushVersions})}
		c.push[id] = p
	}
	p.dirty = true
	if p.inflight || p.retry != 0 {
		return
	}
	p.dirty = false
	p.inflight = true
	req := c.st.image().ToUpdateMetadata(ID, b.Epoch)
	p.client.Do(req, 5*time.Second, func(resp kmsg.Response, err error) {
		p.inflight = false
		if err == nil {
			if code := resp.(*kmsg.UpdateMetadataResponse).ErrorCode; code != 0 {
				err = kerr.ErrorForCode(code)
			}
		}
		if err != nil {
			p.dirty = true
			p.retry = c.e.AfterFunc(200*time.Millisecond, func() {
				p.retry = 0
				if c.st.brokers[id] != nil && p.dirty {
					c.pushTo(id)
				}
			})
			return
		}
		if p.dirty {
			c.pushTo(id)
		}
	})
}

// Image returns the controller's current view (for tests and the harness),
// or nil before the process has started.
func (c *Controller) Image() *metadata.Image {
	if c.st == nil {
		return nil
	}
	return c.st.image()
}

// Loaded reports whether the controller has its state, so Image is not nil.
func (c *Controller) Loaded() bool { return c.st != nil }

// Partition returns tp as the controller has it now, without copying the
// image as Image does: its Replicas and ISR are the controller's own, for
// reading only (the harness asks after every event while it drains).
func (c *Controller) Partition(tp metadata.TopicPartition) (metadata.Partition, bool) {
	if c.st == nil {
		return metadata.Partition{}, false
	}
	t := c.st.topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return metadata.Partition{}, false
	}
	return t.Partitions[tp.Partition], true
}

// Fenced reports whether broker id is fenced.
func (c *Controller) Fenced(id int32) bool { b := c.st.brokers[id]; return b == nil || b.fenced }
