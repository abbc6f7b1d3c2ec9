// Package invariant is the one way the code under test reports a broken
// invariant: a panic whose message names the room and the rule ("broker
// invariant: input/0: high watermark 5 past log end 4"). A broken
// invariant is a bug, not an operating error; the simulator turns the
// panic into a failed run with its seed.
//
// Guard a check with an if and format only once it has failed —
// if !(cond) { invariant.Fail("log", ...) } — so a check that holds boxes
// and formats nothing on a hot path.
package invariant

import "fmt"

// Message is the text of room's broken invariant.
func Message(room, format string, args ...any) string {
	return room + " invariant: " + fmt.Sprintf(format, args...)
}

// Fail panics with Message.
func Fail(room, format string, args ...any) {
	panic(Message(room, format, args...))
}
