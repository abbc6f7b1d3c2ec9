package broker

import (
	"cmp"
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
)

// The server-side assignors of KIP-848 consumer groups: the coordinator,
// not a leader client, computes the group's target assignment. A member
// names the one it wants in ConsumerGroupHeartbeat's ServerAssignor; the
// group uses the one most of its members name, or else the first of
// group.consumer.assignors (ConsumerGroup.preferredServerAssignor).

// partitionSet is a set of topic partitions: a member's assignment.
type partitionSet map[metadata.TopicPartition]bool

// sorted lists s by topic, then partition.
func (s partitionSet) sorted() []metadata.TopicPartition {
	return slices.SortedFunc(maps.Keys(s), metadata.TopicPartition.Compare)
}

func (s partitionSet) equal(o partitionSet) bool {
	return maps.Equal(s, o)
}

func (s partitionSet) clone() partitionSet {
	out := make(partitionSet, len(s))
	maps.Copy(out, s)
	return out
}

// assignmentMember is what an assignor knows of a member: its
// subscription (resolved to the topics that exist, sorted) and its
// current target assignment, for stickiness.
type assignmentMember struct {
	id         string
	instanceID string
	topics     []string
	current    partitionSet
}

// assignmentSpec is a group's members, sorted by member id, and the
// partition counts of the topics they subscribe to.
type assignmentSpec struct {
	members    []assignmentMember
	partitions map[string]int32
}

// homogeneous reports whether every member subscribes to the same topics
// (Kafka's SubscriptionType.HOMOGENEOUS).
func (s assignmentSpec) homogeneous() bool {
	for _, m := range s.members[1:] {
		if !slices.Equal(m.topics, s.members[0].topics) {
			return false
		}
	}
	return true
}

// assignor computes a target assignment: member id → partitions.
type assignor func(assignmentSpec) map[string]partitionSet

// assignors are the server-side assignors by name.
var assignors = map[string]assignor{
	"uniform": uniformAssign,
	"range":   rangeAssign,
}

// rangeAssign is Kafka's server-side RangeAssignor: per topic, its
// subscribers — static members first, by instance id, then the others by
// member id — each take the next contiguous range, the first
// partitions%subscribers of them one partition more. Not sticky.
func rangeAssign(spec assignmentSpec) map[string]partitionSet {
	out := map[string]partitionSet{}
	members := slices.Clone(spec.members)
	slices.SortFunc(members, func(a, b assignmentMember) int {
		switch {
		case a.instanceID != "" && b.instanceID != "":
			return cmp.Compare(a.instanceID, b.instanceID)
		case a.instanceID != "":
			return -1
		case b.instanceID != "":
			return 1
		}
		return cmp.Compare(a.id, b.id)
	})
	subscribers := map[string]int32{}
	for _, m := range members {
		for _, t := range m.topics {
			subscribers[t]++
		}
	}
	next, extra := map[string]int32{}, map[string]int32{}
	for t, n := range subscribers {
		extra[t] = spec.partitions[t] % n
	}
	for _, m := range members {
		a := partitionSet{}
		for _, t := range m.topics {
			quota := spec.partitions[t] / subscribers[t]
			if extra[t] > 0 {
				quota++
				extra[t]--
			}
			start := next[t]
			end := min(start+quota, spec.partitions[t])
			for p := start; p < end; p++ {
				a[metadata.TopicPartition{Topic: t, Partition: p}] = true
			}
			next[t] = end
		}
		out[m.id] = a
	}
	return out
}

// uniformAssign is Kafka's UniformAssignor: balanced and sticky. With
// every member subscribed to the same topics it follows
// UniformHomogeneousAssignmentBuilder: each member keeps its current
// partitions up to its quota (partitions/members, the first
// partitions%members members one more), and what is left over or
// unassigned goes, in topic then partition order, to the members below
// their quota. With different subscriptions it pursues the same goals
// without UniformHeterogeneousAssignmentBuilder's exact steps: members
// keep what they may still own, unassigned partitions go (the topics with
// fewest subscribers first) to the least loaded subscriber, then
// partitions move from a member to a subscriber of their topic holding
// two or more fewer until none can.
func uniformAssign(spec assignmentSpec) map[string]partitionSet {
	if len(spec.members) == 0 {
		return map[string]partitionSet{}
	}
	if spec.homogeneous() {
		return uniformHomogeneous(spec)
	}
	return uniformHeterogeneous(spec)
}

