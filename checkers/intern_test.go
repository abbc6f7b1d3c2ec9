package checkers

import (
	"fmt"
	"testing"
)

func TestAValueSentTwiceIsInternedOnce(t *testing.T) {
	vs := newValues(4)
	a, b, again := vs.id("a"), vs.id("b"), vs.id("a")
	if a != 0 || b != 1 || again != a || len(vs.strs) != 2 {
		t.Fatalf("ids a %d, b %d, a again %d; %d values", a, b, again, len(vs.strs))
	}
}

func TestAValueNeverInternedIsNotFound(t *testing.T) {
	vs := newValues(4)
	vs.id("a")
	if id := vs.lookup("b"); id != -1 {
		t.Fatalf("lookup of b: %d", id)
	}
	if id := vs.lookup("a"); id != 0 {
		t.Fatalf("lookup of a: %d", id)
	}
}

func TestInterningPastTheExpectedCountGrowsTheTableAndKeepsEveryID(t *testing.T) {
	vs := newValues(1)
	for i := range 10_000 {
		if id := vs.id(fmt.Sprint("v", i)); id != int32(i) {
			t.Fatalf("value %d got id %d", i, id)
		}
	}
	for i := range 10_000 {
		if id := vs.lookup(fmt.Sprint("v", i)); id != int32(i) {
			t.Fatalf("value %d found as %d after growing", i, id)
		}
	}
	if vs.lookup("v10000") != -1 || vs.lookup("") != -1 {
		t.Fatal("a value never interned was found")
	}
}
