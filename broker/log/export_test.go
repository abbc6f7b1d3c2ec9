package log

import "reflect"

// SameState reports whether a and b hold the same state, everything but
// the disk each reads and the memos it keeps for the next Open, compared deeply: what Open derived on a disk that
// kept memos (env.Memos) against what it derived afresh on a copy.
func SameState(a, b *Log) bool {
	x, y := *a, *b
	x.disk, y.disk = nil, nil
	x.segments, y.segments = withoutMemos(x.segments), withoutMemos(y.segments)
	return reflect.DeepEqual(x, y)
}

// withoutMemos copies segments, leaving out what they keep for the next
// Open.
func withoutMemos(segments []*segment) []*segment {
	out := make([]*segment, len(segments))
	for i, s := range segments {
		c := *s
		c.memo = nil
		out[i] = &c
	}
	return out
}
