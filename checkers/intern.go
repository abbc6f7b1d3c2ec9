package checkers

import "math/bits"

// values interns the history's values: each distinct value gets an id, in
// the order first seen, so the checks group and count values in arrays
// indexed by id instead of maps keyed by string. Interning every sent
// value once is the only hashing a history of distinct values costs: a
// read is matched with what was written by its offset (model.Resolution).
//
// The table is open addressing over ids, each stored with 32 bits of its
// value's hash so that a probe rarely reads a string, and kept at most two
// thirds full. An id names its string by index into base (the
// resolution's Values) when it can, so interning copies no string.
type values struct {
	base  []string
	at    []int32 // by id: the index of its string in base, or -1-k for extra[k]
	extra []string
	slots []uint64 // tag<<32 | id+1; 0 is empty
}

// newValues is an empty table for about n values, named in base where
// they are interned with idAt.
func newValues(base []string, n int) *values {
	size := 64
	for 2*size < 3*n {
		size <<= 1
	}
	return &values{base: base, at: make([]int32, 0, n), slots: make([]uint64, size)}
}

// len is the number of ids.
func (vs *values) len() int { return len(vs.at) }

// str is the value with an id.
func (vs *values) str(id int32) string {
	if i := vs.at[id]; i >= 0 {
		return vs.base[i]
	}
	return vs.extra[-1-vs.at[id]]
}

// idAt is base[i]'s id, interning it if new.
func (vs *values) idAt(i int32) int32 { return vs.intern(vs.base[i], i) }

// id is v's id, interning it if new.
func (vs *values) id(v string) int32 { return vs.intern(v, -1) }

// intern finds v, or gives it the next id, named by base[at] if at is not
// -1.
func (vs *values) intern(v string, at int32) int32 {
	if 3*(len(vs.at)+1) > 2*len(vs.slots) {
		vs.grow()
	}
	h := hashString(v)
	mask := uint64(len(vs.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := vs.slots[i]
		if e == 0 {
			id := int32(len(vs.at))
			if at < 0 {
				at = int32(-1 - len(vs.extra))
				vs.extra = append(vs.extra, v)
			}
			vs.at = append(vs.at, at)
			vs.slots[i] = h>>32<<32 | uint64(id+1)
			return id
		}
		if e>>32 == h>>32 && vs.str(int32(uint32(e)-1)) == v {
			return int32(uint32(e) - 1)
		}
	}
}

// lookup is v's id, or -1 if v was never interned.
func (vs *values) lookup(v string) int32 {
	h := hashString(v)
	mask := uint64(len(vs.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := vs.slots[i]
		if e == 0 {
			return -1
		}
		if e>>32 == h>>32 && vs.str(int32(uint32(e)-1)) == v {
			return int32(uint32(e) - 1)
		}
	}
}

func (vs *values) grow() {
	old := vs.slots
	vs.slots = make([]uint64, 2*len(old))
	mask := uint64(len(vs.slots) - 1)
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := hashString(vs.str(int32(uint32(e)-1))) & mask
		for vs.slots[i] != 0 {
			i = (i + 1) & mask
		}
		vs.slots[i] = e
	}
}

// hashString is a fixed 64-bit hash (a multiply-rotate over 8-byte words,
// then murmur's finalizer): deterministic, unlike the runtime's.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037) ^ uint64(len(s))
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = bits.RotateLeft64((h^w)*0x9E3779B97F4A7C15, 31)
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	h ^= h >> 33
	h *= 0xFF51AFD7ED558CCD
	h ^= h >> 33
	h *= 0xC4CEB9FE1A85EC53
	h ^= h >> 33
	return h
}
