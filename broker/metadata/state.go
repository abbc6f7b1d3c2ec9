package metadata

import (
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/internal/invariant"
)

// Registration is one broker as the log has it: its latest registration
// and whether it is fenced. (When the active controller last heard from
// it is the controller's memory, not the log's.)
type Registration struct {
	BrokerRecord
	Fenced bool
}

// State is the metadata as the committed entries of the metadata log make
// it: every controller, and every broker following the log, applies the
// same entries in the same order to its own (Kafka's MetadataImage, built
// by MetadataDelta from the same records).
type State struct {
	Epoch          int32 // the active controller's epoch (its quorum epoch) as last known
	Brokers        map[int32]*Registration
	Topics         map[string]*Topic
	NextProducerID int64
	// GroupConfigs are the groups' config overrides (config.GroupConfigDefs),
	// by group id; a group need not exist to have them.
	GroupConfigs map[string]map[string]string
}

// NewState is the metadata before the log's first entry.
func NewState() *State {
	return &State{Brokers: map[int32]*Registration{}, Topics: map[string]*Topic{}, NextProducerID: 1000}
}

// Apply folds one record into the state.
func (s *State) Apply(r Record) {
	switch {
	case r.Broker != nil:
		b := s.Brokers[r.Broker.ID]
		if b == nil {
			b = &Registration{}
			s.Brokers[r.Broker.ID] = b
		}
		b.BrokerRecord = *r.Broker
		b.Endpoints = slices.Clone(r.Broker.Endpoints)
		b.Fenced = true // until its first heartbeat asks to be unfenced
	case r.Fence != nil:
		b := s.Brokers[r.Fence.ID]
		assert(b != nil, "fence record for unregistered broker %d", r.Fence.ID)
		b.Fenced = r.Fence.Fenced
	case r.Topic != nil:
		t := *r.Topic
		t.Partitions = slices.Clone(t.Partitions)
		t.Configs = maps.Clone(t.Configs)
		s.Topics[t.Name] = &t
	case r.Partition != nil:
		t := s.Topics[r.Partition.Topic]
		assert(t != nil && int(r.Partition.Partition) < len(t.Partitions), "partition record %v for unknown topic", r.Partition.TopicPartition)
		old := t.Partitions[r.Partition.Partition]
		assert(r.Partition.LeaderEpoch >= old.LeaderEpoch, "leader epoch of %v moves back from %d to %d", old.TopicPartition, old.LeaderEpoch, r.Partition.LeaderEpoch)
		assert(r.Partition.PartitionEpoch > old.PartitionEpoch, "partition epoch of %v does not advance: %d to %d", old.TopicPartition, old.PartitionEpoch, r.Partition.PartitionEpoch)
		assert(len(r.Partition.ISR) > 0, "ISR of %v is empty", old.TopicPartition)
		t.Partitions[r.Partition.Partition] = r.Partition.Clone()
	case r.NewPartition != nil:
		t := s.Topics[r.NewPartition.Topic]
		assert(t != nil && int(r.NewPartition.Partition) == len(t.Partitions), "new partition %v is not the next of its topic", r.NewPartition.TopicPartition)
		assert(len(r.NewPartition.ISR) > 0, "ISR of new partition %v is empty", r.NewPartition.TopicPartition)
		t.Partitions = append(t.Partitions, r.NewPartition.Clone())
	case r.RemoveTopic != nil:
		t := s.Topics[r.RemoveTopic.Name]
		assert(t != nil && t.ID == r.RemoveTopic.ID, "remove-topic record for unknown topic %q", r.RemoveTopic.Name)
		delete(s.Topics, r.RemoveTopic.Name)
	case r.Config != nil && r.Config.Group != "":
		s.GroupConfigs = applyConfig(s.GroupConfigs, r.Config.Group, r.Config.Name, r.Config.Value)
	case r.Config != nil:
		t := s.Topics[r.Config.Topic]
		assert(t != nil, "config record %s for unknown topic %q", r.Config.Name, r.Config.Topic)
		if r.Config.Value == nil {
			delete(t.Configs, r.Config.Name)
			if len(t.Configs) == 0 {
				t.Configs = nil
			}
		} else {
			if t.Configs == nil {
				t.Configs = map[string]string{}
			}
			t.Configs[r.Config.Name] = *r.Config.Value
		}
	case r.ProducerIDs != 0:
		assert(r.ProducerIDs > s.NextProducerID, "producer ids move back from %d to %d", s.NextProducerID, r.ProducerIDs)
		s.NextProducerID = r.ProducerIDs
	}
}

