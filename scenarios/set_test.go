package scenarios

import (
	"strings"
	"testing"
)

// A knob named as Kafka names it changes that knob alone, with Kafka's
// rules checked on the result: explore's axes and run --set rest on it.
func TestSettingAKnobByItsKafkaNameChangesThatKnobAloneUnderKafkasRules(t *testing.T) {
	base, err := Lookup("acks-all-idempotent")
	if err != nil {
		t.Fatal(err)
	}
	must := func(s Scenario, name, value string) Scenario {
		t.Helper()
		out, err := Set(s, Setting{name, value})
		if err != nil {
			t.Fatalf("Set %s=%s: %v", name, value, err)
		}
		return out
	}
	s := must(must(base, "enable.idempotence", "false"), "acks", "1")
	// Together, in any order: acks=1 alone breaks idempotence's rule.
	if both, err := Set(base, Setting{"acks", "1"}, Setting{"enable.idempotence", "false"}); err != nil || both.Producer != s.Producer {
		t.Errorf("acks=1 then enable.idempotence=false together: %v %+v", err, both.Producer)
	}
	if s.Producer.Acks != "1" || s.Producer.EnableIdempotence || s.Cluster.MinInsyncReplicas != base.Cluster.MinInsyncReplicas || s.Name != base.Name {
		t.Errorf("acks=1 without idempotence: %+v %+v", s.Producer, s.Cluster)
	}
	if s := must(base, "cluster.min.insync.replicas", "1"); s.Cluster.MinInsyncReplicas != 1 || s.Producer != base.Producer {
		t.Errorf("min.insync.replicas=1: %+v", s.Cluster)
	}
	if s := must(base, "log.flush.interval.messages", "1"); s.Cluster.LogFlushIntervalMessages == nil || *s.Cluster.LogFlushIntervalMessages != 1 {
		t.Errorf("log.flush.interval.messages=1: %v", s.Cluster.LogFlushIntervalMessages)
	}
	if s := must(must(base, "log.flush.interval.messages", "1"), "log.flush.interval.messages", "null"); s.Cluster.LogFlushIntervalMessages != nil {
		t.Errorf("log.flush.interval.messages=null: %v", *s.Cluster.LogFlushIntervalMessages)
	}
	if s := must(base, "faults", "power"); s.Faults != "power" {
		t.Errorf("faults=power: %q", s.Faults)
	}
	if s := must(base, "topic.input.min.insync.replicas", "3"); s.Cluster.TopicConfigs["input"]["min.insync.replicas"] != "3" {
		t.Errorf("topic.input.min.insync.replicas=3: %v", s.Cluster.TopicConfigs)
	}
	if s := must(must(base, "topic.input.cleanup.policy", "compact"), "topic.input.cleanup.policy", "null"); len(s.Cluster.TopicConfigs) != 0 {
		t.Errorf("topic.input.cleanup.policy=null: %v", s.Cluster.TopicConfigs)
	}
	for _, c := range []struct{ name, value, want string }{
		{"acks", "1", "enable.idempotence requires acks=all, not acks=1"},
		{"min.insync.replicas", "4", "min.insync.replicas 4 > replication.factor 3"},
		{"enable.idempotence", "yes", "want true or false"},
		{"retries", "many", "want an integer"},
		{"acks.all", "1", `unknown config "acks.all"`},
		{"faults", "lightning", "faults:"},
		{"topic.input.cleanup.policy", "shred", "cleanup.policy"},
		{"topic.orders.retention.ms", "1000", `topic.configs "orders"`},
		{"membership", "mixed", "workload.membership mixed is for consume-process-sink"},
		{"rewind.on.abort", "false", "workload.rewind.on.abort false is a consume-transform-produce processor's habit"},
	} {
		_, err := Set(base, Setting{c.name, c.value})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set %s=%s: %v, want an error saying %q", c.name, c.value, err, c.want)
		}
	}
}
