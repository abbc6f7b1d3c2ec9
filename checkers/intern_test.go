package checkers

import (
	"fmt"
	"slices"
	"testing"
)

func internAll(vs *values) []int32 {
	return vs.internBase(func(visit func(int32)) {
		for i := range vs.base {
			visit(int32(i))
		}
	})
}

func TestAValueSentTwiceIsInternedOnceAsItsFirstOccurrence(t *testing.T) {
	vs := newValues([]string{"a", "b", "a"}, 3)
	if ids := internAll(vs); !slices.Equal(ids, []int32{0, 1, 0}) {
		t.Fatalf("ids %v, want [0 1 0]", ids)
	}
	if vs.id("b") != 1 || vs.str(0) != "a" || vs.str(1) != "b" || vs.len() != 3 {
		t.Fatalf("b interned by string: %d; strings %q %q; len %d", vs.id("b"), vs.str(0), vs.str(1), vs.len())
	}
}

// The first occurrence is the first visited, whatever its index.
func TestASentValuesIDIsItsFirstOccurrenceInTheWalk(t *testing.T) {
	vs := newValues([]string{"a", "b", "a"}, 3)
	ids := vs.internBase(func(visit func(int32)) {
		for _, i := range []int32{2, 1, 0} {
			visit(i)
		}
	})
	if !slices.Equal(ids, []int32{2, 1, 2}) {
		t.Fatalf("ids %v, want [2 1 2]", ids)
	}
}

func TestAValueOnlyReadIsInternedAfterTheSentOnes(t *testing.T) {
	vs := newValues([]string{"a"}, 1)
	internAll(vs)
	z := vs.id("z")
	if z != 1 || vs.str(z) != "z" || vs.id("z") != z || vs.lookup("z") != z || vs.lookup("a") != 0 {
		t.Fatalf("z: id %d, string %q", z, vs.str(z))
	}
}

func TestAValueNeverInternedIsNotFound(t *testing.T) {
	vs := newValues(nil, 4)
	vs.id("a")
	if id := vs.lookup("b"); id != -1 {
		t.Fatalf("lookup of b: %d", id)
	}
	if id := vs.lookup("a"); id != 0 {
		t.Fatalf("lookup of a: %d", id)
	}
}

func TestInterningPastTheExpectedCountGrowsTheTableAndKeepsEveryID(t *testing.T) {
	var base []string
	for i := range 5_000 {
		base = append(base, fmt.Sprint("v", i%4_000)) // 1,000 sent twice
	}
	vs := newValues(base, 1)
	ids := internAll(vs)
	for i, id := range ids {
		if want := int32(i % 4_000); id != want {
			t.Fatalf("value %d (%s) got id %d, want %d", i, base[i], id, want)
		}
	}
	for i := range 10_000 {
		id := vs.id(fmt.Sprint("w", i))
		if id != int32(5_000+i) || vs.lookup(fmt.Sprint("w", i)) != id {
			t.Fatalf("extra value %d got id %d", i, id)
		}
	}
	for i := range 4_000 {
		if id := vs.lookup(fmt.Sprint("v", i)); id != int32(i) {
			t.Fatalf("value %d found as %d after growing", i, id)
		}
	}
	if vs.lookup("v4000") != -1 || vs.lookup("") != -1 {
		t.Fatal("a value never interned was found")
	}
}

// TestProcessNamesGetTheTablesIdsWhateverTheCacheHolds: names whose cache
// slots collide (same length and last byte), and the empty name, get the
// ids the table alone gives, in first-seen order.
func TestProcessNamesGetTheTablesIdsWhateverTheCacheHolds(t *testing.T) {
	seq := []string{"p1", "q1", "p1", "", "consumer-1", "q1", "", "producer-1", "consumer-1", "p1"}
	alone, cached := newValues(nil, 4), newNames(newValues(nil, 4))
	for i, n := range seq {
		if got, want := cached.id(n), alone.id(n); got != want {
			t.Fatalf("name %d (%q): id %d, want %d", i, n, got, want)
		}
	}
}
