package replica

// InvariantViolation names the first replication invariant the replica
// breaks, or is "" if it is in a possible state; the broker asks after
// every step. A leader that passes records its high watermark and last
// stable offset as the floors for the rest of its epoch.
func (r *Replica) InvariantViolation() string {
	leo := r.log.LogEndOffset()
	if r.hw > leo {
		return invariantf("high watermark %d past log end %d of %v", r.hw, leo, r.cfg.Name)
	}
	if r.hw < r.log.LogStartOffset() {
		return invariantf("high watermark %d below log start %d of %v", r.hw, r.log.LogStartOffset(), r.cfg.Name)
	}
	if r.role != Leader {
		return ""
	}
	if r.a.Leader != r.cfg.ID {
		return invariantf("%v: acting as leader while the controller named %d", r.cfg.Name, r.a.Leader)
	}
	if len(r.a.ISR) == 0 {
		return invariantf("%v: ISR is empty", r.cfg.Name)
	}
	if !r.a.InISR(r.cfg.ID) {
		return invariantf("%v: leader %d not in its ISR %v", r.cfg.Name, r.cfg.ID, r.a.ISR)
	}
	lso := r.LastStableOffset()
	if lso > r.hw {
		return invariantf("%v: last stable offset %d past the high watermark %d", r.cfg.Name, lso, r.hw)
	}
	if r.floorEpoch == r.a.LeaderEpoch {
		if r.hw < r.hwFloor {
			return invariantf("%v: leader high watermark moved back from %d to %d within epoch %d", r.cfg.Name, r.hwFloor, r.hw, r.a.LeaderEpoch)
		}
		if lso < r.lsoFloor {
			return invariantf("%v: last stable offset moved back from %d to %d within epoch %d", r.cfg.Name, r.lsoFloor, lso, r.a.LeaderEpoch)
		}
		if r.hw > r.hwFloor {
			// The high watermark advanced: every replica it waits for
			// (the ISR, and any a pending change adds or removes) had
			// fetched past it — Kafka's Partition.maybeIncrementLeaderHW.
			for _, id := range r.effectiveISR() {
				if id == r.cfg.ID {
					continue
				}
				if f := r.followers[id]; f == nil || f.LogEnd < r.hw {
					end := int64(-1)
					if f != nil {
						end = f.LogEnd
					}
					return invariantf("%v: high watermark advanced to %d past the log end %d of ISR member %d", r.cfg.Name, r.hw, end, id)
				}
			}
		}
	}
	r.hwFloor, r.lsoFloor, r.floorEpoch = r.hw, lso, r.a.LeaderEpoch
	return ""
}
