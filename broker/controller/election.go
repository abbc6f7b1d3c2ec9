package controller

import (
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
)

// The election rules are pure functions of a partition and the set of live
// brokers, so they are tested by themselves.

// election is who may lead a partition whose leader is gone.
type election uint8

const (
	// clean: a live member of the ISR, or no one.
	clean election = iota
	// unclean: failing that, any live replica, which then is the whole
	// ISR (unclean.leader.election.enable).
	unclean
	// anyLive: the first live replica, in the ISR or not, the ISR kept as
	// it is — defect.ElectionIgnoresISR, planted for the self-test.
	anyLive
)

// fence returns p after broker id is fenced: it leaves the ISR unless it is
// the last member, and if it led, a live ISR member takes over — or, with
// unclean elections, any live replica, which then is the whole ISR. The
// second result reports whether anything changed.
func fence(p metadata.Partition, id int32, live func(int32) bool, rule election) (metadata.Partition, bool) {
	if !p.IsReplica(id) {
		return p, false
	}
	q := p.Clone()
	if q.InISR(id) && len(q.ISR) > 1 {
		q.ISR = slices.DeleteFunc(q.ISR, func(r int32) bool { return r == id })
	}
	if q.Leader == id {
		q.Leader = metadata.NoLeader
		electLeader(&q, live, rule)
		q.LeaderEpoch++
	}
	if slices.Equal(q.ISR, p.ISR) && q.Leader == p.Leader {
		return p, false
	}
	q.PartitionEpoch++
	return q, true
}

// unfence returns p after broker id comes back: an offline partition whose
// ISR holds id (or, with unclean elections, any offline partition it is a
// replica of) gets it as leader.
func unfence(p metadata.Partition, id int32, live func(int32) bool, rule election) (metadata.Partition, bool) {
	if p.Leader != metadata.NoLeader || !p.IsReplica(id) {
		return p, false
	}
	q := p.Clone()
	electLeader(&q, live, rule)
	if q.Leader == metadata.NoLeader {
		return p, false
	}
	q.LeaderEpoch++
	q.PartitionEpoch++
	return q, true
}

// electLeader picks the first live ISR member in replica order; failing
// that, under the unclean rule, the first live replica, which becomes the
// ISR.
func electLeader(p *metadata.Partition, live func(int32) bool, rule election) {
	for _, r := range p.Replicas {
		if (p.InISR(r) || rule == anyLive) && live(r) {
			p.Leader = r
			return
		}
	}
	if rule != unclean {
		return
	}
	for _, r := range p.Replicas {
		if live(r) {
			p.Leader = r
			p.ISR = []int32{r}
			return
		}
	}
}

// validISR checks a leader's proposed ISR: a non-empty subset of the
// replicas that holds the leader, without duplicates, whose members other
// than those already in the ISR are live.
func validISR(p metadata.Partition, isr []int32, live func(int32) bool) bool {
	if len(isr) == 0 || !slices.Contains(isr, p.Leader) {
		return false
	}
	seen := map[int32]bool{}
	for _, r := range isr {
		if seen[r] || !p.IsReplica(r) {
			return false
		}
		seen[r] = true
		if !p.InISR(r) && !live(r) {
			return false
		}
	}
	return true
}
