package client

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type txnState uint8

const (
	txnUninitialized txnState = iota
	txnInitializing
	txnReady
	txnInTransaction
	txnCommitting
	txnAborting
	txnAbortableError
	txnFatal
)

func (s txnState) String() string {
	return [...]string{"Uninitialized", "Initializing", "Ready", "InTransaction", "Committing", "Aborting", "AbortableError", "Fatal"}[s]
}

// transactions is the producer's transaction manager.
type transactions struct {
	p     *Producer
	id    string
	state txnState

	lastErr      error // the abortable error
	bumpRequired bool  // the epoch must move before the next transaction (KIP-360)

	added        map[TopicPartition]bool // partitions added to the open transaction
	pending      map[TopicPartition]bool // partitions waiting for AddPartitionsToTxn
	addQueued    bool                    // an AddPartitionsToTxn call is queued or in flight
	started      bool                    // the coordinator acknowledged an Add*: the transaction is open there
	maybeStarted bool                    // an Add* may have reached it

	calls    []*txnCall // coordinator calls, in order; calls[0] is the next or the one in flight
	inflight bool
	retryAt  env.Time
	timer    env.TimerID
	coords   map[string]*coordRef // by "type/key"

	sweep        bool   // records never sent must fail (the abortable error came)
	idle         func() // runs once nothing is on the wire (an abort waits for this)
	commitWaiter func() // a commit waiting for its flush: an error ends the wait
}

type coordRef struct {
	id      int32 // -1 unknown
	addr    string
	finding bool
}

// txnCall is one coordinator request with its retries.
type txnCall struct {
	name  string
	group string // "": to the transaction coordinator; else to this group's coordinator
	// request builds the next attempt; nil means there is nothing left to
	// ask (the call ends).
	request func() kmsg.Request
	// handle settles an answer.
	handle func(resp kmsg.Response) txnStep
	// fail ends the call without an answer: max.block.ms passed, or the
	// producer closed or failed; maybe says whether an attempt may have
	// taken effect.
	fail     func(err error, maybe bool)
	deadline env.Time
	maybe    bool // an attempt went unanswered
	inTxn    bool // part of the open transaction: moot once it aborts
}

type txnStep uint8

const (
	stepDone   txnStep = iota
	stepRetry          // retry after retry.backoff.ms
	stepRefind         // find the coordinator again, then retry
)

func newTransactions(p *Producer, id string) *transactions {
	return &transactions{p: p, id: id, coords: map[string]*coordRef{}}
}

// GroupMetadata is Kafka's ConsumerGroupMetadata: what a transaction's
// offsets are committed under, so the group coordinator can fence a
// zombie member (KIP-447). A consumer's GroupMetadata method returns it.
type GroupMetadata struct {
	GroupID      string
	GenerationID int32  // -1: no membership (Assign)
	MemberID     string // "": no membership
}

// InitTransactions readies a transactional producer: it finds the
// transaction coordinator and gets the producer id and epoch, which fences
// every earlier instance with the same transactional.id and completes or
// aborts its transaction. done gets nil, or an error once max.block.ms has
// passed (InitTransactions may be called again) or a fatal error.
func (p *Producer) InitTransactions(done func(error)) {
	t := p.txn
	refuse := p.txnUsable()
	switch {
	case refuse != nil:
	case t.state != txnUninitialized:
		refuse = t.stateErr("InitTransactions")
	}
	if refuse != nil {
		p.note(func() { done(refuse) })
		p.deliverLater()
		return
	}
	t.state = txnInitializing
	t.initProducerID(noIdentity, func(err error) {
		if t.state == txnInitializing {
			t.state = txnUninitialized
			if err == nil {
				t.state = txnReady
			}
		}
		p.note(func() { done(err) })
	})
}

// BeginTransaction opens a transaction (locally, as Kafka's does: the
// coordinator hears of it with the first partition added).
func (p *Producer) BeginTransaction() error {
	t := p.txn
	if err := p.txnUsable(); err != nil {
		return err
	}
	switch {
	case t.state != txnReady:
		return t.stateErr("BeginTransaction")
	}
	t.state = txnInTransaction
	t.lastErr = nil
	t.added, t.pending = map[TopicPartition]bool{}, map[TopicPartition]bool{}
	t.started, t.maybeStarted = false, false
	return nil
}

