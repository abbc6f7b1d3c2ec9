package broker

import (
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeProducers lists each partition's producers as its leader's
// log keeps their state (Kafka's ReplicaManager.activeProducerState): id,
// epoch, last sequence, the coordinator epoch of its last marker and the
// first offset of its open transaction (-1 for none). A replica that does
// not lead answers NOT_LEADER_OR_FOLLOWER. The log keeps no timestamp per
// producer: LastTimestamp is -1.
func (b *Broker) handleDescribeProducers(req *kmsg.DescribeProducersRequest) *kmsg.DescribeProducersResponse {
	resp := kmsg.NewPtrDescribeProducersResponse()
	for _, rt := range req.Topics {
		tr := kmsg.NewDescribeProducersResponseTopic()
		tr.Topic = rt.Topic
		for _, part := range rt.Partitions {
			pr := kmsg.NewDescribeProducersResponseTopicPartition()
			pr.Partition = part
			p, code := b.leading(metadata.TopicPartition{Topic: rt.Topic, Partition: part}, -1)
			pr.ErrorCode = code
			if code == 0 {
				for _, id := range p.log.ProducerIDs() {
					s, _ := p.log.Producer(id)
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = s.ProducerID, int32(s.ProducerEpoch), s.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, s.CoordinatorEpoch, s.TxnFirstOffset
					pr.ActiveProducers = append(pr.ActiveProducers, ap)
				}
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp
}
