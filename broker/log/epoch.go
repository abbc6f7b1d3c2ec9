package log

import (
	"fmt"
	"strconv"
	"strings"
)

// UndefinedEpoch and UndefinedEpochOffset are OffsetForLeaderEpoch's answer
// for an epoch the log cannot place.
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// EpochEntry says that leader epoch Epoch began at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache: entries strictly increasing
// in both epoch and start offset.
type epochCache struct {
	entries []EpochEntry
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{Epoch: UndefinedEpoch, StartOffset: UndefinedEpochOffset}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at start, with Kafka's rules: nothing
// changes if epoch is the latest and starts no later; otherwise every entry
// with an epoch ≥ epoch or a start ≥ start is removed first, so the cache
// stays monotonic even when a follower is handed an older epoch after a
// lossy truncation. It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if l, ok := c.latest(); ok && l.Epoch == epoch && start >= l.StartOffset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= start) {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{epoch, start})
	return true
}

// truncateFromEnd removes entries starting at or after end.
func (c *epochCache) truncateFromEnd(end int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= end {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// endOffsetFor is KIP-101/KIP-279's answer to OffsetForLeaderEpoch: the
// largest epoch ≤ requested and the offset where it ended (the start of
// the next higher epoch, or the log end for the latest epoch), or
// (UndefinedEpoch, UndefinedEpochOffset) when requested is above every
// known epoch. For a requested epoch below the earliest known one Kafka
// answers the requested epoch and the earliest entry's start.
func (c *epochCache) endOffsetFor(requested int32, logEnd int64) (int32, int64) {
	if requested == UndefinedEpoch {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if l, ok := c.latest(); ok && l.Epoch == requested {
		return requested, logEnd
	}
	// higher: the first entry with an epoch > requested.
	higher := len(c.entries)
	for i, e := range c.entries {
		if e.Epoch > requested {
			higher = i
			break
		}
	}
	if higher == len(c.entries) {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if higher == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// truncateFromStart is LeaderEpochFileCache.truncateFromStart, applied when
// the log start offset moves to start: every entry starting at or below
// start is removed and the last of them comes back starting at start, so
// the epoch that held start still covers it (exclusive: an entry starting
// at start stays as it is). It reports whether the cache changed.
func (c *epochCache) truncateFromStart(start int64) bool {
	n := 0
	for n < len(c.entries) && c.entries[n].StartOffset <= start {
		n++
	}
	if n == 0 || (n == 1 && c.entries[0].StartOffset == start) {
		return false
	}
	kept := make([]EpochEntry, 0, len(c.entries)-n+1)
	kept = append(kept, EpochEntry{Epoch: c.entries[n-1].Epoch, StartOffset: start})
	c.entries = append(kept, c.entries[n:]...)
	return true
}

func (c *epochCache) clone() epochCache {
	return epochCache{entries: append([]EpochEntry(nil), c.entries...)}
}

func (c *epochCache) equal(o epochCache) bool {
	if len(c.entries) != len(o.entries) {
		return false
	}
	for i := range c.entries {
		if c.entries[i] != o.entries[i] {
			return false
		}
	}
	return true
}

func (c *epochCache) assertMonotonic(partition string) {
	for i := 1; i < len(c.entries); i++ {
		a, b := c.entries[i-1], c.entries[i]
		if !(a.Epoch < b.Epoch && a.StartOffset < b.StartOffset) {
			fail("%s: epoch cache not monotonic: %v then %v", partition, a, b)
		}
	}
}

func (c *epochCache) lines() []string {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return lines
}

func parseEpochLines(lines []string) (epochCache, error) {
	var c epochCache
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			return epochCache{}, fmt.Errorf("epoch line %q", l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return epochCache{}, fmt.Errorf("epoch line %q", l)
		}
		c.entries = append(c.entries, EpochEntry{int32(e), o})
	}
	return c, nil
}