// applyConfig sets or removes one override of a group in configs, dropping
// a group left without any.
func applyConfig(configs map[string]map[string]string, group, name string, value *string) map[string]map[string]string {
	if value == nil {
		delete(configs[group], name)
		if len(configs[group]) == 0 {
			delete(configs, group)
		}
		return configs
	}
	if configs == nil {
		configs = map[string]map[string]string{}
	}
	if configs[group] == nil {
		configs[group] = map[string]string{}
	}
	configs[group][name] = *value
	return configs
}

// BrokerIDs returns registered broker ids, sorted.
func (s *State) BrokerIDs() []int32 {
	ids := make([]int32, 0, len(s.Brokers))
	for id := range s.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Live reports whether broker id is registered and not fenced.
func (s *State) Live(id int32) bool {
	b := s.Brokers[id]
	return b != nil && !b.Fenced
}

// Partitions returns every partition in topic, partition order.
func (s *State) Partitions() []Partition {
	var out []Partition
	names := make([]string, 0, len(s.Topics))
	for n := range s.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, s.Topics[n].Partitions...)
	}
	return out
}

// Image is the cluster as brokers and clients see it: only unfenced
// brokers; a copy, the state's own left alone.
func (s *State) Image() *Image {
	img := &Image{ControllerEpoch: s.Epoch, Topics: map[string]*Topic{}}
	for _, id := range s.BrokerIDs() {
		if b := s.Brokers[id]; !b.Fenced {
			img.Brokers = append(img.Brokers, Broker{ID: id, Endpoints: slices.Clone(b.Endpoints)})
		}
	}
	for n, t := range s.Topics {
		c := *t
		c.Configs = maps.Clone(t.Configs)
		c.Partitions = make([]Partition, len(t.Partitions))
		for i, p := range t.Partitions {
			c.Partitions[i] = p.Clone()
		}
		img.Topics[n] = &c
	}
	for g, cs := range s.GroupConfigs {
		if img.GroupConfigs == nil {
			img.GroupConfigs = map[string]map[string]string{}
		}
		img.GroupConfigs[g] = maps.Clone(cs)
	}
	return img
}

// assert panics with the metadata's broken invariant when cond is false.
func assert(cond bool, format string, args ...any) {
	if !cond {
		invariant.Fail("metadata", format, args...)
	}
}

// Records are records that rebuild the state from nothing, in an order
// Apply takes: every broker's registration (and its unfencing), every
// topic with its partitions, the producer-id high mark — what a KRaft
// snapshot holds (MetadataImage.write).
func (s *State) Records() []Record {
	var rs []Record
	for _, id := range s.BrokerIDs() {
		b := s.Brokers[id]
		rec := b.BrokerRecord
		rs = append(rs, Record{Broker: &rec})
		if !b.Fenced {
			rs = append(rs, Record{Fence: &FenceRecord{ID: id, Fenced: false}})
		}
	}
	names := make([]string, 0, len(s.Topics))
	for n := range s.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t := *s.Topics[n]
		t.Configs = maps.Clone(t.Configs) // a snapshot's topic record carries its overrides
		t.Partitions = make([]Partition, len(s.Topics[n].Partitions))
		for i, p := range s.Topics[n].Partitions {
			t.Partitions[i] = p.Clone()
		}
		rs = append(rs, Record{Topic: &t})
	}
	if s.NextProducerID > NewState().NextProducerID {
		rs = append(rs, Record{ProducerIDs: s.NextProducerID})
	}
	for _, g := range slices.Sorted(maps.Keys(s.GroupConfigs)) {
		for _, name := range slices.Sorted(maps.Keys(s.GroupConfigs[g])) {
			v := s.GroupConfigs[g][name]
			rs = append(rs, Record{Config: &ConfigRecord{Group: g, Name: name, Value: &v}})
		}
	}
	return rs
}
