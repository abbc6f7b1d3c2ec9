package client

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
)

// OffsetAndMetadata is a committed offset: the next offset to read, the
// leader epoch of the record before it (-1 unknown), and free-form
// metadata.
type OffsetAndMetadata struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// Consumer is Kafka's consumer, with manual assignment (Assign) or group
// membership (Subscribe, group.go), event-driven: Poll returns its records
// through a callback on the process's loop.
type Consumer struct {
	e    env.Env
	opts ConsumerOptions
	cl   *cluster

	assigned map[TopicPartition]*assignment
	ordered  []*assignment // by partition
	fetching map[int32]bool
	buffered []*completedFetch // fetched, not yet returned, in arrival order

	poll      *pendingPoll
	pollErr   error // reported by the next Poll
	resetting map[int32]bool

	coord        coordinator
	group        *membership // with Subscribe
	autoCommitAt env.Time
	closed       bool

	runQueued bool
	timer     env.TimerID
	timerAt   env.Time
	notes     []func()
	noting    bool
}

// positionState is where a partition's position comes from.
type positionState uint8

const (
	needsCommitted positionState = iota // ask the group's committed offset first
	needsReset                          // reset by auto.offset.reset
	awaitingSeek                        // no reset possible (none): the application must seek
	positioned
)

// assignment is one assigned partition: its position and how to fetch it.
type assignment struct {
	tp       TopicPartition
	state    positionState
	position int64 // the next offset to return
	// epoch is the leader epoch of the record before position, -1 unknown:
	// fetches carry it (LastFetchedEpoch) so the leader can say whether
	// the log diverged below the position (KIP-320).
	epoch     int32
	reset     OffsetReset // the strategy for the next reset; 0: auto.offset.reset
	gen       uint64      // bumps whenever the position is set from outside a fetch
	inflight  bool        // in a fetch, ListOffsets or OffsetFetch now
	backoffAt env.Time    // no request for it before this
}

type pendingPoll struct {
	max      int
	deadline env.Time
	done     func([]Record, error)
}

// completedFetch is one partition's fetched records not yet returned.
type completedFetch struct {
	a          *assignment
	gen        uint64
	records    []Record
	next       int   // index of the first record not yet returned
	nextOffset int64 // the position once every record is returned
	nextEpoch  int32
}

// NewConsumer returns a consumer running on the process whose environment
// is e and whose connection callbacks go to r. It has no assignment.
func NewConsumer(e env.Env, r *rpc.Router, opts ConsumerOptions) (*Consumer, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	opts.BootstrapServers = slices.Clone(opts.BootstrapServers)
	c := &Consumer{
		e: e, opts: opts,
		assigned: map[TopicPartition]*assignment{}, fetching: map[int32]bool{}, resetting: map[int32]bool{},
		coord: coordinator{id: -1},
	}
	c.cl = newCluster(e, r, opts.ConnectionOptions, c.wake)
	c.autoCommitAt = e.WallClock().Add(opts.AutoCommitInterval)
	return c, nil
}

// Assign replaces the assignment (Kafka's assign(), without group
// membership). Partitions already assigned keep their positions; new ones
// start from the group's committed offset if group.id is set, else (or if
// none is committed) from auto.offset.reset, when the next Poll runs.
// Assign on a consumer that subscribed panics, as Kafka's throws
// IllegalStateException.
func (c *Consumer) Assign(tps []TopicPartition) {
	if c.group != nil {
		panic("client: Assign on a consumer that subscribed")
	}
	c.setAssignment(tps)
}

// setAssignment is Assign, for the application or the group.
func (c *Consumer) setAssignment(tps []TopicPartition) {
	next := map[TopicPartition]*assignment{}
	var ordered []*assignment
	var topics []string
	for _, tp := range tps {
		if next[tp] != nil {
			continue
		}
		a := c.assigned[tp]
		if a == nil {
			a = &assignment{tp: tp, position: -1, epoch: -1, state: needsReset}
			if c.opts.GroupID != "" {
				a.state = needsCommitted
			}
		}
		next[tp] = a
		ordered = append(ordered, a)
		topics = append(topics, tp.Topic)
	}
	slices.SortFunc(ordered, func(x, y *assignment) int { return x.tp.Compare(y.tp) })
	for tp, a := range c.assigned {
		if next[tp] == nil {
			a.gen++ // what is in flight for it is dropped on arrival
		}
	}
	c.assigned, c.ordered = next, ordered
	c.cl.want(topics...)
	c.wake()
}

