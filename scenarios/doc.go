// Package scenarios is the guarantee matrix: named configurations (cluster
// shape, broker and client settings under Kafka's own names, a workload, a
// fault class) each with the delivery guarantee it claims, and weak twins
// that must be caught violating it. A scenario runs one world per seed and
// returns a verdict with its trace hash and a command that replays it.
//
// A run goes through these phases, all in simulated time:
//
//  1. Bootstrap: the controller and brokers start, the admin node (the
//     harness's own client, never faulted) creates the workload's topics
//     and waits until every partition has a leader.
//  2. Workload and faults: the applications (package apps) start —
//     producers spreading their messages over 95% of workload.duration.ms,
//     consumers and processors — while the fault schedule runs: the nemesis's (paced
//     episodes of the scenario's fault class, some aimed by triggers at the
//     windows the workload's probes mark), a hand-written faults.schedule,
//     or run --faults. Every application operation goes into the history.
//     A downstream reader follows the workload's output from offset 0 with
//     the downstream isolation.level (apps/reader.go), and every replica of
//     every partition is read off its broker's disk every 2 s
//     (replicas.go): read_committed and replication are judged while
//     transactions are open and leaders change.
//  3. Heal: every fault is lifted (faults.HealAll): the network mended,
//     clocks back on world time, disk faults disarmed, every node resumed
//     and started.
//  4. Drain: the world runs until the system has finished — everything
//     sent and answered, every input partition processed to its end, no
//     transaction open — or the drain budget (30 s) is spent.
//  5. Final reads: the admin node reads every partition the claim depends
//     on from offset 0 to its end, as a consumer with the scenario's
//     isolation.level would, waiting for the end to reach the last
//     acknowledged offset (a new leader's high watermark lags), the
//     pipeline group's committed offsets (OffsetFetch with require_stable),
//     the sink's contents, and every replica once more, checksums and all.
//     A read that cannot finish is recorded as far as it got, and the
//     checkers report final-read-stuck.
//  6. Checks: the history is judged (package checkers): linearizability of
//     every partition log and committed-offset register, Kafka's anomalies,
//     delivery, replica agreement, and the order the scenario claims. The
//     verdict is about the claimed guarantee and order (or, for a twin,
//     what it refutes): holds, untested (it held, but the run
//     missed a probe the claim names: little was at stake), or violated
//     (safety, liveness, or a panic of the code under test).
//
// Every run also reports its power — intents, acknowledged, failed,
// indefinite, transactions, faults fired and skipped — and the probes it
// reached; probes are counted by the world and never change the trace.
package scenarios
