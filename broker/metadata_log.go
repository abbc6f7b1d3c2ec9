package broker

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/metalog"
	"github.com/kafkasim/kafkasim/broker/quorum"
	"github.com/kafkasim/kafkasim/broker/raft"
)

// The broker learns the cluster from the metadata log, as a KRaft broker
// does: it is an observer of the controllers' quorum (broker/quorum with
// Observer set: it fetches the log from the quorum's leader into its own
// __cluster_metadata-0, never votes, and its copy is not synced for it),
// and applies every committed entry, in order, to its own metadata.State
// — the same records every controller applies (Kafka's MetadataLoader
// feeding MetadataDelta). After each step's committed entries it
// publishes: the image replaces the last, and every partition this
// broker hosts follows what the image says (BrokerMetadataPublisher →
// ReplicaManager.applyDelta).
//
// A starting broker publishes nothing until two things hold, as
// BrokerServer.startup waits for them before it installs its publishers:
// it has applied the log up to the leader's high watermark (the loader's
// stillNeedToCatchUp: its own log may hold an old prefix, and a restarted
// broker's high watermark comes from the leader), and the active
// controller has answered a heartbeat of its registration "caught up"
// (its CurrentMetadataOffset reached the entry that registered it). A
// restarted broker cannot register while its old incarnation's session
// lives, and by then the controller has moved its leaderships away, so it
// never acts on the image its old incarnation had. After its first
// publish it asks to be unfenced (readyToUnfence), and it serves
// requests only once the controller has unfenced it (rpc.Server.Hold, as
// BrokerServer.startup enables request processing only after
// lifecycleManager.setReadyToUnfence's future), so no client hears an
// image that has not caught up.

// followMetadataLog starts the broker's observer; false if it halted.
func (b *Broker) followMetadataLog() bool {
	b.meta = metalog.New(b.cfg.MetadataLogMaxRecordBytesBetweenSnapshots)
	b.published, b.catchingUp, b.installed = -1, true, false
	q, err := quorum.Start(b.e, b.rt, quorum.Config{
		ID:          b.opts.ID,
		Voters:      b.opts.Controllers,
		Observer:    true,
		ClientID:    fmt.Sprintf("broker-%d-metadata", b.opts.ID),
		NoFsync:     !b.cfg.MetadataLogFsync,
		OnCommitted: b.committedMetadata,
		OnApplied:   b.appliedMetadata,
		OnSnapshot:  b.loadMetadataSnapshot,
	})
	if err != nil {
		b.e.Halt(fmt.Sprintf("broker %d: %v", b.opts.ID, err))
		return false
	}
	b.quorum = q
	return true
}

// committedMetadata applies one committed entry of the metadata log.
func (b *Broker) committedMetadata(en raft.Entry) {
	if err := b.meta.Apply(en); err != nil {
		b.e.Halt(fmt.Sprintf("broker %d: %v", b.opts.ID, err))
	}
}

// loadMetadataSnapshot resets the metadata to a snapshot (the latest on
// disk at a start, or the leader's when this broker fell behind its log
// start) and publishes it if the broker publishes.
func (b *Broker) loadMetadataSnapshot(s raft.Snapshot) {
	if err := b.meta.Load(s); err != nil {
		b.e.Halt(fmt.Sprintf("broker %d: %v", b.opts.ID, err))
		return
	}
	if b.quorum != nil {
		b.publishMetadata()
	}
}

// appliedMetadata publishes what a step committed, and snapshots it when
// due (Kafka's brokers generate snapshots too).
func (b *Broker) appliedMetadata() {
	b.publishMetadata()
	if err := b.meta.MaybeSnapshot(b.quorum); err != nil {
		b.e.Halt(fmt.Sprintf("broker %d: %v", b.opts.ID, err))
	}
}

// publishMetadata makes the applied metadata the broker's: this is how
// leadership and ISR reach its partitions. A broker that started (or
// restarted) publishes nothing until it has applied the log up to the
// leader's high watermark (MetadataLoader.stillNeedToCatchUp): its own
// log may hold an old prefix, and an image from it could make this broker
// lead partitions it no longer leads.
func (b *Broker) publishMetadata() {
	if b.catchingUp {
		hw, ok := b.quorum.LeaderHighWatermark()
		if !ok || b.meta.Applied+1 < hw {
			return
		}
		b.catchingUp = false
		b.e.Log("metadata-caught-up", "offset", b.meta.Applied)
	}
	if !b.installed {
		return
	}
	if b.published == b.meta.Applied {
		return
	}
	first := b.published < 0
	b.published = b.meta.Applied
	if first {
		defer b.sendHeartbeat() // ready to be unfenced: tell the controller at once
	}
	img := b.meta.St.Image()
	b.image = img
	clear(b.topicSettings)
	b.topicNames = make(map[[16]byte]string, len(img.Topics))
	for name, t := range img.Topics {
		b.topicNames[t.ID] = name
	}
	if err := b.deletePartitions(img); err != nil {
		b.e.Halt(err.Error())
		return
	}
	for _, name := range img.TopicNames() {
		t := img.Topics[name]
		for _, ps := range t.Partitions {
			if !ps.IsReplica(b.opts.ID) {
				continue
			}
			if err := b.applyPartition(ps, t.ID); err != nil {
				b.e.Halt(err.Error())
				return
			}
		}
	}
	if b.groups.metadataChanged() {
		b.txns.metadataChanged()
	}
	b.shares.metadataChanged()
	b.checkInvariants()
}

// readyToUnfence reports whether the broker has published metadata since
// the controller acknowledged it caught up.
func (b *Broker) readyToUnfence() bool { return b.installed && b.published >= 0 }

// metadataCaughtUp is the controller's word that this broker's
// registration is caught up: its publishers go in (and publish at once,
// if the log is applied as far as the leader's high watermark).
func (b *Broker) metadataCaughtUp() {
	if b.installed {
		return
	}
	b.installed = true
	b.e.Log("metadata-publishing", "offset", b.meta.Applied)
	b.publishMetadata()
}

// MetadataLogStart is the first offset the broker's copy of the metadata
// log holds (above 0 once a snapshot covers what came before).
func (b *Broker) MetadataLogStart() int64 {
	if b.quorum == nil {
		return 0
	}
	return b.quorum.LogStart()
}

// MetadataApplied is the digest chain of the metadata entries this broker
// has applied (quorum.Chain), for the harness's agreement check. Read only.
func (b *Broker) MetadataApplied() *quorum.Chain {
	if b.meta == nil {
		return &quorum.Chain{}
	}
	return &b.meta.Chain
}
