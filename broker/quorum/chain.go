package quorum

import "github.com/kafkasim/kafkasim/broker/raft"

// Chain is a running digest of the entries a process applied, one per
// entry: digest i covers entries 0..i (FNV-1a over the previous digest,
// the entry's offset, epoch, kind and data). Two processes applied the
// same prefix of the log exactly when their chains agree where both reach.
type Chain struct{ digests []uint64 }

// Extend folds the next applied entry in.
func (c *Chain) Extend(en raft.Entry) {
	h := uint64(14695981039346656037)
	if n := len(c.digests); n > 0 {
		h = c.digests[n-1]
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

// Digests are the chain's digests, in offset order. Read only.
func (c *Chain) Digests() []uint64 { return c.digests }
