package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterConfigs and IncrementalAlterConfigs change topics' config overrides,
// as Kafka's ConfigurationControlManager does: each resource's changes are
// validated as a whole against the topic's current overrides and written
// as ConfigRecords, every resource of a request in one batch; a resource
// that fails changes nothing. Brokers forward these requests here.
//
// TOPIC and GROUP resources can change: a group's configs (KIP-848,
// KIP-932: share.auto.offset.reset, share.record.lock.duration.ms, ...)
// are ConfigRecords naming the group, as Kafka writes them; the group
// need not exist. A BROKER resource is refused with
// INVALID_REQUEST: this cluster's broker settings are static (what Kafka
// calls read-only, STATIC_BROKER_CONFIG), given on the command line or in
// the scenario.
//
// Turning a topic's unclean.leader.election.enable on elects a leader for
// each of its partitions that has none, in the same batch. Kafka's
// controller does it in its next unclean election check
// (QuorumController.maybeElectUncleanLeaders, every 5 minutes while some
// partition is leaderless); here it is at once.

// Config resource types (Kafka's ConfigResource.Type).
const (
	resourceTopic  = 2
	resourceBroker = 4
	resourceGroup  = 32
)

// Incremental operations (AlterConfigOp.OpType).
const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

// configChange is one config of a resource as a request would have it:
// set to value, or removed.
type configChange struct {
	name   string
	value  string
	remove bool
}

func (c *Controller) alterConfigs(r *rpc.Request, req *kmsg.AlterConfigsRequest) decision {
	resp := kmsg.NewPtrAlterConfigsResponse()
	var targets []configTarget
	for _, res := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		resp.Resources = append(resp.Resources, rr)
		targets = append(targets, configTarget{res.ResourceType, res.ResourceName})
	}
	set := func(i int, code int16, msg *string) {
		resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage = code, msg
	}
	return c.alterDecision(r, resp, targets, req.ValidateOnly, set, func(i int) ([]configChange, int16, string) {
		// AlterConfigs replaces the resource's overrides wholly: what it
		// does not name is removed (the legacy, non-incremental API).
		res := req.Resources[i]
		var changes []configChange
		named := map[string]bool{}
		for _, cfg := range res.Configs {
			if cfg.Value == nil {
				return nil, kerr.InvalidRequest.Code, fmt.Sprintf("null value not supported for: %s", cfg.Name)
			}
			named[cfg.Name] = true
			changes = append(changes, configChange{name: cfg.Name, value: *cfg.Value})
		}
		var current map[string]string
		switch t := c.st.Topics[res.ResourceName]; {
		case res.ResourceType == resourceGroup:
			current = c.st.GroupConfigs[res.ResourceName]
		case res.ResourceType == resourceTopic && t != nil:
			current = t.Configs
		}
		for _, name := range slices.Sorted(maps.Keys(current)) {
			if !named[name] {
				changes = append(changes, configChange{name: name, remove: true})
			}
		}
		return changes, 0, ""
	})
}

func (c *Controller) incrementalAlterConfigs(r *rpc.Request, req *kmsg.IncrementalAlterConfigsRequest) decision {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	var targets []configTarget
	for _, res := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		resp.Resources = append(resp.Resources, rr)
		targets = append(targets, configTarget{res.ResourceType, res.ResourceName})
	}
	set := func(i int, code int16, msg *string) {
		resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage = code, msg
	}
	return c.alterDecision(r, resp, targets, req.ValidateOnly, set, func(i int) ([]configChange, int16, string) {
		var current map[string]string
		if req.Resources[i].ResourceType == resourceGroup {
			current = c.st.GroupConfigs[req.Resources[i].ResourceName]
		} else if t := c.st.Topics[req.Resources[i].ResourceName]; t != nil {
			current = t.Configs
		}
		return incrementalChanges(req.Resources[i], current)
	})
}

// configTarget is one resource a request alters.
type configTarget struct {
	typ  kmsg.ConfigResourceType
	name string
}

// alterDecision is the decision both alter APIs take: each target's
// changes (changesOf, read from the committed state) validated and turned
// into records, every target's outcome set in resp; NOT_CONTROLLER for all
// if refused.
func (c *Controller) alterDecision(r *rpc.Request, resp kmsg.Response, targets []configTarget, validateOnly bool,
	set func(i int, code int16, msg *string), changesOf func(i int) ([]configChange, int16, string)) decision {
	outcome := func(i int, code int16, msg string) {
		if msg == "" {
			set(i, code, nil)
		} else {
			set(i, code, &msg)
		}
	}
	refuse := func() {
		for i := range targets {
			outcome(i, kerr.NotController.Code, "")
		}
		r.Respond(resp)
	}
	return decision{refuse: refuse, decide: func() ([]metadata.Record, func()) {
		var rs []metadata.Record
		for i, t := range targets {
			changes, code, msg := changesOf(i)
			if code == 0 {
				var recs []metadata.Record
				recs, code, msg = c.configRecords(t.typ, t.name, changes)
				if code == 0 && !validateOnly {
					rs = append(rs, recs...)
				}
			}
			outcome(i, code, msg)
		}
		return rs, func() { r.Respond(resp) }
	}}
}

