package broker

// SetProducerEpochForTest moves a transactional id's epoch at its
// coordinator, in memory, as if that many transactions had passed: the
// way to reach epoch exhaustion in a test.
func (b *Broker) SetProducerEpochForTest(id string, epoch int16) bool {
	t := b.txns.txns[id]
	if t == nil || t.pending != txnNone || !t.State.completed() {
		return false
	}
	t.ProducerEpoch = epoch
	return true
}

// CleanerCheckpointForTest is where the next cleaner round of this
// broker's replica of topic/partition starts (-1 if it has none).
func (b *Broker) CleanerCheckpointForTest(topic string, partition int32) int64 {
	for tp, p := range b.partitions {
		if tp.Topic == topic && tp.Partition == partition {
			return p.log.CleanerCheckpoint()
		}
	}
	return -1
}

// SegmentsForTest lists the base offsets of this broker's segments of
// topic/partition.
func (b *Broker) SegmentsForTest(topic string, partition int32) []int64 {
	for tp, p := range b.partitions {
		if tp.Topic == topic && tp.Partition == partition {
			return p.log.SegmentBaseOffsets()
		}
	}
	return nil
}
