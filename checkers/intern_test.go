package checkers

import (
	"fmt"
	"testing"
)

func TestAValueSentTwiceIsInternedOnce(t *testing.T) {
	vs := newValues([]string{"a", "b", "a"}, 3)
	a, b, again := vs.idAt(0), vs.idAt(1), vs.idAt(2)
	if a != 0 || b != 1 || again != a || vs.len() != 2 {
		t.Fatalf("ids a %d, b %d, a again %d; %d values", a, b, again, vs.len())
	}
	if vs.id("b") != b || vs.str(a) != "a" || vs.str(b) != "b" {
		t.Fatalf("b interned by string: %d; strings %q %q", vs.id("b"), vs.str(a), vs.str(b))
	}
}

func TestAValueOnlyReadIsInternedBesideTheSentOnes(t *testing.T) {
	vs := newValues([]string{"a"}, 1)
	vs.idAt(0)
	z := vs.id("z")
	if z != 1 || vs.str(z) != "z" || vs.id("z") != z || vs.lookup("z") != z {
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
	vs := newValues(nil, 1)
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
