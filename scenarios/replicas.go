package scenarios

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/history"
)

// readReplicas records every replica of every partition the cluster knows
// (internal topics too) as its broker's disk holds it now, read as a tool
// reads a log, with its own high watermark and what the controller says of
// it: the checkers' replica agreement works from these.
func (c *cluster) readReplicas(rec *history.Recorder) error {
	img := c.image()
	if img == nil {
		return nil
	}
	now := int64(c.w.Elapsed())
	for _, topic := range img.TopicNames() {
		for _, p := range img.Topics[topic].Partitions {
			for _, id := range p.Replicas {
				if int(id) >= len(c.brokers) {
					continue
				}
				name := c.brokers[id]
				dump, err := log.ReadDump(c.w.Node(name).Disk(), p.Topic, p.Partition)
				if err != nil {
					return fmt.Errorf("reading %v on %s: %w", p.TopicPartition, name, err)
				}
				rep := history.Replica{TP: htp(p.TopicPartition), Broker: name, Leader: p.Leader == id, InISR: slices.Contains(p.ISR, id),
					HighWatermark: dump.HighWatermark, Stopped: dump.Stopped}
				rep.Leader = false // unless it runs and says so
				if b, ok := c.w.Node(name).Process().(*broker.Broker); ok {
					if s, ok := b.Partition(metadata.TopicPartition{Topic: p.Topic, Partition: p.Partition}); ok {
						rep.Online = true
						rep.HighWatermark = s.HighWatermark
						rep.Leader = p.Leader == id && s.Role == "leader"
					}
				}
				for _, b := range dump.Batches {
					rep.Batches = append(rep.Batches, history.ReplicaBatch{Base: b.BaseOffset, Last: b.LastOffset, Epoch: b.LeaderEpoch, CRC: b.CRC})
				}
				for _, e := range dump.Epochs {
					rep.Epochs = append(rep.Epochs, history.ReplicaEpoch{Epoch: e.Epoch, Start: e.StartOffset})
				}
				rec.Replica(now, "replica-reader", rep)
			}
		}
	}
	return nil
}
