package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fastFailover are cluster flags that make a killed broker's fencing and
// the ISR changes take a couple of seconds rather than Kafka's defaults.
var fastFailover = []string{
	"--min.insync.replicas", "2",
	"--broker.heartbeat.interval.ms", "200",
	"--broker.session.timeout.ms", "2000",
	"--replica.lag.time.max.ms", "3000",
	"--replica.fetch.wait.max.ms", "200",
	"--replica.fetch.backoff.ms", "200",
}

// The acceptance test. Three controllers (a KRaft quorum) and three
// brokers run as kafkasim processes on loopback; franz-go creates a topic
// with replication factor 3 through the Kafka protocol and produces to it
// with acks=all and idempotence; the partition's leader is SIGKILLed
// mid-stream, then, once another leads, the active controller too; both are
// restarted from their files; franz-go then consumes everything, assigned the partition
// directly (committing offsets as a simple consumer) and as two members of a
// consumer group taking turns (the second resuming at the first's committed
// offset). The history of it all goes through the simulator's checkers: no
// acknowledged record lost, none duplicated, the log linearizable, the
// committed offsets a register. Finally every process exits cleanly on
// SIGTERM.
func TestRealModeKgoSurvivesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("real mode: builds kafkasim and runs a 6-process cluster")
	}
	const (
		topic   = "orders"
		records = 1500
		group   = "realmode-readers"
		members = "realmode-members"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	bin := buildKafkasim(t)
	c := startRealCluster(t, bin, 3, fastFailover...)
	clk := clock{time.Now()}
	rec := history.NewRecorder()
	tp := history.TopicPartition{Topic: topic, Partition: 0}

	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	eventually(t, 15*time.Second, "three brokers registered", func() bool { return brokerCount(ctx, admin) == 3 })
	createTopic(ctx, t, admin, topic, 1, 3)
	var first int32
	eventually(t, 15*time.Second, "a leader with a full ISR", func() bool {
		l, isr, ok := partitionState(ctx, admin, topic, 0)
		first = l
		return ok && l >= 0 && len(isr) == 3
	})
	// The brokers replicate on their inter-broker listeners; on the client
	// listener a follower fetch is refused, as a Kafka cluster whose ACLs
	// grant CLUSTER_ACTION only to the inter-broker principal refuses it.
	md, err := kadm.NewClient(admin).Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	ff := kmsg.NewPtrFetchRequest()
	ff.ReplicaID, ff.MaxWaitMillis, ff.MinBytes, ff.MaxBytes = (first+1)%3, 0, 1, 1<<20
	ff.ReplicaState.ID = ff.ReplicaID // where v15+ carries it
	fft := kmsg.NewFetchRequestTopic()
	fft.Topic, fft.TopicID = topic, md.Topics[topic].ID // by id from v13
	ffp := kmsg.NewFetchRequestTopicPartition()
	ffp.Partition, ffp.PartitionMaxBytes, ffp.CurrentLeaderEpoch = 0, 1<<20, -1
	fft.Partitions = append(fft.Partitions, ffp)
	ff.Topics = append(ff.Topics, fft)
	ffr, err := admin.Broker(int(first)).Request(ctx, ff)
	if err != nil {
		t.Fatalf("follower fetch on the client listener: %v", err)
	}
	if code := ffr.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("a follower fetch from a client connection got error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}

	// Produce, killing the leader a third of the way in and restarting it
	// two thirds of the way in.
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(c.addrs()...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence and snappy compression are kgo's defaults
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.WithLogger(kgoLog(t, filepath.Join(c.dir, "producer.log"))),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var acked, failed atomic.Int64
	leader := c.brokers[first]
	var killedAt, controllerKilledAt int64
	var active *child
	for i := range records {
		switch i {
		case records / 3:
			eventually(t, 15*time.Second, "a quarter of the records acknowledged", func() bool { return acked.Load() >= records/4 })
			killedAt = clk.now()
			leader.kill()
			rec.Nemesis(killedAt, clk.now(), "SIGKILL the leader", leader.name)
			t.Logf("killed %s (leader) after %d acknowledgements", leader.name, acked.Load())
		case records / 2:
			eventually(t, 15*time.Second, "a new leader", func() bool {
				l, _, ok := partitionState(ctx, admin, topic, 0)
				return ok && l >= 0 && l != first
			})
			// Then the active controller dies too: the other two elect a
			// new one, which the brokers find by themselves.
			active = c.activeController()
			if active == nil {
				t.Fatal("no controller says it is active")
			}
			controllerKilledAt = clk.now()
			active.kill()
			rec.Nemesis(controllerKilledAt, clk.now(), "SIGKILL the active controller", active.name)
			t.Logf("killed %s (the active controller)", active.name)
		case 2 * records / 3:
			eventually(t, 15*time.Second, "another controller active", func() bool {
				a := c.activeController()
				return a != nil && a != active
			})
			leader.restart()
			rec.Nemesis(killedAt, clk.now(), "down, then restarted from its files", leader.name)
			t.Logf("restarted %s after %v", leader.name, time.Duration(clk.now()-killedAt).Round(time.Millisecond))
			active.restart()
			rec.Nemesis(controllerKilledAt, clk.now(), "down, then restarted from its files", active.name)
		}
		v := fmt.Sprintf("v%05d", i)
		id := rec.Invoke(history.Op{Process: "producer", Node: "kgo", Kind: history.KindSend, Call: clk.now(),
			Send: &history.Send{TP: tp, Messages: []history.Message{{Value: v}}, Offset: history.NoOffset}})
		prod.Produce(ctx, &kgo.Record{Value: []byte(v), Partition: 0}, func(r *kgo.Record, err error) {
			if err != nil {
				// kgo gave up: the write may or may not have happened.
				failed.Add(1)
				rec.Complete(id, clk.now(), history.Info, history.Result{Offset: history.NoOffset, Error: err.Error()})
				return
			}
			acked.Add(1)
			rec.Complete(id, clk.now(), history.OK, history.Result{Offset: r.Offset})
		})
		time.Sleep(time.Millisecond)
	}
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	if err := prod.Flush(fctx); err != nil {
		t.Fatalf("flush: %v (%d acknowledged, %d failed)", err, acked.Load(), failed.Load())
	}
	fcancel()
	t.Logf("produced: %d acknowledged, %d failed", acked.Load(), failed.Load())
	if acked.Load() < records*9/10 {
		t.Errorf("only %d of %d records acknowledged", acked.Load(), records)
	}

	// The restarted broker recovers from its files and rejoins the ISR.
	eventually(t, 20*time.Second, "the restarted broker back in the ISR", func() bool {
		_, isr, ok := partitionState(ctx, admin, topic, 0)
		return ok && len(isr) == 3
	})

	end := lastStableOffset(ctx, t, admin, tp)
	consume(ctx, t, c, rec, clk, tp, end, group)

	// Two members of a consumer group take turns: the first reads at least
	// half, commits half and leaves; the second resumes at the committed
	// offset.
	half := end / 2
	m1 := groupMember(ctx, t, c, rec, clk, "member-1", topic, members, map[int32]int64{0: half}, map[int32]int64{0: half})
	m2 := groupMember(ctx, t, c, rec, clk, "member-2", topic, members, map[int32]int64{0: end}, nil)
	if m1.committed[0] != half {
		t.Errorf("the first member committed %d, want %d", m1.committed[0], half)
	}
	if from, ok := m2.firstFrom[0]; !ok || from != m1.committed[0] {
		t.Errorf("the second member started at %d (read anything: %v), the first committed %d", from, ok, m1.committed[0])
	}
	if m2.committed[0] != end {
		t.Errorf("the second member committed %d, want the end %d", m2.committed[0], end)
	}
	// kadm sees the group as Kafka's tools do: listed, described Empty
	// once both members left, with no lag at its committed end.
	adm := kadm.NewClient(admin)
	listed, err := adm.ListGroups(ctx)
	if err != nil || !slices.Contains(listed.Groups(), members) {
		t.Errorf("kadm ListGroups: %v, groups %v; want %q", err, listed.Groups(), members)
	}
	lags, err := adm.Lag(ctx, members)
	if err != nil {
		t.Errorf("kadm Lag: %v", err)
	} else if l := lags[members]; l.DescribeErr != nil || l.FetchErr != nil || l.State != "Empty" || l.Lag.Total() != 0 {
		t.Errorf("kadm Lag of %q: state %q, lag %d, errors %v / %v; want Empty with no lag", members, l.State, l.Lag.Total(), l.DescribeErr, l.FetchErr)
	}
	finalRead(ctx, t, c, rec, clk, tp, end)

	h := rec.History()
	// The history outlives the test's directories, for `kafkasim check`.
	path := "(not saved)"
	if f, err := os.CreateTemp("", "kafkasim-realmode-*.jsonl"); err == nil {
		path = f.Name()
		_ = h.Write(f)
		f.Close()
		t.Cleanup(func() {
			if !t.Failed() {
				os.Remove(path)
			}
		})
	}
	v, err := checkers.Check(h, checkers.Options{Rebalancing: true})
	if err != nil {
		t.Fatalf("check: %v (history in %s)", err, path)
	}
	t.Logf("checked: %s", v.Summary())
	if len(v.Anomalies) > 0 || !v.Holds(checkers.ExactlyOnce) {
		t.Fatalf("the real-mode history breaks exactly-once (history in %s):\n%s", path, v.Summary())
	}
	if v.Stats.Acknowledged != int(acked.Load()) {
		t.Errorf("checker counted %d acknowledged intents, the producer saw %d", v.Stats.Acknowledged, acked.Load())
	}
	c.shutdown()
}

// lastStableOffset asks the leader for the partition's end as
// read_committed sees it.
func lastStableOffset(ctx context.Context, t *testing.T, cl *kgo.Client, tp history.TopicPartition) int64 {
	t.Helper()
	var end int64 = -1
	eventually(t, 10*time.Second, "ListOffsets", func() bool {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req := kmsg.NewPtrListOffsetsRequest()
		req.IsolationLevel = 1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = tp.Topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = tp.Partition, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(lctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return false
		}
		end = resp.Topics[0].Partitions[0].Offset
		return true
	})
	return end
}

// consume reads the partition from its start to end with a kgo consumer
// assigned the partition directly, recording every poll, and commits its
// position halfway and at the end with the simple-consumer form of
// OffsetCommit (generation -1), reading the committed offset back.
func consume(ctx context.Context, t *testing.T, c *realCluster, rec *history.Recorder, clk clock, tp history.TopicPartition, end int64, group string) {
	t.Helper()
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(c.addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.Topic: {tp.Partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.WithLogger(kgoLog(t, filepath.Join(c.dir, "consumer.log"))),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	at := clk.now()
	id := rec.Invoke(history.Op{Process: "consumer", Node: "kgo", Kind: history.KindAssign, Call: at,
		Assign: &history.Assign{Partitions: []history.TopicPartition{tp}}})
	rec.Complete(id, at, history.OK, history.Result{})
	var pos int64
	committedHalf := false
	deadline := time.Now().Add(20 * time.Second)
	for pos < end {
		if time.Now().After(deadline) {
			t.Fatalf("consumer stuck at offset %d of %d", pos, end)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		call := clk.now()
		fs := cons.PollFetches(pctx)
		cancel()
		recs := pollRecords(fs, tp.Topic, tp.Partition)
		if len(recs) == 0 {
			continue
		}
		id := rec.Invoke(history.Op{Process: "consumer", Node: "kgo", Kind: history.KindPoll, Call: call,
			Poll: &history.Poll{Isolation: history.ReadCommitted}})
		rec.Complete(id, clk.now(), history.OK, history.Result{Fetched: []history.Fetch{{TP: tp, From: pos, Records: recs}}})
		pos = recs[len(recs)-1].Offset + 1
		if !committedHalf && pos >= end/2 {
			commitOffset(ctx, t, c, rec, clk, tp, group, pos)
			committedHalf = true
		}
	}
	commitOffset(ctx, t, c, rec, clk, tp, group, pos)
	if got := fetchOffset(ctx, t, c, rec, clk, tp, group); got != pos {
		t.Errorf("committed offset reads back as %d, want %d", got, pos)
	}
}

// groupClient is a plain client for group-coordinator requests; kgo routes
// them to the coordinator.
func groupClient(t *testing.T, c *realCluster) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func commitOffset(ctx context.Context, t *testing.T, c *realCluster, rec *history.Recorder, clk clock, tp history.TopicPartition, group string, offset int64) {
	t.Helper()
	cl := groupClient(t, c)
	defer cl.Close()
	id := rec.Invoke(history.Op{Process: "consumer", Node: "kgo", Kind: history.KindCommit, Call: clk.now(),
		Commit: &history.Commit{Group: group, Offsets: []history.PartitionOffset{{TP: tp, Offset: offset}}}})
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1 // a simple consumer: no group membership
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = tp.Partition, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		rec.Complete(id, clk.now(), history.Info, history.Result{Error: err.Error()})
		t.Fatalf("OffsetCommit: %v", err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		rec.Complete(id, clk.now(), history.Info, history.Result{Error: fmt.Sprintf("error code %d", code)})
		t.Fatalf("OffsetCommit: error code %d", code)
	}
	rec.Complete(id, clk.now(), history.OK, history.Result{})
}

func fetchOffset(ctx context.Context, t *testing.T, c *realCluster, rec *history.Recorder, clk clock, tp history.TopicPartition, group string) int64 {
	t.Helper()
	cl := groupClient(t, c)
	defer cl.Close()
	id := rec.Invoke(history.Op{Process: "consumer", Node: "kgo", Kind: history.KindOffsetFetch, Call: clk.now(),
		OffsetFetch: &history.OffsetFetch{Group: group, Offsets: []history.PartitionOffset{{TP: tp, Offset: history.NoOffset}}}})
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	req.Topics = append(req.Topics, rt)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	got := int64(history.NoOffset)
	if resp.ErrorCode == 0 && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 && resp.Topics[0].Partitions[0].ErrorCode == 0 {
		got = resp.Topics[0].Partitions[0].Offset
	}
	rec.Complete(id, clk.now(), history.OK, history.Result{Offsets: []history.PartitionOffset{{TP: tp, Offset: got}}})
	return got
}

// finalRead reads the whole partition with a fresh client: the topic is
// the produce-only workload's output, which the delivery checker counts.
func finalRead(ctx context.Context, t *testing.T, c *realCluster, rec *history.Recorder, clk clock, tp history.TopicPartition, end int64) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.addrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.Topic: {tp.Partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id := rec.Invoke(history.Op{Process: "final-reader", Node: "kgo", Kind: history.KindFinalRead, Call: clk.now(),
		FinalRead: &history.FinalRead{TP: tp, Isolation: history.ReadCommitted, From: 0, Output: true}})
	var all []history.Record
	deadline := time.Now().Add(20 * time.Second)
	for len(all) == 0 || all[len(all)-1].Offset+1 < end {
		if time.Now().After(deadline) {
			t.Fatalf("final read stuck after %d records of %d", len(all), end)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		all = append(all, pollRecords(cl.PollFetches(pctx), tp.Topic, tp.Partition)...)
		cancel()
	}
	if !slices.IsSortedFunc(all, func(a, b history.Record) int { return int(a.Offset - b.Offset) }) {
		t.Errorf("final read out of offset order")
	}
	rec.Complete(id, clk.now(), history.OK, history.Result{Records: all})
}

// Bad input gets one clear line and exit 2, before anything listens.
func TestRealModeCommandsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"controller"}, // no --data
		{"controller", "--data", dir, "extra"},
		{"controller", "--data", dir, "--min.insync.replicas", "0"},
		{"controller", "--data", dir, "--replica.lag.time.max.ms", "soon"},
		{"broker", "--data", dir},                 // no --id
		{"broker", "--id", "0"},                   // no --data
		{"broker", "--id", "3000", "--data", dir}, // the controller's id
		{"broker", "--id", "0", "--data", dir, "--listen", "0.0.0.0:9092"},
		{"broker", "--id", "0", "--data", dir, "--listen", ":9092"},
		{"broker", "--id", "0", "--data", dir, "--broker.session.timeout.ms", "500"},
		{"broker", "--id", "0", "--data", dir, "--no-such-flag"},
	} {
		var stdout, stderr strings.Builder
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("kafkasim %s: exit %d, want 2 (stderr %q)", strings.Join(args, " "), code, stderr.String())
		}
		if stderr.Len() == 0 {
			t.Errorf("kafkasim %s: nothing on stderr", strings.Join(args, " "))
		}
	}
}

// The flags carry Kafka's names and units into the cluster configuration.
func TestClusterFlagsUseKafkaNames(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg := config.Default()
	clusterFlags(fs, &cfg)
	err := fs.Parse([]string{"--min.insync.replicas", "2", "--unclean.leader.election.enable",
		"--log.flush.interval.messages", "1", "--replica.lag.time.max.ms", "1500",
		"--broker.session.timeout.ms", "2s", "--kip101.leader.epoch.truncation=false"})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	want.MinInsyncReplicas, want.UncleanLeaderElection, want.LogFlushIntervalMessages = 2, true, 1
	want.ReplicaLagTimeMax, want.BrokerSessionTimeout, want.LeaderEpochTruncation = 1500*time.Millisecond, 2*time.Second, false
	if cfg != want {
		t.Errorf("parsed %+v\nwant   %+v", cfg, want)
	}
}

// kafkasim create-topic creates a topic that kcat and friends can use.
func TestCreateTopicCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("real mode: starts an in-process cluster")
	}
	c := startInProcessCluster(t, 3, config.Default())
	addrs := []string{c.brokers[0].Addr(), c.brokers[1].Addr(), c.brokers[2].Addr()}
	var stdout, stderr strings.Builder
	code := -1
	eventually(t, 20*time.Second, "create-topic succeeding", func() bool {
		stdout.Reset()
		stderr.Reset()
		code = run([]string{"create-topic", "--bootstrap", strings.Join(addrs, ","), "--topic", "events",
			"--partitions", "3", "--replication-factor", "3", "--timeout", "5s"}, &stdout, &stderr)
		return code == 0
	})
	if !strings.Contains(stdout.String(), "created topic events") {
		t.Errorf("stdout %q", stdout.String())
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for p := range int32(3) {
		eventually(t, 10*time.Second, fmt.Sprintf("events/%d led with 3 in sync", p), func() bool {
			l, isr, ok := partitionState(context.Background(), admin, "events", p)
			return ok && l >= 0 && len(isr) == 3
		})
	}
	// Topic configs: given at creation, described and altered by kadm,
	// refused when unknown.
	if code := run([]string{"create-topic", "--bootstrap", strings.Join(addrs, ","), "--topic", "strict",
		"--config", "min.insync.replicas=2", "--config", "message.timestamp.type=LogAppendTime", "--timeout", "5s"}, &stdout, &stderr); code != 0 {
		t.Fatalf("create-topic with configs: exit %d, stderr %q", code, stderr.String())
	}
	adm := kadm.NewClient(admin)
	var rc kadm.ResourceConfig
	eventually(t, 10*time.Second, "strict described (every broker has its metadata)", func() bool {
		d, err := adm.DescribeTopicConfigs(context.Background(), "strict")
		if err != nil {
			return false
		}
		rc, err = d.On("strict", nil)
		return err == nil && rc.Err == nil
	})
	got := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	if c := got["min.insync.replicas"]; c.MaybeValue() != "2" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("min.insync.replicas described as %q from %v, want 2 from DYNAMIC_TOPIC_CONFIG", c.MaybeValue(), c.Source)
	}
	if c := got["retention.ms"]; c.MaybeValue() != "604800000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("retention.ms described as %q from %v, want Kafka's default", c.MaybeValue(), c.Source)
	}
	altered, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("60000")}, {Op: kadm.DeleteConfig, Name: "min.insync.replicas"}}, "strict")
	if err != nil || altered[0].Err != nil {
		t.Fatalf("alter strict: %v %+v", err, altered)
	}
	eventually(t, 10*time.Second, "the altered configs described", func() bool {
		d, err := adm.DescribeTopicConfigs(context.Background(), "strict")
		if err != nil {
			return false
		}
		rc, err := d.On("strict", nil)
		if err != nil {
			return false
		}
		ok := 0
		for _, c := range rc.Configs {
			if (c.Key == "retention.ms" && c.MaybeValue() == "60000") || (c.Key == "min.insync.replicas" && c.MaybeValue() == "1") {
				ok++
			}
		}
		return ok == 2
	})
	stderr.Reset()
	if code := run([]string{"create-topic", "--bootstrap", strings.Join(addrs, ","), "--topic", "typo",
		"--config", "min.insync.replica=2", "--timeout", "5s"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "INVALID_CONFIG") {
		t.Errorf("create-topic with an unknown config: exit %d, stderr %q; want exit 1 and INVALID_CONFIG", code, stderr.String())
	}

	if code := run([]string{"create-topic", "--bootstrap", strings.Join(addrs, ","), "--topic", "events", "--timeout", "5s"}, &stdout, &stderr); code != 1 {
		t.Errorf("creating events again: exit %d, want 1 (stderr %q)", code, stderr.String())
	}
	if code := run([]string{"create-topic", "--partitions", "0", "--topic", "x"}, &stdout, &stderr); code != 2 {
		t.Errorf("--partitions 0: exit %d, want 2", code)
	}

	// kadm grows a topic and deletes one.
	grown, err := adm.CreatePartitions(context.Background(), 2, "strict")
	if err != nil || grown["strict"].Err != nil {
		t.Fatalf("create partitions of strict: %v %+v", err, grown)
	}
	eventually(t, 10*time.Second, "strict/1 led", func() bool {
		l, _, ok := partitionState(context.Background(), admin, "strict", 1)
		return ok && l >= 0
	})
	// kadm's elections, log dirs and transaction listing are answered.
	elected, err := adm.ElectLeaders(context.Background(), kadm.ElectPreferredReplica, kadm.TopicsSet{"events": {0: {}}})
	if err != nil {
		t.Fatalf("elect leaders: %v", err)
	}
	if r := elected["events"][0]; r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Errorf("preferred election of events/0: %v", r.Err)
	}
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: "events", Partition: 1, At: 0})
	if dr, err := adm.DeleteRecords(context.Background(), del); err != nil || dr["events"][1].Err != nil {
		t.Errorf("kadm DeleteRecords of events/1 to 0: %v %+v", err, dr)
	}
	dirs, err := adm.DescribeAllLogDirs(context.Background(), nil)
	if err != nil || len(dirs) != 3 {
		t.Fatalf("describe log dirs: %v (%d brokers answered)", err, len(dirs))
	}
	if _, err := adm.ListTransactions(context.Background(), nil, nil); err != nil {
		t.Errorf("list transactions: %v", err)
	}
	deleted, err := adm.DeleteTopics(context.Background(), "strict")
	if err != nil || deleted["strict"].Err != nil {
		t.Fatalf("delete strict: %v %+v", err, deleted)
	}
	eventually(t, 10*time.Second, "strict gone from the metadata", func() bool {
		md, err := adm.Metadata(context.Background(), "strict")
		return err == nil && errors.Is(md.Topics["strict"].Err, kerr.UnknownTopicOrPartition)
	})
}
