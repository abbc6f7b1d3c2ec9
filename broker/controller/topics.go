package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartitionsPerRequestMax bounds the partitions one CreateTopics request
// may create, as KRaft bounds the records of one operation: without it a
// 200-byte request naming twenty topics of 10,000 partitions makes every
// broker open 200,000 logs.
const PartitionsPerRequestMax = 10000

func (c *Controller) createTopics(r *rpc.Request, req *kmsg.CreateTopicsRequest) decision {
	resp := kmsg.NewPtrCreateTopicsResponse()
	refuse := func() {
		resp.Topics = resp.Topics[:0]
		for _, rt := range req.Topics {
			tr := kmsg.NewCreateTopicsResponseTopic()
			tr.Topic, tr.ErrorCode = rt.Topic, kerr.NotController.Code
			resp.Topics = append(resp.Topics, tr)
		}
		r.Respond(resp)
	}
	return decision{refuse: refuse, decide: func() ([]metadata.Record, func()) {
		var rs []metadata.Record
		budget := PartitionsPerRequestMax
		named := map[string]int{}
		for _, rt := range req.Topics {
			named[rt.Topic]++
		}
		for _, rt := range req.Topics {
			tr := kmsg.NewCreateTopicsResponseTopic()
			tr.Topic = rt.Topic
			var t *metadata.Topic
			var overrides []metadata.ConfigRecord
			var code int16
			var msg string
			if named[rt.Topic] > 1 {
				// As Kafka's ControllerApis: every copy of a duplicated name fails.
				code, msg = kerr.InvalidRequest.Code, fmt.Sprintf("duplicate topic name %q in one CreateTopics request", rt.Topic)
			} else if n := int(rt.NumPartitions); n > budget {
				code, msg = kerr.PolicyViolation.Code, fmt.Sprintf("topic %q: %d partitions would pass the %d one CreateTopics request may create", rt.Topic, n, PartitionsPerRequestMax)
			} else {
				t, code, msg = c.newTopic(rt)
			}
			if code == 0 {
				overrides, code, msg = topicOverrides(rt)
			}
			if code == 0 {
				budget -= len(t.Partitions)
			}
			if code == 0 && !req.ValidateOnly {
				// The topic, then its overrides, in one batch: as Kafka's
				// ReplicationControlManager writes a TopicRecord, its
				// PartitionRecords and ConfigRecords together.
				rs = append(rs, metadata.Record{Topic: t})
				for i := range overrides {
					rs = append(rs, metadata.Record{Config: &overrides[i]})
				}
				c.e.Log("topic-created", "topic", t.Name, "partitions", len(t.Partitions), "configs", len(overrides))
			}
			tr.ErrorCode = code
			if msg != "" {
				tr.ErrorMessage = &msg
			}
			if t != nil && code == 0 {
				tr.NumPartitions = int32(len(t.Partitions))
				tr.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
				tr.TopicID = t.ID
				set := map[string]string{}
				for _, o := range overrides {
					set[o.Name] = *o.Value
				}
				for _, e := range c.cfg.DescribeTopic(set) {
					rc := kmsg.NewCreateTopicsResponseTopicConfig()
					rc.Name, rc.Value, rc.Source = e.Name, kmsg.StringPtr(e.Value), int8(e.Source)
					tr.Configs = append(tr.Configs, rc)
				}
			}
			resp.Topics = append(resp.Topics, tr)
		}
		return rs, func() { r.Respond(resp) }
	}}
}

// topicOverrides validates a CreateTopics topic's configs as Kafka's
// ControllerApis and LogConfig.validate do (a null value, an unknown name
// or a bad value: INVALID_CONFIG) and returns them as records, by name; a
// name given twice keeps its last value.
func topicOverrides(rt kmsg.CreateTopicsRequestTopic) ([]metadata.ConfigRecord, int16, string) {
	byName := map[string]string{}
	for _, cfg := range rt.Configs {
		if cfg.Value == nil {
			return nil, kerr.InvalidConfig.Code, fmt.Sprintf("topic %q: null value not supported for topic config %s", rt.Topic, cfg.Name)
		}
		if err := config.ValidateTopicConfig(cfg.Name, *cfg.Value); err != nil {
			return nil, kerr.InvalidConfig.Code, fmt.Sprintf("topic %q: %v", rt.Topic, err)
		}
		byName[cfg.Name] = *cfg.Value
	}
	out := make([]metadata.ConfigRecord, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, metadata.ConfigRecord{Topic: rt.Topic, Name: name, Value: kmsg.StringPtr(byName[name])})
	}
	return out, 0, ""
}

// newTopic places a topic's replicas on the live brokers, round robin from
// a random start, each partition led by its first replica; or where the
// request's manual assignment says (assignedTopic).
func (c *Controller) newTopic(rt kmsg.CreateTopicsRequestTopic) (*metadata.Topic, int16, string) {
	if !metadata.ValidTopicName(rt.Topic) {
		return nil, kerr.InvalidTopicException.Code, fmt.Sprintf("topic name %q is invalid", rt.Topic)
	}
	if c.st.Topics[rt.Topic] != nil {
		return nil, kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %q already exists", rt.Topic)
	}
	if len(rt.ReplicaAssignment) > 0 {
		return c.assignedTopic(rt)
	}
	partitions, rf := int(rt.NumPartitions), int(rt.ReplicationFactor)
	if partitions == -1 {
		partitions = c.cfg.NumPartitions
	}
	if rf == -1 {
		rf = c.cfg.DefaultReplicationFactor
	}
	live := c.liveBrokers()
	if partitions < 1 || partitions > 10000 {
		return nil, kerr.InvalidPartitions.Code, fmt.Sprintf("topic %q: %d partitions", rt.Topic, partitions)
	}
	if rf < 1 || rf > len(live) {
		return nil, kerr.InvalidReplicationFactor.Code, fmt.Sprintf("topic %q: replication factor %d with %d live brokers", rt.Topic, rf, len(live))
	}
	t := &metadata.Topic{Name: rt.Topic, ID: c.newTopicID()}
	t.Partitions = c.place(rt.Topic, 0, partitions, rf, live)
	return t, 0, ""
}