// SendOffsetsToTransaction adds consumer offsets to the open transaction:
// they are committed for g.GroupID if and only if the transaction commits.
// done gets nil, or the error that made the transaction abortable (or the
// producer fatal).
func (p *Producer) SendOffsetsToTransaction(offsets map[TopicPartition]OffsetAndMetadata, g GroupMetadata, done func(error)) {
	t := p.txn
	if err := t.checkOpen("SendOffsetsToTransaction"); err != nil {
		p.note(func() { done(failed(err)) })
		p.deliverLater()
		return
	}
	if len(offsets) == 0 {
		p.note(func() { done(nil) })
		p.deliverLater()
		return
	}
	finish := func(err error) {
		if err != nil {
			t.abortableError(err)
		}
		p.note(func() { done(err) })
	}
	deadline := p.e.WallClock().Add(p.opts.MaxBlock)
	fail := func(err error, maybe bool) { finish(outcomeErr(maybe, err)) }
	commit := &txnCall{name: "TxnOffsetCommit", group: g.GroupID, deadline: deadline, fail: fail, inTxn: true}
	commit.request = func() kmsg.Request { return t.txnOffsetCommitRequest(offsets, g) }
	commit.handle = func(resp kmsg.Response) txnStep {
		code := int16(0)
		for _, rt := range resp.(*kmsg.TxnOffsetCommitResponse).Topics {
			for _, rp := range rt.Partitions {
				if code == 0 {
					code = rp.ErrorCode
				}
			}
		}
		switch code {
		case 0:
			finish(nil)
			return stepDone
		case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.RequestTimedOut.Code:
			return stepRefind
		case kerr.UnknownTopicOrPartition.Code, kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code:
			return stepRetry
		case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code, kerr.RebalanceInProgress.Code, kerr.FencedInstanceID.Code,
			kerr.GroupAuthorizationFailed.Code:
			finish(failed(codeErr(code))) // Kafka's CommitFailedException: abortable
		case kerr.UnknownProducerID.Code, kerr.InvalidProducerIDMapping.Code:
			t.bumpRequired = true
			finish(failed(codeErr(code)))
		default:
			err := codeErr(code)
			t.fatalError("TxnOffsetCommit", err)
			p.note(func() { done(failed(err)) })
		}
		return stepDone
	}
	add := &txnCall{name: "AddOffsetsToTxn", deadline: deadline, fail: fail, inTxn: true}
	add.request = func() kmsg.Request {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.Group = t.id, g.GroupID
		req.ProducerID, req.ProducerEpoch = p.idem.current.id, p.idem.current.epoch
		return req
	}
	add.handle = func(resp kmsg.Response) txnStep {
		code := resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode
		switch step, ok := t.coordinatorStep(code); {
		case ok:
			return step
		case code == 0:
			t.started = true
			t.enqueue(commit)
		case code == kerr.UnknownProducerID.Code || code == kerr.InvalidProducerIDMapping.Code:
			t.bumpRequired = true
			finish(failed(codeErr(code)))
		case code == kerr.GroupAuthorizationFailed.Code:
			finish(failed(codeErr(code)))
		default:
			err := codeErr(code)
			t.fatalError("AddOffsetsToTxn", err)
			p.note(func() { done(failed(err)) })
		}
		return stepDone
	}
	add.fail = func(err error, maybe bool) {
		if maybe {
			t.maybeStarted = true
		}
		fail(err, maybe)
	}
	t.enqueue(add)
	p.deliverLater()
}

