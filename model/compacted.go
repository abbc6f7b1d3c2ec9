package model

import "github.com/kafkasim/kafkasim/history"

// Compact marks the partitions of the topics compacted says are compacted
// (cleanup.policy holds compact) and, in each, the cells whose record a log
// cleaner may remove (Partition.Removable). Kafka's cleaner (LogCleaner,
// Cleaner.cleanSegments, KIP-58, KIP-98) removes, below the first
// uncleanable offset — never past the last stable offset, so never past the
// high watermark — a record that a later record of the same key supersedes,
// and the records of aborted transactions; it never removes the latest
// record of a key. The checkers therefore excuse a read that skips a
// removable record, and a removable record no read returned, in a
// compacted partition; the latest record of every key stays required, and
// its loss is lost-write, unseen or output-loss as anywhere else.
//
// A record supersedes the earlier ones of its key if it is not aborted: the
// cleaner's offset map skips aborted batches, and an undecided
// transaction's record is taken to supersede (its outcome is the broker's
// to know; the generous reading, so that no verdict rests on a guess). A
// record without a key is never removable here: a compacted topic refuses
// one (INVALID_RECORD, LogValidator.validateKey). Tombstones are not
// modelled: the history does not tell a null value from an empty one, and
// no workload sends one.
//
// The key of a cell is that of the first append (in the log's order) to
// write it; a cell only a read names — an anomaly already — has none.
func (r *Resolution) Compact(h history.History, compacted func(topic string) bool) {
	for i := range r.Partitions {
		p := &r.Partitions[i]
		if !compacted(p.TP.Topic) {
			continue
		}
		p.Compacted = true
		n := p.Cells.Len()
		keys := make([]string, n)
		keyed := make([]bool, n) // a cell holds a record with a key, not aborted: one the cleaner's offset map holds
		p.Removable = make([]bool, n)
		for _, ai := range p.ByOffset {
			a := &p.Appends[ai]
			if a.Sent < 0 {
				continue
			}
			s := &r.Sends[a.Sent]
			msgs := h[s.Pos].Send.Messages
			for k := int32(0); k < a.Count; k++ {
				c := p.Cells.Of(a.Base + int64(k))
				if c < 0 || keyed[c] || p.Removable[c] {
					continue
				}
				if a.Visibility == Aborted {
					p.Removable[c] = true
					continue
				}
				if m := a.Value - s.Value + k; m >= 0 && int(m) < len(msgs) && msgs[m].Key != "" {
					keys[c], keyed[c] = msgs[m].Key, true
				}
			}
		}
		latest := map[string]bool{} // keys with a record at a higher cell
		for c := n - 1; c >= 0; c-- {
			if !keyed[c] {
				continue
			}
			if latest[keys[c]] {
				p.Removable[c] = true
			}
			latest[keys[c]] = true
		}
	}
}

// RemovableAt reports whether a log cleaner may have removed the record at
// an offset of partition p (Compact).
func (p *Partition) RemovableAt(offset int64) bool {
	if p.Removable == nil {
		return false
	}
	c := p.Cells.Of(offset)
	return c >= 0 && p.Removable[c]
}
