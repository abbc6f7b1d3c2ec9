package controller

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/metalog"
	"github.com/kafkasim/kafkasim/broker/quorum"
	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/kafkasim/kafkasim/env"
)

// ID is the node id of a controller that is alone in its quorum (New), and
// the lowest a controller may have: brokers are 0 up to it.
const ID int32 = 3000

// Versions are the APIs a controller serves: its own and the quorum's.
var Versions = wire.NewVersions(append(slices.Clone(quorum.Ranges),
	wire.Range{Key: 18, Min: 0, Max: 4}, // ApiVersions
	wire.Range{Key: 19, Min: 0, Max: 7}, // CreateTopics
	wire.Range{Key: 20, Min: 0, Max: 6}, // DeleteTopics (forwarded by brokers)
	wire.Range{Key: 33, Min: 0, Max: 2}, // AlterConfigs (forwarded by brokers)
	wire.Range{Key: 37, Min: 0, Max: 3}, // CreatePartitions (forwarded by brokers)
	wire.Range{Key: 43, Min: 0, Max: 2}, // ElectLeaders (forwarded by brokers)
	wire.Range{Key: 44, Min: 0, Max: 1}, // IncrementalAlterConfigs (forwarded by brokers)
	wire.Range{Key: 56, Min: 0, Max: 1}, // AlterPartition (topic names)
	wire.Range{Key: 62, Min: 0, Max: 1}, // BrokerRegistration
	wire.Range{Key: 63, Min: 0, Max: 1}, // BrokerHeartbeat
	wire.Range{Key: 67, Min: 0, Max: 0}, // AllocateProducerIds
)...)

// ProducerIDBlock is how many producer ids a broker gets at a time.
const ProducerIDBlock = 1000

// Options place a controller in its quorum.
type Options struct {
	// NodeID is the controller's node id (Kafka's node.id): ID if 0.
	NodeID int32
	// Voters maps every voter's node id, this one's included, to the
	// address its controller listens on (controller.quorum.voters). Nil
	// is a quorum of this controller alone.
	Voters map[int32]string
}

// Controller is a controller process: a voter of the metadata quorum that,
// while it leads, is the active controller and decides.
type Controller struct {
	cfg   config.Cluster
	opts  Options
	e     env.Env
	voter *quorum.Voter
	st    *metadata.State
	rt    *rpc.Router
	// sessions are when the active controller last heard from each broker
	// (Kafka's BrokerHeartbeatManager keeps them in memory, not the log).
	sessions map[int32]env.Time

	// The quorum as last heard (roleChanged), and whether this controller
	// is the active one: it leads, and every entry before its epoch's
	// first is committed and applied.
	role        raft.Role
	leaderEpoch int32
	active      bool

	// Decisions wait their turn; one at a time is proposed and awaits its
	// commit (decide.go).
	queue    []decision
	awaiting *awaitingCommit
	deciding bool // next is running

	// meta applies the committed log (and snapshots) to st and digests it
	// (Applied); st is meta.St.
	meta *metalog.Loader
}

// New returns a controller alone in its quorum, with node id ID.
func New(cfg config.Cluster) *Controller { return NewVoter(cfg, Options{}) }

// NewVoter returns a controller that is one voter of a quorum.
func NewVoter(cfg config.Cluster, o Options) *Controller {
	if o.NodeID == 0 {
		o.NodeID = ID
	}
	return &Controller{cfg: cfg, opts: o}
}

// Start implements env.Process: the quorum restores its state and log from
// the disk and replays the committed entries into the metadata; the
// controller serves once it is the active one.
func (c *Controller) Start(e env.Env) {
	c.e = e
	c.meta = metalog.New(c.cfg.MetadataLogMaxRecordBytesBetweenSnapshots)
	c.st = c.meta.St
	c.sessions = map[int32]env.Time{}
	c.role, c.leaderEpoch, c.active = raft.Unattached, -1, false
	c.queue, c.awaiting, c.deciding = nil, nil, false
	c.rt = rpc.NewRouter(e, rpc.NewServer(Versions, c.serve))
	voters := c.opts.Voters
	if voters == nil {
		voters = map[int32]string{c.opts.NodeID: e.Name()}
	}
	v, err := quorum.Start(e, c.rt, quorum.Config{
		ID:           c.opts.NodeID,
		Voters:       voters,
		ClientID:     "controller-quorum",
		NoFsync:      !c.cfg.MetadataLogFsync,
		OnCommitted:  c.committed,
		OnApplied:    c.snapshotIfDue,
		OnSnapshot:   c.loadSnapshot,
		OnRoleChange: c.roleChanged,
	})
	if err != nil {
		e.Halt(fmt.Sprintf("controller: %v", err))
		return
	}
	c.voter = v
	e.Log("controller-start", "id", c.opts.NodeID, "voters", len(voters), "brokers", len(c.st.Brokers), "topics", len(c.st.Topics))
	c.next()
	c.e.AfterFunc(c.cfg.BrokerHeartbeatInterval/2, c.tick)
}

func (c *Controller) Connected(id env.ConnID, peer string, inbound bool) {
	c.rt.Connected(id, peer, inbound)
}
func (c *Controller) Received(id env.ConnID, frame []byte) { c.rt.Received(id, frame) }
func (c *Controller) Closed(id env.ConnID)                 { c.rt.Closed(id) }