func (t *transactions) txnOffsetCommitRequest(offsets map[TopicPartition]OffsetAndMetadata, g GroupMetadata) kmsg.Request {
	p := t.p
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group = t.id, g.GroupID
	req.ProducerID, req.ProducerEpoch = p.idem.current.id, p.idem.current.epoch
	req.Generation, req.MemberID = g.GenerationID, g.MemberID
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, TopicPartition.Compare)
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		o := offsets[tp]
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = tp.Partition, o.Offset, o.LeaderEpoch
		rp.Metadata = kmsg.StringPtr(o.Metadata)
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// CommitTransaction flushes the transaction's records and commits it.
// done gets nil once the coordinator has decided to commit (the markers
// follow), or an *Error: Fail when the transaction certainly did not
// commit (a record failed, or the coordinator refused; abort it, unless Err
// reports the producer fatal), Info when it may have (an EndTxn went
// unanswered, and max.block.ms passed or the producer was fenced). After an
// Info that is not fatal, CommitTransaction may be called again.
func (p *Producer) CommitTransaction(done func(error)) {
	t := p.txn
	refuse := p.txnUsable()
	switch {
	case refuse != nil:
	case t.state == txnAbortableError:
		refuse = t.lastErr
	case t.state == txnCommitting && len(t.calls) == 0 && !p.flushing():
		t.endTransaction(true, done) // a retry after max.block.ms
		p.deliverLater()
		return
	case t.state != txnInTransaction:
		refuse = t.stateErr("CommitTransaction")
	}
	if refuse != nil {
		p.note(func() { done(failed(refuse)) })
		p.deliverLater()
		return
	}
	t.state = txnCommitting
	once := false
	proceed := func() {
		if once {
			return
		}
		once = true
		t.commitWaiter = nil
		switch {
		case p.fatal != nil:
			done(failed(p.fatal))
		case t.state == txnAbortableError:
			done(failed(t.lastErr))
		case t.state != txnCommitting:
			done(failed(t.stateErr("CommitTransaction")))
		default:
			t.endTransaction(true, done)
		}
	}
	t.commitWaiter = proceed
	p.Flush(proceed)
}

// AbortTransaction aborts the open transaction: records not yet sent fail
// (ErrTransactionAborted), records on the wire are waited for, then the
// coordinator writes the abort. done gets nil, or a fatal error. Either
// way the transaction did not commit. The application rewinds its
// consumer to the committed offsets (Committed, Seek): Kafka does not.
func (p *Producer) AbortTransaction(done func(error)) {
	t := p.txn
	refuse := p.txnUsable()
	switch {
	case refuse != nil:
	case t.state == txnAborting && len(t.calls) == 0 && t.idle == nil:
		// A retry after max.block.ms.
	case t.state != txnInTransaction && t.state != txnAbortableError:
		refuse = t.stateErr("AbortTransaction")
	}
	if refuse != nil {
		p.note(func() { done(refuse) })
		p.deliverLater()
		return
	}
	t.state = txnAborting
	p.failUnsent(ErrTransactionAborted)
	clear(t.pending)
	// Calls not yet sent are moot; one in flight finishes first.
	keep := t.calls[:0]
	for i, c := range t.calls {
		if i == 0 && t.inflight {
			keep = append(keep, c)
			continue
		}
		c.fail(ErrTransactionAborted, false)
	}
	t.calls = keep
	t.idle = func() { t.endTransaction(false, done) }
	t.maybeIdle()
	p.deliverLater()
}

// TransactionState names the transaction manager's state (for logs and
// tests): Uninitialized, Ready, InTransaction, Committing, Aborting,
// AbortableError, Fatal, ...
func (p *Producer) TransactionState() string {
	if p.txn == nil {
		return "NonTransactional"
	}
	return p.txn.state.String()
}

func (t *transactions) stateErr(op string) error {
	return fmt.Errorf("%w: %s in state %v", ErrTransactionState, op, t.state)
}

// checkOpen reports why a transaction's operation cannot run now.
func (t *transactions) checkOpen(op string) error {
	if t == nil {
		return ErrNotTransactional
	}
	if err := t.p.txnUsable(); err != nil {
		return err
	}
	switch {
	case t.state == txnAbortableError:
		return t.lastErr
	case t.state != txnInTransaction:
		return t.stateErr(op)
	}
	return nil
}

// sendRefusal is why Send refuses a record, or nil.
func (t *transactions) sendRefusal() error {
	if t.state == txnInTransaction {
		return nil
	}
	if t.state == txnAbortableError {
		return t.lastErr
	}
	return t.stateErr("Send")
}

