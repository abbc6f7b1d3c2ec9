package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/history"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberResult is what one group member did.
type memberResult struct {
	firstFrom map[int32]int64 // offset of the first record read, per partition
	committed map[int32]int64 // offsets committed when leaving
}

// groupMember joins group, subscribed to topic, and polls until it has read
// every partition p up to ends[p]; then it commits — commits[p] if given
// (as if it had processed no further), else its positions — and leaves.
func groupMember(ctx context.Context, t *testing.T, c *realCluster, rec *history.Recorder, clk clock, name, topic, group string,
	ends, commits map[int32]int64) memberResult {
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
		committed := cl.CommittedOffsets()[topic]
		for p, end := range ends {
			at, seen := pos[p]
			if !seen {
				// Nothing read yet: the member starts at the group's
				// committed offset, maybe already the end.
				at = committed[p].Offset
			}
			if at < end {
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

	commit := map[int32]int64{}
	for p, o := range pos {
		commit[p] = o
		if c, ok := commits[p]; ok {
			commit[p] = min(o, c)
		}
	}
	var offsets []history.PartitionOffset
	toCommit := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range commit {
		offsets = append(offsets, history.PartitionOffset{TP: history.TopicPartition{Topic: topic, Partition: p}, Offset: o})
		toCommit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	id = rec.Invoke(history.Op{Process: name, Node: "kgo", Kind: history.KindCommit, Call: clk.now(),
		Commit: &history.Commit{Group: group, Offsets: offsets}})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var commitErr error
	cl.CommitOffsetsSync(cctx, toCommit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err == nil {
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if err == nil {
						err = kerr.ErrorForCode(rp.ErrorCode)
					}
				}
			}
		}
		commitErr = err
	})
	if commitErr != nil {
		rec.Complete(id, clk.now(), history.Info, history.Result{Error: commitErr.Error()})
		t.Fatalf("%s: commit: %v", name, commitErr)
	}
	rec.Complete(id, clk.now(), history.OK, history.Result{})
	for p, eo := range cl.CommittedOffsets()[topic] {
		res.committed[p] = eo.Offset
	}
	return res
}
