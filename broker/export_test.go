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
