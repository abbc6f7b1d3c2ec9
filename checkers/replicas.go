package checkers

import (
	"fmt"
	"math"
	"slices"

	"github.com/kafkasim/kafkasim/history"
)

// replicaAgreement checks Kafka's replication promises over the replicas
// read off the brokers' disks (history.KindReplica) — sampled during the
// run and read once more after the drain — as Kafka's own acceptance tests
// do (EpochDrivenReplicationProtocolAcceptanceTest, KIP-101, KIP-279). In
// every sample of a partition:
//
//   - every member of the ISR holds, below the leader's high watermark, the
//     very batches the leader holds, and the same leader-epoch entries;
//   - any two replicas hold the same batches below the smaller of their
//     high watermarks — a replica's high watermark only ever covers what it
//     fetched from a leader of that data.
//
// And across samples: what a leader's high watermark covered (committed)
// is, batch for batch, on every later leader.
//
// A replica that breaks any is replica-divergence: committed data that a
// failover to it would lose or change. Only online replicas (running,
// serving the partition) are compared: one not yet recovered may hold a
// torn tail its recovery will cut.
//
// In a compacted topic every replica runs its own log cleaner (Kafka's
// LogCleaner cleans each replica's log by itself), so two replicas may hold
// one batch cleaned to different records, or one may have removed a batch
// the other still holds: there batches are compared only where both hold a
// batch at one base offset — same last offset, leader epoch and producer,
// any CRC — and batches overlapping at different bases diverge
// (divergenceCompacted). Neither are the leader-epoch entries compared
// there: a follower starts an epoch at the first batch of it it fetches
// (Kafka's UnifiedLog.appendAsFollower assigns the epoch start from each
// batch appended), which is later than the leader's once the leader's
// cleaner removed the epoch's first batches, and it has no entry at all for
// an epoch all of whose batches went; the batches' own epochs are still
// compared. Sequence gaps are not judged there: the cleaner removes a
// producer's batches but its last.
func (a *analysis) replicaAgreement() {
	type sample struct {
		at   int64
		reps []*history.Op
	}
	byTP := map[history.TopicPartition][]*sample{}
	var tps []history.TopicPartition
	for _, i := range a.rare {
		op := &a.h[i]
		if op.Kind != history.KindReplica || !op.Replica.Online {
			continue // not recovered yet: its raw disk is no replica's word
		}
		tp := op.Replica.TP
		ss := byTP[tp]
		if ss == nil {
			tps = append(tps, tp)
		}
		if len(ss) == 0 || ss[len(ss)-1].at != op.Call {
			ss = append(ss, &sample{at: op.Call})
			byTP[tp] = ss
		}
		ss[len(ss)-1].reps = append(ss[len(ss)-1].reps, op)
	}
	slices.SortFunc(tps, func(x, y history.TopicPartition) int { return x.Compare(y) })
	agreed := agreement{}
	for _, tp := range tps {
		compacted := slices.Contains(a.opts.Compacted, tp.Topic)
		diverge := func(x, y *history.Replica, limit int64) string { return agreed.divergence(x, y, limit, compacted) }
		reported := map[[2]history.ID]bool{}
		report := func(x, y *history.Op, msg string) {
			key := [2]history.ID{x.ID, y.ID}
			if reported[key] {
				return
			}
			reported[key] = true
			a.rep.add("replica-divergence", Witness{Message: msg, Ops: a.ref(x.ID, y.ID)})
		}
		var committed *history.Op // the leader whose high watermark covered the most so far
		for _, s := range byTP[tp] {
			var leader *history.Op
			for _, op := range s.reps {
				if op.Replica.Leader {
					leader = op
				}
			}
			if leader != nil {
				hw := leader.Replica.HighWatermark
				for _, f := range s.reps {
					if f == leader || !f.Replica.InISR {
						continue
					}
					if d := diverge(leader.Replica, f.Replica, hw); d != "" {
						report(leader, f, fmt.Sprintf("%s: %s, in the ISR, disagrees with the leader %s below its high watermark %d: %s",
							tp, f.Replica.Broker, leader.Replica.Broker, hw, d))
						continue
					}
					if d := epochDivergence(leader.Replica, f.Replica, hw); d != "" && !compacted {
						report(leader, f, fmt.Sprintf("%s: %s, in the ISR, has other leader epochs than the leader %s below its high watermark %d: %s",
							tp, f.Replica.Broker, leader.Replica.Broker, hw, d))
					}
				}
				if committed != nil {
					old := committed.Replica
					if d := diverge(old, leader.Replica, old.HighWatermark); d != "" {
						report(committed, leader, fmt.Sprintf("%s: the leader %s at %d does not hold what the leader %s committed at %d, below its high watermark %d: %s",
							tp, leader.Replica.Broker, leader.Call, old.Broker, committed.Call, old.HighWatermark, d))
					}
				}
				if committed == nil || hw > committed.Replica.HighWatermark {
					committed = leader
				}
			}
			for i, x := range s.reps {
				for _, y := range s.reps[i+1:] {
					limit := min(x.Replica.HighWatermark, y.Replica.HighWatermark)
					if d := diverge(x.Replica, y.Replica, limit); d != "" {
						report(x, y, fmt.Sprintf("%s: %s and %s disagree below the smaller of their high watermarks, %d: %s",
							tp, x.Replica.Broker, y.Replica.Broker, limit, d))
					}
				}
			}
		}
		if ss := byTP[tp]; len(ss) > 0 && !compacted {
			for _, op := range ss[len(ss)-1].reps {
				a.sequenceGaps(op)
			}
		}
	}
}