// Assignment returns the assigned partitions, sorted.
func (c *Consumer) Assignment() []TopicPartition {
	out := make([]TopicPartition, len(c.ordered))
	for i, a := range c.ordered {
		out[i] = a.tp
	}
	return out
}

// Position returns the next offset Poll returns for tp, if known.
func (c *Consumer) Position(tp TopicPartition) (int64, bool) {
	a := c.assigned[tp]
	if a == nil || a.state != positioned {
		return -1, false
	}
	return a.position, true
}

// Positions returns every known position with the leader epoch of the
// record before it: what CommitPositions commits.
func (c *Consumer) Positions() map[TopicPartition]OffsetAndMetadata {
	out := map[TopicPartition]OffsetAndMetadata{}
	for _, a := range c.ordered {
		if a.state == positioned {
			out[a.tp] = OffsetAndMetadata{Offset: a.position, LeaderEpoch: a.epoch}
		}
	}
	return out
}

// Seek sets tp's position: the next Poll returns records from offset on.
func (c *Consumer) Seek(tp TopicPartition, offset int64) error {
	a := c.assigned[tp]
	if a == nil {
		return fmt.Errorf("seek %v: %w", tp, ErrNotAssigned)
	}
	a.gen++
	a.state, a.position, a.epoch = positioned, offset, -1
	c.wake()
	return nil
}

// SeekToReset forgets tp's position: it is reset by strategy (earliest
// or latest) at the next Poll, as seekToBeginning and seekToEnd do.
func (c *Consumer) SeekToReset(tp TopicPartition, strategy OffsetReset) error {
	a := c.assigned[tp]
	if a == nil {
		return fmt.Errorf("seek %v: %w", tp, ErrNotAssigned)
	}
	a.gen++
	a.state, a.position, a.epoch, a.reset = needsReset, -1, -1, strategy
	c.wake()
	return nil
}

// Poll calls done with up to maxRecords records (max.poll.records if
// maxRecords <= 0) as soon as some are available, or with none once
// timeout has passed. Records of one partition come in offset order, and
// each Poll goes on where the previous one stopped. With
// enable.auto.commit, Poll first commits the positions the previous Poll
// reached, once auto.commit.interval.ms has passed since the last
// auto-commit. Polls are sequential: a Poll while one is pending fails
// with ErrPollInProgress. done never runs inside Poll.
func (c *Consumer) Poll(maxRecords int, timeout time.Duration, done func([]Record, error)) {
	switch {
	case c.closed:
		c.note(func() { done(nil, ErrConsumerClosed) })
		c.deliverLater()
		return
	case c.poll != nil:
		c.note(func() { done(nil, ErrPollInProgress) })
		c.deliverLater()
		return
	}
	if maxRecords <= 0 {
		maxRecords = c.opts.MaxPollRecords
	}
	if c.group != nil {
		c.notePoll()
	}
	c.maybeAutoCommit()
	c.poll = &pendingPoll{max: maxRecords, deadline: c.e.WallClock().Add(timeout), done: done}
	c.wake()
}

// Close stops the consumer: with enable.auto.commit it first commits the
// positions (as Kafka's close does, within default.api.timeout.ms); a
// group member then revokes its partitions and leaves the group
// (LeaveGroup); then a pending Poll ends with ErrConsumerClosed, the
// connections close and done runs.
func (c *Consumer) Close(done func()) {
	if c.closed {
		c.note(done)
		c.deliverLater()
		return
	}
	finish := func() {
		c.shut()
		c.note(done)
		c.deliver()
	}
	leave := func() {
		if c.group == nil {
			finish()
			return
		}
		// Kafka's close revokes the partitions and leaves the group, so it
		// rebalances at once instead of after session.timeout.ms.
		if owned, cb := c.group.owned, c.group.listener.OnPartitionsRevoked; len(owned) > 0 && cb != nil && !c.group.lost {
			cb(owned)
		}
		c.group.seq++
		c.leaveGroup(finish)
	}
	if c.opts.EnableAutoCommit {
		if offsets := c.Positions(); len(offsets) > 0 {
			c.commit(offsets, true, func(error) { leave() })
			return
		}
	}
	c.e.AfterFunc(0, leave)
}

