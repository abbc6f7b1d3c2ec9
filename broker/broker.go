package broker

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/metalog"
	"github.com/kafkasim/kafkasim/broker/quorum"
	"github.com/kafkasim/kafkasim/broker/replica"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Options configure one broker.
type Options struct {
	ID int32
	// Controllers maps every controller's node id to its address
	// (controller.quorum.voters): the broker follows their metadata log as
	// an observer (metadata_log.go) and sends its requests to the active
	// one (controller_channel.go).
	Controllers map[int32]string
	ClusterID   string
	Cluster     config.Cluster
	// InterBrokerListener is inter.broker.listener.name: the name of the
	// node's listener (env.Env.ListenerAddr) other brokers reach this one
	// on, and the only one granted CLUSTER_ACTION (listeners.go). Empty: the
	// client listener serves both, as a broker with one listener does.
	InterBrokerListener string
	// LogDir is log.dirs, the directory DescribeLogDirs names (the
	// process's disk is rooted there); DefaultLogDir if empty.
	LogDir string
	// HighWatermarkCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms.
	HighWatermarkCheckpointInterval time.Duration
}

// Broker is one broker process.
type Broker struct {
	opts   Options
	cfg    config.Cluster
	e      env.Env
	rt     *rpc.Router
	server *rpc.Server // held until the controller unfences the broker: see rpc.Server.Hold

	controller  *controllerChannel
	incarnation [16]byte
	brokerEpoch int64 // -1 until registered
	registering bool
	// Heartbeats (BrokerLifecycleManager): one in flight at a time; every
	// 10ms while starting (until the controller answers IsCaughtUp), one
	// at once when ready to be unfenced, else every
	// broker.heartbeat.interval.ms.
	beating bool
	// The metadata log (metadata_log.go): the broker observes the quorum
	// and meta applies every committed entry; image is what meta's state
	// made at the last publish.
	quorum     *quorum.Voter
	meta       *metalog.Loader
	published  int64 // offset of the last entry in the published image, -1 before the first
	catchingUp bool  // the log not yet applied up to the leader's high watermark this life
	installed  bool  // the controller said the registration is caught up: publishing

	image      *metadata.Image
	partitions map[metadata.TopicPartition]*partition
	peers      map[int32]*rpc.Client // connections to other brokers, by id
	// topicSettings caches each topic's honoured configs for the published
	// image (topic_configs.go); publishing a new image clears it.
	topicSettings map[string]config.TopicSettings
	// cleanerRunning: the log cleaner's tick is scheduled (cleaner.go).
	cleanerRunning bool
	topicNames     map[[16]byte]string // by topic id, for Fetch v13+ (rebuilt per publish)
	autoCreating   map[string]bool     // topics being created for a Metadata request (auto_create.go)
	fetchers       map[int32]*fetcher  // replica fetchers, by leader id

	producerIDs producerIDBlock
	// The two coordinators, side by side as Kafka's KafkaApis holds them,
	// and what they share (coordination.go).
	groups                 *groupCoordinator
	txns                   *txnCoordinator
	shares                 *shareManager // share partitions and sessions of the partitions this broker leads (share_fetch.go)
	creatingInternalTopics bool          // asked the controller for them
	outbox                 []outgoing    // answers held until the current event ends (respond)
	flushing               bool
	fetchScratch           *kmsg.FetchResponse // every Fetch answer is built here (fetch.go)
}

// New returns a broker process.
func New(opts Options) *Broker {
	if opts.HighWatermarkCheckpointInterval == 0 {
		opts.HighWatermarkCheckpointInterval = 5 * time.Second
	}
	return &Broker{opts: opts, cfg: opts.Cluster}
}

// ID is the broker's id.
func (b *Broker) ID() int32 { return b.opts.ID }

