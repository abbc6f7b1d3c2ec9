//go:build !race

package main

// raceEnabled reports whether this test binary runs under the race
// detector; the kafkasim binary the real-mode tests start is built alike.
const raceEnabled = false
