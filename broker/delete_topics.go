package broker

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
)

// Topic deletion and partition creation. The active controller decides
// both (broker/controller); a broker forwards the requests (forward.go), and applies
// the outcome when it publishes the metadata that carries it: a new
// partition is opened like any other (applyPartition), a deleted topic's
// replicas are stopped and their logs deleted (deletePartitions), as
// Kafka's ReplicaManager.applyDelta stops and deletes them.

// deletePartitions stops and deletes this broker's replicas of topics img
// no longer has (or has under another id: deleted and created again), and
// has the group coordinator drop the offsets groups committed for them.
// Requests parked on a deleted replica are woken and find it gone.
func (b *Broker) deletePartitions(img *metadata.Image) error {
	var gone []metadata.TopicPartition
	for _, p := range b.sortedPartitions() {
		if t := img.Topics[p.tp.Topic]; t != nil && t.ID == p.topicID && int(p.tp.Partition) < len(t.Partitions) {
			continue
		}
		b.stopFetching(p.tp)
		delete(b.partitions, p.tp)
		p.wakeWaiters()
		if err := log.Delete(b.e.Disk(), p.tp.Topic, p.tp.Partition); err != nil {
			return fmt.Errorf("delete log %v: %w", p.tp, err)
		}
		b.e.Log("partition-deleted", "partition", p.tp.String())
		gone = append(gone, p.tp)
	}
	if len(gone) > 0 {
		b.groups.partitionsDeleted(gone)
	}
	return nil
}

// strayWhy says why a log on disk was taken for a stray.
func strayWhy(err error) string {
	if err != nil {
		return err.Error()
	}
	return "another topic id"
}

// partitionsDeleted writes tombstones for every committed offset of the
// deleted partitions in the groups this broker coordinates, as Kafka's
// GroupCoordinator.onPartitionsDeleted does; the offsets leave memory once
// the tombstones are committed.
func (c *groupCoordinator) partitionsDeleted(tps []metadata.TopicPartition) {
	deleted := map[metadata.TopicPartition]bool{}
	for _, tp := range tps {
		deleted[tp] = true
	}
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[id]
		p, code := c.serving(id)
		if code != 0 {
			continue
		}
		var recs []record.Record
		var drop []metadata.TopicPartition
		for _, tp := range slices.SortedFunc(maps.Keys(g.offsets), metadata.TopicPartition.Compare) {
			if deleted[tp] {
				recs = append(recs, record.Record{Key: encodeOffsetKey(id, tp)})
				drop = append(drop, tp)
			}
		}
		if len(recs) == 0 {
			continue
		}
		c.b.appendReplicated(p, recs, func(code int16) {
			if code != 0 || c.groups[id] != g {
				return
			}
			for _, tp := range drop {
				delete(g.offsets, tp)
			}
			c.b.e.Log("offsets-deleted", "group", id, "partitions", len(drop), "why", "topic deleted")
		})
	}
}
