package history

import (
	"fmt"
	"math"
)

// ID names one entry of a history. IDs are positive and unique within a
// history; 0 means "no operation" (a send outside any transaction has Txn 0).
type ID int

// Never is the completion time of an operation that never completed: the
// process crashed or gave up waiting. Such an operation is indefinite.
const Never int64 = math.MaxInt64

// NoOffset marks an offset that is not known: a send whose response never
// arrived, a group without a committed offset, a fetch whose position the
// consumer did not record.
const NoOffset int64 = -1

// Kind says what an operation did.
type Kind string

// The operation kinds. See the package documentation for what each records.
const (
	KindSend        Kind = "send"
	KindPoll        Kind = "poll"
	KindAssign      Kind = "assign"
	KindSubscribe   Kind = "subscribe"
	KindRebalance   Kind = "rebalance"
	KindSeek        Kind = "seek"
	KindCommit      Kind = "commit"
	KindOffsetFetch Kind = "offset-fetch"
	KindTxn         Kind = "txn"
	KindSinkWrite   Kind = "sink-write"
	KindFinalRead   Kind = "final-read"
	KindNemesis     Kind = "nemesis"
	KindReplica     Kind = "replica"
)

// Outcome is how an operation ended.
type Outcome string

const (
	// OK: the operation happened and its result is known.
	OK Outcome = "ok"
	// Fail: the operation definitely did not happen.
	Fail Outcome = "fail"
	// Info: the operation may or may not have happened (timeout,
	// disconnect, crash, never completed). Never recorded as Fail.
	Info Outcome = "info"
)

// Isolation is a consumer's isolation.level, spelled as Kafka spells it.
type Isolation string

const (
	ReadCommitted   Isolation = "read_committed"
	ReadUncommitted Isolation = "read_uncommitted"
)

// TopicPartition names one partition of one topic.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Compare orders topic-partitions by topic, then partition.
func (tp TopicPartition) Compare(o TopicPartition) int {
	switch {
	case tp.Topic < o.Topic:
		return -1
	case tp.Topic > o.Topic:
		return 1
	case tp.Partition < o.Partition:
		return -1
	case tp.Partition > o.Partition:
		return 1
	}
	return 0
}

// Message is what a producer sends or a pipeline outputs. Value is unique
// per topic-partition for input messages. Source is empty for an input
// message (the message is its own intent) and, for an output, names the
// input Value it derives from.
type Message struct {
	Key    string `json:"key,omitempty"`
	Value  string `json:"value"`
	Source string `json:"source,omitempty"`
}

// Intent is the input message whose effect m is: m.Source, or m.Value for an
// input message.
func (m Message) Intent() string {
	if m.Source != "" {
		return m.Source
	}
	return m.Value
}

// Record is a message read at an offset.
type Record struct {
	Offset int64 `json:"offset"`
	Message
}

// PartitionOffset is an offset in one partition. For commits and fetched
// committed offsets it is the next offset to read, as Kafka defines it.
type PartitionOffset struct {
	TP     TopicPartition `json:"tp"`
	Offset int64          `json:"offset"`
}

// Send is a producer's send of one or more messages (a batch) to one
// partition. On OK, Offset is the base offset assigned to Messages[0]; the
// i-th message is at Offset+i. Offset is NoOffset when unknown (acks=0, an
// indefinite outcome). Txn names the enclosing txn operation, 0 if none.
type Send struct {
	TP       TopicPartition `json:"tp"`
	Messages []Message      `json:"messages"`
	Offset   int64          `json:"offset"`
	Txn      ID             `json:"txn,omitempty"`
}

// Fetch is what one poll returned for one partition. From is the consumer's
// position before the poll (NoOffset if not recorded); Records are in the
// order the consumer received them.
type Fetch struct {
	TP      TopicPartition `json:"tp"`
	From    int64          `json:"from"`
	Records []Record       `json:"records"`
	// LastStable is the last stable offset the fetch response carrying
	// Records reported (nil if not recorded): read_committed, every record
	// must lie below it. A poll whose records came in responses reporting
	// different ones has a Fetch per response.
	LastStable *int64 `json:"last_stable,omitempty"`
}

