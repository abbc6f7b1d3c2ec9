package envtest

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// Harness is one world of nodes for the suite. Run makes a fresh world for
// every case; the harness cleans up after itself when the case's test ends
// (t.Cleanup), and fails the test itself (t.Fatal) if the world cannot do
// what it is asked.
//
// A world is made from a seed (see Run), from which its nodes' random
// streams derive: two worlds made with the same seed give the nodes they
// start, in the same order, the same streams (Env.Rand); nodes of one world
// draw different ones.
type Harness interface {
	// Start boots a node running the process newProc returns and returns the
	// node's address: its Env.Name, what peers Dial. newProc is called again
	// for every Restart of the node. The node also listens on one listener per
	// name in listeners, each at an address of the harness's choosing that
	// stays the same across restarts (Env.ListenerAddr tells it).
	Start(newProc func() env.Process, listeners ...string) (addr string)

	// Restart crashes the node's process at addr and boots a fresh one from
	// its newProc, on the same disk, at the same address. It is a process
	// crash, not a power loss: the machine's kernel survives, closes the
	// process's connections (so its peers are told) and keeps the page cache.
	// The suite asserts only what also holds after a power loss: bytes
	// synced before the crash, and the metadata env.Disk calls durable, are
	// there afterwards.
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

// Run runs the conformance suite, one subtest per case. newHarness makes a
// fresh world from a seed; most cases use one world, some compare several.
func Run(t *testing.T, newHarness func(t *testing.T, seed uint64) Harness) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, func(seed uint64) Harness { return newHarness(t, seed) })
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, world func(seed uint64) Harness)
}

// inOneWorld runs a case that needs a single world.
func inOneWorld(run func(t *testing.T, h Harness)) func(*testing.T, func(uint64) Harness) {
	return func(t *testing.T, world func(uint64) Harness) { run(t, world(1)) }
}

// cases lists the suite in the order a reader would learn the contract:
// time, then the network, then the disk, then randomness.
var cases = []testCase{
	{"TimersFireNoSoonerThanTheirDelayInDeadlineOrder", inOneWorld(testTimersFireInDeadlineOrder)},
	{"CancelReportsWhetherTheTimerWasPending", inOneWorld(testCancelReportsWhetherPending)},
	{"CancelStopsATimerAlreadyDue", inOneWorld(testCancelStopsATimerAlreadyDue)},
	{"WallClockMovesWithTheMonotonicClock", inOneWorld(testWallClockMovesWithTheMonotonicClock)},
	{"DialConnectsBothEnds", inOneWorld(testDialConnectsBothEnds)},
	{"FramesArriveWholeAndInOrderBothWays", inOneWorld(testFramesArriveWholeAndInOrder)},
	{"FramesSentBeforeConnectedFollowTheHandshake", inOneWorld(testFramesSentBeforeConnected)},
	{"CloseTellsThePeerNotTheCloser", inOneWorld(testCloseTellsThePeerNotTheCloser)},
	{"AcceptorCloseTellsTheDialer", inOneWorld(testAcceptorCloseTellsTheDialer)},
	{"DialingNobodyGivesClosed", inOneWorld(testDialingNobodyGivesClosed)},
	{"RestartClosesConnectionsAndTheNodeAnswersAgain", inOneWorld(testRestartClosesConnections)},
	{"ListenersTellInboundConnectionsApart", inOneWorld(testListenersTellConnectionsApart)},
	{"DiskWriteAtZeroFillsTheGap", inOneWorld(testDiskWriteAtZeroFills)},
	{"DiskAppendCreatesAndExtends", inOneWorld(testDiskAppend)},
	{"DiskReadAtReportsEOFAndMissingFiles", inOneWorld(testDiskReadAt)},
	{"DiskTruncateCutsAndZeroExtends", inOneWorld(testDiskTruncate)},
	{"DiskRenameReplacesTheTarget", inOneWorld(testDiskRename)},
	{"DiskRemoveOfAMissingFileIsFine", inOneWorld(testDiskRemove)},
	{"DiskListIsSortedByPrefix", inOneWorld(testDiskList)},
	{"DiskWriteFileAtomicReplacesWholly", inOneWorld(testDiskWriteFileAtomic)},
	{"DiskSyncedDataSurvivesRestart", inOneWorld(testDiskSyncedDataSurvivesRestart)},
	{"RandStreamsFollowTheWorldSeed", testRandStreamsFollowTheWorldSeed},
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