// incrementalChanges turns one resource's operations into changes, as
// Kafka's ConfigurationControlManager.incrementalAlterConfigResource does:
// APPEND and SUBTRACT only on LIST configs, a config named twice refused.
func incrementalChanges(res kmsg.IncrementalAlterConfigsRequestResource, current map[string]string) ([]configChange, int16, string) {
	var changes []configChange
	seen := map[string]bool{}
	for _, cfg := range res.Configs {
		if seen[cfg.Name] {
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("config %s is altered twice in one request", cfg.Name)
		}
		seen[cfg.Name] = true
		value := ""
		if cfg.Value != nil {
			value = *cfg.Value
		}
		switch cfg.Op {
		case opSet:
			if cfg.Value == nil {
				return nil, kerr.InvalidRequest.Code, fmt.Sprintf("null value not supported for: %s", cfg.Name)
			}
			changes = append(changes, configChange{name: cfg.Name, value: value})
		case opDelete:
			changes = append(changes, configChange{name: cfg.Name, remove: true})
		case opAppend, opSubtract:
			d, ok := config.LookupTopicConfig(cfg.Name)
			if ok && d.Type != config.TypeList {
				return nil, kerr.InvalidConfig.Code, fmt.Sprintf("config value append or subtract is not allowed for config key %s", cfg.Name)
			}
			list := splitList(current[cfg.Name])
			if _, overridden := current[cfg.Name]; !overridden && ok {
				list = splitList(d.KafkaDefault)
			}
			for _, v := range splitList(value) {
				has := slices.Contains(list, v)
				switch {
				case cfg.Op == opAppend && !has:
					list = append(list, v)
				case cfg.Op == opSubtract && has:
					list = slices.DeleteFunc(list, func(x string) bool { return x == v })
				}
			}
			changes = append(changes, configChange{name: cfg.Name, value: strings.Join(list, ",")})
		default:
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("unknown config operation %d for %s", cfg.Op, cfg.Name)
		}
	}
	return changes, 0, ""
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// configRecords validates one resource's changes and returns the records
// that make them, plus the leader elections turning unclean election on
// allows.
func (c *Controller) configRecords(typ kmsg.ConfigResourceType, name string, changes []configChange) ([]metadata.Record, int16, string) {
	switch typ {
	case resourceTopic:
	case resourceGroup:
		return c.groupConfigRecords(name, changes)
	case resourceBroker:
		return nil, kerr.InvalidRequest.Code, fmt.Sprintf("broker %q: kafkasim's broker configs are static (read-only); set them on the command line or in the scenario", name)
	default:
		return nil, kerr.InvalidRequest.Code, fmt.Sprintf("config resource type %d cannot be altered", typ)
	}
	t := c.st.Topics[name]
	if t == nil {
		return nil, kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("topic %q does not exist", name)
	}
	after := maps.Clone(t.Configs)
	if after == nil {
		after = map[string]string{}
	}
	var rs []metadata.Record
	for _, ch := range changes {
		if ch.remove {
			if _, ok := config.LookupTopicConfig(ch.name); !ok {
				return nil, kerr.InvalidConfig.Code, fmt.Sprintf("topic %q: unknown topic config name: %s", name, ch.name)
			}
			if _, ok := after[ch.name]; ok {
				delete(after, ch.name)
				rs = append(rs, metadata.Record{Config: &metadata.ConfigRecord{Topic: name, Name: ch.name}})
			}
			continue
		}
		if err := config.ValidateTopicConfig(ch.name, ch.value); err != nil {
			return nil, kerr.InvalidConfig.Code, fmt.Sprintf("topic %q: %v", name, err)
		}
		if old, ok := after[ch.name]; ok && old == ch.value {
			continue
		}
		after[ch.name] = ch.value
		rs = append(rs, metadata.Record{Config: &metadata.ConfigRecord{Topic: name, Name: ch.name, Value: kmsg.StringPtr(ch.value)}})
	}
	if len(rs) > 0 {
		c.e.Log("topic-configs-altered", "topic", name, "records", len(rs))
	}
	if !c.cfg.Settings(t.Configs).UncleanLeaderElection && c.cfg.Settings(after).UncleanLeaderElection {
		for _, p := range t.Partitions {
			if p.Leader != metadata.NoLeader {
				continue
			}
			q := p.Clone()
			electLeader(&q, c.st.Live, unclean)
			if q.Leader == metadata.NoLeader {
				continue
			}
			q.LeaderEpoch++
			q.PartitionEpoch++
			rs = append(rs, metadata.Record{Partition: &q})
			c.logElection("unclean.leader.election.enable turned on", q.Leader, p, q)
		}
	}
	return rs, 0, ""
}

// groupConfigRecords validates a group's config changes (Kafka's
// GroupConfig.validate) and returns their ConfigRecords.
func (c *Controller) groupConfigRecords(group string, changes []configChange) ([]metadata.Record, int16, string) {
	if group == "" {
		return nil, kerr.InvalidRequest.Code, "group config resource needs a group id"
	}
	after := maps.Clone(c.st.GroupConfigs[group])
	if after == nil {
		after = map[string]string{}
	}
	var rs []metadata.Record
	for _, ch := range changes {
		if ch.remove {
			if _, ok := config.LookupGroupConfig(ch.name); !ok {
				return nil, kerr.InvalidConfig.Code, fmt.Sprintf("group %q: unknown group config name: %s", group, ch.name)
			}
			if _, ok := after[ch.name]; ok {
				delete(after, ch.name)
				rs = append(rs, metadata.Record{Config: &metadata.ConfigRecord{Group: group, Name: ch.name}})
			}
			continue
		}
		if err := config.ValidateGroupConfig(ch.name, ch.value); err != nil {
			return nil, kerr.InvalidConfig.Code, fmt.Sprintf("group %q: %v", group, err)
		}
		if old, ok := after[ch.name]; ok && old == ch.value {
			continue
		}
		after[ch.name] = ch.value
		rs = append(rs, metadata.Record{Config: &metadata.ConfigRecord{Group: group, Name: ch.name, Value: kmsg.StringPtr(ch.value)}})
	}
	if len(rs) > 0 {
		c.e.Log("group-configs-altered", "group", group, "records", len(rs))
	}
	return rs, 0, ""
}
