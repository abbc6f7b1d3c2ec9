package raft

import "fmt"

// Effect is one thing the runtime must do for the node, in the order Ready
// hands them over: a PersistQuorumState must be written and fsynced before
// any Send after it; an AppendLog or TruncateLog must be applied to the log
// before any effect after it (a TruncateLog durably: the runtime's disk
// must not bring truncated entries back).
type Effect interface {
	isEffect()
	String() string
}

// PersistQuorumState is the quorum-state file (Kafka's FileQuorumStateStore
// writing quorum-state): the epoch, the vote cast in it (-1 if none) and
// the leader known in it (-1 if none). Write and fsync it before the
// messages that follow.
type PersistQuorumState struct {
	Epoch    int32
	VotedID  int32
	LeaderID int32
}

// AppendLog appends Entries at the log's end, without flushing; the runtime
// reports durability later with Flushed.
type AppendLog struct {
	Entries []Entry
}

// TruncateLog cuts the log to end at To.
type TruncateLog struct {
	To int64
}

// Send delivers Msg to voter To. It may be lost, duplicated or reordered.
type Send struct {
	To  int32
	Msg Message
}

func (PersistQuorumState) isEffect() {}
func (AppendLog) isEffect()          {}
func (TruncateLog) isEffect()        {}
func (Send) isEffect()               {}

func (e PersistQuorumState) String() string {
	return fmt.Sprintf("persist epoch=%d voted=%d leader=%d", e.Epoch, e.VotedID, e.LeaderID)
}
func (e AppendLog) String() string   { return "append " + formatEntries(e.Entries) }
func (e TruncateLog) String() string { return fmt.Sprintf("truncate to=%d", e.To) }
func (e Send) String() string        { return fmt.Sprintf("send %d %s", e.To, e.Msg) }

// Ready hands over the effects of the steps taken since the last call, in
// order, and forgets them.
func (n *Node) Ready() []Effect {
	out := n.effects
	n.effects = nil
	return out
}

func (n *Node) emit(e Effect) { n.effects = append(n.effects, e) }

func (n *Node) send(to int32, m Message) { n.emit(Send{To: to, Msg: m}) }
