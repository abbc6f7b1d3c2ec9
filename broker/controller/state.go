package controller

import (
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/internal/invariant"
)

// brokerState is what the controller knows of one broker: its
// registration and fencing from the log, and, on the active controller
// only, when it last heard from it (as Kafka's BrokerHeartbeatManager
// keeps sessions in memory, not in the log).
type brokerState struct {
	brokerRecord
	fenced        bool
	lastHeartbeat env.Time
}

// state is the metadata as the committed entries of the log make it: every
// controller applies the same entries in the same order to its own.
type state struct {
	epoch          int32 // the active controller's epoch (its quorum epoch) as last known
	brokers        map[int32]*brokerState
	topics         map[string]*metadata.Topic
	nextProducerID int64
}

func newState() *state {
	return &state{brokers: map[int32]*brokerState{}, topics: map[string]*metadata.Topic{}, nextProducerID: 1000}
}

// apply folds one record into the state.
func (s *state) apply(r record) {
	switch {
	case r.Broker != nil:
		b := s.brokers[r.Broker.ID]
		if b == nil {
			b = &brokerState{}
			s.brokers[r.Broker.ID] = b
		}
		b.brokerRecord = *r.Broker
		b.fenced = true // until its first heartbeat asks to be unfenced
	case r.Fence != nil:
		b := s.brokers[r.Fence.ID]
		assert(b != nil, "fence record for unregistered broker %d", r.Fence.ID)
		b.fenced = r.Fence.Fenced
	case r.Topic != nil:
		t := *r.Topic
		t.Partitions = slices.Clone(t.Partitions)
		s.topics[t.Name] = &t
	case r.Partition != nil:
		t := s.topics[r.Partition.Topic]
		assert(t != nil && int(r.Partition.Partition) < len(t.Partitions), "partition record %v for unknown topic", r.Partition.TopicPartition)
		old := t.Partitions[r.Partition.Partition]
		assert(r.Partition.LeaderEpoch >= old.LeaderEpoch, "leader epoch of %v moves back from %d to %d", old.TopicPartition, old.LeaderEpoch, r.Partition.LeaderEpoch)
		assert(r.Partition.PartitionEpoch > old.PartitionEpoch, "partition epoch of %v does not advance: %d to %d", old.TopicPartition, old.PartitionEpoch, r.Partition.PartitionEpoch)
		assert(len(r.Partition.ISR) > 0, "ISR of %v is empty", old.TopicPartition)
		t.Partitions[r.Partition.Partition] = r.Partition.Clone()
	case r.ProducerIDs != 0:
		assert(r.ProducerIDs > s.nextProducerID, "producer ids move back from %d to %d", s.nextProducerID, r.ProducerIDs)
		s.nextProducerID = r.ProducerIDs
	}
}

// brokerIDs returns registered broker ids, sorted.
func (s *state) brokerIDs() []int32 {
	ids := make([]int32, 0, len(s.brokers))
	for id := range s.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *state) live(id int32) bool {
	b := s.brokers[id]
	return b != nil && !b.fenced
}

// partitions returns every partition in topic, partition order.
func (s *state) partitions() []metadata.Partition {
	var out []metadata.Partition
	names := make([]string, 0, len(s.topics))
	for n := range s.topics {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, s.topics[n].Partitions...)
	}
	return out
}

// image is the cluster as brokers should see it.
func (s *state) image() *metadata.Image {
	img := &metadata.Image{ControllerEpoch: s.epoch, Topics: map[string]*metadata.Topic{}}
	for _, id := range s.brokerIDs() {
		if b := s.brokers[id]; !b.fenced {
			img.Brokers = append(img.Brokers, metadata.Broker{ID: id, Addr: b.Addr})
		}
	}
	for n, t := range s.topics {
		c := *t
		c.Partitions = make([]metadata.Partition, len(t.Partitions))
		for i, p := range t.Partitions {
			c.Partitions[i] = p.Clone()
		}
		img.Topics[n] = &c
	}
	return img
}

// assert panics with the controller's broken invariant when cond is false.
func assert(cond bool, format string, args ...any) {
	if !cond {
		invariant.Fail("controller", format, args...)
	}
}
