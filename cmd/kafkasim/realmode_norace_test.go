//go:build !race

package main

// raceEnabled: this test binary runs under the race detector, so the
// kafkasim binary the real-mode tests start is built with it too.
const raceEnabled = false