// Poll is one consumer poll. Rebalanced says the consumer's assignment
// changed since its previous poll, so its positions may legitimately jump.
type Poll struct {
	Group      string    `json:"group,omitempty"`
	Isolation  Isolation `json:"isolation"`
	Rebalanced bool      `json:"rebalanced,omitempty"`
	Fetched    []Fetch   `json:"fetched"`
}

// Assign is a consumer's manual assignment (replaces the previous one).
type Assign struct {
	Partitions []TopicPartition `json:"partitions"`
}

// Subscribe is a consumer's group subscription to topics (replaces the
// previous one).
type Subscribe struct {
	Group  string   `json:"group"`
	Topics []string `json:"topics"`
}

// Rebalance records the assignment a group member received.
type Rebalance struct {
	Group    string           `json:"group"`
	Assigned []TopicPartition `json:"assigned"`
}

// Seek moves a consumer's positions (for example rewinding to the committed
// offsets after an aborted transaction).
type Seek struct {
	Offsets []PartitionOffset `json:"offsets"`
}

// Commit is a consumer group's offset commit.
type Commit struct {
	Group   string            `json:"group"`
	Offsets []PartitionOffset `json:"offsets"`
}

// OffsetFetch is a read of a group's committed offsets; Offsets is the
// result (NoOffset where the group has none).
type OffsetFetch struct {
	Group   string            `json:"group"`
	Offsets []PartitionOffset `json:"offsets"`
	// Final marks the harness's read after heal and drain: the offsets the
	// group would resume from, the offsets half of the final state.
	Final bool `json:"final,omitempty"`
}

// Txn is one transaction of a transactional producer, from its begin to the
// end of EndTxn. OK = committed, Fail = aborted, Info = unknown. Offsets are
// the consumer offsets sent to the transaction for Group
// (sendOffsetsToTransaction). EndCall is when commit or abort was requested
// (0 if not recorded).
type Txn struct {
	TransactionalID string            `json:"transactional_id"`
	Group           string            `json:"group,omitempty"`
	Offsets         []PartitionOffset `json:"offsets,omitempty"`
	EndCall         int64             `json:"end_call,omitempty"`
}

// SinkWrite is one write to the external sink store: outputs, and in the
// exactly-once pattern the input offsets stored in the same atomic write.
type SinkWrite struct {
	Sink    string            `json:"sink"`
	Outputs []Message         `json:"outputs"`
	Offsets []PartitionOffset `json:"offsets,omitempty"`
}

// FinalRead is what a store holds after heal and drain: either a topic
// partition read to its end (Sink empty) or the sink's contents. Output
// marks the pipeline's output, whose effects the delivery checker counts.
type FinalRead struct {
	Sink      string         `json:"sink,omitempty"`
	TP        TopicPartition `json:"tp"`
	Isolation Isolation      `json:"isolation,omitempty"`
	From      int64          `json:"from"`
	Output    bool           `json:"output,omitempty"`
	// Records: a topic's records in offset order.
	Records []Record `json:"records,omitempty"`
	// Items: the sink's outputs in storage order; Offsets: its stored offsets.
	Items   []Message         `json:"items,omitempty"`
	Offsets []PartitionOffset `json:"offsets,omitempty"`
}

// BatchArray names the array a replica's batches are a view of (nil for
// none): two samples with one array agree on the batches both hold, so a
// check of an earlier view need not be done again for a later one.
func BatchArray(b []ReplicaBatch) *ReplicaBatch {
	if cap(b) == 0 {
		return nil
	}
	return &b[:1][0]
}

// Replica is what one replica of a partition holds after the drain, read
// off its broker's disk as a tool reads it (kafka-dump-log): its batches in
// offset order, its leader-epoch cache and its high watermark, with what
// the cluster says of it — whether it leads and is in the ISR. The
// checkers compare replicas: Kafka promises the ISR agree below the high
// watermark.
type Replica struct {
	TP     TopicPartition `json:"tp"`
	Broker string         `json:"broker"`
	Leader bool           `json:"leader,omitempty"`
	InISR  bool           `json:"in_isr,omitempty"`
	// Online: the broker runs and serves the partition. A replica that is
	// not has not recovered its log yet (a torn tail, a stale checkpoint)
	// and is not compared.
	Online bool `json:"online,omitempty"`
	// HighWatermark is the replica's own: live if it runs, else its
	// checkpoint (-1 if neither).
	HighWatermark int64 `json:"high_watermark"`
	// Batches may be a view of an earlier sample's array: a sampler hands
	// every sample of a log that only grew the same array, longer, and
	// never changes an entry it handed out (BatchArray names the array).
	Batches []ReplicaBatch `json:"batches"`
	Epochs  []ReplicaEpoch `json:"epochs,omitempty"`
	// Stopped says why reading the log ended early ("" if it did not): a
	// torn tail or a corrupt batch.
	Stopped string `json:"stopped,omitempty"`
}

