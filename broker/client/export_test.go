package client

// RangeAssign is the range assignor, for tests.
var RangeAssign = rangeAssign

// ForgetTopic makes the consumer's metadata say topic is unknown, as the
// answer of a broker whose metadata image has not caught up does.
func (c *Consumer) ForgetTopic(topic string) {
	if t := c.cl.topics[topic]; t != nil {
		t.code = 3 // UNKNOWN_TOPIC_OR_PARTITION
	}
}

// HeartbeatOwned is the number of partitions the consumer's next
// ConsumerGroupHeartbeat reports it owns.
func (c *Consumer) HeartbeatOwned() int {
	n := 0
	for _, t := range c.consumerHeartbeatRequest().Topics {
		n += len(t.Partitions)
	}
	return n
}
