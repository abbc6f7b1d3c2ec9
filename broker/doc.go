// Package broker is the real code under test: a Kafka-style broker, the
// controller, idempotent and transactional producers, consumers and
// consumer groups, and an external sink store.
//
// Every process here is an env.Process: it reaches time, timers, the
// network, the disk and randomness only through env.Env, so the same code
// runs in the simulator (package sim) and on TCP (package host). Nothing
// under broker starts a goroutine, reads the wall clock, sleeps, uses global
// randomness, or lets map iteration order decide anything observable.
// Processes speak the Kafka wire protocol to each other and to real Kafka
// clients. broker never imports the simulator's world, faults, checkers or
// scenarios.
//
// Subpackages: wire (Kafka framing), rpc (request transport), record
// (RecordBatch v2), log (one partition replica's log on a disk), metadata
// (the cluster image), config (the knobs), controller (the controller
// process), client (producers and consumers), sink (the external store).
package broker
