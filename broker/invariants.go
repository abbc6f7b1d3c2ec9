package broker

import "github.com/kafkasim/kafkasim/internal/invariant"

// invariantf is the message of a broken broker invariant
// (invariant.Message). Call it only once the invariant has failed.
func invariantf(format string, args ...any) string {
	return invariant.Message("broker", format, args...)
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
