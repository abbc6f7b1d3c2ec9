package client

import (
	"fmt"
	"math"
	"slices"

	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
)

// Header is a record header.
type Header = record.RecordHeader

// Record is a Kafka record: what a producer sends and a consumer receives.
type Record struct {
	Topic string
	// Partition is where PartitionerManual sends the record; other
	// partitioners ignore it. A consumed record carries its partition.
	Partition int32
	Key       []byte // nil is a null key
	Value     []byte // nil is a null value (a tombstone)
	Headers   []Header
	// Timestamp is the record's create time, at millisecond precision on
	// the wire. Zero on Send means now.
	Timestamp env.Time

	// Set on consumed records.
	Offset      int64
	LeaderEpoch int32 // the epoch of the leader that appended it
	// LastStableOffset is what the fetch response that carried the record
	// said of its partition (KIP-98): read_committed, every record it
	// returns lies below it. A harness checks that; Kafka's consumer keeps
	// it for lag metrics.
	LastStableOffset int64
}

// SendResult is how one Send ended. Exactly one is reported per Send.
type SendResult struct {
	Partition int32 // -1 if the record never got one
	// Offset is the record's offset when Outcome is OK and the broker said
	// (acks 1 or all); otherwise -1.
	Offset  int64
	Outcome Outcome
	// Err is nil when OK; otherwise an *Error whose cause says why.
	Err error
}

// Producer is Kafka's producer, event-driven: Send queues a record and
// returns; its callback runs later on the process's loop with the record's
// outcome. See the package documentation for how outcomes are decided.
type Producer struct {
	e    env.Env
	opts ProducerOptions
	cl   *cluster

	queues  map[TopicPartition]*partitionQueue
	ordered []*partitionQueue // queues by partition, for deterministic sweeps
	// awaiting holds records whose topic has no metadata yet, in send order;
	// awaitingTried is the metadata (cluster.applied) they last failed with.
	awaiting      []*pendingRecord
	awaitingTried uint64
	roundRobin    map[string]int

	serial          uint64 // records accepted so far
	incomplete      int    // records accepted and not yet completed
	incompleteBytes int
	requests        map[int32]int // produce requests awaiting an answer, by broker
	drainFrom       map[int32]int // where the next drain for a broker starts (fairness)

	idem idempotence // used when enable.idempotence

	fatal   error // the producer can send no more (INVALID_PRODUCER_EPOCH ...)
	flushes []*flushWaiter
	closed  bool

	runQueued bool
	timer     env.TimerID
	timerAt   env.Time
	notes     []func() // callbacks to run once the current event's state changes are done
	noting    bool

	// With a transactional.id: the transaction manager (transaction.go),
	// and the id produce requests carry.
	txn             *transactions
	transactionalID *string
}

// pendingRecord is one accepted record waiting for its outcome.
type pendingRecord struct {
	rec     Record
	done    func(SendResult)
	serial  uint64
	size    int
	created env.Time
}

type flushWaiter struct {
	mark      uint64 // records up to this serial must complete
	remaining int
	done      func()
}

// recordOverhead is Kafka's upper bound on a record's framing
// (Records.estimateSizeInBytesUpperBound).
const recordOverhead = 21

func recordSize(r *Record) int {
	n := recordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	return n
}

// NewProducer returns a producer running on the process whose environment
// is e and whose connection callbacks go to r. It dials nobody until the
// first Send.
func NewProducer(e env.Env, r *rpc.Router, opts ProducerOptions) (*Producer, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	opts.BootstrapServers = slices.Clone(opts.BootstrapServers)
	p := &Producer{
		e: e, opts: opts,
		queues: map[TopicPartition]*partitionQueue{}, roundRobin: map[string]int{},
		requests: map[int32]int{}, drainFrom: map[int32]int{},
	}
	p.idem.reset()
	if opts.TransactionalID != "" {
		id := opts.TransactionalID
		p.transactionalID = &id
		p.txn = newTransactions(p, id)
	}
	p.cl = newCluster(e, r, opts.ConnectionOptions, p.wake)
	return p, nil
}

// Send queues rec for its partition and calls done exactly once with its
// outcome, never before Send returns. A transactional producer sends only
// inside a transaction (BeginTransaction); the outcome says whether the
// record was appended to its partition, not whether its transaction
// commits: a record of an aborted transaction can be OK (appended, and
// hidden from read_committed consumers by the abort marker).
func (p *Producer) Send(rec Record, done func(SendResult)) {
	now := p.e.WallClock()
	pr := &pendingRecord{rec: rec, done: done, created: now}
	if pr.rec.Timestamp == 0 {
		pr.rec.Timestamp = now
	}
	pr.size = recordSize(&pr.rec)
	var refuse error
	switch {
	case p.closed:
		refuse = ErrProducerClosed
	case p.fatal != nil:
		refuse = p.fatal
	case p.txn != nil && p.txn.sendRefusal() != nil:
		refuse = p.txn.sendRefusal()
	case pr.size+record.BatchHeaderSize > p.opts.MaxRequestSize || pr.size > p.opts.BufferMemory:
		refuse = fmt.Errorf("%w: %d bytes", ErrRecordTooLarge, pr.size)
	case p.incompleteBytes+pr.size > p.opts.BufferMemory:
		refuse = ErrBufferFull
	}
	if refuse != nil {
		p.note(func() { done(SendResult{Partition: -1, Offset: -1, Outcome: Fail, Err: failed(refuse)}) })
		p.deliverLater()
		return
	}
	p.serial++
	pr.serial = p.serial
	p.incomplete++
	p.incompleteBytes += pr.size
	if !p.place(pr) {
		p.awaiting = append(p.awaiting, pr)
		p.cl.want(rec.Topic)
	}
	p.wake()
	p.deliverLater()
}

