package scenarios

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScenarioFileWithKafkaNamesParses(t *testing.T) {
	s, err := Parse([]byte(`{
	  "name": "pipeline-process-then-commit",
	  "cluster":  {"brokers": 3, "replication.factor": 3, "min.insync.replicas": 2,
	               "unclean.leader.election.enable": false, "log.flush.interval.messages": null,
	               "kip101.leader.epoch.truncation": true, "kip320.fetch.epoch.validation": true,
	               "transaction.partition.verification.enable": true, "kip890.epoch.bump.per.transaction": true},
	  "producer": {"acks": "all", "enable.idempotence": true, "retries": 2147483647,
	               "max.in.flight.requests.per.connection": 5, "transactional.id": null},
	  "consumer": {"isolation.level": "read_committed", "enable.auto.commit": false},
	  "workload": {"kind": "consume-process-sink", "commit": "process-then-commit",
	               "messages": 200, "producers": 2, "consumers": 1},
	  "faults":   "crash,network",
	  "expect":   "at-least-once"
	}`))
	require.NoError(t, err)
	require.Equal(t, ProcessThenCommit, s.Workload.Commit)
	require.Nil(t, s.Cluster.LogFlushIntervalMessages)
}

func TestBadScenarioFilesAreRefusedWithOneClearLine(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{`{"workload": {"kind": "produce-only"}}`, `missing "expect"`},
		{`{"expect": "exactly-once"}`, `missing "workload"`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "exactly-once", "colour": 1}`, `unknown key "colour"`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "exactly-once", "cluster": {"brokers": "three"}}`, `"cluster.brokers" must be int`},
		{`{"name": "acks-all", "workload": {"kind": "produce-only"}, "expect": "exactly-once", "cluster": {"min.insync.replicas": 4}}`, `scenario "acks-all": min.insync.replicas 4 > replication.factor 3`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "exactly-once", "producer": {"acks": "1"}}`, `enable.idempotence requires acks=all`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "twice"}`, `unknown guarantee "twice"`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "none", "faults": "meteor"}`, `meteor`},
		{`{"name": "x", "workload": {"kind": "consume-process-sink"}, "expect": "none"}`, `workload.commit ""`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "none", "cluster": {"topic.configs": {"input": {"min.insync.replica": "2"}}}}`, `scenario "x": topic.configs "input": unknown topic config name: min.insync.replica`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "none", "cluster": {"topic.configs": {"input": {"max.message.bytes": "big"}}}}`, `invalid value big for configuration max.message.bytes`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "none", "cluster": {"topic.configs": {"orders": {"retention.ms": "1"}}}}`, `topic.configs "orders": the workload's topics are "input" and "output"`},
		{`not json`, `malformed JSON`},
		{`{"name": "x", "workload": {"kind": "produce-only"}, "expect": "none", "faults.schedule": "+1s explode b1"}`, `faults.schedule`},
	} {
		_, err := Parse([]byte(c.file))
		require.Error(t, err, c.file)
		require.Contains(t, err.Error(), c.want)
		require.NotContains(t, err.Error(), "\n")
	}
}

func TestEveryClaimHasAWeakTwin(t *testing.T) {
	claims := map[string]bool{}
	refuted := map[string]bool{}
	for _, s := range List() {
		require.NoError(t, s.Validate())
		if s.Twin() {
			refuted[string(s.Refutes)+"/"+s.Workload.Kind] = true
		} else if s.Expect != "none" {
			claims[string(s.Expect)+"/"+s.Workload.Kind] = true
		}
	}
	for c := range claims {
		require.True(t, refuted[c], "claim %s has no weak twin refuting it", c)
	}
}

func TestRoundTripThroughJSON(t *testing.T) {
	for _, s := range List() {
		back, err := Parse(s.JSON())
		require.NoError(t, err, s.Name)
		require.Equal(t, s, back)
	}
}

func TestAHandWrittenScheduleReplacesTheNemesis(t *testing.T) {
	s, err := Parse([]byte(`{"name": "one-cut", "workload": {"kind": "produce-only", "messages": 20},
	  "expect": "at-least-once", "faults": "network",
	  "faults.schedule": "+2s isolate leader of input/0\n+8s heal"}`))
	require.NoError(t, err)
	r, err := Run(s, RunOptions{Seed: 3})
	require.NoError(t, err)
	require.Len(t, r.Schedule, 2)
	require.Equal(t, "+2s isolate leader of input/0", r.Schedule[0].String())
	require.True(t, r.Holds, "%s", r.Summary())
}

// A scenario's topic.configs reach the topics it creates: with
// max.message.bytes=10 on "input" no batch fits, every send fails with
// MESSAGE_TOO_LARGE and nothing is acknowledged; without it, the same run
// acknowledges its writes.
func TestTopicConfigsReachTheScenariosTopics(t *testing.T) {
	run := func(cluster string) Power {
		s, err := Parse([]byte(`{"name": "tiny-batches", "workload": {"kind": "produce-only", "messages": 20},
		  "expect": "at-most-once", "faults": "none"` + cluster + `}`))
		require.NoError(t, err)
		r, err := Run(s, RunOptions{Seed: 1})
		require.NoError(t, err)
		require.True(t, r.Holds, "%s", r.Summary())
		return r.Power
	}
	require.Equal(t, 20, run("").Acknowledged)
	tiny := run(`, "cluster": {"topic.configs": {"input": {"max.message.bytes": "10"}}}`)
	require.Zero(t, tiny.Acknowledged)
	require.Equal(t, 20, tiny.Failed, "MESSAGE_TOO_LARGE is a definite failure")
}
