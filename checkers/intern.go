package checkers

import (
	"math/bits"
	"unsafe"

	"github.com/kafkasim/kafkasim/internal/prefetch"
)

// hashAhead is how many values ahead internBase asks for a value's bytes
// while it hashes: they lie wherever the history put them, a cache miss
// each.
const hashAhead = 16

// values interns the history's values: each distinct value gets an id, so
// the checks group and count values in arrays indexed by id instead of
// maps keyed by string. Interning every sent value once is the only
// hashing a history of distinct values costs: a read is matched with what
// was written by its offset (model.Resolution).
//
// A sent value's id is the index, in base (the resolution's Values), of its
// first occurrence in history order; any other value's is len(base) and
// up, in the order first seen. The table is open addressing, each slot
// holding an id and its value's 32-bit hash (so a probe rarely reads a
// string), at most two thirds full.
type values struct {
	base  []string
	extra []string // ids len(base) and up
	slots []uint64 // hash<<32 | id+1; 0 is empty
	n     int      // ids in the table
}

// newValues is an empty table for about n values.
func newValues(base []string, n int) *values {
	size := 64
	for 2*size < 3*n {
		size <<= 1
	}
	return &values{base: base, slots: make([]uint64, size)}
}

// len is one past the highest id.
func (vs *values) len() int { return len(vs.base) + len(vs.extra) }

// str is the value with an id.
func (vs *values) str(id int32) string {
	if int(id) < len(vs.base) {
		return vs.base[id]
	}
	return vs.extra[int(id)-len(vs.base)]
}

// internBase interns every value of base, which walk visits in history
// order (each send's values in turn), and returns their ids. It hashes them
// all first, in base's order, asking for each value's bytes hashAhead
// values before it hashes them; then it fills the table one region at a
// time, each small enough to stay in cache while it fills, in the order
// walk visits them (filling it in history order would miss the cache at
// almost every value), asking for each value's hash and id hashAhead
// values ahead: within a region they lie far apart in base.
func (vs *values) internBase(walk func(visit func(i int32))) []int32 {
	for 3*(len(vs.base)+1) > 2*len(vs.slots) {
		vs.grow()
	}
	const regionBits = 13 // 8,192 slots, 64 KiB
	shift := max(bits.Len(uint(len(vs.slots)-1))-regionBits, 0)
	mask := uint32(len(vs.slots) - 1)
	hashes := make([]uint32, len(vs.base))
	start := make([]int32, (len(vs.slots)>>shift)+1)
	for i, v := range vs.base {
		if j := i + hashAhead; j < len(vs.base) && len(vs.base[j]) > 0 {
			prefetch.Line(unsafe.Pointer(unsafe.StringData(vs.base[j])))
		}
		h := uint32(hashString(v))
		hashes[i] = h
		start[(h&mask)>>shift+1]++
	}
	for r := 1; r < len(start); r++ {
		start[r] += start[r-1]
	}
	byRegion := make([]int32, len(vs.base)) // in history order within a region
	walk(func(i int32) {
		r := (hashes[i] & mask) >> shift
		byRegion[start[r]] = i
		start[r]++
	})
	ids := make([]int32, len(vs.base))
	for k, i := range byRegion {
		if j := k + hashAhead; j < len(byRegion) { // in history order within a region: far apart in base
			prefetch.Line(unsafe.Pointer(&hashes[byRegion[j]]))
			prefetch.Line(unsafe.Pointer(&ids[byRegion[j]]))
		}
		ids[i] = vs.intern(hashes[i], i)
	}
	return ids
}

// id is v's id, interning it if new.
func (vs *values) id(v string) int32 {
	if 3*(vs.n+1) > 2*len(vs.slots) {
		vs.grow()
	}
	next := int32(vs.len())
	vs.extra = append(vs.extra, v)
	if id := vs.intern(uint32(hashString(v)), next); id != next {
		vs.extra = vs.extra[:len(vs.extra)-1]
		return id
	}
	return next
}

// intern finds the value with id next (of hash h), or gives it that id.
// It reads strings only to tell apart values whose hashes are equal.
func (vs *values) intern(h uint32, next int32) int32 {
	mask := uint32(len(vs.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := vs.slots[i]
		if e == 0 {
			vs.slots[i] = uint64(h)<<32 | uint64(next+1)
			vs.n++
			return next
		}
		if uint32(e>>32) == h && vs.str(int32(uint32(e)-1)) == vs.str(next) {
			return int32(uint32(e) - 1)
		}
	}
}

// lookup is v's id, or -1 if v was never interned.
func (vs *values) lookup(v string) int32 {
	h := uint32(hashString(v))
	mask := uint32(len(vs.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := vs.slots[i]
		if e == 0 {
			return -1
		}
		if uint32(e>>32) == h && vs.str(int32(uint32(e)-1)) == v {
			return int32(uint32(e) - 1)
		}
	}
}

func (vs *values) grow() {
	old := vs.slots
	vs.slots = make([]uint64, 2*len(old))
	mask := uint32(len(vs.slots) - 1)
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := uint32(e>>32) & mask
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

// names interns the process names of a history's operations, one per
// operation: few names, met over and over. A direct-mapped cache, keyed by
// a name's length and last byte, answers most of them with one comparison
// of short strings instead of hashing the name; the table behind it
// decides the ids (first seen, from len(base)).
type names struct {
	table *values
	cache [128]struct {
		name string
		id   int32 // -1: empty
	}
}

func newNames(table *values) *names {
	n := &names{table: table}
	for i := range n.cache {
		n.cache[i].id = -1
	}
	return n
}

// id is name's id in the table, interning it if new.
func (n *names) id(name string) int32 {
	k := len(name) * 31
	if len(name) > 0 {
		k += int(name[len(name)-1])
	}
	e := &n.cache[k%len(n.cache)]
	if e.id >= 0 && e.name == name {
		return e.id
	}
	e.name, e.id = name, n.table.id(name)
	return e.id
}
