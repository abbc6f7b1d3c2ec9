package broker

import (
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// autoCreateTopic is auto.create.topics.enable, as Kafka's
// AutoTopicCreationManager does it for a Metadata request that allows it:
// the topic is created through the controller with num.partitions and
// default.replication.factor (the internal topics with their own shape,
// ensureInternalTopics), and the answer for it meanwhile is
// LEADER_NOT_AVAILABLE, so the client asks again; a name that cannot be a
// topic is INVALID_TOPIC_EXCEPTION. One creation per name is in flight at
// a time. It returns the error code to answer.
func (b *Broker) autoCreateTopic(name string) int16 {
	switch {
	case !b.cfg.AutoCreateTopicsEnable:
		return kerr.UnknownTopicOrPartition.Code
	case !metadata.ValidTopicName(name):
		return kerr.InvalidTopicException.Code
	case metadata.Internal(name):
		b.ensureInternalTopics()
		return kerr.LeaderNotAvailable.Code
	case b.autoCreating[name]:
		return kerr.LeaderNotAvailable.Code
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	req.Topics = append(req.Topics, rt)
	b.autoCreating[name] = true
	b.e.Log("topic-auto-create", "topic", name)
	b.controller.Do(req, b.cfg.BrokerSessionTimeout, func(resp kmsg.Response, err error) {
		delete(b.autoCreating, name)
		if r, ok := resp.(*kmsg.CreateTopicsResponse); ok && err == nil && len(r.Topics) == 1 && r.Topics[0].ErrorCode != 0 {
			b.e.Log("topic-auto-create-refused", "topic", name, "error", kerr.ErrorForCode(r.Topics[0].ErrorCode).Error())
		}
	})
	return kerr.LeaderNotAvailable.Code
}