// Flush makes every queued batch ready to send at once (ignoring
// linger.ms) and calls done once every record sent before Flush has its
// outcome.
func (p *Producer) Flush(done func()) {
	if p.incomplete == 0 {
		p.note(done)
		p.deliverLater()
		return
	}
	p.flushes = append(p.flushes, &flushWaiter{mark: p.serial, remaining: p.incomplete, done: done})
	p.wake()
}

// Close stops the producer at once: records not yet acknowledged complete
// now — Fail with ErrProducerClosed if never sent, Info if a send of them
// may have landed — and the connections close. For Kafka's graceful
// close, Flush first. An open transaction is left to the coordinator: the
// next instance with the transactional.id aborts it, or
// transaction.timeout.ms does.
func (p *Producer) Close() {
	if p.closed {
		return
	}
	p.closed = true
	if p.timer != 0 {
		p.e.Cancel(p.timer)
		p.timer = 0
	}
	for _, pr := range p.awaiting {
		p.complete(pr, SendResult{Partition: -1, Offset: -1, Outcome: Fail, Err: failed(ErrProducerClosed)})
	}
	p.awaiting = nil
	for _, q := range p.ordered {
		for _, b := range slices.Concat(q.wire, q.queue) {
			p.finishBatch(b, b.unresolved(), ErrProducerClosed)
		}
		q.queue, q.wire = nil, nil
	}
	for _, w := range p.flushes {
		p.note(w.done)
	}
	p.flushes = nil
	if p.txn != nil {
		p.txn.stop(ErrProducerClosed, true)
	}
	p.cl.close()
	p.deliverLater()
}

// ProducerID returns the idempotent producer's id and epoch, (-1, -1)
// before InitProducerId has answered or without idempotence.
func (p *Producer) ProducerID() (int64, int16) { return p.idem.current.id, p.idem.current.epoch }

// Err is the fatal error that stopped the producer, if any.
func (p *Producer) Err() error { return p.fatal }

// Buffered is the number of records accepted and not yet completed.
func (p *Producer) Buffered() int { return p.incomplete }

// place puts pr into its partition's queue, or reports false if its topic
// has no metadata yet.
func (p *Producer) place(pr *pendingRecord) bool {
	n, ok := p.cl.partitions(pr.rec.Topic)
	if !ok {
		return false
	}
	var part int32
	switch {
	case p.opts.Partitioner == PartitionerManual:
		part = pr.rec.Partition
		if part < 0 || int(part) >= n {
			p.complete(pr, SendResult{Partition: part, Offset: -1, Outcome: Fail,
				Err: failed(fmt.Errorf("%w: %s has %d partitions, record names %d", ErrUnknownPartition, pr.rec.Topic, n, part))})
			return true
		}
	case p.opts.Partitioner == PartitionerMurmur2 && pr.rec.Key != nil:
		part = KeyPartition(pr.rec.Key, n)
	default:
		part = int32(p.roundRobin[pr.rec.Topic] % n)
		p.roundRobin[pr.rec.Topic] = (p.roundRobin[pr.rec.Topic] + 1) % math.MaxInt32
	}
	pr.rec.Partition = part
	p.queueFor(TopicPartition{Topic: pr.rec.Topic, Partition: part}).add(pr, p.opts.BatchSize)
	return true
}

func (p *Producer) queueFor(tp TopicPartition) *partitionQueue {
	q := p.queues[tp]
	if q == nil {
		q = &partitionQueue{tp: tp, ident: noIdentity, lastAcked: -1, unresolvedSeq: -1}
		p.queues[tp] = q
		i, _ := slices.BinarySearchFunc(p.ordered, tp, func(x *partitionQueue, tp TopicPartition) int { return x.tp.Compare(tp) })
		p.ordered = slices.Insert(p.ordered, i, q)
	}
	return q
}

// complete reports one record's outcome (after the current event's state
// changes) and settles the flushes waiting for it.
func (p *Producer) complete(pr *pendingRecord, res SendResult) {
	p.incomplete--
	p.incompleteBytes -= pr.size
	for i := 0; i < len(p.flushes); {
		w := p.flushes[i]
		if pr.serial != 0 && pr.serial <= w.mark {
			w.remaining--
		}
		if w.remaining <= 0 {
			p.note(w.done)
			p.flushes = slices.Delete(p.flushes, i, i+1)
			continue
		}
		i++
	}
	done := pr.done
	p.note(func() { done(res) })
	if res.Outcome != OK && p.txn != nil {
		// A transaction missing one of its records must not commit.
		p.txn.abortableError(res.Err)
	}
}

// note queues a user callback.
func (p *Producer) note(f func()) { p.notes = append(p.notes, f) }

// deliver runs queued callbacks, in order. Callbacks may call back into
// the producer.
func (p *Producer) deliver() {
	if p.noting {
		return // the outer deliver carries on
	}
	p.noting = true
	for len(p.notes) > 0 {
		f := p.notes[0]
		p.notes[0] = nil
		p.notes = p.notes[1:]
		f()
	}
	p.noting = false
}

// deliverLater runs queued callbacks in an event of their own, so that no
// callback runs inside the API call that caused it.
func (p *Producer) deliverLater() {
	if len(p.notes) > 0 {
		p.e.AfterFunc(0, p.deliver)
	}
}
