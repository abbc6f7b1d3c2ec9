package broker

import (
	"github.com/kafkasim/kafkasim/broker/metadata"
)

// retentionTick applies retention every log.retention.check.interval.ms,
// as Kafka's LogManager.cleanupLogs does: each partition this broker leads
// whose cleanup.policy holds delete starts past its segments older than
// retention.ms and past those beyond retention.bytes (log.RetentionStart),
// through the same path as DeleteRecords, so followers follow the leader's
// log start from their fetches and a consumer below it gets
// OFFSET_OUT_OF_RANGE; then every replica removes the segments wholly
// below its log start, on disk. The active segment goes too once all its
// records are past retention and committed (Kafka rolls it first). Kafka's
// followers apply retention to their own segments too; here they follow
// the leader's start, which gives the same log start wherever the leader's
// and a follower's segments agree. The internal topics are compacted in
// Kafka and are left alone.
func (b *Broker) retentionTick() {
	now := b.e.WallClock().UnixMilli()
	for _, p := range b.sortedPartitions() {
		if metadata.Internal(p.tp.Topic) {
			continue
		}
		s := b.settings(p.tp.Topic)
		if p.leading() && s.CleanupDelete && (s.RetentionMs >= 0 || s.RetentionBytes >= 0) {
			start := p.log.RetentionStart(now, s.RetentionMs, s.RetentionBytes, p.highWatermark())
			if start > p.log.LogStartOffset() {
				if _, ok := p.r.DeleteRecordsBefore(start); ok {
					b.e.Log("retention", "partition", p.tp.String(), "log-start", start)
					if err := p.apply(); err != nil {
						b.haltOnStorageError(err.Error())
						return
					}
				}
			}
		}
		// Every replica removes the segments wholly below its log start
		// (UnifiedLog.deleteLogStartOffsetBreachedSegments): what
		// retention or DeleteRecords left behind.
		n, err := p.log.DeleteSegmentsBelow(p.log.LogStartOffset())
		if err != nil {
			b.haltOnStorageError(err.Error())
			return
		}
		if n > 0 {
			b.e.Log("segments-deleted", "partition", p.tp.String(), "segments", n, "log-start", p.log.LogStartOffset())
		}
	}
	b.e.AfterFunc(b.cfg.LogRetentionCheckInterval, b.retentionTick)
}
