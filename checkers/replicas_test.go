package checkers_test

import (
	"math"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

func (b *hb) replica(broker string, leader, inISR bool, hw int64, batches ...history.ReplicaBatch) history.ID {
	return b.replicaAt(100, broker, leader, inISR, hw, batches...)
}

// replicaAt records a replica as sampled at time at: the replicas of one
// sample share it.
func (b *hb) replicaAt(at int64, broker string, leader, inISR bool, hw int64, batches ...history.ReplicaBatch) history.ID {
	return b.add(history.Op{Process: "replica-reader", Kind: history.KindReplica, Call: at, Return: at, Outcome: ok,
		Replica: &history.Replica{TP: x, Broker: broker, Leader: leader, InISR: inISR, Online: true, HighWatermark: hw, Batches: batches}})
}

func batch(base, last int64, epoch int32, crc uint32) history.ReplicaBatch {
	return history.ReplicaBatch{Base: base, Last: last, Epoch: epoch, CRC: crc, Producer: -1, ProducerEpoch: -1, Sequence: -1}
}

// produced is a batch of an idempotent producer's: its id, epoch and first
// sequence.
func produced(base, last int64, producer int64, epoch int16, seq int32) history.ReplicaBatch {
	return history.ReplicaBatch{Base: base, Last: last, Epoch: 0, CRC: uint32(base), Producer: producer, ProducerEpoch: epoch, Sequence: seq}
}

// Replicas in step, and a follower out of the ISR that is merely behind,
// are what Kafka promises: no divergence.
func TestReplicasThatAgreeBelowTheirHighWatermarksPass(t *testing.T) {
	var b hb
	b.replica("b0", true, true, 3, batch(0, 1, 0, 0xa), batch(2, 2, 1, 0xb), batch(3, 3, 1, 0xc))
	b.replica("b1", false, true, 3, batch(0, 1, 0, 0xa), batch(2, 2, 1, 0xb))
	b.replica("b2", false, false, 2, batch(0, 1, 0, 0xa))
	v := b.check(t, checkers.Options{})
	if _, found := v.Anomaly("replica-divergence"); found {
		t.Fatalf("no divergence expected:\n%s", v.Summary())
	}
}

// A follower in the ISR that lacks what the leader's high watermark
// covers — or holds another batch there — diverges (a premature
// high-watermark advance, a follower let into the ISR too early).
func TestAnISRFollowerMissingWhatTheHighWatermarkCoversDiverges(t *testing.T) {
	var b hb
	l := b.replica("b0", true, true, 3, batch(0, 1, 0, 0xa), batch(2, 2, 1, 0xb))
	f := b.replica("b1", false, true, 2, batch(0, 1, 0, 0xa))
	v := b.check(t, checkers.Options{})
	d := wantAnomaly(t, v, "replica-divergence", 1, l, f)
	if !strings.Contains(d.Witnesses[0].Message, "b1 lacks offsets from 2") {
		t.Fatalf("the witness says what b1 lacks:\n%s", v.Summary())
	}
	if v.Holds(checkers.AtLeastOnce) {
		t.Fatal("divergent replicas break at-least-once")
	}
}

// Two replicas holding different batches at an offset both count as
// committed (below both high watermarks): what an unclean election or a
// follower truncating to its high watermark (pre-KIP-101) leaves behind.
func TestTwoReplicasWithDifferentBatchesBelowBothHighWatermarksDiverge(t *testing.T) {
	var b hb
	x0 := b.replica("b0", false, false, 2, batch(0, 0, 0, 0xa), batch(1, 1, 0, 0xb))
	x1 := b.replica("b1", true, true, 2, batch(0, 0, 0, 0xa), batch(1, 1, 2, 0xe))
	v := b.check(t, checkers.Options{})
	d := wantAnomaly(t, v, "replica-divergence", 1, x0, x1)
	if !strings.Contains(d.Witnesses[0].Message, "at offset 1") {
		t.Fatalf("the witness names the offset:\n%s", v.Summary())
	}
}

// A leader that, at a later sample, lacks what an earlier leader's high
// watermark covered lost committed data, even when every replica agrees
// by then (all of them truncated it: an internal topic's loss no read
// would show).
func TestALaterLeaderWithoutWhatAnEarlierLeaderCommittedDiverges(t *testing.T) {
	var b hb
	early := b.replicaAt(10, "b0", true, true, 3, batch(0, 1, 0, 0xa), batch(2, 2, 0, 0xb))
	b.replicaAt(10, "b1", false, true, 3, batch(0, 1, 0, 0xa), batch(2, 2, 0, 0xb))
	late := b.replicaAt(20, "b1", true, true, 2, batch(0, 1, 0, 0xa), batch(2, 2, 1, 0xe))
	b.replicaAt(20, "b0", false, true, 2, batch(0, 1, 0, 0xa), batch(2, 2, 1, 0xe))
	v := b.check(t, checkers.Options{})
	d := wantAnomaly(t, v, "replica-divergence", 1, early, late)
	if !strings.Contains(d.Witnesses[0].Message, "does not hold what the leader b0 committed at 10") {
		t.Fatalf("the witness names the earlier leader and its sample:\n%s", v.Summary())
	}
}

// A leader whose log grew, and a new leader that holds all the old one
// committed, are what failovers should look like.
func TestLeadersThatKeepWhatWasCommittedPass(t *testing.T) {
	var b hb
	b.replicaAt(10, "b0", true, true, 2, batch(0, 1, 0, 0xa), batch(2, 2, 0, 0xb))
	b.replicaAt(20, "b1", true, true, 1, batch(0, 1, 0, 0xa), batch(2, 2, 0, 0xb), batch(3, 5, 1, 0xc))
	b.replicaAt(30, "b1", true, true, 6, batch(0, 1, 0, 0xa), batch(2, 2, 0, 0xb), batch(3, 5, 1, 0xc))
	wantNo(t, b.check(t, checkers.Options{}), "replica-divergence")
}

// Kafka's leader checks each idempotent batch's sequence against the
// producer's last (ProducerAppendInfo.checkSequence): a log in which a
// producer's batch skips sequences, or an epoch starts anywhere but 0,
// was appended out of order — a break of partition order, not of
// delivery.
func TestABatchThatSkipsSequencesIsASequenceGap(t *testing.T) {
	var b hb
	r := b.replica("b0", true, true, 9,
		produced(0, 1, 7, 0, 0), produced(2, 3, 7, 0, 2), // sequences 0-1, 2-3
		produced(4, 4, 8, 0, 0), // another producer
		produced(5, 6, 7, 0, 6), // skips 4 and 5
		produced(7, 8, 7, 1, 3)) // a new epoch not from 0
	v := b.check(t, checkers.Options{Order: checkers.PartitionOrder})
	a := wantAnomaly(t, v, "sequence-gap", 2, r)
	if !strings.Contains(a.Witnesses[0].Message, "starts at sequence 6 after its batch [2..3] ended at sequence 3, not 4") {
		t.Fatalf("the witness says where the sequence broke:\n%s", v.Summary())
	}
	if v.OrderHeld || !v.Holds(checkers.ExactlyOnce) {
		t.Fatalf("a sequence gap breaks partition order, and no delivery guarantee by itself:\n%s", v.Summary())
	}
	if v := b.check(t, checkers.Options{}); !v.OrderHeld {
		t.Fatal("with no order promised, the order promised holds")
	}
}

// A leader with no state for a producer takes its first batch at any
// sequence (KIP-360): a restarted producer whose first batch went to the
// old leader and was never written lands its second one first. Seen at
// pipeline-atomic-sink seed 2305 of a 10,000-seed run, where the first
// message's fate was unknown: no promise broke.
func TestAProducersFirstBatchMayStartAnywhere(t *testing.T) {
	var b hb
	b.replica("b0", true, true, 4,
		produced(0, 0, 7, 0, 0),
		produced(1, 2, 9, 0, 1), // producer 9, new here: sequences 1-2
		produced(3, 3, 9, 0, 3))
	wantNo(t, b.check(t, checkers.Options{Order: checkers.PartitionOrder}), "sequence-gap")
}

// Sequences wrap past MaxInt32 to 0, and a retried batch's repeat is the
// duplicate checks' business: neither is a gap.
func TestWrappedAndRepeatedSequencesAreNoGap(t *testing.T) {
	var b hb
	b.replica("b0", true, true, 6,
		produced(0, 0, 7, 0, 0), produced(1, 1, 7, 0, 1), produced(2, 2, 7, 0, 1),
		history.ReplicaBatch{Base: 3, Last: 3, Producer: 7, ProducerEpoch: 0, Sequence: -1, Control: true},
		produced(4, 4, 9, 2, 0))
	wantNo(t, b.check(t, checkers.Options{Order: checkers.PartitionOrder}), "sequence-gap")
	var w hb
	w.replica("b0", true, true, 1<<32,
		produced(0, math.MaxInt32-1, 7, 0, 0),                         // sequences 0 .. MaxInt32-1
		produced(math.MaxInt32, math.MaxInt32+1, 7, 0, math.MaxInt32), // MaxInt32, then 0
		produced(math.MaxInt32+2, math.MaxInt32+2, 7, 0, 1))
	wantNo(t, w.check(t, checkers.Options{Order: checkers.PartitionOrder}), "sequence-gap")
}
