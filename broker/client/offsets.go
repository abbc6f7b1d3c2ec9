package client

import (
	"errors"
	"slices"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Positions, committed offsets and the group coordinator.

func (c *Consumer) resetStrategy(a *assignment) OffsetReset {
	if a.reset != 0 {
		return a.reset
	}
	return c.opts.AutoOffsetReset
}

// updatePositions starts the lookups of partitions without a position:
// the group's committed offsets (OffsetFetch), then auto.offset.reset
// (ListOffsets to each leader).
func (c *Consumer) updatePositions(now env.Time, next *env.Time) {
	var committed []*assignment
	resets := map[int32][]*assignment{}
	var leaders []int32
	for _, a := range c.ordered {
		if a.inflight || (a.state != needsCommitted && a.state != needsReset) {
			continue
		}
		if now < a.backoffAt {
			*next = min(*next, a.backoffAt)
			continue
		}
		if a.state == needsCommitted {
			committed = append(committed, a)
			continue
		}
		if c.resetStrategy(a) == OffsetResetNone {
			a.state = awaitingSeek
			c.pollErr = &PartitionError{TopicPartition: a.tp, Offset: -1, Err: ErrNoOffset}
			continue
		}
		leader, _, ok := c.cl.leader(a.tp)
		if !ok {
			c.cl.requestUpdate()
			continue
		}
		if resets[leader] == nil {
			leaders = append(leaders, leader)
		}
		resets[leader] = append(resets[leader], a)
	}
	if len(committed) > 0 {
		c.positionsFromCommitted(committed)
	}
	slices.Sort(leaders)
	for _, leader := range leaders {
		c.listOffsets(leader, resets[leader])
	}
}

// positionsFromCommitted starts partitions at the group's committed
// offsets; those without one go on to auto.offset.reset.
func (c *Consumer) positionsFromCommitted(as []*assignment) {
	tps := make([]TopicPartition, len(as))
	gens := make([]uint64, len(as))
	for i, a := range as {
		a.inflight = true
		tps[i], gens[i] = a.tp, a.gen
	}
	c.offsetFetch(tps, func(got map[TopicPartition]OffsetAndMetadata, err error) {
		now := c.e.WallClock()
		for i, a := range as {
			a.inflight = false
			if c.assigned[a.tp] != a || a.gen != gens[i] || a.state != needsCommitted {
				continue
			}
			if err != nil {
				a.backoffAt = now.Add(c.opts.RetryBackoff)
				continue
			}
			if o, ok := got[a.tp]; ok {
				a.state, a.position, a.epoch = positioned, o.Offset, o.LeaderEpoch
				continue
			}
			a.state = needsReset
		}
		c.wake()
	})
}

// listOffsets resets partitions led by leader to their earliest or latest
// offset.
func (c *Consumer) listOffsets(leader int32, as []*assignment) {
	conn, ok := c.cl.broker(leader)
	if !ok {
		c.cl.requestUpdate()
		return
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = int8(c.opts.IsolationLevel)
	gens := make([]uint64, len(as))
	for i, a := range as {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != a.tp.Topic {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = a.tp.Topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = a.tp.Partition
		rp.CurrentLeaderEpoch = c.cl.leaderEpoch(a.tp)
		rp.Timestamp = -1 // latest
		if c.resetStrategy(a) == OffsetResetEarliest {
			rp.Timestamp = -2
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
		a.inflight = true
		gens[i] = a.gen
	}
	conn.Do(req, c.opts.RequestTimeout, func(resp kmsg.Response, err error) {
		defer c.deliver()
		for _, a := range as {
			a.inflight = false
		}
		if c.closed {
			return
		}
		defer c.wake()
		now := c.e.WallClock()
		answers := map[TopicPartition]*kmsg.ListOffsetsResponseTopicPartition{}
		if err == nil {
			lr := resp.(*kmsg.ListOffsetsResponse)
			for i := range lr.Topics {
				for j := range lr.Topics[i].Partitions {
					p := &lr.Topics[i].Partitions[j]
					answers[TopicPartition{Topic: lr.Topics[i].Topic, Partition: p.Partition}] = p
				}
			}
		} else {
			c.cl.requestUpdate()
		}
		for i, a := range as {
			if c.assigned[a.tp] != a || a.gen != gens[i] || a.state != needsReset {
				continue
			}
			p := answers[a.tp]
			switch {
			case p == nil:
				a.backoffAt = now.Add(c.opts.RetryBackoff)
			case p.ErrorCode != 0:
				if invalidMetadata(p.ErrorCode) {
					c.cl.invalidate(a.tp)
				}
				a.backoffAt = now.Add(c.opts.RetryBackoff)
			default:
				offset := p.Offset
				if resp.GetVersion() == 0 && len(p.OldStyleOffsets) > 0 {
					offset = p.OldStyleOffsets[0]
				}
				c.e.Log("consumer-offset-reset", "client", c.opts.ClientID, "partition", a.tp.String(), "strategy", c.resetStrategy(a).String(), "offset", offset)
				a.state, a.position, a.epoch, a.reset = positioned, offset, -1, 0
			}
		}
	})
}

// maybeAutoCommit commits the current positions — those the previous Poll
// reached — once auto.commit.interval.ms has passed since the last
// auto-commit. Like Kafka's, the commit is asynchronous and not retried.
func (c *Consumer) maybeAutoCommit() {
	if !c.opts.EnableAutoCommit || c.e.WallClock() < c.autoCommitAt {
		return
	}
	c.autoCommitAt = c.e.WallClock().Add(c.opts.AutoCommitInterval)
	offsets := c.Positions()
	if len(offsets) == 0 {
		return
	}
	c.commit(offsets, false, func(err error) {
		if err != nil {
			c.e.Log("consumer-auto-commit-failed", "client", c.opts.ClientID, "error", err.Error())
		}
		if c.opts.OnAutoCommit != nil {
			c.opts.OnAutoCommit(offsets, err)
		}
	})
}

// CommitOffsets commits offsets for the consumer's group (OffsetCommit
// with generation -1 and no member id: a simple consumer's commit),
// retrying retriable errors within default.api.timeout.ms, as commitSync
// does. done gets nil, or an *Error saying whether the commit may have
// happened (Info: a request went unanswered, or the coordinator moved
// after appending it) or certainly did not (Fail).
func (c *Consumer) CommitOffsets(offsets map[TopicPartition]OffsetAndMetadata, done func(error)) {
	if c.closed {
		c.note(func() { done(failed(ErrConsumerClosed)) })
		c.deliverLater()
		return
	}
	c.commit(offsets, true, done)
	c.deliverLater()
}

// CommitPositions commits the current positions (Kafka's commitSync())
// and tells done what it committed.
func (c *Consumer) CommitPositions(done func(map[TopicPartition]OffsetAndMetadata, error)) {
	offsets := c.Positions()
	c.CommitOffsets(offsets, func(err error) { done(offsets, err) })
}

// Committed fetches the group's committed offsets for tps (OffsetFetch),
// retrying retriable errors within default.api.timeout.ms. Partitions
// without a committed offset are absent from the map.
func (c *Consumer) Committed(tps []TopicPartition, done func(map[TopicPartition]OffsetAndMetadata, error)) {
	if c.closed {
		c.note(func() { done(nil, ErrConsumerClosed) })
		c.deliverLater()
		return
	}
	deadline := c.e.WallClock().Add(c.opts.DefaultAPITimeout)
	var attempt func()
	attempt = func() {
		c.offsetFetch(tps, func(got map[TopicPartition]OffsetAndMetadata, err error) {
			if err != nil && !c.closed && retriableCall(err) && c.e.WallClock().Add(c.opts.RetryBackoff) < deadline {
				c.e.AfterFunc(c.opts.RetryBackoff, attempt)
				return
			}
			c.note(func() { done(got, err) })
			c.deliver()
		})
	}
	c.e.AfterFunc(0, attempt)
}

// commitOp is one commit with its retries.
type commitOp struct {
	req      *kmsg.OffsetCommitRequest
	deadline env.Time
	retry    bool
	maybe    bool // an attempt may have committed
	done     func(error)
}

func (c *Consumer) commit(offsets map[TopicPartition]OffsetAndMetadata, retry bool, done func(error)) {
	if c.opts.GroupID == "" {
		c.note(func() { done(failed(ErrNoGroup)) })
		return
	}
	if len(offsets) == 0 {
		c.note(func() { done(nil) }) // nothing to commit, as commitSync of an empty map
		return
	}
	generation, member, err := c.commitGeneration()
	if err != nil {
		c.note(func() { done(failed(err)) })
		return
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = c.opts.GroupID
	req.Generation, req.MemberID = generation, member // -1 and "" without membership
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, TopicPartition.Compare)
	for _, tp := range tps {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
			n++
		}
		o := offsets[tp]
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = tp.Partition, o.Offset, o.LeaderEpoch
		rp.Metadata = kmsg.StringPtr(o.Metadata)
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	op := &commitOp{req: req, deadline: c.e.WallClock().Add(c.opts.DefaultAPITimeout), retry: retry, done: done}
	c.commitAttempt(op)
}

func (c *Consumer) commitAttempt(op *commitOp) {
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if err != nil {
			c.commitFailed(op, err, false)
			return
		}
		conn.Do(op.req, c.opts.RequestTimeout, func(resp kmsg.Response, err error) {
			defer c.deliver()
			if err != nil {
				c.forgetCoordinator()
				c.commitFailed(op, err, callIndefinite(err))
				return
			}
			var code int16
			for _, t := range resp.(*kmsg.OffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					if code == 0 {
						code = p.ErrorCode
					}
				}
			}
			if code == 0 {
				c.note(func() { op.done(nil) })
				return
			}
			if coordinatorMoved(code) {
				c.forgetCoordinator()
			}
			c.commitFenced(code)
			c.commitFailed(op, codeErr(code), commitIndefinite(code))
		})
	})
}

func (c *Consumer) commitFailed(op *commitOp, err error, maybe bool) {
	if maybe {
		op.maybe = true
	}
	if op.retry && !c.closed && retriableCall(err) && c.e.WallClock().Add(c.opts.RetryBackoff) < op.deadline {
		c.e.AfterFunc(c.opts.RetryBackoff, func() { c.commitAttempt(op) })
		return
	}
	c.note(func() { op.done(outcomeErr(op.maybe, err)) })
}

// commitIndefinite reports whether an OffsetCommit error code leaves it
// unknown whether the offsets were written: the coordinator answers
// REQUEST_TIMED_OUT and NOT_COORDINATOR after appending them too.
func commitIndefinite(code int16) bool {
	switch code {
	case kerr.CoordinatorNotAvailable.Code,
		kerr.CoordinatorLoadInProgress.Code,
		kerr.IllegalGeneration.Code,
		kerr.UnknownMemberID.Code,
		kerr.RebalanceInProgress.Code,
		kerr.OffsetMetadataTooLarge.Code,
		kerr.InvalidCommitOffsetSize.Code,
		kerr.GroupAuthorizationFailed.Code,
		kerr.TopicAuthorizationFailed.Code,
		kerr.InvalidGroupID.Code,
		kerr.UnknownTopicOrPartition.Code,
		kerr.FencedInstanceID.Code,
		kerr.StaleMemberEpoch.Code,
		kerr.UnsupportedVersion.Code,
		kerr.InvalidRequest.Code:
		return false
	}
	return true
}

func coordinatorMoved(code int16) bool {
	return code == kerr.NotCoordinator.Code || code == kerr.CoordinatorNotAvailable.Code || code == kerr.CoordinatorLoadInProgress.Code
}

// retriableCall reports whether a failed call is worth repeating: a
// retriable Kafka error, or a transport failure.
func retriableCall(err error) bool {
	if errors.Is(err, rpc.ErrNotSent) || errors.Is(err, rpc.ErrDisconnected) || errors.Is(err, rpc.ErrTimeout) || errors.Is(err, rpc.ErrBadResponse) {
		return true
	}
	return retriable(err)
}

// offsetFetch reads the group's committed offsets for tps, once.
func (c *Consumer) offsetFetch(tps []TopicPartition, done func(map[TopicPartition]OffsetAndMetadata, error)) {
	if c.opts.GroupID == "" {
		done(nil, ErrNoGroup)
		return
	}
	tps = slices.Clone(tps)
	slices.SortFunc(tps, TopicPartition.Compare)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = c.opts.GroupID
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = c.opts.GroupID
	for _, tp := range tps {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic = tp.Topic
			g.Topics = append(g.Topics, gt)
		}
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, tp.Partition)
		g.Topics[len(g.Topics)-1].Partitions = append(g.Topics[len(g.Topics)-1].Partitions, tp.Partition)
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	// A read_committed consumer must not start before offsets that an open
	// transaction may still move (KIP-447): the coordinator answers
	// UNSTABLE_OFFSET_COMMIT, retried, until the transaction ends.
	req.RequireStable = c.opts.IsolationLevel == ReadCommitted
	c.withCoordinator(func(conn *rpc.Client, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		conn.Do(req, c.opts.RequestTimeout, func(resp kmsg.Response, err error) {
			if err != nil {
				c.forgetCoordinator()
				done(nil, err)
				return
			}
			got, code := parseOffsetFetch(resp.(*kmsg.OffsetFetchResponse))
			if code != 0 {
				if coordinatorMoved(code) {
					c.forgetCoordinator()
				}
				done(nil, codeErr(code))
				return
			}
			done(got, nil)
		})
	})
}