func (c *Consumer) shut() {
	if c.closed {
		return
	}
	c.closed = true
	if c.poll != nil {
		done := c.poll.done
		c.poll = nil
		c.note(func() { done(nil, ErrConsumerClosed) })
	}
	if c.timer != 0 {
		c.e.Cancel(c.timer)
		c.timer = 0
	}
	if g := c.group; g != nil {
		c.stopHeartbeats()
		if g.pollTimer != 0 {
			c.e.Cancel(g.pollTimer)
			g.pollTimer = 0
		}
	}
	c.cl.close()
}

func (c *Consumer) wake() {
	if c.runQueued || c.closed {
		return
	}
	c.runQueued = true
	c.e.AfterFunc(0, func() {
		c.runQueued = false
		c.run()
	})
}

// run moves a pending poll along: positions for partitions without one,
// fetches for partitions with nothing buffered, and the poll's answer.
// Requests go out only while a poll is pending, as Kafka's consumer does
// its network work inside poll.
func (c *Consumer) run() {
	if c.closed {
		return
	}
	defer c.deliver()
	if c.group != nil {
		c.maintainGroup()
	}
	if c.poll == nil {
		return
	}
	now := c.e.WallClock()
	next := c.poll.deadline
	c.updatePositions(now, &next)
	if c.completePoll(now) {
		return
	}
	c.sendFetches(now, &next)
	c.arm(now, next)
}

func (c *Consumer) arm(now, next env.Time) {
	if c.timer != 0 && c.timerAt <= next {
		return
	}
	if c.timer != 0 {
		c.e.Cancel(c.timer)
	}
	c.timerAt = next
	c.timer = c.e.AfterFunc(next.Sub(now), func() {
		c.timer = 0
		c.run()
	})
}

// completePoll answers the pending poll if it has records, an error, or
// has run out of time.
func (c *Consumer) completePoll(now env.Time) bool {
	pp := c.poll
	if err := c.pollErr; err != nil {
		c.pollErr = nil
		c.poll = nil
		c.note(func() { pp.done(nil, err) })
		return true
	}
	recs := c.drainBuffered(pp.max)
	if len(recs) == 0 && now < pp.deadline {
		return false
	}
	c.poll = nil
	// Pipelining: fetch what the next poll will want while the
	// application works on these.
	if len(recs) > 0 {
		next := never
		c.sendFetches(now, &next)
	}
	c.note(func() { pp.done(recs, nil) })
	return true
}

// drainBuffered takes up to max records from the buffered fetches and
// moves the positions past them.
func (c *Consumer) drainBuffered(max int) []Record {
	var out []Record
	for len(out) < max && len(c.buffered) > 0 {
		cf := c.buffered[0]
		a := cf.a
		if c.assigned[a.tp] != a || a.gen != cf.gen || a.state != positioned {
			c.buffered = c.buffered[1:]
			continue
		}
		take := min(max-len(out), len(cf.records)-cf.next)
		out = append(out, cf.records[cf.next:cf.next+take]...)
		cf.next += take
		if cf.next == len(cf.records) {
			a.position, a.epoch = cf.nextOffset, cf.nextEpoch
			c.buffered[0] = nil
			c.buffered = c.buffered[1:]
			continue
		}
		last := cf.records[cf.next-1]
		a.position, a.epoch = last.Offset+1, last.LeaderEpoch
	}
	return out
}

// hasBuffered reports whether records of a are waiting to be returned.
func (c *Consumer) hasBuffered(a *assignment) bool {
	for _, cf := range c.buffered {
		if cf.a == a && cf.gen == a.gen {
			return true
		}
	}
	return false
}

func (c *Consumer) note(f func()) { c.notes = append(c.notes, f) }

func (c *Consumer) deliver() {
	if c.noting {
		return
	}
	c.noting = true
	for len(c.notes) > 0 {
		f := c.notes[0]
		c.notes[0] = nil
		c.notes = c.notes[1:]
		f()
	}
	c.noting = false
}

func (c *Consumer) deliverLater() {
	if len(c.notes) > 0 {
		c.e.AfterFunc(0, c.deliver)
	}
}
