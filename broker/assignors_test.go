package broker

import (
	"fmt"
	"testing"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
)

func parts(tps ...string) partitionSet {
	s := partitionSet{}
	for _, tp := range tps {
		var t string
		var p int32
		_, err := fmt.Sscanf(tp, "%1s%d", &t, &p)
		if err != nil {
			panic(err)
		}
		s[metadata.TopicPartition{Topic: t, Partition: p}] = true
	}
	return s
}

// Topics are one letter, partitions a number: "a0" is a/0.
func TestTheUniformAssignorIsBalancedAndSticky(t *testing.T) {
	spec := assignmentSpec{partitions: map[string]int32{"a": 3, "b": 2}, members: []assignmentMember{
		{id: "A", topics: []string{"a", "b"}}, {id: "B", topics: []string{"a", "b"}},
	}}
	got := uniformAssign(spec)
	require.Equal(t, map[string]partitionSet{"A": parts("a0", "a1", "a2"), "B": parts("b0", "b1")}, got,
		"quotas 3 and 2; unassigned partitions in topic, then partition order")

	// C joins: A gives up its third partition, B keeps both.
	spec.members[0].current, spec.members[1].current = got["A"], got["B"]
	spec.members = append(spec.members, assignmentMember{id: "C", topics: []string{"a", "b"}})
	got = uniformAssign(spec)
	require.Equal(t, map[string]partitionSet{"A": parts("a0", "a1"), "B": parts("b0", "b1"), "C": parts("a2")}, got)
}

func TestTheUniformAssignorBalancesDifferentSubscriptions(t *testing.T) {
	spec := assignmentSpec{partitions: map[string]int32{"a": 4, "b": 2}, members: []assignmentMember{
		{id: "A", topics: []string{"a"}}, {id: "B", topics: []string{"a", "b"}},
	}}
	got := uniformAssign(spec)
	require.Len(t, got["A"], 3)
	require.Len(t, got["B"], 3)
	for tp := range parts("b0", "b1") {
		require.True(t, got["B"][tp], "only B subscribes to b: %v is B's", tp)
	}
}

func TestTheRangeAssignorGivesContiguousRanges(t *testing.T) {
	spec := assignmentSpec{partitions: map[string]int32{"a": 3, "b": 3}, members: []assignmentMember{
		{id: "A", topics: []string{"a", "b"}}, {id: "B", topics: []string{"a", "b"}}, {id: "S", instanceID: "static", topics: []string{"a"}},
	}}
	got := rangeAssign(spec)
	require.Equal(t, map[string]partitionSet{
		"S": parts("a0"),             // static members first
		"A": parts("a1", "b0", "b1"), // b has two subscribers
		"B": parts("a2", "b2"),
	}, got)
}
