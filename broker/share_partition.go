package broker

import (
	"fmt"
)

// A share partition is one share group's view of one topic partition
// (KIP-932), kept by the partition's leader as Kafka's SharePartition
// (core/src/main/java/kafka/server/share/SharePartition.java) keeps it:
//
//   - the share-partition start offset (SPSO): every record before it is
//     done with (acknowledged or archived);
//   - the share-partition end offset (SPEO): the first record not yet
//     fetched into the share partition;
//   - between them the in-flight records, each Available, Acquired (by one
//     member, until its acquisition lock times out), Acknowledged or
//     Archived, with its delivery count.
//
// A record is acquired when a ShareFetch hands it to a member; the member
// acknowledges it (accept: Acknowledged; release: Available again; reject:
// Archived) in a later ShareFetch or a ShareAcknowledge. A release, or an
// acquisition lock that expires (share.record.lock.duration.ms), makes it
// Available for another delivery unless it was delivered
// group.share.delivery.count.limit times: then it is Archived. Whenever
// the records at the SPSO are done, the SPSO moves past them.
//
// sharePartitionState is the pure state machine, without I/O or timers:
// the broker (share_fetch.go) reads the log, starts the acquisition-lock
// timers and calls expire when one fires. Acquired records are grouped by
// acquisition — the records one fetch handed one member, which share one
// lock — as Kafka groups them by in-flight batch.
//
// Not modelled: the share coordinator and __share_group_state. Kafka's
// leader persists every change of a share partition (WriteShareGroupState
// to the share coordinator, which writes ShareSnapshot and ShareUpdate
// records) before it answers; kafkasim keeps the state in the leader's
// memory only (share_fetch.go says what a failover loses); KIP-1206's
// batch-optimised acquisition (whole batches beyond MaxRecords) — records
// are acquired one by one, up to MaxRecords exactly.

// recordState is an in-flight record's, numbered as Kafka's RecordState.
type recordState int8

const (
	recordAvailable    recordState = 0
	recordAcquired     recordState = 1
	recordAcknowledged recordState = 2
	recordArchived     recordState = 4
)

