package replica

// Kind is what an Effect asks of the broker.
type Kind uint8

const (
	// TraceLine: write the trace line Event with Fields.
	TraceLine Kind = iota + 1
	// HitProbe: hit probe Probe for the partition.
	HitProbe
	// ProposeISR: send an AlterPartition proposing ISR for LeaderEpoch
	// and PartitionEpoch; give the answer to ISRAnswered.
	ProposeISR
	// Truncate: cut the log at To, then report with Truncated(before,
	// end, How, Why). Always the last effect of its step.
	Truncate
	// Wake: the high watermark or the role moved; parked requests may
	// complete.
	Wake
)

// Effect is one thing the broker must do for the replica.
type Effect struct {
	Kind   Kind
	Event  string
	Fields []any
	Probe  string

	ISR                         []int32
	LeaderEpoch, PartitionEpoch int32

	To       int64
	How, Why string
}

// Ready hands over the effects of the steps taken since the last call, in
// order, and forgets them.
func (r *Replica) Ready() []Effect {
	out := r.effects
	r.effects = nil
	return out
}