// abortableError moves an open transaction to the abortable error state:
// records not yet sent fail with err, new ones are refused, and only
// AbortTransaction goes on.
func (t *transactions) abortableError(err error) {
	switch t.state {
	case txnInTransaction, txnCommitting:
	default:
		return
	}
	var e *Error
	if errors.As(err, &e) {
		err = e.Err
	}
	t.state = txnAbortableError
	t.lastErr = fmt.Errorf("transaction must abort: %w", err)
	t.p.e.Log("producer-txn-abortable", "client", t.p.opts.ClientID, "error", err.Error())
	// The records never sent fail in the sender's next pass, not here:
	// this may run while the sender walks its queues.
	t.sweep = true
	t.p.wake()
	clear(t.pending)
	if w := t.commitWaiter; w != nil {
		t.p.note(w) // the commit fails now, not once its stuck records time out
	}
}

func (t *transactions) fatalError(op string, err error) {
	t.p.setFatal(fmt.Errorf("%s: %w", op, err))
}

// requireEpochBump records that the epoch must move before the next transaction
// (a sequence gap or an unknown producer): the transaction must abort.
func (t *transactions) requireEpochBump(why string) {
	t.bumpRequired = true
	t.abortableError(errors.New(why))
}

// coordinatorStep is what the retriable coordinator codes call for.
func (t *transactions) coordinatorStep(code int16) (txnStep, bool) {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		return stepRefind, true
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code:
		return stepRetry, true
	}
	return stepDone, false
}

// initProducerID sends InitProducerId; from is the identity to bump
// (KIP-360), or noIdentity for a fresh start.
func (t *transactions) initProducerID(from identity, done func(error)) {
	p := t.p
	c := &txnCall{name: "InitProducerId", deadline: p.e.WallClock().Add(p.opts.MaxBlock)}
	c.request = func() kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(t.id)
		req.TransactionTimeoutMillis = int32(p.opts.TransactionTimeout / time.Millisecond)
		req.ProducerID, req.ProducerEpoch = from.id, from.epoch
		return req
	}
	c.handle = func(resp kmsg.Response) txnStep {
		r := resp.(*kmsg.InitProducerIDResponse)
		if step, ok := t.coordinatorStep(r.ErrorCode); ok {
			return step
		}
		if r.ErrorCode != 0 {
			err := codeErr(r.ErrorCode)
			t.fatalError("InitProducerId", err)
			done(p.fatal)
			return stepDone
		}
		p.adoptIdentity(identity{id: r.ProducerID, epoch: r.ProducerEpoch})
		t.bumpRequired = false
		p.e.Log("producer-id", "client", p.opts.ClientID, "transactional.id", t.id, "id", r.ProducerID, "epoch", r.ProducerEpoch)
		done(nil)
		return stepDone
	}
	c.fail = func(err error, _ bool) { done(err) }
	t.enqueue(c)
}