func (s recordState) String() string {
	switch s {
	case recordAvailable:
		return "Available"
	case recordAcquired:
		return "Acquired"
	case recordAcknowledged:
		return "Acknowledged"
	case recordArchived:
		return "Archived"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// The acknowledge types of ShareFetch and ShareAcknowledge (KIP-932; 4 is
// KIP-1222's renew).
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
	ackRenew   int8 = 4
)

type inflightRecord struct {
	state         recordState
	deliveryCount int16
	// acquisition holds the record while Acquired, else 0.
	acquisition uint64
}

// acquisition is the records one member acquired together, under one lock.
type acquisition struct {
	id      uint64
	member  string
	records int // of this acquisition still Acquired
}

// sharePartitionState is one share partition.
type sharePartitionState struct {
	startOffset int64            // SPSO
	records     []inflightRecord // records[i] is offset startOffset+i; SPEO = startOffset+len(records)
	acquired    map[uint64]*acquisition
	nextID      uint64
	// deliveryCountLimit and maxInFlight are the group's
	// group.share.delivery.count.limit and
	// group.share.partition.max.record.locks.
	deliveryCountLimit int16
	maxInFlight        int
}

func newSharePartitionState(start int64, deliveryCountLimit, maxInFlight int) *sharePartitionState {
	return &sharePartitionState{startOffset: start, acquired: map[uint64]*acquisition{},
		deliveryCountLimit: int16(deliveryCountLimit), maxInFlight: maxInFlight}
}

func (s *sharePartitionState) endOffset() int64 { return s.startOffset + int64(len(s.records)) }

func (s *sharePartitionState) at(offset int64) *inflightRecord {
	return &s.records[offset-s.startOffset]
}

// firstAvailable is the first offset a fetch could acquire: the first
// Available in-flight record, else the SPEO.
func (s *sharePartitionState) firstAvailable() int64 {
	for i := range s.records {
		if s.records[i].state == recordAvailable {
			return s.startOffset + int64(i)
		}
	}
	return s.endOffset()
}

// mayAcquire reports whether a fetch could acquire anything below limit
// (the high watermark or last stable offset).
func (s *sharePartitionState) mayAcquire(limit int64) bool {
	if s.firstAvailable() < s.endOffset() {
		return true
	}
	return s.endOffset() < limit && len(s.records) < s.maxInFlight
}

// acquiredRange is offsets first..last delivered deliveryCount times.
type acquiredRange struct {
	first, last   int64
	deliveryCount int16
}

// acquirer collects one fetch's acquisition for member, record by record
// in offset order, as the broker walks the batches it read.
type acquirer struct {
	s      *sharePartitionState
	a      *acquisition
	ranges []acquiredRange
	max    int // records still to acquire
}

// beginAcquire starts acquiring at most maxRecords records for member.
func (s *sharePartitionState) beginAcquire(member string, maxRecords int) *acquirer {
	s.nextID++
	return &acquirer{s: s, a: &acquisition{id: s.nextID, member: member}, max: maxRecords}
}

// full reports that the fetch may acquire no more.
func (q *acquirer) full() bool { return q.max <= 0 }

// offer gives the acquirer the log's record at offset (deliverable false
// for one no member may see: a control record, or a record of an aborted
// transaction under read_committed). An offset past the SPEO enters the
// share partition (the offsets between, which the log does not have, as
// Archived); an Available one is acquired. It reports whether the fetch
// should go on.
func (q *acquirer) offer(offset int64, deliverable bool) bool {
	s := q.s
	if q.full() || offset < s.startOffset {
		return !q.full()
	}
	if offset >= s.endOffset() {
		if len(s.records) >= s.maxInFlight {
			return false
		}
		for s.endOffset() < offset {
			s.records = append(s.records, inflightRecord{state: recordArchived})
		}
		s.records = append(s.records, inflightRecord{state: recordAvailable})
		if !deliverable {
			s.at(offset).state = recordArchived
			return true
		}
	}
	r := s.at(offset)
	if r.state != recordAvailable {
		return true
	}
	r.state, r.acquisition = recordAcquired, q.a.id
	r.deliveryCount++
	q.a.records++
	q.max--
	if n := len(q.ranges); n > 0 && q.ranges[n-1].last == offset-1 && q.ranges[n-1].deliveryCount == r.deliveryCount {
		q.ranges[n-1].last = offset
	} else {
		q.ranges = append(q.ranges, acquiredRange{first: offset, last: offset, deliveryCount: r.deliveryCount})
	}
	return !q.full()
}

// finish ends the fetch: the acquisition (nil if it acquired nothing) and
// the ranges acquired. Archived records the fetch added at the SPSO move
// it on.
func (q *acquirer) finish() (*acquisition, []acquiredRange) {
	q.s.advanceStart()
	if q.a.records == 0 {
		return nil, nil
	}
	q.s.acquired[q.a.id] = q.a
	return q.a, q.ranges
}

// ackBatch is one acknowledgement batch of a request: offsets first..last,
// one type for all or one per offset.
type ackBatch struct {
	first, last int64
	types       []int8
}

func (b ackBatch) typeAt(offset int64) int8 {
	if len(b.types) == 1 {
		return b.types[0]
	}
	return b.types[offset-b.first]
}

// ackError is why an acknowledgement was refused (Kafka's
// InvalidRecordStateException and InvalidRequestException).
type ackError struct {
	invalidState bool // INVALID_RECORD_STATE, else INVALID_REQUEST
	msg          string
}

// acknowledge applies member's acknowledgements, all or none (Kafka
// rolls back a request's changes to the partition on the first failure):
// every offset must be in flight and Acquired by member. It returns the
// offsets made Available again (for redelivery) and the acquisitions a
// renew moved to a new lock (renewed: the caller starts its timer).
func (s *sharePartitionState) acknowledge(member string, batches []ackBatch) (released int, renewed *acquisition, err *ackError) {
	prev := int64(-1)
	for _, b := range batches {
		switch {
		case b.first > b.last || b.first <= prev:
			return 0, nil, &ackError{msg: fmt.Sprintf("acknowledgement batch %d-%d out of order", b.first, b.last)}
		case len(b.types) != 1 && int64(len(b.types)) != b.last-b.first+1:
			return 0, nil, &ackError{msg: fmt.Sprintf("acknowledgement batch %d-%d has %d types", b.first, b.last, len(b.types))}
		}
		prev = b.last
		for off := b.first; off <= b.last; off++ {
			if t := b.typeAt(off); t < ackGap || t > ackRenew {
				return 0, nil, &ackError{msg: fmt.Sprintf("invalid acknowledge type %d", t)}
			}
			if off < s.startOffset || off >= s.endOffset() {
				return 0, nil, &ackError{invalidState: true, msg: fmt.Sprintf("offset %d is not in flight (%d-%d)", off, s.startOffset, s.endOffset())}
			}
			r := s.at(off)
			if r.state != recordAcquired || s.acquired[r.acquisition].member != member {
				return 0, nil, &ackError{invalidState: true, msg: fmt.Sprintf("offset %d is %v, not acquired by member %s", off, r.state, member)}
			}
		}
	}
	for _, b := range batches {
		for off := b.first; off <= b.last; off++ {
			r := s.at(off)
			switch b.typeAt(off) {
			case ackAccept:
				s.settle(r, recordAcknowledged)
			case ackRelease:
				if s.release(r) {
					released++
				}
			case ackReject, ackGap:
				s.settle(r, recordArchived)
			case ackRenew:
				if renewed == nil {
					s.nextID++
					renewed = &acquisition{id: s.nextID, member: member}
					s.acquired[renewed.id] = renewed
				}
				s.drop(r)
				r.state, r.acquisition = recordAcquired, renewed.id
				renewed.records++
			}
		}
	}
	s.advanceStart()
	return released, renewed, nil
}

// drop takes r out of its acquisition (the caller sets its new state).
func (s *sharePartitionState) drop(r *inflightRecord) {
	a := s.acquired[r.acquisition]
	a.records--
	if a.records == 0 {
		delete(s.acquired, a.id)
	}
	r.acquisition = 0
}

func (s *sharePartitionState) settle(r *inflightRecord, to recordState) {
	s.drop(r)
	r.state = to
}

// release makes an acquired record Available, or Archived once delivered
// deliveryCountLimit times; true if Available.
func (s *sharePartitionState) release(r *inflightRecord) bool {
	if r.deliveryCount >= s.deliveryCountLimit {
		s.settle(r, recordArchived)
		return false
	}
	s.settle(r, recordAvailable)
	return true
}

// expire is acquisition id's lock timing out: its records still Acquired
// are released. It returns how many became Available.
func (s *sharePartitionState) expire(id uint64) int {
	a := s.acquired[id]
	if a == nil {
		return 0
	}
	n := 0
	for i := range s.records {
		if r := &s.records[i]; r.state == recordAcquired && r.acquisition == id {
			if s.release(r) {
				n++
			}
		}
	}
	s.advanceStart()
	return n
}

// releaseMember releases every record member holds (its share session
// closed, or it left the group): Kafka's releaseAcquiredRecords. It
// returns the acquisitions ended, whose timers the caller cancels, and how
// many records became Available.
func (s *sharePartitionState) releaseMember(member string) (ended []uint64, available int) {
	for i := range s.records {
		r := &s.records[i]
		if r.state != recordAcquired || s.acquired[r.acquisition].member != member {
			continue
		}
		id := r.acquisition
		if s.release(r) {
			available++
		}
		if s.acquired[id] == nil {
			ended = append(ended, id)
		}
	}
	s.advanceStart()
	return ended, available
}

// advanceStart moves the SPSO past the records at it that are done
// (Kafka's maybeUpdateCachedStateAndOffsets).
func (s *sharePartitionState) advanceStart() {
	n := 0
	for n < len(s.records) && (s.records[n].state == recordAcknowledged || s.records[n].state == recordArchived) {
		n++
	}
	if n > 0 {
		s.records = append(s.records[:0], s.records[n:]...)
		s.startOffset += int64(n)
	}
}

// moveStartTo moves the SPSO to logStart when the log no longer has the
// records before it (retention, DeleteRecords): those in flight are
// archived, their locks ended. It returns the acquisitions ended.
func (s *sharePartitionState) moveStartTo(logStart int64) (ended []uint64) {
	if logStart <= s.startOffset {
		return nil
	}
	for off := s.startOffset; off < logStart && off < s.endOffset(); off++ {
		if r := s.at(off); r.state == recordAcquired {
			id := r.acquisition
			s.settle(r, recordArchived)
			if s.acquired[id] == nil {
				ended = append(ended, id)
			}
		}
	}
	drop := min(int64(len(s.records)), logStart-s.startOffset)
	s.records = append(s.records[:0], s.records[drop:]...)
	s.startOffset = logStart
	s.advanceStart()
	return ended
}

// deliveryComplete counts the in-flight records that are done (for the
// lag DescribeShareGroupOffsets reports).
func (s *sharePartitionState) deliveryComplete() int {
	n := 0
	for i := range s.records {
		if st := s.records[i].state; st == recordAcknowledged || st == recordArchived {
			n++
		}
	}
	return n
}

// violation is the share partition's broken invariant, if any: the record
// at the SPSO still to be delivered; every Acquired record held by a live
// acquisition, the acquisitions' counts agreeing (so each record is
// acquired by one member at a time); delivery counts within the limit,
// and at least one for an Acquired record; no more in flight than the
// limit allows.
func (s *sharePartitionState) violation(name fmt.Stringer) string {
	if len(s.records) > s.maxInFlight {
		return invariantf("share partition %s: %d records in flight > %d", name, len(s.records), s.maxInFlight)
	}
	if len(s.records) > 0 {
		if st := s.records[0].state; st == recordAcknowledged || st == recordArchived {
			return invariantf("share partition %s: record at the start offset %d is %v", name, s.startOffset, st)
		}
	}
	held := map[uint64]int{}
	for i := range s.records {
		r := &s.records[i]
		off := s.startOffset + int64(i)
		if r.deliveryCount > s.deliveryCountLimit || r.deliveryCount < 0 {
			return invariantf("share partition %s: offset %d delivered %d times, limit %d", name, off, r.deliveryCount, s.deliveryCountLimit)
		}
		if r.state == recordAcquired {
			if r.deliveryCount < 1 || s.acquired[r.acquisition] == nil {
				return invariantf("share partition %s: offset %d acquired (acquisition %d, delivery count %d) without a live acquisition", name, off, r.acquisition, r.deliveryCount)
			}
			held[r.acquisition]++
		} else if r.acquisition != 0 {
			return invariantf("share partition %s: offset %d is %v but held by acquisition %d", name, off, r.state, r.acquisition)
		}
	}
	var first uint64
	broken := ""
	for id, a := range s.acquired { // unsorted while it holds; the lowest broken id is reported
		if (held[id] != a.records || a.records == 0) && (broken == "" || id < first) {
			first, broken = id, invariantf("share partition %s: acquisition %d of member %s counts %d records, holds %d", name, id, a.member, a.records, held[id])
		}
	}
	return broken
}