// Start implements env.Process. Logs are opened as metadata names the
// partitions this broker hosts; first the broker registers.
func (b *Broker) Start(e env.Env) {
	b.e = e
	b.brokerEpoch, b.beating = -1, false
	b.image = &metadata.Image{Topics: map[string]*metadata.Topic{}}
	b.partitions = map[metadata.TopicPartition]*partition{}
	b.autoCreating = map[string]bool{}
	b.peers = map[int32]*rpc.Client{}
	b.fetchers = map[int32]*fetcher{}
	b.groups = newGroupCoordinator(b)
	b.txns = newTxnCoordinator(b)
	b.shares = newShareManager(b)
	b.creatingInternalTopics, b.outbox, b.flushing = false, nil, false
	r := e.Rand()
	for i := range b.incarnation {
		b.incarnation[i] = byte(r.Uint64())
	}
	b.server = rpc.NewServer(Versions, b.serve)
	b.server.Hold() // until unfenced (sendHeartbeat)
	b.rt = rpc.NewRouter(e, b.server)
	b.controller = newControllerChannel(b, b.opts.Controllers)
	e.Log("broker-start", "id", b.opts.ID)
	if !b.followMetadataLog() {
		return
	}
	b.register()
	b.heartbeat()
	b.checkpointTick()
	b.isrTick()
	b.e.AfterFunc(b.cfg.LogRetentionCheckInterval, b.retentionTick)
}

func (b *Broker) Connected(c env.ConnID, peer string, inbound bool) { b.rt.Connected(c, peer, inbound) }
func (b *Broker) Received(c env.ConnID, frame []byte)               { b.rt.Received(c, frame) }
func (b *Broker) Closed(c env.ConnID)                               { b.rt.Closed(c) }

// Stop implements env.Stopper: a clean shutdown checkpoints every high
// watermark and flushes every log.
func (b *Broker) Stop() {
	for _, p := range b.sortedPartitions() {
		if p.log != nil {
			_ = p.log.Flush()
			_ = p.log.CheckpointHighWatermark(p.highWatermark())
		}
	}
}

// controllerVersions are the APIs a broker calls on the controller.
var controllerVersions = wire.NewVersions(
	wire.Range{Key: 19, Min: 0, Max: 7},
	wire.Range{Key: 20, Min: 0, Max: 6},
	wire.Range{Key: 33, Min: 0, Max: 2},
	wire.Range{Key: 37, Min: 0, Max: 3},
	wire.Range{Key: 43, Min: 0, Max: 2},
	wire.Range{Key: 44, Min: 0, Max: 1},
	wire.Range{Key: 55, Min: 0, Max: 2},
	wire.Range{Key: 56, Min: 1, Max: 1},
	wire.Range{Key: 62, Min: 0, Max: 1},
	wire.Range{Key: 63, Min: 0, Max: 1},
	wire.Range{Key: 67, Min: 0, Max: 0},
)

func (b *Broker) register() {
	if b.registering {
		return
	}
	b.registering = true
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID = b.opts.ID
	req.ClusterID = b.opts.ClusterID
	req.IncarnationID = b.incarnation
	req.Listeners = b.endpoints()
	b.controller.Do(req, b.cfg.BrokerHeartbeatInterval*2, func(resp kmsg.Response, err error) {
		b.registering = false
		if err == nil {
			if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != 0 {
				err = kerr.ErrorForCode(code)
			}
		}
		if err != nil {
			b.e.AfterFunc(b.cfg.BrokerHeartbeatInterval, b.register)
			return
		}
		b.brokerEpoch = resp.(*kmsg.BrokerRegistrationResponse).BrokerEpoch
		b.e.Log("registered", "epoch", b.brokerEpoch)
		b.sendHeartbeat() // at once, as BrokerLifecycleManager does
	})
}

func (b *Broker) heartbeat() {
	defer b.e.AfterFunc(b.cfg.BrokerHeartbeatInterval, b.heartbeat)
	b.sendHeartbeat()
}