// endTransaction sends EndTxn (once the transaction is open at the
// coordinator), adopts the epoch the answer carries, bumps it if an abort
// left sequences unknown, and reports.
func (t *transactions) endTransaction(commit bool, done func(error)) {
	p := t.p
	t.idle = nil
	if p.closed || p.fatal != nil {
		err := p.fatal
		if err == nil {
			err = ErrProducerClosed
		}
		p.note(func() { done(failed(err)) })
		return
	}
	finish := func(err error) {
		if err == nil {
			t.state = txnReady
			t.added, t.pending = nil, nil
		}
		p.note(func() { done(err) })
		p.wake()
	}
	afterEnd := func() {
		if commit || !t.epochBumpDue() {
			finish(nil)
			return
		}
		t.initProducerID(p.idem.current, func(err error) {
			if err != nil && p.fatal == nil {
				finish(err) // max.block.ms: AbortTransaction may be called again
				return
			}
			finish(err)
		})
	}
	if !t.started && !t.maybeStarted {
		afterEnd() // nothing reached the coordinator: nothing to end there
		return
	}
	op := "EndTxn(abort)"
	if commit {
		op = "EndTxn(commit)"
	}
	c := &txnCall{name: op, deadline: p.e.WallClock().Add(p.opts.MaxBlock)}
	c.request = func() kmsg.Request {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.Commit = t.id, commit
		req.ProducerID, req.ProducerEpoch = p.idem.current.id, p.idem.current.epoch
		return req
	}
	c.handle = func(resp kmsg.Response) txnStep {
		r := resp.(*kmsg.EndTxnResponse)
		code := r.ErrorCode
		if endTxnIndefinite(code) {
			c.maybe = true
		}
		if step, ok := t.coordinatorStep(code); ok {
			return step
		}
		switch {
		case code == 0:
			if r.Version >= 5 && r.ProducerID >= 0 {
				before := p.idem.current
				p.adoptIdentity(identity{id: r.ProducerID, epoch: r.ProducerEpoch})
				if p.idem.current != before {
					t.bumpRequired = false // the coordinator bumped (KIP-890)
				}
			}
			p.e.Log("producer-txn-ended", "client", p.opts.ClientID, "transactional.id", t.id, "commit", commit, "id", p.idem.current.id, "epoch", p.idem.current.epoch)
			afterEnd()
		case !commit && code == kerr.InvalidTxnState.Code && !t.started:
			afterEnd() // the Add* that may have opened it did not: nothing to abort
		case code == kerr.UnknownProducerID.Code || code == kerr.InvalidProducerIDMapping.Code:
			t.bumpRequired = true
			if commit {
				t.abortableError(codeErr(code))
				finish(outcomeErr(c.maybe, codeErr(code)))
			} else {
				afterEnd()
			}
		default:
			err := codeErr(code)
			t.fatalError(op, err)
			finish(outcomeErr(commit && c.maybe, p.fatal))
		}
		return stepDone
	}
	c.fail = func(err error, maybe bool) {
		finish(outcomeErr(commit && maybe, err))
	}
	t.enqueue(c)
}

// endTxnIndefinite reports EndTxn codes a coordinator may answer after it
// appended the decision to its log: the decision may stand.
func endTxnIndefinite(code int16) bool {
	switch code {
	case 0, kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.InvalidProducerEpoch.Code,
		kerr.ProducerFenced.Code, kerr.InvalidTxnState.Code, kerr.InvalidProducerIDMapping.Code, kerr.UnknownProducerID.Code,
		kerr.TransactionalIDAuthorizationFailed.Code, kerr.UnsupportedVersion.Code:
		return false
	}
	return true
}

// epochBumpDue reports whether the epoch must move before the next
// transaction: a sequence gap, an unknown producer, or a batch whose fate
// is unknown.
func (t *transactions) epochBumpDue() bool {
	if t.bumpRequired {
		return true
	}
	for _, q := range t.p.ordered {
		if q.rewrite || q.unresolvedSeq >= 0 {
			return true
		}
	}
	return false
}

// canDrain reports whether b, the head of q, may be sent: its partition
// is in the transaction, else it is queued for AddPartitionsToTxn. After an
// abortable error only retries go.
func (t *transactions) canDrain(q *partitionQueue, b *batch) bool {
	switch t.state {
	case txnInTransaction, txnCommitting:
	case txnAbortableError:
		return t.added[q.tp] && b.lastAttempt != 0
	default:
		return false
	}
	if t.added[q.tp] {
		return true
	}
	t.pending[q.tp] = true
	if !t.addQueued {
		t.addQueued = true
		t.enqueue(t.addPartitionsCall())
	}
	return false
}

