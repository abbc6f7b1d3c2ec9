package envtest

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// Harness runs nodes in one world for the suite. Run creates a fresh
// harness for every case; the harness cleans up after itself when the case's
// test ends (t.Cleanup), and fails the test itself (t.Fatal) if the world
// cannot do what it is asked.
type Harness interface {
	// Start boots a node running the process newProc returns, with its
	// random stream (Env.Rand) seeded by seed, and returns the node's
	// address: its Env.Name, what peers Dial. newProc is called again for
	// every Restart of the node.
	Start(seed uint64, newProc func() env.Process) (addr string)

	// Restart crashes the node at addr and boots a fresh process from its
	// newProc, on the same disk, at the same address, with the same seed.
	// The crash closes the node's connections (its peers are told) and drops
	// its timers. Bytes synced before the crash, and the metadata env.Disk
	// calls durable, are on the disk afterwards; unsynced bytes may or may
	// not be (a harness may model a process crash or a power loss).
	Restart(addr string)

	// RunUntil lets the world run until cond holds or budget has passed —
	// virtual time in a simulation, wall time on real hardware — and reports
	// whether cond held. cond is called from the test's goroutine between
	// steps of the world; on real hardware processes run concurrently with
	// it, so the suite's conditions read only mutex-guarded state.
	RunUntil(cond func() bool, budget time.Duration) bool

	// Unreachable returns an address at which nobody listens, so that
	// dialing it fails.
	Unreachable() string
}

// Budgets for RunUntil.
const (
	// eventually bounds the wait for something that must happen. Real
	// hardware under the race detector on a loaded machine needs seconds.
	eventually = 10 * time.Second
	// quiet is how long a case watches for something that must not happen.
	quiet = 200 * time.Millisecond
)

// Run runs the conformance suite, one subtest per case, each on a fresh
// harness from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newHarness(t))
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, h Harness)
}

// cases lists the suite in the order a reader would learn the contract:
// time, then the network, then the disk, then randomness.
var cases = []testCase{
	{"TimersFireNoSoonerThanTheirDelayInDeadlineOrder", testTimersFireInDeadlineOrder},
	{"CancelReportsWhetherTheTimerWasPending", testCancelReportsWhetherPending},
	{"CancelStopsATimerAlreadyDue", testCancelStopsATimerAlreadyDue},
	{"DialConnectsBothEnds", testDialConnectsBothEnds},
	{"FramesArriveWholeAndInOrderBothWays", testFramesArriveWholeAndInOrder},
	{"CloseTellsThePeerNotTheCloser", testCloseTellsThePeerNotTheCloser},
	{"AcceptorCloseTellsTheDialer", testAcceptorCloseTellsTheDialer},
	{"DialingNobodyGivesClosed", testDialingNobodyGivesClosed},
	{"RestartClosesConnectionsAndTheNodeAnswersAgain", testRestartClosesConnections},
	{"DiskWriteAtZeroFillsTheGap", testDiskWriteAtZeroFills},
	{"DiskAppendCreatesAndExtends", testDiskAppend},
	{"DiskReadAtReportsEOFAndMissingFiles", testDiskReadAt},
	{"DiskTruncateCutsAndZeroExtends", testDiskTruncate},
	{"DiskRenameReplacesTheTarget", testDiskRename},
	{"DiskRemoveOfAMissingFileIsFine", testDiskRemove},
	{"DiskListIsSortedByPrefix", testDiskList},
	{"DiskWriteFileAtomicReplacesWholly", testDiskWriteFileAtomic},
	{"DiskSyncedDataSurvivesRestart", testDiskSyncedDataSurvivesRestart},
	{"RandStreamsAreEqualForEqualSeeds", testRandStreamsEqualForEqualSeeds},
}

// waitFor runs the world until cond holds, failing the test if it does not
// within the eventually budget.
func waitFor(t *testing.T, h Harness, what string, cond func() bool) {
	t.Helper()
	if !h.RunUntil(cond, eventually) {
		t.Fatalf("%s did not happen within %v", what, eventually)
	}
}

// settle runs the world for the quiet budget, so that what must not happen
// has had its chance to.
func settle(h Harness) {
	h.RunUntil(func() bool { return false }, quiet)
}