// parseOffsetFetch reads either shape of the answer (groups from v8).
func parseOffsetFetch(resp *kmsg.OffsetFetchResponse) (map[TopicPartition]OffsetAndMetadata, int16) {
	got := map[TopicPartition]OffsetAndMetadata{}
	add := func(topic string, part int32, offset int64, epoch int32, meta *string) {
		if offset < 0 {
			return
		}
		o := OffsetAndMetadata{Offset: offset, LeaderEpoch: epoch}
		if meta != nil {
			o.Metadata = *meta
		}
		got[TopicPartition{Topic: topic, Partition: part}] = o
	}
	if resp.Version >= 8 {
		if len(resp.Groups) == 0 {
			return nil, kerr.UnknownServerError.Code
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return nil, g.ErrorCode
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return nil, p.ErrorCode
				}
				add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata)
			}
		}
		return got, 0
	}
	if resp.ErrorCode != 0 {
		return nil, resp.ErrorCode
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return nil, p.ErrorCode
			}
			add(t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata)
		}
	}
	return got, 0
}

// coordinator is the group coordinator as last found.
type coordinator struct {
	id      int32 // -1 unknown
	addr    string
	finding bool
	waiters []func(*rpc.Client, error)
}

// withCoordinator calls f with the group coordinator's connection,
// finding it first (FindCoordinator) if needed.
func (c *Consumer) withCoordinator(f func(*rpc.Client, error)) {
	if c.closed {
		f(nil, ErrConsumerClosed)
		return
	}
	if c.coord.id >= 0 {
		f(c.coordinatorConn(), nil)
		return
	}
	c.coord.waiters = append(c.coord.waiters, f)
	if c.coord.finding {
		return
	}
	c.coord.finding = true
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 0 // group
	req.CoordinatorKey = c.opts.GroupID
	req.CoordinatorKeys = []string{c.opts.GroupID}
	conn, timeout := c.cl.leastLoaded()
	conn.Do(req, timeout, func(resp kmsg.Response, err error) {
		defer c.deliver()
		c.coord.finding = false
		waiters := c.coord.waiters
		c.coord.waiters = nil
		if err == nil && c.closed {
			err = ErrConsumerClosed
		}
		if err == nil {
			var id int32
			var addr string
			if id, addr, err = parseFindCoordinator(resp.(*kmsg.FindCoordinatorResponse)); err == nil {
				c.coord.id, c.coord.addr = id, addr
			}
		}
		for _, w := range waiters {
			if err != nil {
				w(nil, err)
			} else {
				w(c.coordinatorConn(), nil)
			}
		}
	})
}

func (c *Consumer) forgetCoordinator() { c.coord.id, c.coord.addr = -1, "" }

// coordinatorConn is the connection to the group coordinator, apart from
// the one fetches use.
func (c *Consumer) coordinatorConn() *rpc.Client {
	return c.cl.connAs("coordinator "+c.coord.addr, c.coord.addr)
}
