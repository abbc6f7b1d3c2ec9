package quorum

import "github.com/kafkasim/kafkasim/broker/raft"

// Chain is a running digest of the entries a process applied: the digest
// at offset o covers every entry up to o (FNV-1a over the previous digest
// and the entry's offset, epoch, kind and data). Two processes applied the
// same prefix of the log exactly when their digests agree at the last
// offset both reach. A process that loaded a snapshot starts its chain at
// the snapshot's end with the digest the snapshot carries (Reset).
type Chain struct {
	base    int64 // offset of digests[0]
	digests []uint64
}

// Reset starts the chain over after a snapshot ending at end whose last
// entry's digest is last (none before offset 0: end 0, last 0).
func (c *Chain) Reset(end int64, last uint64) {
	c.base, c.digests = end-1, []uint64{last}
	if end == 0 {
		c.base, c.digests = 0, nil
	}
}

// Extend folds the next applied entry in.
func (c *Chain) Extend(en raft.Entry) {
	h := uint64(14695981039346656037)
	if n := len(c.digests); n > 0 {
		h = c.digests[n-1]
		if en.Offset != c.base+int64(n) {
			panic("quorum: chain extended out of order")
		}
	} else {
		c.base = en.Offset
	}
	mix := func(b byte) { h = (h ^ uint64(b)) * 1099511628211 }
	for _, v := range []uint64{uint64(en.Offset), uint64(en.Epoch)} {
		for i := range 8 {
			mix(byte(v >> (8 * i)))
		}
	}
	if en.LeaderChange {
		mix(1)
	}
	for _, b := range en.Data {
		mix(b)
	}
	c.digests = append(c.digests, h)
}

// End is the offset after the last entry the chain covers.
func (c *Chain) End() int64 { return c.base + int64(len(c.digests)) }

// At is the digest covering the entries up to offset; ok is false where
// the chain holds none (before a snapshot it started from, or past End).
func (c *Chain) At(offset int64) (uint64, bool) {
	if offset < c.base || offset >= c.End() {
		return 0, false
	}
	return c.digests[offset-c.base], true
}

// Last is the digest of the last entry covered (0 for none).
func (c *Chain) Last() uint64 {
	if len(c.digests) == 0 {
		return 0
	}
	return c.digests[len(c.digests)-1]
}
