package checkers_test

import (
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

func (b *hb) replica(broker string, leader, inISR bool, hw int64, batches ...history.ReplicaBatch) history.ID {
	return b.add(history.Op{Process: "replica-reader", Kind: history.KindReplica, Call: 100, Return: 100, Outcome: ok,
		Replica: &history.Replica{TP: x, Broker: broker, Leader: leader, InISR: inISR, Online: true, HighWatermark: hw, Batches: batches}})
}

func batch(base, last int64, epoch int32, crc uint32) history.ReplicaBatch {
	return history.ReplicaBatch{Base: base, Last: last, Epoch: epoch, CRC: crc}
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