// ReplicaBatch is one batch as replicas are compared: two agree at an
// offset when their batches there are equal. Producer, ProducerEpoch and
// Sequence are the writer's (producer id -1 and sequence -1 for a
// producer that is not idempotent); Control marks a transaction marker.
type ReplicaBatch struct {
	Base          int64  `json:"base"`
	Last          int64  `json:"last"`
	Epoch         int32  `json:"epoch"`
	CRC           uint32 `json:"crc"`
	Producer      int64  `json:"producer"`
	ProducerEpoch int16  `json:"producer_epoch"`
	Sequence      int32  `json:"sequence"`
	Control       bool   `json:"control,omitempty"`
}

// ReplicaEpoch is an entry of a replica's leader-epoch cache.
type ReplicaEpoch struct {
	Epoch int32 `json:"epoch"`
	Start int64 `json:"start"`
}

// Nemesis is a fault event, kept for annotating visualizations.
type Nemesis struct {
	Description string   `json:"description"`
	Nodes       []string `json:"nodes,omitempty"`
}

// Op is one entry of a history: a client operation or a fault event.
// Exactly one payload pointer, the one matching Kind, is set.
type Op struct {
	ID      ID      `json:"id"`
	Process string  `json:"process"`
	Node    string  `json:"node,omitempty"`
	Kind    Kind    `json:"kind"`
	Call    int64   `json:"call"`
	Return  int64   `json:"return"`
	Outcome Outcome `json:"outcome"`
	Error   string  `json:"error,omitempty"`

	Send        *Send        `json:"send,omitempty"`
	Poll        *Poll        `json:"poll,omitempty"`
	Assign      *Assign      `json:"assign,omitempty"`
	Subscribe   *Subscribe   `json:"subscribe,omitempty"`
	Rebalance   *Rebalance   `json:"rebalance,omitempty"`
	Seek        *Seek        `json:"seek,omitempty"`
	Commit      *Commit      `json:"commit,omitempty"`
	OffsetFetch *OffsetFetch `json:"offset_fetch,omitempty"`
	Txn         *Txn         `json:"txn,omitempty"`
	SinkWrite   *SinkWrite   `json:"sink_write,omitempty"`
	FinalRead   *FinalRead   `json:"final_read,omitempty"`
	Nemesis     *Nemesis     `json:"nemesis,omitempty"`
	Replica     *Replica     `json:"replica,omitempty"`
}

// Completed reports whether the operation returned.
func (op *Op) Completed() bool { return op.Return != Never }

// String names an operation the way errors and witnesses do:
// "op 17 (send by p3 on client-1)".
func (op *Op) String() string {
	if op.Node != "" {
		return fmt.Sprintf("op %d (%s by %s on %s)", op.ID, op.Kind, op.Process, op.Node)
	}
	return fmt.Sprintf("op %d (%s by %s)", op.ID, op.Kind, op.Process)
}

// History is a list of operations, usually in invocation order.
type History []Op

// Index maps IDs to positions in a history.
type Index struct {
	dense bool // ID i+1 is at position i: no map needed
	m     map[ID]int
}

// Index maps h's IDs to positions. It assumes IDs are unique.
func (h History) Index() Index {
	dense := true
	for i := range h {
		if h[i].ID != ID(i+1) {
			dense = false
			break
		}
	}
	if dense {
		return Index{dense: true}
	}
	m := make(map[ID]int, len(h))
	for i := range h {
		m[h[i].ID] = i
	}
	return Index{m: m}
}

// Pos is the position of id, or -1 if there is none.
func (x Index) Pos(id ID) int {
	if x.dense {
		return int(id) - 1
	}
	if i, ok := x.m[id]; ok {
		return i
	}
	return -1
}