// sequenceGaps checks one replica's log as the leader's producer-state
// check does on append (Kafka's ProducerAppendInfo.checkSequence): within
// a producer id and epoch, each batch's first sequence follows the last
// sequence of the one before it, and an epoch's first batch starts at 0.
// A batch that skips ahead is a sequence-gap: the leader accepted it while
// an earlier one was missing, so the producer's order is broken (the
// missing one lost, or appended later out of order).
//
// A producer's first batch in the log may start anywhere: a leader with no
// state for the producer id accepts any first sequence (KIP-360, Kafka 2.5+:
// checkSequence lets an unknown producer through), which is how a new
// leader takes a restarted producer's second batch when the first one went
// to the old leader and was never written. That message failed, or its fate
// is unknown, so no promise broke; were it written later, or acknowledged,
// the send-order and delivery checks would say so.
func (a *analysis) sequenceGaps(op *history.Op) {
	r := op.Replica
	type session struct {
		producer int64
		epoch    int16
	}
	last := map[session]history.ReplicaBatch{}
	known := map[int64]bool{} // producers with an earlier batch in this log
	for _, b := range r.Batches {
		if b.Control || b.Producer < 0 || b.Sequence < 0 {
			continue
		}
		s := session{b.Producer, b.ProducerEpoch}
		prev, seen := last[s]
		last[s] = b
		unknown := !known[b.Producer]
		known[b.Producer] = true
		if unknown {
			continue
		}
		var want int32
		if seen {
			want = nextSequence(prev)
		}
		if b.Sequence == want || (seen && sequenceBefore(b.Sequence, want)) {
			continue // in order, or a repeat (the duplicate checks judge those)
		}
		after := fmt.Sprintf("as producer %d epoch %d's first batch", b.Producer, b.ProducerEpoch)
		if seen {
			after = fmt.Sprintf("after its batch [%d..%d] ended at sequence %d", prev.Base, prev.Last, want-1)
		}
		a.rep.add("sequence-gap", Witness{
			Message: fmt.Sprintf("%s on %s: producer %d epoch %d's batch [%d..%d] starts at sequence %d %s, not %d",
				r.TP, r.Broker, b.Producer, b.ProducerEpoch, b.Base, b.Last, b.Sequence, after, want),
			Ops: a.ref(op.ID)})
	}
}

// nextSequence is the sequence the batch after b must start at, wrapping
// past MaxInt32 to 0 as Kafka's sequences do.
func nextSequence(b history.ReplicaBatch) int32 {
	n := int64(b.Sequence) + (b.Last - b.Base) + 1
	return int32(n % (int64(math.MaxInt32) + 1))
}

