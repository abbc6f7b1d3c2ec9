package broker

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestPartitionSizeLimit is Kafka's max.request.partition.size.limit:
// the most partitions one DescribeTopicPartitions answer describes.
const requestPartitionSizeLimit = 2000

// handleDescribeTopicPartitions describes topics page by page (KIP-966),
// as Kafka's DescribeTopicPartitionsRequestHandler does: the topics named
// (every topic if none), by name, from the cursor on; at most
// min(response_partition_limit, 2000) partitions, and a next cursor where
// the answer stops. A cursor whose topic is not among those named, or
// whose partition is negative, is INVALID_REQUEST for every topic named; an unknown topic named
// is UNKNOWN_TOPIC_OR_PARTITION. No eligible leader replicas: this
// cluster runs without ELR, as Kafka 4.0 does by default.
func (b *Broker) handleDescribeTopicPartitions(r *rpc.Request, req *kmsg.DescribeTopicPartitionsRequest) {
	listener := listenerName(r.Listener)
	resp := kmsg.NewPtrDescribeTopicPartitionsResponse()
	all := len(req.Topics) == 0
	from := ""
	if req.Cursor != nil {
		from = req.Cursor.Topic
	}
	var names []string
	if all {
		names = b.image.TopicNames()
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n < from })
	if c := req.Cursor; c != nil && (c.Partition < 0 || (!all && !slices.Contains(names, c.Topic))) {
		// As Kafka's getErrorResponse for the InvalidRequestException:
		// every topic named gets the error.
		b.e.Log("describe-topic-partitions-refused", "cursor", fmt.Sprintf("%s/%d", c.Topic, c.Partition))
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(t.Topic), kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		r.Respond(resp)
		return
	}
	remaining := max(min(int(req.ResponsePartitionLimit), requestPartitionSizeLimit), 1)
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.IsInternal = kmsg.StringPtr(name), metadata.Internal(name)
		rt.AuthorizedOperations = -2147483648 // not asked for (Kafka's default when no authorizer reports)
		t := b.image.Topics[name]
		if t == nil {
			if !all {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		rt.TopicID = t.ID
		start := 0
		if req.Cursor != nil && name == req.Cursor.Topic {
			start = int(req.Cursor.Partition)
		}
		for i := start; i < len(t.Partitions); i++ {
			if remaining == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(i)}
				break
			}
			p := t.Partitions[i]
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
			rp.Replicas, rp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
			rp.OfflineReplicas, rp.ErrorCode = b.partitionHealth(listener, p)
			rt.Partitions = append(rt.Partitions, rp)
			remaining--
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	r.Respond(resp)
}

// partitionHealth is what Metadata and DescribeTopicPartitions say of a
// partition: its replicas on brokers not in the image, and
// LEADER_NOT_AVAILABLE without a leader (LISTENER_NOT_FOUND when its
// leader has no endpoint on the request's listener).
func (b *Broker) partitionHealth(listener string, p metadata.Partition) (offline []int32, code int16) {
	for _, r := range p.Replicas {
		if _, live := b.image.Broker(r); !live {
			offline = append(offline, r)
		}
	}
	if br, live := b.image.Broker(p.Leader); p.Leader == metadata.NoLeader {
		code = kerr.LeaderNotAvailable.Code
	} else if _, on := br.AddrOn(listener); live && !on {
		code = kerr.ListenerNotFound.Code
	}
	return offline, code
}
