package broker

import (
	"errors"
	"fmt"
)

func errorIs(err, target error) bool { return errors.Is(err, target) }

// invariantf is the message of a broken broker invariant. Call it only once
// the invariant has failed — if !(cond) { panic(invariantf(...)) } — so a
// check that holds formats, and boxes, nothing.
func invariantf(format string, args ...any) string {
	return fmt.Sprintf("broker invariant: "+format, args...)
}

// checkEach runs check on every entry of m, in map order, and panics with
// the violation (check's non-empty answer, an invariantf message) of the
// smallest key, by cmp, that has one: checks that hold sort nothing, and a
// failure reads the same on every run. check reports what it finds broken;
// it must not panic itself, nor let one entry's check depend on another's.
func checkEach[K comparable, V any](m map[K]V, cmp func(a, b K) int, check func(K, V) string) {
	var first K
	broken := ""
	for k, v := range m {
		if msg := check(k, v); msg != "" && (broken == "" || cmp(k, first) < 0) {
			first, broken = k, msg
		}
	}
	if broken != "" {
		panic(broken)
	}
}