// sequenceBefore: s comes before want within the window of sequences a
// producer may have in flight (taking wrap-around into account).
func sequenceBefore(s, want int32) bool {
	d := (int64(want) - int64(s) + int64(math.MaxInt32) + 1) % (int64(math.MaxInt32) + 1)
	return d > 0 && d < 1<<20
}

// agreement remembers, for two replicas' batch arrays, how far a walk of
// divergence got, so that a later comparison of the same arrays resumes
// there: every sample of a log that only grew shares the earlier sample's
// array (the sampler's replicaSamples.batches; histories are read only),
// so comparing each sample from offset 0 cost the whole log again at every
// sample, quadratic in a run's length. Views of one array
// (history.BatchArray) agree on the entries they share.
//
// Resuming is exact: the walks stop at the first batch at or past the
// limit or the first difference, and batches are in offset order, so a
// walk from where an earlier one went without difference — under any
// limit — ends where a walk from the start would.
type agreement map[[2]*history.ReplicaBatch][2]int

func (ag agreement) divergence(x, y *history.Replica, limit int64, compacted bool) string {
	key := [2]*history.ReplicaBatch{history.BatchArray(x.Batches), history.BatchArray(y.Batches)}
	at := ag[key]
	i, j := min(at[0], len(x.Batches)), min(at[1], len(y.Batches))
	var msg string
	if compacted {
		msg, i, j = divergenceCompacted(x, y, limit, i, j)
	} else {
		msg, i, j = divergence(x, y, limit, i, j)
	}
	if key[0] != nil && key[1] != nil && i+j > at[0]+at[1] {
		ag[key] = [2]int{i, j}
	}
	return msg
}

// divergence says where replicas x and y first differ below offset limit
// ("" if they agree): a batch one holds and the other does not, or two
// different batches at one offset. It walks from batch i of x and j of y
// (x.Batches[:i] and y.Batches[:j] known to agree) and returns where it
// stopped.
func divergence(x, y *history.Replica, limit int64, i, j int) (string, int, int) {
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
			return "", i, j
		case bx == nil:
			return fmt.Sprintf("%s lacks offsets from %d that %s holds (%s)", x.Broker, by.Base, y.Broker, batchString(*by)), i, j
		case by == nil:
			return fmt.Sprintf("%s lacks offsets from %d that %s holds (%s)", y.Broker, bx.Base, x.Broker, batchString(*bx)), i, j
		case *bx != *by:
			return fmt.Sprintf("at offset %d %s holds %s, %s holds %s", max(bx.Base, by.Base), x.Broker, batchString(*bx), y.Broker, batchString(*by)), i, j
		}
		i, j = i+1, j+1
	}
}

// divergenceCompacted is divergence for replicas of a compacted topic,
// each cleaned by itself: a batch one holds and the other does not may have
// been removed by a cleaner, and one batch may hold other records on each
// (its CRC differs), but two batches at one base offset must span the same
// offsets in the same leader epoch from the same producer, and two batches
// at different bases must not overlap.
func divergenceCompacted(x, y *history.Replica, limit int64, i, j int) (string, int, int) {
	for i < len(x.Batches) && j < len(y.Batches) && x.Batches[i].Base < limit && y.Batches[j].Base < limit {
		bx, by := &x.Batches[i], &y.Batches[j]
		switch {
		case bx.Base == by.Base:
			cx, cy := *bx, *by
			cx.CRC, cy.CRC = 0, 0
			if cx != cy {
				return fmt.Sprintf("at offset %d %s holds %s, %s holds %s", bx.Base, x.Broker, batchString(*bx), y.Broker, batchString(*by)), i, j
			}
			i, j = i+1, j+1
		case bx.Last >= by.Base && by.Last >= bx.Base:
			return fmt.Sprintf("at offset %d %s holds %s, %s holds %s", max(bx.Base, by.Base), x.Broker, batchString(*bx), y.Broker, batchString(*by)), i, j
		case bx.Base < by.Base:
			i++
		default:
			j++
		}
	}
	return "", i, j
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
