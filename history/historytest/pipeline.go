package historytest

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/history"
)

// PipelineConfig shapes a consume-process-sink history: producers send
// intents to topic "in"; one processor per partition polls it in order,
// writes each record's output to sink "db" together with the next input
// offset (the atomic pattern), then commits that offset to group "g".
type PipelineConfig struct {
	Partitions int
	Producers  int
	Messages   int
	LatencyMax int64
}

// InputTopic, OutputSink and Group name the pipeline's parts.
const (
	InputTopic = "in"
	OutputSink = "db"
	Group      = "g"
)

type sent struct {
	op     int // index into ops
	effect int64
	msg    history.Message
	p      int
	offset int64
}

// Pipeline generates a correct exactly-once pipeline history.
func Pipeline(cfg PipelineConfig, c Choices) history.History {
	if cfg.Partitions < 1 || cfg.Producers < 1 || cfg.LatencyMax < 1 {
		panic(fmt.Sprintf("historytest: pipeline config needs partitions, producers and latency ≥ 1: %+v", cfg))
	}
	lat := func() int64 { return 1 + int64(c.IntN(int(cfg.LatencyMax))) }
	var ops []history.Op
	clock := make([]int64, cfg.Producers)
	var sends []sent
	for i := 0; i < cfg.Messages; i++ {
		pi := c.IntN(cfg.Producers)
		p := c.IntN(cfg.Partitions)
		call := clock[pi] + int64(c.IntN(int(cfg.LatencyMax)))
		effect := call + lat()
		ret := effect + lat()
		clock[pi] = ret
		m := history.Message{Key: fmt.Sprintf("k%d", c.IntN(8)), Value: fmt.Sprintf("i%d", i)}
		ops = append(ops, history.Op{Process: fmt.Sprintf("producer%d", pi), Node: "n1", Kind: history.KindSend,
			Call: call, Return: ret, Outcome: history.OK,
			Send: &history.Send{TP: history.TopicPartition{Topic: InputTopic, Partition: int32(p)}, Messages: []history.Message{m}}})
		sends = append(sends, sent{op: len(ops) - 1, effect: effect, msg: m, p: p})
	}
	slices.SortStableFunc(sends, func(a, b sent) int { return int(a.effect - b.effect) })
	logs := make([][]sent, cfg.Partitions)
	for _, s := range sends {
		s.offset = int64(len(logs[s.p]))
		ops[s.op].Send.Offset = s.offset
		logs[s.p] = append(logs[s.p], s)
	}
	var sink []history.Message
	var stored []history.PartitionOffset
	var end int64
	for p := 0; p < cfg.Partitions; p++ {
		proc := fmt.Sprintf("processor%d", p)
		tp := history.TopicPartition{Topic: InputTopic, Partition: int32(p)}
		t := int64(c.IntN(int(cfg.LatencyMax)))
		ops = append(ops, history.Op{Process: proc, Node: "n2", Kind: history.KindOffsetFetch, Call: t, Return: t + 1, Outcome: history.OK,
			OffsetFetch: &history.OffsetFetch{Group: Group, Offsets: []history.PartitionOffset{{TP: tp, Offset: history.NoOffset}}}})
		t += 2
		pos := int64(0)
		for pos < int64(len(logs[p])) {
			effect := t + lat()
			ret := effect + lat()
			f := history.Fetch{TP: tp, From: pos}
			for int(pos) < len(logs[p]) && logs[p][pos].effect <= effect && len(f.Records) < 1+c.IntN(4) {
				s := logs[p][pos]
				f.Records = append(f.Records, history.Record{Offset: s.offset, Message: s.msg})
				pos++
			}
			ops = append(ops, history.Op{Process: proc, Node: "n2", Kind: history.KindPoll, Call: t, Return: ret, Outcome: history.OK,
				Poll: &history.Poll{Group: Group, Isolation: history.ReadCommitted, Fetched: []history.Fetch{f}}})
			t = ret + 1
			if len(f.Records) == 0 {
				t += lat()
				continue
			}
			var outs []history.Message
			for _, r := range f.Records {
				outs = append(outs, history.Message{Key: r.Key, Value: "out-" + r.Value, Source: r.Value})
			}
			next := []history.PartitionOffset{{TP: tp, Offset: pos}}
			wret := t + lat()
			ops = append(ops, history.Op{Process: proc, Node: "n2", Kind: history.KindSinkWrite, Call: t, Return: wret, Outcome: history.OK,
				SinkWrite: &history.SinkWrite{Sink: OutputSink, Outputs: outs, Offsets: next}})
			sink = append(sink, outs...)
			t = wret + 1
			cret := t + lat()
			ops = append(ops, history.Op{Process: proc, Node: "n2", Kind: history.KindCommit, Call: t, Return: cret, Outcome: history.OK,
				Commit: &history.Commit{Group: Group, Offsets: next}})
			t = cret + 1
		}
		stored = append(stored, history.PartitionOffset{TP: tp, Offset: pos})
		end = max(end, t)
	}
	for _, cl := range clock {
		end = max(end, cl)
	}
	end++
	ops = append(ops, history.Op{Process: "final", Node: "n0", Kind: history.KindFinalRead, Call: end, Return: end + 1, Outcome: history.OK,
		FinalRead: &history.FinalRead{Sink: OutputSink, Output: true, Items: sink, Offsets: stored}})
	for p := 0; p < cfg.Partitions; p++ {
		f := &history.FinalRead{TP: history.TopicPartition{Topic: InputTopic, Partition: int32(p)}, Isolation: history.ReadCommitted}
		for _, s := range logs[p] {
			f.Records = append(f.Records, history.Record{Offset: s.offset, Message: s.msg})
		}
		end += 2
		ops = append(ops, history.Op{Process: "final", Node: "n0", Kind: history.KindFinalRead, Call: end, Return: end + 1, Outcome: history.OK, FinalRead: f})
	}
	slices.SortStableFunc(ops, func(a, b history.Op) int {
		switch {
		case a.Call < b.Call:
			return -1
		case a.Call > b.Call:
			return 1
		}
		return 0
	})
	for i := range ops {
		ops[i].ID = history.ID(i + 1)
	}
	return ops
}
