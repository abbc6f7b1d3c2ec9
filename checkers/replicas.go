package checkers

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/history"
)

// replicaAgreement checks Kafka's replication promises over the replicas
// read off the brokers' disks after the drain (history.KindReplica), as
// Kafka's own acceptance tests do (EpochDrivenReplicationProtocolAcceptanceTest,
// KIP-101, KIP-279):
//
//   - every member of the ISR holds, below the leader's high watermark, the
//     very batches the leader holds, and the same leader-epoch entries;
//   - any two replicas hold the same batches below the smaller of their
//     high watermarks — a replica's high watermark only ever covers what it
//     fetched from a leader of that data.
//
// A replica that breaks either is replica-divergence: committed data that a
// failover to it would lose or change. Only online replicas (running,
// serving the partition) are compared: one not yet recovered may hold a
// torn tail its recovery will cut.
func (a *analysis) replicaAgreement() {
	byTP := map[history.TopicPartition][]*history.Op{}
	var tps []history.TopicPartition
	for i := range a.h {
		op := &a.h[i]
		if op.Kind != history.KindReplica {
			continue
		}
		tp := op.Replica.TP
		if !op.Replica.Online {
			continue // not recovered yet: its raw disk is no replica's word
		}
		if byTP[tp] == nil {
			tps = append(tps, tp)
		}
		byTP[tp] = append(byTP[tp], op)
	}
	slices.SortFunc(tps, func(x, y history.TopicPartition) int { return x.Compare(y) })
	for _, tp := range tps {
		reps := byTP[tp]
		var leader *history.Op
		for _, op := range reps {
			if op.Replica.Leader {
				leader = op
			}
		}
		reported := map[[2]history.ID]bool{}
		report := func(x, y *history.Op, msg string) {
			key := [2]history.ID{x.ID, y.ID}
			if reported[key] {
				return
			}
			reported[key] = true
			a.rep.add("replica-divergence", Witness{Message: msg, Ops: a.ref(x.ID, y.ID)})
		}
		if leader != nil {
			hw := leader.Replica.HighWatermark
			for _, f := range reps {
				if f == leader || !f.Replica.InISR {
					continue
				}
				if d := divergence(leader.Replica, f.Replica, hw); d != "" {
					report(leader, f, fmt.Sprintf("%s: %s, in the ISR, disagrees with the leader %s below its high watermark %d: %s",
						tp, f.Replica.Broker, leader.Replica.Broker, hw, d))
					continue
				}
				if d := epochDivergence(leader.Replica, f.Replica, hw); d != "" {
					report(leader, f, fmt.Sprintf("%s: %s, in the ISR, has other leader epochs than the leader %s below its high watermark %d: %s",
						tp, f.Replica.Broker, leader.Replica.Broker, hw, d))
				}
			}
		}
		for i, x := range reps {
			for _, y := range reps[i+1:] {
				limit := min(x.Replica.HighWatermark, y.Replica.HighWatermark)
				if d := divergence(x.Replica, y.Replica, limit); d != "" {
					report(x, y, fmt.Sprintf("%s: %s and %s disagree below the smaller of their high watermarks, %d: %s",
						tp, x.Replica.Broker, y.Replica.Broker, limit, d))
				}
			}
		}
	}
}

// divergence says where replicas x and y first differ below offset limit
// ("" if they agree): a batch one holds and the other does not, or two
// different batches at one offset.
func divergence(x, y *history.Replica, limit int64) string {
	i, j := 0, 0
	for {
		var bx, by *history.ReplicaBatch
		if i < len(x.Batches) && x.Batches[i].Base < limit {
			bx = &x.Batches[i]
		}
		if j < len(y.Batches) && y.Batches[j].Base < limit {
			by = &y.Batches[j]
		}
		switch {
		case bx == nil && by == nil:
			return ""
		case bx == nil:
			return fmt.Sprintf("%s lacks offsets from %d that %s holds (%s)", x.Broker, by.Base, y.Broker, batchString(*by))
		case by == nil:
			return fmt.Sprintf("%s lacks offsets from %d that %s holds (%s)", y.Broker, bx.Base, x.Broker, batchString(*bx))
		case *bx != *by:
			return fmt.Sprintf("at offset %d %s holds %s, %s holds %s", max(bx.Base, by.Base), x.Broker, batchString(*bx), y.Broker, batchString(*by))
		}
		i, j = i+1, j+1
	}
}

// epochDivergence compares the leader-epoch entries starting below limit.
func epochDivergence(x, y *history.Replica, limit int64) string {
	below := func(r *history.Replica) []history.ReplicaEpoch {
		var out []history.ReplicaEpoch
		for _, e := range r.Epochs {
			if e.Start < limit {
				out = append(out, e)
			}
		}
		return out
	}
	ex, ey := below(x), below(y)
	if slices.Equal(ex, ey) {
		return ""
	}
	return fmt.Sprintf("%s has %v, %s has %v", x.Broker, ex, y.Broker, ey)
}

func batchString(b history.ReplicaBatch) string {
	return fmt.Sprintf("[%d..%d] epoch %d crc %08x", b.Base, b.Last, b.Epoch, b.CRC)
}
