package log

// RetentionStart is where retention would start the log (Kafka's
// UnifiedLog.deleteOldSegments with deleteRetentionMsBreachedSegments and
// deleteRetentionSizeBreachedSegments): past the oldest segments whose
// newest record is older than retentionMs before nowMs (retentionMs < 0:
// none), then past the oldest segments while the log stays at least
// retentionBytes without them (retentionBytes < 0: none). Only segments
// wholly below the high watermark hw go, and never the active one (Kafka
// rolls the active segment to delete it; here it stays until it rolls by
// wholly below the high watermark hw go; the active segment goes too once
// it holds records, all of them past retention, and the high watermark has
// reached the log end (Kafka's deletableSegments; it rolls a new active
// segment first: DeleteSegmentsBelow does). The result is the base of the
// first segment kept — the log end if none is — at least the log start;
// the caller moves the start there (IncrementLogStartOffset, then
// DeleteSegmentsBelow).
func (l *Log) RetentionStart(nowMs, retentionMs, retentionBytes, hw int64) int64 {
	k := 0 // segments [0, k) go
	deletable := func(i int) bool {
		if i+1 == len(l.segments) {
			return len(l.segments[i].batches) > 0 && hw >= l.logEnd
		}
		return i+1 < len(l.segments) && l.segments[i+1].base <= hw
	}
	if retentionMs >= 0 {
		for k < len(l.segments) && deletable(k) && l.segments[k].maxTimestamp() < nowMs-retentionMs {
			k++
		}
	}
	if retentionBytes >= 0 {
		size := int64(0)
		for _, s := range l.segments[k:] {
			size += s.size
		}
		for k < len(l.segments) && deletable(k) && size-l.segments[k].size >= retentionBytes {
			size -= l.segments[k].size
			k++
		}
	}
	if k == 0 {
		return l.logStart
	}
	if k >= len(l.segments) {
		return max(l.logStart, l.logEnd)
	}
	return max(l.logStart, l.segments[k].base)
}

// maxTimestamp is the newest record's timestamp in the segment (Kafka's
// LogSegment.largestTimestamp), or -1 when it is empty.
func (s *segment) maxTimestamp() int64 {
	ts := int64(-1)
	for i := range s.batches {
		ts = max(ts, s.batches[i].maxTimestamp)
	}
	return ts
}
