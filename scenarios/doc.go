// Package scenarios is the guarantee matrix: named configurations (cluster
// shape, broker and client settings under Kafka's own names, a workload, a
// fault class) each with the delivery guarantee it claims, and weak twins
// that must be caught violating it. A scenario runs one world per seed and
// returns a verdict with its trace hash and a command that replays it.
package scenarios
