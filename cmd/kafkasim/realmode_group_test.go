package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TODO(issue 7, consumer groups): this is the consumer-group half of the
// issue's integration test. It skips until the broker serves the group
// membership APIs (JoinGroup, Heartbeat, LeaveGroup, SyncGroup), then runs
// by itself: whoever adds them to broker.Versions gets this real-mode check
// of their work with franz-go's group consumer. It has never run; expect to
// adjust it when it first does.
//
// Two members of one group take turns on a two-partition topic: the first
// reads about half, commits and leaves; the second joins, resumes exactly
// at the committed offsets and reads the rest. The checkers see the polls,
// commits and final reads: nothing acknowledged lost, nothing duplicated,
// committed offsets never regress.
func TestRealModeKgoConsumerGroupResumesFromCommittedOffsets(t *testing.T) {
	if testing.Short() {
		t.Skip("real mode: builds kafkasim and runs a 4-process cluster")
	}
	for _, key := range []int16{11, 12, 13, 14} {
		if _, ok := broker.Versions.Lookup(key); !ok {
			t.Skipf("TODO(issue 7): consumer groups — the broker does not serve %s yet; this test runs once it does", kmsg.NameForKey(key))
		}
	}
	const (
		topic   = "payments"
		records = 200
		group   = "realmode-group"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c := startRealCluster(t, buildKafkasim(t), 3, fastFailover...)
	clk := clock{time.Now()}
	rec := history.NewRecorder()
	tps := []history.TopicPartition{{Topic: topic, Partition: 0}, {Topic: topic, Partition: 1}}

	admin, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	eventually(t, 15*time.Second, "three brokers registered", func() bool { return brokerCount(ctx, admin) == 3 })
	createTopic(ctx, t, admin, topic, int32(len(tps)), 3)
	for _, tp := range tps {
		eventually(t, 15*time.Second, fmt.Sprintf("a leader of %s", tp), func() bool {
			l, isr, ok := partitionState(ctx, admin, tp.Topic, tp.Partition)
			return ok && l >= 0 && len(isr) == 3
		})
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range records {
		tp := tps[i%len(tps)]
		v := fmt.Sprintf("p%05d", i)
		id := rec.Invoke(history.Op{Process: "producer", Node: "kgo", Kind: history.KindSend, Call: clk.now(),
			Send: &history.Send{TP: tp, Messages: []history.Message{{Value: v}}, Offset: history.NoOffset}})
		prod.Produce(ctx, &kgo.Record{Value: []byte(v), Partition: tp.Partition}, func(r *kgo.Record, err error) {
			if err != nil {
				rec.Complete(id, clk.now(), history.Info, history.Result{Offset: history.NoOffset, Error: err.Error()})
				return
			}
			rec.Complete(id, clk.now(), history.OK, history.Result{Offset: r.Offset})
		})
	}
	fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
	if err := prod.Flush(fctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	fcancel()
	prod.Close()
	ends := map[int32]int64{}
	for _, tp := range tps {
		ends[tp.Partition] = lastStableOffset(ctx, t, admin, tp)
	}

	first := groupMember(ctx, t, c, rec, clk, "member-1", topic, group, func(read int) bool { return read >= records/2 })
	second := groupMember(ctx, t, c, rec, clk, "member-2", topic, group, func(int) bool {
		return false // until every partition is read to its end
	}, ends)
	for _, tp := range tps {
		if from, ok := second.firstFrom[tp.Partition]; ok && from != first.committed[tp.Partition] {
			t.Errorf("%s: the second member started at %d, the first committed %d", tp, from, first.committed[tp.Partition])
		}
		finalRead(ctx, t, c, rec, clk, tp, ends[tp.Partition])
	}

	h := rec.History()
	v, err := checkers.Check(h, checkers.Options{Rebalancing: true})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	t.Logf("checked: %s", v.Summary())
	if len(v.Anomalies) > 0 || !v.Holds(checkers.AtLeastOnce) {
		t.Fatalf("the group history breaks at-least-once:\n%s", v.Summary())
	}
	c.shutdown()
}

// memberResult is what one group member did.
type memberResult struct {
	firstFrom map[int32]int64 // offset of the first record read, per partition
	committed map[int32]int64 // offsets committed when leaving
}

// groupMember joins group, polls until done(records read) holds or, given
// ends, every partition is read to its end; then commits what it read and
// leaves the group.
func groupMember(ctx context.Context, t *testing.T, c *realCluster, rec *history.Recorder, clk clock, name, topic, group string,
	done func(read int) bool, ends ...map[int32]int64) memberResult {
	t.Helper()
	var mu sync.Mutex
	rebalanced := false
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.addrs()...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(6*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			at := clk.now()
			var tps []history.TopicPartition
			for _, p := range assigned[topic] {
				tps = append(tps, history.TopicPartition{Topic: topic, Partition: p})
			}
			id := rec.Invoke(history.Op{Process: name, Node: "kgo", Kind: history.KindRebalance, Call: at,
				Rebalance: &history.Rebalance{Group: group, Assigned: tps}})
			rec.Complete(id, at, history.OK, history.Result{})
			mu.Lock()
			rebalanced = true
			mu.Unlock()
		}),
		kgo.WithLogger(kgoLog(t, filepath.Join(c.dir, name+".log"))),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	at := clk.now()
	id := rec.Invoke(history.Op{Process: name, Node: "kgo", Kind: history.KindSubscribe, Call: at,
		Subscribe: &history.Subscribe{Group: group, Topics: []string{topic}}})
	rec.Complete(id, at, history.OK, history.Result{})

	res := memberResult{firstFrom: map[int32]int64{}, committed: map[int32]int64{}}
	pos := map[int32]int64{}
	read := 0
	finished := func() bool {
		if len(ends) == 0 {
			return done(read)
		}
		for p, end := range ends[0] {
			if pos[p] < end {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for !finished() {
		if time.Now().After(deadline) {
			t.Fatalf("%s stuck after %d records (positions %v)", name, read, pos)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		call := clk.now()
		fs := cl.PollFetches(pctx)
		cancel()
		poll := &history.Poll{Group: group, Isolation: history.ReadCommitted}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Topic != topic || len(p.Records) == 0 {
				return
			}
			from, seen := pos[p.Partition]
			if !seen {
				from = history.NoOffset
				res.firstFrom[p.Partition] = p.Records[0].Offset
			}
			f := history.Fetch{TP: history.TopicPartition{Topic: topic, Partition: p.Partition}, From: from}
			for _, r := range p.Records {
				f.Records = append(f.Records, history.Record{Offset: r.Offset, Message: history.Message{Value: string(r.Value)}})
			}
			poll.Fetched = append(poll.Fetched, f)
			pos[p.Partition] = p.Records[len(p.Records)-1].Offset + 1
			read += len(p.Records)
		})
		if len(poll.Fetched) == 0 {
			continue
		}
		mu.Lock()
		r := rebalanced
		rebalanced = false
		mu.Unlock()
		id := rec.Invoke(history.Op{Process: name, Node: "kgo", Kind: history.KindPoll, Call: call, Poll: poll})
		rec.Complete(id, clk.now(), history.OK, history.Result{Fetched: poll.Fetched, Rebalanced: r})
	}

	var offsets []history.PartitionOffset
	for p, o := range pos {
		offsets = append(offsets, history.PartitionOffset{TP: history.TopicPartition{Topic: topic, Partition: p}, Offset: o})
	}
	id = rec.Invoke(history.Op{Process: name, Node: "kgo", Kind: history.KindCommit, Call: clk.now(),
		Commit: &history.Commit{Group: group, Offsets: offsets}})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.CommitUncommittedOffsets(cctx); err != nil {
		rec.Complete(id, clk.now(), history.Info, history.Result{Error: err.Error()})
		t.Fatalf("%s: commit: %v", name, err)
	}
	rec.Complete(id, clk.now(), history.OK, history.Result{})
	for p, eo := range cl.CommittedOffsets()[topic] {
		res.committed[p] = eo.Offset
	}
	return res
}
