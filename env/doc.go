// Package env is the contract between a process and the world it runs in.
//
// Broker, controller, sink store and client code reach time, timers, the
// network, the disk and randomness only through an Env. The simulator
// (package sim) implements Env over a virtual clock, a simulated network and
// simulated disks; the real-mode runtime implements it over the wall clock,
// TCP and files. Because the same process code runs on both, nothing in a
// process may start a goroutine, read the wall clock, sleep, or use global
// randomness: every effect goes through Env, and every input arrives as a call
// on the Process, one at a time, on the process's single event loop.
//
// A Process is created fresh by its node's factory each time the node starts
// (boot or reboot), so a crash loses all memory; whatever must survive has to
// be written to the Disk and synced.
package env
