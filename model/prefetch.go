package model

import (
	"unsafe"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/internal/prefetch"
)

// A walk over a history of a million operations waits on memory: each
// operation's payload, its messages, its fetches and their records lie
// elsewhere, a cache miss each, and a walk that reads them waits for one
// after the other. resolve's walks ask for them some operations ahead
// instead, one link of the chain at a time (the link asked for last is in
// cache by the time the next is read through it), so that when a walk
// reaches an operation what it reads of it is in cache.
const (
	payloadAhead = 24 // operations ahead: the payload (Send, Poll)
	arrayAhead   = 16 // the send's messages, or the poll's fetches
	recordsAhead = 8  // the records of the poll's first fetches
)

// prefetchPayload asks for the payload of op j of h, if it is a send or a
// poll and k is its kind or empty (either).
func prefetchPayload(h history.History, j int, k history.Kind) {
	if j >= len(h) {
		return
	}
	switch op := &h[j]; {
	case op.Send != nil && k != history.KindPoll:
		prefetch.Line(unsafe.Pointer(op.Send))
	case op.Poll != nil && k != history.KindSend:
		prefetch.Line(unsafe.Pointer(op.Poll))
	}
}

// prefetchMessages asks for the messages of op j, if it is a send: the
// lines of its first and last (a batch of three spans three lines).
func prefetchMessages(h history.History, j int) {
	if j < len(h) {
		if s := h[j].Send; s != nil && len(s.Messages) > 0 {
			prefetch.Line(unsafe.Pointer(&s.Messages[0]))
			prefetch.Line(unsafe.Pointer(&s.Messages[len(s.Messages)-1]))
		}
	}
}

// prefetchFetches asks for the fetches of op j, if it is a poll.
func prefetchFetches(h history.History, j int) {
	if j < len(h) {
		if p := h[j].Poll; p != nil && len(p.Fetched) > 0 {
			prefetch.Line(unsafe.Pointer(&p.Fetched[0]))
		}
	}
}

// prefetchRecords asks for the first and last records of the first two
// fetches of op j, if it is a poll.
func prefetchRecords(h history.History, j int) {
	if j >= len(h) || h[j].Poll == nil {
		return
	}
	fs := h[j].Poll.Fetched
	for k := 0; k < len(fs) && k < 2; k++ {
		if rs := fs[k].Records; len(rs) > 0 {
			prefetch.Line(unsafe.Pointer(&rs[0]))
			prefetch.Line(unsafe.Pointer(&rs[len(rs)-1]))
		}
	}
}