func (t *transactions) addPartitionsCall() *txnCall {
	p := t.p
	c := &txnCall{name: "AddPartitionsToTxn", deadline: p.e.WallClock().Add(p.opts.MaxBlock), inTxn: true}
	var asked []TopicPartition
	c.request = func() kmsg.Request {
		asked = asked[:0]
		for tp := range t.pending {
			asked = append(asked, tp)
		}
		if len(asked) == 0 {
			t.addQueued = false
			return nil
		}
		slices.SortFunc(asked, TopicPartition.Compare)
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID = t.id
		req.ProducerID, req.ProducerEpoch = p.idem.current.id, p.idem.current.epoch
		for _, tp := range asked {
			if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic = tp.Topic
				req.Topics = append(req.Topics, rt)
			}
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, tp.Partition)
		}
		return req
	}
	c.handle = func(resp kmsg.Response) txnStep {
		codes := map[TopicPartition]int16{}
		for _, rt := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
			for _, rp := range rt.Partitions {
				codes[TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
		worst := int16(0)
		for _, tp := range asked {
			code, ok := codes[tp]
			if !ok {
				code = kerr.UnknownServerError.Code
			}
			if code == 0 {
				t.started = true
				if t.pending[tp] {
					delete(t.pending, tp)
					t.added[tp] = true
				}
				continue
			}
			if worst == 0 || worst == kerr.OperationNotAttempted.Code {
				worst = code
			}
		}
		p.wake()
		if step, ok := t.coordinatorStep(worst); ok {
			return step
		}
		switch worst {
		case 0:
			if len(t.pending) > 0 {
				return stepRetry // partitions that came meanwhile
			}
			t.addQueued = false
		case kerr.UnknownTopicOrPartition.Code, kerr.OperationNotAttempted.Code:
			return stepRetry
		case kerr.UnknownProducerID.Code, kerr.InvalidProducerIDMapping.Code:
			t.addQueued = false
			t.requireEpochBump("AddPartitionsToTxn: " + codeErr(worst).Error())
		case kerr.TopicAuthorizationFailed.Code:
			t.addQueued = false
			t.abortableError(codeErr(worst))
		default:
			t.addQueued = false
			t.fatalError("AddPartitionsToTxn", codeErr(worst))
		}
		return stepDone
	}
	c.fail = func(err error, maybe bool) {
		t.addQueued = false
		if maybe {
			t.maybeStarted = true
		}
		if !errors.Is(err, ErrTransactionAborted) && !errors.Is(err, ErrProducerClosed) && p.fatal == nil {
			t.abortableError(err)
		}
	}
	return c
}

// enqueue adds a coordinator call.
func (t *transactions) enqueue(c *txnCall) {
	t.calls = append(t.calls, c)
	t.pump()
}

// pump sends the next call when none is in flight.
func (t *transactions) pump() {
	p := t.p
	if t.inflight || len(t.calls) == 0 || p.closed {
		t.maybeIdle()
		return
	}
	now := p.e.WallClock()
	c := t.calls[0]
	if c.inTxn && t.state == txnAborting {
		t.calls = t.calls[1:]
		c.fail(ErrTransactionAborted, c.maybe)
		t.pump()
		return
	}
	if now >= c.deadline {
		t.calls = t.calls[1:]
		c.fail(fmt.Errorf("%w: %s after %v", ErrMaxBlock, c.name, p.opts.MaxBlock), c.maybe)
		p.wake()
		t.pump()
		return
	}
	if now < t.retryAt {
		t.armAt(t.retryAt)
		return
	}
	req := c.request()
	if req == nil {
		t.calls = t.calls[1:]
		t.pump()
		return
	}
	key := t.id
	typ := int8(1)
	if c.group != "" {
		key, typ = c.group, 0
	}
	ref := t.coord(typ, key)
	if ref.id < 0 {
		t.findCoordinator(typ, key, ref)
		return
	}
	conn := p.cl.connAs(fmt.Sprintf("coordinator %d %s", typ, ref.addr), ref.addr)
	t.inflight = true
	conn.Do(req, p.opts.RequestTimeout, func(resp kmsg.Response, err error) {
		defer p.deliver()
		if p.closed || len(t.calls) == 0 || t.calls[0] != c {
			t.inflight = false
			return
		}
		step := stepRefind
		if err != nil {
			if callIndefinite(err) {
				c.maybe = true
			}
			p.e.Log("producer-txn-call-failed", "client", p.opts.ClientID, "call", c.name, "error", err.Error())
		} else {
			step = c.handle(resp) // still in flight: a fatal error it raises keeps it
		}
		t.inflight = false
		switch step {
		case stepDone:
			if len(t.calls) > 0 && t.calls[0] == c {
				t.calls = t.calls[1:]
			}
		case stepRefind:
			ref.id, ref.addr = -1, ""
			t.retryAt = p.e.WallClock().Add(p.opts.RetryBackoff)
		case stepRetry:
			t.retryAt = p.e.WallClock().Add(p.opts.RetryBackoff)
		}
		t.pump()
	})
}

func (t *transactions) armAt(at env.Time) {
	p := t.p
	if t.timer != 0 {
		return
	}
	t.timer = p.e.AfterFunc(at.Sub(p.e.WallClock()), func() {
		defer p.deliver()
		t.timer = 0
		t.pump()
	})
}

func (t *transactions) coord(typ int8, key string) *coordRef {
	k := fmt.Sprintf("%d/%s", typ, key)
	ref := t.coords[k]
	if ref == nil {
		ref = &coordRef{id: -1}
		t.coords[k] = ref
	}
	return ref
}

// findCoordinator asks any broker for the coordinator of key, then pumps.
func (t *transactions) findCoordinator(typ int8, key string, ref *coordRef) {
	p := t.p
	if ref.finding {
		return
	}
	ref.finding = true
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = typ, key
	req.CoordinatorKeys = []string{key}
	conn, timeout := p.cl.leastLoaded()
	conn.Do(req, timeout, func(resp kmsg.Response, err error) {
		defer p.deliver()
		ref.finding = false
		if p.closed {
			return
		}
		if err == nil {
			var id int32
			var addr string
			id, addr, err = parseFindCoordinator(resp.(*kmsg.FindCoordinatorResponse))
			if err == nil {
				ref.id, ref.addr = id, addr
			}
		}
		if err != nil {
			p.e.Log("producer-find-coordinator-failed", "client", p.opts.ClientID, "key", key, "error", err.Error())
			t.retryAt = p.e.WallClock().Add(p.opts.RetryBackoff)
		}
		t.pump()
	})
}

// maybeIdle runs the abort's continuation once no produce request and no
// coordinator call is in flight.
func (t *transactions) maybeIdle() {
	if t.idle == nil || t.inflight || len(t.calls) > 0 {
		return
	}
	for _, q := range t.p.ordered {
		if len(q.wire) > 0 {
			return
		}
	}
	f := t.idle
	t.idle = nil
	f()
}

// stop fails every coordinator call still queued (all, or all but the
// one in flight, which its answer settles) and lets a waiting abort or
// commit finish: the producer closed or failed.
func (t *transactions) stop(err error, all bool) {
	calls := t.calls
	t.calls = nil
	if !all && t.inflight && len(calls) > 0 {
		t.calls, calls = calls[:1], calls[1:]
	}
	if all && t.timer != 0 {
		t.p.e.Cancel(t.timer)
		t.timer = 0
	}
	for _, c := range calls {
		c.fail(err, c.maybe)
	}
	if w := t.commitWaiter; w != nil {
		t.p.note(w)
	}
	if f := t.idle; f != nil {
		t.idle = nil
		f()
	}
}

// failUnsent fails the records of the transaction that were never sent:
// awaiting metadata or a partition add, or queued in batches never
// drained. Batches that were sent and wait for a retry are unresolved:
// their outcome is Info, and the epoch must move.
func (p *Producer) failUnsent(cause error) {
	for _, pr := range p.awaiting {
		p.complete(pr, SendResult{Partition: -1, Offset: -1, Outcome: Fail, Err: failed(cause)})
	}
	p.awaiting = nil
	for _, q := range p.ordered {
		for _, b := range slices.Clone(q.queue) {
			if b.lastAttempt != 0 && p.txn.state != txnAborting {
				continue // retried until the abort
			}
			p.finishBatch(b, b.maybeWritten, cause)
			p.sequenceFailed(b, b.maybeWritten)
		}
	}
}

// adoptIdentity moves the producer to a new id or epoch: the sequences of
// every partition restart at 0 (none has a batch outstanding between
// transactions).
func (p *Producer) adoptIdentity(id identity) {
	if id == p.idem.current {
		return
	}
	p.idem.current = id
	for _, q := range p.ordered {
		if len(q.sequenced) == 0 {
			q.ident, q.nextSeq, q.lastAcked, q.unresolvedSeq, q.rewrite = id, 0, -1, -1, false
		}
	}
}

// flushing reports a Flush still waiting.
func (p *Producer) flushing() bool { return len(p.flushes) > 0 }

// txnUsable reports why no transactional operation can run at all: the
// producer is not transactional, is closed, or is fatally failed.
func (p *Producer) txnUsable() error {
	switch {
	case p.txn == nil:
		return ErrNotTransactional
	case p.closed:
		return ErrProducerClosed
	}
	return p.fatal
}
