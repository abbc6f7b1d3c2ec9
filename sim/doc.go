// Package sim is the deterministic world that kafkasim's processes run in.
//
// A World has a virtual clock and one event queue ordered by (time,
// insertion sequence); nothing happens between events, so simulated hours
// pass in wall-clock seconds. Nodes run env.Process code — brokers, the
// controller, client applications, the sink store — each on its own
// single-threaded loop fed by the world: timers, connections, frames, a disk,
// a random stream, all through env.Env. A node is dialed at its name (its
// main listener) or at name:port, a listener Node.Listen gave it (a broker's
// inter-broker listener); a port nobody listens on refuses the connection.
// Faults act on nodes, so every listener of a node shares its fate.
//
// The world is also the nemesis's hands. Nodes crash (memory lost, page
// cache kept), lose power (unsynced bytes lost, the last write maybe torn),
// restart, pause and resume, and have skewed clocks. The network is TCP-like
// — frames on a connection arrive whole, in order, at most once, after a
// latency drawn per link — and can be partitioned in any grouping or cut one
// way, clogged, reset, or made to hold back one chosen frame. Disks fail
// syncs, fail reads and rot bits.
//
// Determinism is the contract: one root seed is split into independent named
// random streams (the network's, each node's), every event is folded into a
// running 64-bit trace hash, and the same seed gives the same hash on every
// run and machine. Nothing in this package starts a goroutine, reads the wall
// clock or uses global randomness, and no map iteration order reaches an
// observable decision.
package sim
