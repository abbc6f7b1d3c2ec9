package sink

import (
	"bytes"
	"maps"
	"slices"
	"strings"
)

// state is the store's key/value map: pure data, no I/O. Every key carries
// the revision of the write that last put it.
type state struct {
	revision uint64 // writes applied so far
	entries  map[string]*entry
	bytes    int64 // keys and values held, for the compaction threshold

	// The keys in order, for Scan and snapshots, kept lazily so that a
	// write costs no more than a map update: keys is sorted but may still
	// hold keys removed since (stale of them), added holds keys created
	// since, unsorted. sortedKeys merges the two when a reader needs them.
	keys  []string
	added []string
	stale int
}

type entry struct {
	value   []byte
	version uint64
}

func newState() *state { return &state{entries: map[string]*entry{}} }

// get returns key's entry; an absent key has version 0.
func (s *state) get(key string) Entry {
	if e := s.entries[key]; e != nil {
		return Entry{Key: key, Value: e.value, Version: e.version}
	}
	return Entry{Key: key}
}

// check returns the index of the first condition that does not hold and
// the key's version then, or -1.
func (s *state) check(conds []Condition) (failed int, version uint64) {
	for i, c := range conds {
		e := s.entries[c.Key]
		var v uint64
		if e != nil {
			v = e.version
		}
		switch c.Kind {
		case VersionIs:
			if v != c.Version {
				return i, v
			}
		case ValueIs:
			if e == nil || !bytes.Equal(e.value, c.Value) {
				return i, v
			}
		default:
			panic("sink: checking a condition of unknown kind " + c.Kind.String())
		}
	}
	return -1, 0
}

// apply makes puts the write at revision s.revision+1 and returns what it
// replaced (version 0: the key was absent), for undo. Values are copied:
// the state never aliases a frame.
func (s *state) apply(puts []Put) (undo []Entry) {
	s.revision++
	undo = make([]Entry, 0, len(puts))
	for _, p := range puts {
		old := s.get(p.Key)
		undo = append(undo, old)
		if p.Delete {
			s.remove(p.Key)
			continue
		}
		s.set(p.Key, append(make([]byte, 0, len(p.Value)), p.Value...), s.revision)
	}
	return undo
}

// undo reverts the latest write, given what apply returned for it.
func (s *state) undo(undo []Entry) {
	assert(s.revision > 0, "undo with no write applied")
	for i := len(undo) - 1; i >= 0; i-- {
		u := undo[i]
		if u.Version == 0 {
			s.remove(u.Key)
		} else {
			s.set(u.Key, u.Value, u.Version)
		}
	}
	s.revision--
}

func (s *state) set(key string, value []byte, version uint64) {
	assert(version > 0 && version <= s.revision, "key %q set at version %d, revision %d", key, version, s.revision)
	if e := s.entries[key]; e != nil {
		s.bytes += int64(len(value) - len(e.value))
		e.value, e.version = value, version
		return
	}
	s.entries[key] = &entry{value: value, version: version}
	s.bytes += int64(len(key) + len(value))
	s.added = append(s.added, key)
}

func (s *state) remove(key string) {
	e := s.entries[key]
	if e == nil {
		return
	}
	delete(s.entries, key)
	s.bytes -= int64(len(key) + len(e.value))
	s.stale++
	if s.stale > len(s.entries)+1024 {
		s.sortedKeys() // keep the stale keys bounded by the live ones
	}
}

// sortedKeys returns every present key in order.
func (s *state) sortedKeys() []string {
	if len(s.added) == 0 && s.stale == 0 {
		return s.keys
	}
	slices.Sort(s.added)
	merged := make([]string, 0, len(s.entries))
	i, j := 0, 0
	for i < len(s.keys) || j < len(s.added) {
		var k string
		switch {
		case j == len(s.added) || (i < len(s.keys) && s.keys[i] < s.added[j]):
			k = s.keys[i]
			i++
		case i == len(s.keys) || s.added[j] < s.keys[i]:
			k = s.added[j]
			j++
		default: // removed and created again: in both
			k = s.keys[i]
			i++
			j++
		}
		if _, ok := s.entries[k]; ok && (len(merged) == 0 || merged[len(merged)-1] != k) {
			merged = append(merged, k)
		}
	}
	assert(len(merged) == len(s.entries), "%d keys in order but %d entries", len(merged), len(s.entries))
	s.keys, s.added, s.stale = merged, nil, 0
	return s.keys
}

// scan returns the present entries selected by r, in key order.
func (s *state) scan(r ScanRange) (entries []Entry, more bool) {
	limit := r.Limit
	if limit == 0 {
		limit = ScanLimitMax
	}
	keys := s.sortedKeys()
	i, _ := slices.BinarySearch(keys, r.Prefix)
	if r.After >= r.Prefix {
		j, found := slices.BinarySearch(keys, r.After)
		if found {
			j++
		}
		i = max(i, j)
	}
	for ; i < len(keys) && strings.HasPrefix(keys[i], r.Prefix); i++ {
		if len(entries) == limit {
			return entries, true
		}
		entries = append(entries, s.get(keys[i]))
	}
	return entries, false
}

// checkInvariants walks the whole state; tests call it after every step.
func (s *state) checkInvariants() {
	assert(len(s.keys)+len(s.added)-s.stale >= len(s.entries), "%d sorted keys, %d added, %d stale: fewer than the %d entries", len(s.keys), len(s.added), s.stale, len(s.entries))
	for i := 1; i < len(s.keys); i++ {
		assert(s.keys[i-1] < s.keys[i], "keys not strictly sorted at %d: %q then %q", i, s.keys[i-1], s.keys[i])
	}
	inOrder := map[string]bool{}
	for _, k := range s.keys {
		inOrder[k] = true
	}
	for _, k := range s.added {
		inOrder[k] = true
	}
	var n int64
	for _, k := range slices.Sorted(maps.Keys(s.entries)) {
		e := s.entries[k]
		assert(inOrder[k], "key %q is neither sorted nor added", k)
		assert(e.version > 0 && e.version <= s.revision, "key %q has version %d outside [1, %d]", k, e.version, s.revision)
		n += int64(len(k) + len(e.value))
	}
	assert(n == s.bytes, "state holds %d bytes but counts %d", n, s.bytes)
}
