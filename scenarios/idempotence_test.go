package scenarios_test

import (
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/scenarios"
	"github.com/stretchr/testify/require"
)

// TestKafkasIdempotentProducerWritesTwiceWhenItsFirstBatchIsRefused keeps
// the run that showed Kafka's idempotent producer is not exactly-once under
// crashes alone (seed 5774 of a 10,000-seed run of acks-all-idempotent):
//
//   - producer-0, restarted at 14.2 s, waits 3 s for Metadata behind a
//     broker that serves nothing until unfenced, then sends its first
//     batch (v127..v157, sequences 0-30) and, pipelined behind it, v158
//     (sequence 31) to the leader, broker-1;
//   - the first is refused NOT_ENOUGH_REPLICAS (broker-0's return to the
//     ISR not yet committed); the second, a moment later, is taken at
//     sequence 31 as the first batch of a producer broker-1 has no state
//     for (ProducerAppendInfo.checkSequence accepts any, KIP-360), then
//     broker-1 crashes before answering it;
//   - broker-0, which fetched v158, leads; the first batch, retried there,
//     is OUT_OF_ORDER_SEQUENCE and is the producer's next sequence, so the
//     producer bumps its epoch and rewrites the sequences of its in-flight
//     batches (TransactionManager.canRetry, bumpIdempotentProducerEpoch),
//     v158's among them: written again under the new epoch, it is in the
//     log at offsets 90 and 122.
//
// KAFKA-14034 (open) proposes waiting for the in-flight batches before
// the bump. Until Kafka does, acks-all-idempotent claims at-least-once in
// order, not exactly-once; this run must keep holding that, and keep
// showing the duplicate.
func TestKafkasIdempotentProducerWritesTwiceWhenItsFirstBatchIsRefused(t *testing.T) {
	s, err := scenarios.Lookup("acks-all-idempotent")
	require.NoError(t, err)
	r, err := scenarios.Run(s, scenarios.RunOptions{Seed: 5774})
	require.NoError(t, err)
	require.True(t, r.Holds, r.Summary())
	require.Equal(t, checkers.AtLeastOnce, r.Observed, "the duplicate is gone: has Kafka's window closed here?")
	require.True(t, strings.Contains(r.Summary(), `"v158" at offsets 90, 122`), r.Summary())
}
