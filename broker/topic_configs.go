package broker

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A topic's configs are its overrides in the metadata log (ConfigRecords,
// written by the controller) over the cluster's settings; the broker
// honours those config.TopicSettings names, reading them from the image
// it last published. A change reaches a partition's log when the image
// that carries it is published (applyPartition), as Kafka's
// DynamicConfigPublisher updates each log's LogConfig.

// shareSettings are the share group settings of group as the published
// image has them.
func (b *Broker) shareSettings(group string) config.ShareSettings {
	return b.cfg.ShareSettings(b.image.GroupConfigs[group])
}

// settings are the honoured configs of topic as the published image has
// them, computed once per image.
func (b *Broker) settings(topic string) config.TopicSettings {
	if s, ok := b.topicSettings[topic]; ok {
		return s
	}
	var overrides map[string]string
	if t := b.image.Topics[topic]; t != nil {
		overrides = t.Configs
	}
	s := b.cfg.Settings(overrides)
	if b.topicSettings == nil {
		b.topicSettings = map[string]config.TopicSettings{}
	}
	b.topicSettings[topic] = s
	return s
}

// logConfig is the log configuration of a partition of this broker.
func (b *Broker) logConfig(tp metadata.TopicPartition) log.Config {
	s := b.settings(tp.Topic)
	return log.Config{
		Topic:                    tp.Topic,
		Partition:                tp.Partition,
		SegmentBytesMax:          s.SegmentBytes,
		FlushIntervalMessages:    s.FlushMessages,
		MessageBytesMax:          max(s.MaxMessageBytes, 1), // 0 admits no batch, as in Kafka; the log's 0 would mean no limit
		KIP360ProducerIDRecovery: true,
		Compact:                  s.CleanupCompact && !metadata.Internal(tp.Topic),
		Defects:                  b.cfg.Defects,
	}
}

// reconfigure applies the topic's current configs to a partition's log.
func (b *Broker) reconfigure(p *partition) error {
	if want := b.logConfig(p.tp); p.log.Config() != want {
		return p.log.SetConfig(want)
	}
	return nil
}

// handleDescribeConfigs answers from the published image, as a Kafka
// broker answers from its metadata cache: for a topic every topic config
// with its value and source (an override is DYNAMIC_TOPIC_CONFIG, the
// cluster's setting of its synonym STATIC_BROKER_CONFIG, else
// DEFAULT_CONFIG), optionally only the names asked for; for this broker
// (or the cluster default, an empty name) its settings, all static. A topic
// it does not know is UNKNOWN_TOPIC_OR_PARTITION; another broker's id,
// INVALID_REQUEST, as a Kafka broker describes only itself. A GROUP
// resource has every group config (config.GroupConfigDefs), an override's
// source GROUP_CONFIG.
func (b *Broker) handleDescribeConfigs(req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var entries []config.ConfigEntry
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t := b.image.Topics[res.ResourceName]
			if t == nil {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rr.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("topic %q does not exist", res.ResourceName))
				break
			}
			entries = b.cfg.DescribeTopic(t.Configs)
		case kmsg.ConfigResourceTypeBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(b.opts.ID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				rr.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("broker %d cannot describe the configs of broker %s", b.opts.ID, res.ResourceName))
				break
			}
			entries = b.cfg.DescribeBroker()
		case kmsg.ConfigResourceTypeGroupConfig:
			// A group's configs, set or not, whether or not the group
			// exists (Kafka's GroupConfigManager answers the same).
			entries = b.cfg.DescribeGroup(b.image.GroupConfigs[res.ResourceName])
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("config resource type %d cannot be described", res.ResourceType))
		}
		for _, e := range entries {
			if res.ConfigNames != nil && !slices.Contains(res.ConfigNames, e.Name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value = e.Name, kmsg.StringPtr(e.Value)
			rc.Source = kmsg.ConfigSource(e.Source)
			rc.IsDefault = e.Source == config.SourceDefault
			rc.ReadOnly = res.ResourceType == kmsg.ConfigResourceTypeBroker
			rc.ConfigType = kmsg.ConfigType(e.Type)
			if req.IncludeDocumentation {
				rc.Documentation = kmsg.StringPtr(e.Doc)
			}
			if req.IncludeSynonyms {
				for _, s := range e.Synonyms {
					sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					sy.Name, sy.Value, sy.Source = s.Name, kmsg.StringPtr(s.Value), kmsg.ConfigSource(s.Source)
					rc.ConfigSynonyms = append(rc.ConfigSynonyms, sy)
				}
			}
			rr.Configs = append(rr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// handleAlterConfigs forwards to the controller, as a KRaft broker does.
func (b *Broker) handleAlterConfigs(r *rpc.Request, req *kmsg.AlterConfigsRequest) {
	fwd := kmsg.NewPtrAlterConfigsRequest()
	fwd.Resources, fwd.ValidateOnly = req.Resources, req.ValidateOnly
	b.forwardToController(r, fwd, func(code int16, msg string) kmsg.Response {
		out := kmsg.NewPtrAlterConfigsResponse()
		for _, res := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, code, &msg
			out.Resources = append(out.Resources, rr)
		}
		return out
	})
}

// handleIncrementalAlterConfigs forwards to the controller.
func (b *Broker) handleIncrementalAlterConfigs(r *rpc.Request, req *kmsg.IncrementalAlterConfigsRequest) {
	fwd := kmsg.NewPtrIncrementalAlterConfigsRequest()
	fwd.Resources, fwd.ValidateOnly = req.Resources, req.ValidateOnly
	b.forwardToController(r, fwd, func(code int16, msg string) kmsg.Response {
		out := kmsg.NewPtrIncrementalAlterConfigsResponse()
		for _, res := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, code, &msg
			out.Resources = append(out.Resources, rr)
		}
		return out
	})
}
