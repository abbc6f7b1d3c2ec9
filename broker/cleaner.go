package broker

import (
	"errors"
	"github.com/kafkasim/kafkasim/broker/defect"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/probe"
)

// The log cleaner, as Kafka's LogCleaner runs it: every replica — leader
// or follower — cleans its own log of each partition whose topic's
// cleanup.policy holds compact, once per log.cleaner.backoff.ms, below its
// own last stable offset (log.Clean says what a round keeps). Replicas
// clean on their own clocks, so their logs differ below their high
// watermarks in what the cleaner has removed yet, never in the latest
// record of a key. A batch that fails its checks stops the partition's
// round (Kafka marks the partition uncleanable); the next tick tries
// again. The internal topics, compacted in Kafka, are not cleaned here:
// their coordinators replay them whole.
//
// The cleaner runs only while the broker holds a compacted partition: it
// starts when one is opened or becomes compacted, and stops when none is
// left, so a cluster without compacted topics runs no cleaner events.

// maybeStartCleaner schedules the cleaner if p compacts and it is not
// running.
func (b *Broker) maybeStartCleaner(p *partition) {
	if b.cleanerRunning || !p.log.Config().Compact {
		return
	}
	b.cleanerRunning = true
	b.e.AfterFunc(b.cfg.LogCleanerBackoff, b.cleanerTick)
}

func (b *Broker) cleanerTick() {
	now := b.e.WallClock().UnixMilli()
	compacting := false
	for _, p := range b.sortedPartitions() {
		if !p.log.Config().Compact {
			continue
		}
		compacting = true
		s := b.settings(p.tp.Topic)
		c := log.CleanerConfig{DeleteRetentionMs: s.DeleteRetentionMs, MinCompactionLagMs: s.MinCompactionLagMs, MinCleanableDirtyRatio: s.MinCleanableRatio}
		bound := p.highWatermark()
		if b.cfg.Defects.Has(defect.CleanerPastHighWatermark) {
			bound = p.log.LogEndOffset()
		}
		res, err := p.log.Clean(now, bound, c)
		var corrupt *log.CorruptionError
		switch {
		case errors.As(err, &corrupt):
			b.e.Log("log-cleaner-stopped", "partition", p.tp.String(), "offset", corrupt.Offset, "reason", corrupt.Reason)
			b.e.Probe(probe.CorruptBatchDetected, p.tp.String())
			continue
		case err != nil:
			b.haltOnStorageError(err.Error())
			return
		case !res.Cleaned:
			continue
		}
		// The dirty section never reaches past the last stable offset, so
		// no record goes for a later one a failover may still truncate
		// (LogCleanerManager.cleanableOffsets).
		if stable := p.log.LastStableOffset(p.highWatermark()); res.End > stable {
			panic(invariantf("%s: the log cleaner cleaned up to %d, past the last stable offset %d", p.tp, res.End, stable))
		}
		b.e.Log("log-cleaned", "partition", p.tp.String(), "dirty-from", res.FirstDirty, "to", res.End, "segments", res.Segments,
			"records-removed", res.RecordsRemoved, "tombstones-removed", res.TombstonesRemoved, "markers-removed", res.MarkersRemoved)
		if res.RecordsRemoved > 0 {
			b.e.Probe(probe.CompactionRemovedRecords, p.tp.String())
		}
		if res.TombstonesRemoved > 0 {
			b.e.Probe(probe.TombstoneRemoved, p.tp.String())
		}
	}
	if !compacting {
		b.cleanerRunning = false
		return
	}
	b.e.AfterFunc(b.cfg.LogCleanerBackoff, b.cleanerTick)
}
