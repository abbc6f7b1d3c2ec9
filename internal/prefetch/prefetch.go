// Package prefetch asks the processor to bring memory into cache before
// it is read, for walks over large, pointer-linked data (a history of a
// million operations) that would otherwise wait for each miss in turn.
package prefetch

import "unsafe"

// Line asks for the cache line holding p, without waiting for it and
// without faulting: a nil or stale p is harmless.
func Line(p unsafe.Pointer) { line(uintptr(p)) }