// kept is the part of m's current assignment it may still own: topics it
// subscribes to, partitions that exist.
func (spec assignmentSpec) kept(m assignmentMember) []metadata.TopicPartition {
	var out []metadata.TopicPartition
	for _, tp := range m.current.sorted() {
		if slices.Contains(m.topics, tp.Topic) && tp.Partition < spec.partitions[tp.Topic] {
			out = append(out, tp)
		}
	}
	return out
}

func uniformHomogeneous(spec assignmentSpec) map[string]partitionSet {
	out := map[string]partitionSet{}
	topics := spec.members[0].topics
	total := int32(0)
	owned := partitionSet{}
	for _, m := range spec.members {
		for _, tp := range spec.kept(m) {
			owned[tp] = true
		}
	}
	var unassigned []metadata.TopicPartition
	for _, t := range topics {
		total += spec.partitions[t]
		for p := range spec.partitions[t] {
			if tp := (metadata.TopicPartition{Topic: t, Partition: p}); !owned[tp] {
				unassigned = append(unassigned, tp)
			}
		}
	}
	n := int32(len(spec.members))
	minQuota, extra := total/n, total%n
	remaining := map[string]int32{}
	for _, m := range spec.members {
		quota := minQuota
		if extra > 0 {
			quota++
			extra--
		}
		a := partitionSet{}
		for _, tp := range spec.kept(m) {
			if quota > 0 {
				a[tp] = true
				quota--
			} else {
				unassigned = append(unassigned, tp)
			}
		}
		out[m.id], remaining[m.id] = a, quota
	}
	for _, m := range spec.members {
		for ; remaining[m.id] > 0 && len(unassigned) > 0; remaining[m.id]-- {
			out[m.id][unassigned[0]] = true
			unassigned = unassigned[1:]
		}
	}
	if len(unassigned) > 0 {
		panic(invariantf("uniform assignor: %d partitions left unassigned", len(unassigned)))
	}
	return out
}

func uniformHeterogeneous(spec assignmentSpec) map[string]partitionSet {
	out := map[string]partitionSet{}
	subscribers := map[string][]string{} // topic → member ids, sorted
	owned := partitionSet{}
	for _, m := range spec.members {
		a := partitionSet{}
		for _, tp := range spec.kept(m) {
			if !owned[tp] {
				a[tp], owned[tp] = true, true
			}
		}
		out[m.id] = a
		for _, t := range m.topics {
			subscribers[t] = append(subscribers[t], m.id)
		}
	}
	leastLoaded := func(ids []string) string {
		best := ids[0]
		for _, id := range ids[1:] {
			if len(out[id]) < len(out[best]) {
				best = id
			}
		}
		return best
	}
	topics := slices.SortedFunc(maps.Keys(subscribers), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(subscribers[a]), len(subscribers[b])), cmp.Compare(a, b))
	})
	for _, t := range topics {
		for p := range spec.partitions[t] {
			if tp := (metadata.TopicPartition{Topic: t, Partition: p}); !owned[tp] {
				out[leastLoaded(subscribers[t])][tp] = true
			}
		}
	}
	// Each move narrows the gap between two members by at least two, so
	// the sum of squared loads falls: this ends.
	for moved := true; moved; {
		moved = false
		for _, m := range spec.members {
			for _, tp := range out[m.id].sorted() {
				to := leastLoaded(subscribers[tp.Topic])
				if len(out[to])+1 < len(out[m.id]) {
					delete(out[m.id], tp)
					out[to][tp] = true
					moved = true
				}
			}
		}
	}
	return out
}