// liveBrokers are the registered, unfenced brokers, by id.
func (c *Controller) liveBrokers() []int32 {
	var live []int32
	for _, id := range c.st.BrokerIDs() {
		if c.st.Live(id) {
			live = append(live, id)
		}
	}
	return live
}

// place assigns partitions [from, from+n) of topic rf replicas each on
// live, round robin from a random start, each led by its first replica
// with all of them in the ISR.
func (c *Controller) place(topic string, from, n, rf int, live []int32) []metadata.Partition {
	start := c.e.Rand().Intn(len(live))
	var out []metadata.Partition
	for p := from; p < from+n; p++ {
		replicas := make([]int32, rf)
		for i := range rf {
			replicas[i] = live[(start+p+i)%len(live)]
		}
		out = append(out, newPartition(topic, p, replicas))
	}
	return out
}

func newPartition(topic string, p int, replicas []int32) metadata.Partition {
	return metadata.Partition{
		TopicPartition: metadata.TopicPartition{Topic: topic, Partition: int32(p)},
		Replicas:       replicas,
		ISR:            slices.Clone(replicas),
		Leader:         replicas[0],
	}
}

// newTopicID is a random topic id.
func (c *Controller) newTopicID() [16]byte {
	var id [16]byte
	r := c.e.Rand()
	for i := range id {
		id[i] = byte(r.Uint64())
	}
	return id
}

// assignedTopic is a topic whose replicas the request assigns, validated as
// Kafka's ReplicationControlManager.createTopic does: num_partitions and
// replication_factor must then be -1 (INVALID_REQUEST), the partitions
// 0..n-1 each once, and each assignment valid as manualPartition says.
func (c *Controller) assignedTopic(rt kmsg.CreateTopicsRequestTopic) (*metadata.Topic, int16, string) {
	if rt.ReplicationFactor != -1 || rt.NumPartitions != -1 {
		return nil, kerr.InvalidRequest.Code, fmt.Sprintf("topic %q: a manual partition assignment needs num_partitions and replication_factor -1", rt.Topic)
	}
	byPartition := map[int32][]int32{}
	for _, a := range rt.ReplicaAssignment {
		if _, dup := byPartition[a.Partition]; dup {
			return nil, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("topic %q: partition %d assigned twice", rt.Topic, a.Partition)
		}
		byPartition[a.Partition] = a.Replicas
	}
	if len(byPartition) > PartitionsPerRequestMax {
		return nil, kerr.InvalidPartitions.Code, fmt.Sprintf("topic %q: %d partitions", rt.Topic, len(byPartition))
	}
	t := &metadata.Topic{Name: rt.Topic, ID: c.newTopicID()}
	rf := len(rt.ReplicaAssignment[0].Replicas)
	for p := range int32(len(byPartition)) {
		replicas, ok := byPartition[p]
		if !ok {
			return nil, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("topic %q: partitions must be numbered 0 to %d, each once", rt.Topic, len(byPartition)-1)
		}
		np, code, msg := c.manualPartition(rt.Topic, int(p), replicas, rf)
		if code != 0 {
			return nil, code, msg
		}
		t.Partitions = append(t.Partitions, np)
	}
	return t, 0, ""
}

// manualPartition is partition p of topic on the replicas a request
// assigned, as Kafka's validateManualPartitionAssignment checks them: rf of
// them, distinct, every one registered and one at least live (else
// INVALID_REPLICA_ASSIGNMENT). It is led by its first live replica, its
// live replicas the ISR.
func (c *Controller) manualPartition(topic string, p int, replicas []int32, rf int) (metadata.Partition, int16, string) {
	bad := func(format string, args ...any) (metadata.Partition, int16, string) {
		return metadata.Partition{}, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("topic %q partition %d: ", topic, p) + fmt.Sprintf(format, args...)
	}
	switch sorted := slices.Sorted(slices.Values(replicas)); {
	case len(replicas) == 0:
		return bad("no replicas")
	case len(replicas) != rf:
		return bad("%d replicas, the topic's replication factor is %d", len(replicas), rf)
	case len(slices.Compact(sorted)) != len(replicas):
		return bad("replicas %v name a broker twice", replicas)
	}
	var isr []int32
	for _, id := range replicas {
		if c.st.Brokers[id] == nil {
			return bad("broker %d is not registered", id)
		}
		if c.st.Live(id) {
			isr = append(isr, id)
		}
	}
	if len(isr) == 0 {
		return bad("every replica in %v is fenced", replicas)
	}
	np := newPartition(topic, p, slices.Clone(replicas))
	np.ISR, np.Leader = isr, isr[0]
	return np, 0, ""
}
