package broker

import (
	"errors"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets' special timestamps (Kafka's ListOffsetsRequest).
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3 // v7+, KIP-734
	listEarliestLocal = -4 // v8+, KIP-405
	listLatestTiered  = -5 // v9+, KIP-1005
)

// handleListOffsets answers at the leader, as Kafka's
// Partition.fetchOffsetForTimestamp and UnifiedLog.fetchOffsetByTimestamp
// do. The last fetchable offset is the log end for a replica, the last
// stable offset for read_committed, else the high watermark:
//
//   - latest: the last fetchable offset in the leader's epoch; a client
//     asking while the high watermark still lags the start of the leader's
//     epoch (a new leader has not yet advanced it) gets
//     OFFSET_NOT_AVAILABLE rather than an offset below records already
//     exposed.
//   - earliest and earliest-local (no tiered storage: the same): the log
//     start, with the epoch there.
//   - latest-tiered: no tiered storage, so offset -1 in epoch -1.
//   - max timestamp: the first record with the largest timestamp.
//   - a timestamp: the first record at or after it.
//
// A record found at or past the last fetchable offset is not answered:
// OFFSET_NOT_AVAILABLE in that lagging state, else offset and timestamp -1.
func (b *Broker) handleListOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, rt := range req.Topics {
		tr := kmsg.NewListOffsetsResponseTopic()
		tr.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			pr := kmsg.NewListOffsetsResponseTopicPartition()
			pr.Partition = rp.Partition
			pr.Timestamp, pr.Offset, pr.LeaderEpoch = -1, -1, -1
			p, code := b.leading(metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.CurrentLeaderEpoch)
			if code == 0 {
				code = p.listOffset(req, rp.Timestamp, &pr)
			}
			pr.ErrorCode = code
			if code == 0 {
				pr.OldStyleOffsets = []int64{pr.Offset}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp
}

func (p *partition) listOffset(req *kmsg.ListOffsetsRequest, ts int64, pr *kmsg.ListOffsetsResponseTopicPartition) int16 {
	client := req.ReplicaID < 0
	fetchable := p.log.LogEndOffset()
	switch {
	case !client:
	case req.IsolationLevel == 1:
		fetchable = p.lastStableOffset()
	default:
		fetchable = p.highWatermark()
	}
	lagging := client && p.log.EpochStart() > p.highWatermark()
	var found log.TimestampOffset
	var ok bool
	var err error
	switch ts {
	case listLatest:
		if lagging {
			return kerr.OffsetNotAvailable.Code
		}
		pr.Offset, pr.LeaderEpoch = fetchable, p.epoch()
		return 0
	case listEarliest, listEarliestLocal:
		pr.Offset, pr.LeaderEpoch = p.log.LogStartOffset(), p.log.EarliestEpoch()
		return 0
	case listLatestTiered:
		return 0
	case listMaxTimestamp:
		found, ok, err = p.log.MaxTimestamp()
	default:
		if ts < 0 {
			return kerr.InvalidRequest.Code // no timestamp Kafka defines
		}
		found, ok, err = p.log.OffsetForTimestamp(ts)
	}
	if err != nil {
		// As a fetch: a corrupt batch is refused, any other read error
		// halts the broker (its one log directory failed).
		if errors.Is(err, log.ErrCorruptMessage) {
			p.b.e.Log("corrupt-batch", "partition", p.tp.String(), "error", err.Error())
			p.b.e.Probe(probe.CorruptBatchDetected, p.tp.String())
		} else {
			p.b.e.Halt(err.Error())
		}
		return kerr.KafkaStorageError.Code
	}
	if !ok || found.Offset >= fetchable {
		if ok && lagging {
			return kerr.OffsetNotAvailable.Code
		}
		return 0
	}
	pr.Timestamp, pr.Offset, pr.LeaderEpoch = found.Timestamp, found.Offset, found.LeaderEpoch
	return 0
}
