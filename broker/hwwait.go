package broker

// hwWait is the one wait of the broker's parked writes: until partition
// p's high watermark reaches required while p still leads in epoch epoch.
// An acks=all produce waits on one per partition it wrote, a coordinator's
// write to its internal partition on one.
type hwWait struct {
	p        *partition
	epoch    int32
	required int64 // the high watermark that commits the write
}

// waitFor is the wait for p's high watermark to pass required, in p's
// current epoch.
func waitFor(p *partition, required int64) hwWait {
	return hwWait{p: p, epoch: p.epoch(), required: required}
}

// hwWaitState is where a wait stands.
type hwWaitState uint8

const (
	hwWaiting hwWaitState = iota
	hwReached             // the high watermark passed it: committed
	hwDeposed             // p no longer leads in the wait's epoch
)

func (w hwWait) state() hwWaitState {
	p := w.p
	switch {
	case !p.leading() || p.epoch() != w.epoch || p.b.partitions[p.tp] != p:
		return hwDeposed
	case p.highWatermark() >= w.required:
		return hwReached
	}
	return hwWaiting
}
