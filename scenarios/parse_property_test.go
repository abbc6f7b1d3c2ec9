package scenarios

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// knobValues are the values the property below draws for each knob of a
// scenario file: the ones a user would write, the edges of each rule, and
// some past them, so that both sides of every refusal are reached.
var knobValues = map[string][]any{
	"cluster.brokers":                                   {0, 1, 2, 3, 5, 9, 10},
	"cluster.replication.factor":                        {0, 1, 2, 3, 4},
	"cluster.min.insync.replicas":                       {0, 1, 2, 3, 4},
	"cluster.unclean.leader.election.enable":            {false, true},
	"cluster.log.flush.interval.messages":               {nil, 0, 1, 5},
	"cluster.kip101.leader.epoch.truncation":            {false, true},
	"cluster.kip320.fetch.epoch.validation":             {false, true},
	"cluster.transaction.partition.verification.enable": {false, true},
	"cluster.kip890.epoch.bump.per.transaction":         {false, true},
	"cluster.partitions":                                {0, 1, 2, 3, 65},
	"cluster.replica.lag.time.max.ms":                   {999, 1000, 10000, 30000},
	"producer.acks":                                     {"0", "1", "all", "-1", "2"},
	"producer.enable.idempotence":                       {false, true},
	"producer.retries":                                  {-1, 0, 1, 3, math.MaxInt32},
	"producer.max.in.flight.requests.per.connection":    {0, 1, 2, 5, 6},
	"producer.transactional.id":                         {nil, "", "tx"},
	"producer.delivery.timeout.ms":                      {0, 1, 1000, 120000, math.MaxInt32, math.MaxInt32 + 1},
	"producer.request.timeout.ms":                       {-1, 0, 1, 500, 30000},
	"producer.linger.ms":                                {-1, 0, 5, 1000},
	"producer.transaction.timeout.ms":                   {0, 1, 1000, 60000},
	"producer.max.block.ms":                             {0, 1, 60000},
	"consumer.isolation.level":                          {"read_committed", "read_uncommitted", "serializable"},
	"consumer.enable.auto.commit":                       {false, true},
	"consumer.auto.commit.interval.ms":                  {-1, 0, 1, 5000},
	"consumer.auto.offset.reset":                        {"earliest", "latest", "none"},
	"consumer.session.timeout.ms":                       {999, 1000, 10000, 45000},
	"consumer.heartbeat.interval.ms":                    {0, 1, 500, 3000, 45000},
	"consumer.max.poll.interval.ms":                     {0, 1, 300000},
	"consumer.fetch.min.bytes":                          {-1, 0, 1, 4096, 1048577},
	"consumer.fetch.max.wait.ms":                        {-1, 0, 150, 500, 30000},
	"workload.kind":                                     {ProduceOnly, ConsumeProcessSink, ConsumeTransformProduce, "batch"},
	"workload.commit":                                   {"", CommitBeforeProcess, ProcessThenCommit, AtomicWithOutput, Transactional},
	"workload.messages":                                 {-1, 0, 1, 50, 300, 1_000_001},
	"workload.producers":                                {0, 1, 2, 3, 65},
	"workload.consumers":                                {-1, 0, 1, 2, 3},
	"workload.duration.ms":                              {999, 1000, 5000, 30000, 86_400_001},
	"workload.processing.ms":                            {-1, 0, 10, 60001},
	"workload.transactional.id.per.incarnation":         {false, true},
	"workload.abort.percent":                            {-1, 0, 10, 101},
	"workload.commit.interval.ms":                       {-1, 0, 100, 60001},
	"faults":                                            {"none", "crash", "network", "power", "correlated-power", "disk", "clock", "all", "crash,clock", "meteor"},
	"faults.rate":                                       {-1, 0, 0.5, 1, 4, 21},
	"expect":                                            {"at-most-once", "at-least-once", "exactly-once", "none", "twice"},
}

// Any scenario file Parse accepts runs to a verdict: no panic of the code
// under test or of the harness, no harness error. One Parse refuses is
// refused with one line. rapid starts from a built-in scenario and sets
// knobs to values from knobValues (or removes them); refused files are
// cheap, so most of the budget goes to the accepted ones. Issue 15: retries
// 0 with idempotence, a negative linger.ms and a 2^62 delivery.timeout.ms
// were all accepted once and panicked inside the world.
func TestPropertyEveryAcceptedScenarioRunsToAVerdict(t *testing.T) {
	base := List()
	knobs := make([]string, 0, len(knobValues))
	for k := range knobValues {
		knobs = append(knobs, k)
	}
	slices.Sort(knobs)
	var accepted, refused int
	rapid.Check(t, func(rt *rapid.T) {
		s := rapid.SampledFrom(base).Draw(rt, "base")
		data, err := json.Marshal(s)
		if err != nil {
			rt.Fatal(err)
		}
		var file map[string]any
		if err := json.Unmarshal(data, &file); err != nil {
			rt.Fatal(err)
		}
		// A few knobs per file: enough to combine rules, few enough
		// that some files pass validation.
		for range rapid.IntRange(1, 4).Draw(rt, "edits") {
			k := rapid.SampledFrom(knobs).Draw(rt, "knob")
			section, key := "", k
			if i := strings.IndexByte(k, '.'); i > 0 && k != "faults.rate" {
				section, key = k[:i], k[i+1:]
			}
			obj := file
			if section != "" {
				obj, _ = file[section].(map[string]any)
			}
			if rapid.IntRange(0, 9).Draw(rt, "remove") == 0 {
				delete(obj, key)
				continue
			}
			obj[key] = rapid.SampledFrom(knobValues[k]).Draw(rt, k)
		}
		data, err = json.Marshal(file)
		if err != nil {
			rt.Fatal(err)
		}
		parsed, err := Parse(data)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") {
				rt.Fatalf("refusal is not one line: %q", msg)
			}
			refused++
			return
		}
		accepted++
		seed := rapid.Uint64Range(1, 1<<20).Draw(rt, "seed")
		r, err := Run(parsed, RunOptions{Seed: seed})
		if err != nil {
			rt.Fatalf("accepted by Parse, refused by the run: %v\nfile: %s", err, data)
		}
		if r.Panic != "" {
			rt.Fatalf("accepted by Parse, panicked in the world: %s\n%s\nfile: %s", r.Panic, r.Stack, data)
		}
		if r.Checked == "" {
			rt.Fatalf("no verdict\nfile: %s", data)
		}
	})
	t.Logf("%d files accepted and run, %d refused", accepted, refused)
	if accepted < refused/4 {
		t.Errorf("only %d of %d drawn files were accepted: the property runs too few worlds", accepted, accepted+refused)
	}
}
