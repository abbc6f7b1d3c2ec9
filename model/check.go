package model

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// CheckLog runs porcupine on one resolved partition log. timeout must be
// positive: porcupine's search is exponential in the number of overlapping
// operations, and Unknown (timed out) is inconclusive, never a pass.
func CheckLog(l Log, timeout time.Duration) porcupine.CheckResult {
	mustTimeout("CheckLog", timeout)
	m := LogModel()
	m.Partition = nil // one partition already
	return porcupine.CheckOperationsTimeout(m, l.Operations(), timeout)
}

// CheckLogVerbose is CheckLog keeping what a visualization needs.
func CheckLogVerbose(l Log, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	mustTimeout("CheckLogVerbose", timeout)
	m := LogModel()
	m.Partition = nil
	return porcupine.CheckOperationsVerbose(m, l.Operations(), timeout)
}

// CheckOffsets runs porcupine on one committed-offset register, on the
// operations that can decide it (Observed): its verdict is porcupine's on
// the whole register, without a search that branches on every commit that
// may or may not have taken effect.
func CheckOffsets(r OffsetRegister, timeout time.Duration) porcupine.CheckResult {
	mustTimeout("CheckOffsets", timeout)
	m := OffsetModel()
	m.Partition = nil
	return porcupine.CheckOperationsTimeout(m, r.Observed(), timeout)
}

func mustTimeout(fn string, timeout time.Duration) {
	if timeout <= 0 {
		panic(fmt.Sprintf("model: %s: timeout %v must be positive (porcupine may never return)", fn, timeout))
	}
}
