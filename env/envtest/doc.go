// Package envtest is the conformance suite of env.Env: one set of cases that
// every implementation of the environment — the simulator's world and the
// real-mode runtime of package host — must pass, so that process code behaves
// the same on both and the two cannot drift apart.
//
// An implementation plugs in through a Harness and runs the suite from its
// own tests:
//
//	func TestConformance(t *testing.T) {
//		envtest.Run(t, func(t *testing.T, seed uint64) envtest.Harness {
//			return newHarness(t, seed) // a fresh world whose randomness derives from seed
//		})
//	}
//
// The cases are written as processes: they act from Start, Connected,
// Received, Closed and timer callbacks, exactly as broker code does, and
// record what they see in a journal the test reads. A case never sleeps:
// it asks the harness to run the world until a condition holds or a time
// budget passes, which is virtual time in a simulation and wall time on real
// hardware. Budgets are generous for real hardware under the race detector;
// in a simulation they cost nothing.
//
// What the suite checks is what package env promises, no more: where the
// contract leaves a choice (whether a frame sent just before Close arrives,
// whether unsynced bytes survive a crash) the cases accept either outcome.
package envtest