// sendHeartbeat sends one heartbeat unless one is in flight. While the
// broker is starting (the controller has not yet answered IsCaughtUp) the
// next follows 10ms after the answer, as BrokerLifecycleManager's STARTING
// state does; once it is ready to be unfenced it sends one at once
// (setReadyToUnfence: publishMetadata); otherwise at the interval.
func (b *Broker) sendHeartbeat() {
	if b.brokerEpoch < 0 || b.beating {
		return
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID = b.opts.ID
	req.BrokerEpoch = b.brokerEpoch
	// The controller answers IsCaughtUp once CurrentMetadataOffset reaches
	// the entry that registered this incarnation; the broker asks to be
	// unfenced only once it has published since (BrokerLifecycleManager's
	// readyToUnfence).
	req.CurrentMetadataOffset = b.meta.Applied
	req.WantFence = !b.readyToUnfence()
	epoch := b.brokerEpoch
	b.beating = true
	b.controller.Do(req, b.cfg.BrokerHeartbeatInterval, func(resp kmsg.Response, err error) {
		b.beating = false
		if err != nil || epoch != b.brokerEpoch {
			return
		}
		r := resp.(*kmsg.BrokerHeartbeatResponse)
		switch {
		case r.ErrorCode == kerr.StaleBrokerEpoch.Code:
			b.e.Log("stale-broker-epoch", "epoch", b.brokerEpoch)
			b.brokerEpoch = -1
			b.register()
		case r.ErrorCode != 0:
		case r.IsCaughtUp && !b.installed:
			b.metadataCaughtUp()
		case !b.installed:
			b.e.AfterFunc(10*time.Millisecond, b.sendHeartbeat)
		}
		if r.ErrorCode == 0 && !r.IsFenced && b.readyToUnfence() {
			b.server.Open() // unfenced: BrokerServer enables request processing now
		}
	})
}

// applyPartition makes this replica of ps follow what the controller says.
func (b *Broker) applyPartition(ps metadata.Partition, topicID [16]byte) error {
	p := b.partitions[ps.TopicPartition]
	if p == nil {
		var err error
		if p, err = b.openPartition(ps, topicID); err != nil {
			return err
		}
	} else if err := b.reconfigure(p); err != nil {
		return err
	}
	b.maybeStartCleaner(p)
	cur := p.r.Assignment()
	newer := ps.LeaderEpoch > cur.LeaderEpoch || (ps.LeaderEpoch == cur.LeaderEpoch && ps.PartitionEpoch > cur.PartitionEpoch) || p.r.Role() == replica.None
	if !newer {
		return nil
	}
	switch {
	case ps.Leader == b.opts.ID && (!p.leading() || ps.LeaderEpoch > cur.LeaderEpoch):
		return p.becomeLeader(ps)
	case ps.Leader == b.opts.ID:
		return p.updateISR(ps)
	case ps.Leader == metadata.NoLeader:
		return p.becomeOffline(ps)
	case !p.following() || ps.LeaderEpoch > cur.LeaderEpoch || ps.Leader != cur.Leader:
		return p.becomeFollower(ps)
	default:
		p.r.Assign(assignment(ps))
	}
	return nil
}

func (b *Broker) sortedPartitions() []*partition {
	ps := make([]*partition, 0, len(b.partitions))
	for _, p := range b.partitions {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(x, y *partition) int { return x.tp.Compare(y.tp) })
	return ps
}

// peer returns the client for another broker, made on first use.
func (b *Broker) peer(id int32) (*rpc.Client, bool) {
	return b.peerClient(b.peers, id, "")
}

// haltOnStorageError stops the broker after its disk failed it (a failed
// fsync or write), as Kafka's LogDirFailureChannel halts a broker whose
// only log directory failed.
func (b *Broker) haltOnStorageError(reason string) {
	b.e.Probe(probe.SyncFailedHalt, b.e.Name())
	b.e.Halt(reason)
}

// checkpointTick writes every partition's high watermark, as Kafka does
// every replica.high.watermark.checkpoint.interval.ms.
func (b *Broker) checkpointTick() {
	for _, p := range b.sortedPartitions() {
		if p.log != nil && p.highWatermark() != p.log.HighWatermarkCheckpoint() {
			if err := p.log.CheckpointHighWatermark(p.highWatermark()); err != nil {
				b.haltOnStorageError(fmt.Sprintf("checkpoint %v: %v", p.tp, err))
				return
			}
		}
	}
	b.e.AfterFunc(b.opts.HighWatermarkCheckpointInterval, b.checkpointTick)
}

// Partition returns the state of this broker's replica of tp, for tests
// and the harness.
func (b *Broker) Partition(tp metadata.TopicPartition) (PartitionState, bool) {
	p := b.partitions[tp]
	if p == nil {
		return PartitionState{}, false
	}
	return p.snapshot(), true
}

// Leads reports whether this broker leads tp right now.
func (b *Broker) Leads(tp metadata.TopicPartition) bool {
	p := b.partitions[tp]
	return p != nil && p.leading()
}

// Image is the broker's metadata view.
func (b *Broker) Image() *metadata.Image { return b.image }
