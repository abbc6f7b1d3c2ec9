package broker

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/metadata"
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
// publish it asks to be unfenced (readyToUnfence).

// followMetadataLog starts the broker's observer; false if it halted.
func (b *Broker) followMetadataLog() bool {
	b.st, b.applied, b.published, b.catchingUp, b.installed, b.chain = metadata.NewState(), -1, -1, true, false, quorum.Chain{}
	q, err := quorum.Start(b.e, b.rt, quorum.Config{
		ID:          b.opts.ID,
		Voters:      b.opts.Controllers,
		Observer:    true,
		ClientID:    fmt.Sprintf("broker-%d-metadata", b.opts.ID),
		NoFsync:     !b.cfg.MetadataLogFsync,
		OnCommitted: b.committedMetadata,
		OnApplied:   b.publishMetadata,
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
	b.chain.Extend(en)
	b.applied = en.Offset
	if en.LeaderChange {
		b.st.Epoch = en.Epoch // the active controller's epoch from here on
		return
	}
	rs, err := metadata.DecodeRecords(en.Data)
	if err != nil {
		b.e.Halt(fmt.Sprintf("broker %d: metadata entry %d: %v", b.opts.ID, en.Offset, err))
		return
	}
	for _, r := range rs {
		b.st.Apply(r)
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
		if !ok || b.applied+1 < hw {
			return
		}
		b.catchingUp = false
		b.e.Log("metadata-caught-up", "offset", b.applied)
	}
	if !b.installed {
		return
	}
	if b.published == b.applied {
		return
	}
	b.published = b.applied
	img := b.st.Image()
	b.image = img
	for _, name := range img.TopicNames() {
		for _, ps := range img.Topics[name].Partitions {
			if !ps.IsReplica(b.opts.ID) {
				continue
			}
			if err := b.applyPartition(ps); err != nil {
				b.e.Halt(err.Error())
				return
			}
		}
	}
	if b.groups.metadataChanged() {
		b.txns.metadataChanged()
	}
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
	b.e.Log("metadata-publishing", "offset", b.applied)
	b.publishMetadata()
}

// MetadataApplied is the digest chain of the metadata entries this broker
// has applied (quorum.Chain), for the harness's agreement check. Read only.
func (b *Broker) MetadataApplied() []uint64 { return b.chain.Digests() }
