// Package apps holds the client applications a scenario runs against the
// cluster, each an env.Process built on the client library under test
// (broker/client) — the programs whose habits decide what a user gets:
//
//   - producerApp (producer.go): sends its share of the workload's
//     messages, one every interval, each to a chosen partition, and
//     records every send with its outcome; with workload.resend.on.error
//     it sends a message again when its send failed.
//   - consumerApp (consumer.go): a sink pipeline stage — polls its
//     input partitions (assigned, or as a group member: workload.membership), writes one output per input to the sink
//     and commits per workload.commit: commit-before-process,
//     process-then-commit, atomic-with-output (outputs and offsets in one
//     conditional sink write) or enable.auto.commit.
//   - processorApp (processor.go): consume-transform-produce with
//     transactions — a group member that writes outputs and input offsets
//     in one transaction (sendOffsetsToTransaction), aborts and rewinds on
//     failure (keeps its position instead, with workload.rewind.on.abort
//     false), and is fenced by its restarted successor.
//   - readerApp (reader.go): the downstream reader, following the output
//     from offset 0 with the downstream isolation.level while the run goes
//     on.
//
// A Workload is their shared outside world: the messages each producer
// application has yet to send (a restarted one carries on where its
// predecessor stopped, as an application reading a durable source would),
// how far the consumers got, and the history recorder every application
// reports its operations to. The harness (package scenarios) adds the
// applications to the world, starts and stops them, and asks the Workload
// whether the run has drained.
//
// Like the code under test, the applications take time, timers,
// randomness and the network from their env.Env only (internal/detlint).
package apps
