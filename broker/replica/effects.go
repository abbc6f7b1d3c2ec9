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
	// MoveLogStart: raise the log start offset to To (Fully: truncate the
	// whole log and start it, empty, at To), then report with
	// LogStartMoved(To).
	MoveLogStart
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
	Fully    bool
	How, Why string
}

// Ready hands over the effects of the steps taken since the last call, in
// order, and forgets them. The slice is the replica's own and good until
// the next call: the two calls' arrays take turns, so a step taken while
// the caller works through one answer (a truncation reported back) lands
// in the other, and a busy partition allocates no effects at all.
func (r *Replica) Ready() []Effect {
	out := r.effects
	clear(r.handed)
	r.effects, r.handed = r.handed[:0], out
	return out
}
