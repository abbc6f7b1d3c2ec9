package controller

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

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
// a random start, each partition led by its first replica.
func (c *Controller) newTopic(rt kmsg.CreateTopicsRequestTopic) (*metadata.Topic, int16, string) {
	if !topicName.MatchString(rt.Topic) {
		return nil, kerr.InvalidTopicException.Code, fmt.Sprintf("topic name %q is invalid", rt.Topic)
	}
	if c.st.Topics[rt.Topic] != nil {
		return nil, kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %q already exists", rt.Topic)
	}
	partitions, rf := int(rt.NumPartitions), int(rt.ReplicationFactor)
	if partitions == -1 {
		partitions = 1
	}
	if rf == -1 {
		rf = c.cfg.DefaultReplicationFactor
	}
	var live []int32
	for _, id := range c.st.BrokerIDs() {
		if c.st.Live(id) {
			live = append(live, id)
		}
	}
	if partitions < 1 || partitions > 10000 {
		return nil, kerr.InvalidPartitions.Code, fmt.Sprintf("topic %q: %d partitions", rt.Topic, partitions)
	}
	if rf < 1 || rf > len(live) {
		return nil, kerr.InvalidReplicationFactor.Code, fmt.Sprintf("topic %q: replication factor %d with %d live brokers", rt.Topic, rf, len(live))
	}
	t := &metadata.Topic{Name: rt.Topic}
	r := c.e.Rand()
	for i := range t.ID {
		t.ID[i] = byte(r.Uint64())
	}
	start := r.Intn(len(live))
	for p := range partitions {
		replicas := make([]int32, rf)
		for i := range rf {
			replicas[i] = live[(start+p+i)%len(live)]
		}
		t.Partitions = append(t.Partitions, metadata.Partition{
			TopicPartition: metadata.TopicPartition{Topic: rt.Topic, Partition: int32(p)},
			Replicas:       replicas,
			ISR:            append([]int32(nil), replicas...),
			Leader:         replicas[0],
			LeaderEpoch:    0,
			PartitionEpoch: 0,
		})
	}
	return t, 0, ""
}
