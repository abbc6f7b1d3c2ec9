package broker

import (
	"errors"
	"slices"

	"github.com/kafkasim/kafkasim/broker/metadata"
)

func errorIs(err, target error) bool { return errors.Is(err, target) }

// sortedKeys returns a partition map's keys in order, so iteration order
// never decides anything.
func sortedKeys[V any](m map[metadata.TopicPartition]V) []metadata.TopicPartition {
	keys := make([]metadata.TopicPartition, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b metadata.TopicPartition) int { return a.Compare(b) })
	return keys
}
