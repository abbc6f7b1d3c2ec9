package raft

import (
	"slices"

	"github.com/kafkasim/kafkasim/env"
)

// Observers are KRaft's non-voting replicas, as every broker is of the
// metadata quorum: a node whose Config.Observer is set and whose id is not
// among the voters. It never votes, never stands and counts toward no high
// watermark; it only fetches (KafkaRaftClient's pollUnattachedAsObserver
// and pollFollowerAsObserver):
//
//   - Unattached, it sends its Fetch to any voter, one after another from a
//     jittered start (maybeSendAnyVoterFetch). A voter that is not the
//     leader answers with an error naming the leader and epoch it knows
//     (Kafka's CurrentLeader), and the observer follows that leader; one
//     that knows none sends it on to the next voter after
//     quorum.retry.backoff.ms.
//   - Following, it fetches from the leader as a voter does, but from its
//     log end, not its flushed end: the leader does not count it, so it
//     need not flush first (appendAsFollower flushes only for voters). Its
//     high watermark is the leader's, capped at its end.
//   - A leader silent for quorum.fetch.timeout.ms, or a fetch unanswered
//     for its MaxWait plus quorum.request.timeout.ms, sends it back to
//     Unattached, to find the leader again among the voters.
//
// The leader keeps each observer's last fetch (ObserverStates, reported by
// DescribeQuorum) apart from its voters'; an observer's fetch is held when
// there is nothing for it, as a voter's is.

// observerTick is Tick for an observer.
func (n *Node) observerTick(now env.Time) {
	gaveUp := n.fetchInFlight && now.Sub(n.fetchSentAt) >= n.fetchGiveUp()
	switch n.role {
	case Follower:
		if gaveUp || !now.Before(n.fetchDeadline) {
			n.becomeUnattached(now, 0)
			n.fetchAny(now)
			return
		}
		if !n.fetchInFlight && !now.Before(n.retryAfter) {
			n.maybeFetch(now)
		}
	default:
		if gaveUp {
			n.fetchInFlight = false
		}
		if !n.fetchInFlight && !now.Before(n.retryAfter) {
			n.fetchAny(now)
		}
	}
}

// observerNextTick is NextTick for an observer.
func (n *Node) observerNextTick(now env.Time) env.Time {
	var next env.Time
	switch {
	case n.fetchInFlight:
		next = n.fetchSentAt.Add(n.fetchGiveUp())
	default:
		next = n.retryAfter
	}
	if n.role == Follower {
		next = min(next, n.fetchDeadline)
	}
	return max(next, now) // never zero (no timer): an observer always has a fetch to make
}

// fetchAny sends the observer's Fetch to the next voter in turn.
func (n *Node) fetchAny(now env.Time) {
	to := n.voters[n.bootstrap%len(n.voters)]
	n.bootstrap++
	n.sendFetch(to, now)
}

// remote is the leader's state of a fetching replica: a voter's, or an
// observer's, kept from its first fetch this epoch.
func (n *Node) remote(id int32) *remote {
	if r := n.remotes[id]; r != nil {
		return r
	}
	if n.observers == nil {
		n.observers = map[int32]*remote{}
	}
	r := n.observers[id]
	if r == nil {
		r = &remote{end: -1}
		n.observers[id] = r
	}
	return r
}

// ObserverStates is every observer that fetched from the leader this
// epoch, by id, as DescribeQuorum's Observers; nil unless the node leads.
func (n *Node) ObserverStates() []VoterState {
	if n.role != Leader {
		return nil
	}
	ids := make([]int32, 0, len(n.observers))
	for id := range n.observers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]VoterState, 0, len(ids))
	for _, id := range ids {
		r := n.observers[id]
		out = append(out, VoterState{ID: id, LogEnd: r.end, LastFetch: r.lastFetch, CaughtUp: r.caughtUp})
	}
	return out
}
