// Package disk is the simulated disk of one node: files with a page cache
// and durable bytes, and the faults a real disk has.
//
// Every file keeps two images: what a reader sees now (page cache included)
// and what survives a power loss (what the last successful Sync saw). A
// process crash changes nothing here; PowerLoss throws the page cache away,
// optionally letting part of the unsynced writes through in order, with the
// last of them torn. Faults — a failing Sync, a read error, a flipped byte —
// are armed by the world and fire deterministically.
package disk
