// Package controller is the cluster's single controller process: the durable
// record of brokers, topics and partition leadership.
//
// Brokers register (BrokerRegistration) and heartbeat (BrokerHeartbeat); one
// silent for broker.session.timeout.ms is fenced, which removes it from
// every ISR (unless it is the last member: the ISR never empties) and moves
// every leadership it held to a live in-sync replica — or, with
// unclean.leader.election.enable, to any live replica as a last resort —
// bumping the partition's leader epoch. Leaders change the ISR with
// AlterPartition; the controller checks their leader and partition epochs.
// Every change is appended to a metadata log on disk and synced before
// anyone hears of it, and is pushed to every broker as an UpdateMetadata
// request. While the controller is down nothing is elected.
package controller