// committed applies one committed entry of the log, on every controller;
// on the active one it then lets the decision that proposed it finish (the
// brokers learn it from the log).
func (c *Controller) committed(en raft.Entry) {
	if err := c.meta.Apply(en); err != nil {
		c.e.Halt(fmt.Sprintf("controller: %v", err))
		return
	}
	if en.LeaderChange {
		if c.role == raft.Leader && en.Epoch == c.leaderEpoch && !c.active {
			c.activate()
		}
		return
	}
	if w := c.awaiting; w != nil && w.offset == en.Offset {
		c.awaiting = nil
		w.then()
	}
	if c.active {
		c.next()
	}
}

// loadSnapshot resets the metadata to a snapshot: the latest on disk at a
// start, or the leader's, fetched by this controller while it followed.
func (c *Controller) loadSnapshot(s raft.Snapshot) {
	if err := c.meta.Load(s); err != nil {
		c.e.Halt(fmt.Sprintf("controller: %v", err))
		return
	}
	c.st = c.meta.St
}

// snapshotIfDue takes a snapshot once enough has been applied since the
// last (metadata.log.max.record.bytes.between.snapshots).
func (c *Controller) snapshotIfDue() {
	if err := c.meta.MaybeSnapshot(c.voter); err != nil {
		c.e.Halt(fmt.Sprintf("controller: %v", err))
	}
}

// roleChanged follows the quorum: a controller that no longer leads (or
// leads a later epoch it has not caught up in) stops deciding, and every
// decision waiting on it is refused.
func (c *Controller) roleChanged(role raft.Role, epoch, leader int32) {
	c.role = role
	if role == raft.Leader {
		c.leaderEpoch = epoch
	}
	if c.active && (role != raft.Leader || epoch != c.st.Epoch) {
		c.deactivate()
	}
}

// activate makes this controller the active one, in its quorum epoch:
// every broker gets a fresh session (sessions are the active controller's
// memory; ClusterControlManager.activate).
func (c *Controller) activate() {
	c.active = true
	c.st.Epoch = c.leaderEpoch
	now := c.e.Now()
	clear(c.sessions)
	for id := range c.st.Brokers {
		c.sessions[id] = now
	}
	c.e.Log("controller-active", "epoch", c.st.Epoch, "brokers", len(c.st.Brokers), "topics", len(c.st.Topics))
	c.next()
}

func (c *Controller) deactivate() {
	c.active = false
	c.e.Log("controller-inactive", "epoch", c.st.Epoch, "role", c.role.String())
	c.refuseAll()
}

// tick fences brokers whose session has expired, one decision each.
func (c *Controller) tick() {
	c.e.AfterFunc(c.cfg.BrokerHeartbeatInterval/2, c.tick)
	if !c.active {
		return
	}
	now := c.e.Now()
	for _, id := range c.st.BrokerIDs() {
		b := c.st.Brokers[id]
		if !b.Fenced && now.Sub(c.sessions[id]) > c.cfg.BrokerSessionTimeout {
			c.enqueue(decision{refuse: func() {}, decide: func() ([]metadata.Record, func()) {
				b := c.st.Brokers[id]
				if b == nil || b.Fenced || c.e.Now().Sub(c.sessions[id]) <= c.cfg.BrokerSessionTimeout {
					return nil, func() {} // decided otherwise meanwhile
				}
				c.e.Log("broker-session-expired", "broker", id, "silent", c.e.Now().Sub(c.sessions[id]))
				return c.fencing(id, true, "fence"), func() {}
			}})
		}
	}
}

// Applied is the digest chain of the entries this controller has applied,
// in offset order (for the harness's agreement check: every controller's
// applied metadata is a prefix of the one committed log). Read only.
func (c *Controller) Applied() *quorum.Chain {
	if c.meta == nil {
		return &quorum.Chain{}
	}
	return &c.meta.Chain
}

// Image returns the controller's current view (for tests and the harness),
// or nil before the process has started.
func (c *Controller) Image() *metadata.Image {
	if c.st == nil {
		return nil
	}
	return c.st.Image()
}

// LogStart is the first offset the controller's metadata log holds (above
// 0 once a snapshot covers what came before).
func (c *Controller) LogStart() int64 {
	if c.voter == nil {
		return 0
	}
	return c.voter.LogStart()
}

// Loaded reports whether the controller has its state, so Image is not nil.
func (c *Controller) Loaded() bool { return c.st != nil }

// Active reports whether the controller is the active one: it leads the
// quorum and has applied everything committed before its epoch.
func (c *Controller) Active() bool { return c.active }

// Partition returns tp as the controller has it now, without copying the
// image as Image does: its Replicas and ISR are the controller's own, for
// reading only (the harness asks after every event while it drains).
func (c *Controller) Partition(tp metadata.TopicPartition) (metadata.Partition, bool) {
	if c.st == nil {
		return metadata.Partition{}, false
	}
	t := c.st.Topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return metadata.Partition{}, false
	}
	return t.Partitions[tp.Partition], true
}

// Registered reports whether broker id has registered.
func (c *Controller) Registered(id int32) bool { return c.st != nil && c.st.Brokers[id] != nil }

// Fenced reports whether broker id is fenced.
func (c *Controller) Fenced(id int32) bool { b := c.st.Brokers[id]; return b == nil || b.Fenced }
