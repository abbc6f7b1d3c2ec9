package raft

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/env"
)

// Role is the node's place in the quorum, one of QuorumState's states.
type Role uint8

const (
	Unattached  Role = iota // knows no leader in its epoch (UnattachedState); may have voted
	Prospective             // asking for pre-votes, epoch not bumped (ProspectiveState, KIP-996)
	Candidate               // standing in its bumped epoch, voted for itself (CandidateState)
	Leader                  // won its epoch (LeaderState)
	Follower                // fetching from its epoch's leader (FollowerState)
	Resigned                // led its epoch and gave up (ResignedState)
)

func (r Role) String() string {
	return [...]string{"unattached", "prospective", "candidate", "leader", "follower", "resigned"}[r]
}

// NoID is a vote or leader that is not there.
const NoID int32 = -1

// Entry is one log entry. LeaderChange marks the control entry a new leader
// writes first in its epoch (KRaft's LeaderChangeMessage).
type Entry struct {
	Offset       int64
	Epoch        int32
	Data         []byte
	LeaderChange bool
}

func (e Entry) String() string {
	if e.LeaderChange {
		return fmt.Sprintf("%d@%d:leader-change", e.Offset, e.Epoch)
	}
	return fmt.Sprintf("%d@%d:%s", e.Offset, e.Epoch, e.Data)
}

// QuorumState is what the node persists (PersistQuorumState) and is
// restarted from.
type QuorumState struct {
	Epoch    int32
	VotedID  int32
	LeaderID int32
}

// Config is the node's identity, the static voter set and the timeouts,
// named after Kafka's quorum.* settings. Zero durations take Kafka's
// defaults.
type Config struct {
	ID     int32
	Voters []int32 // 1, 3 or 5 ids, including ID unless the node is an observer

	// Observer makes the node an observer, as a KRaft broker is: not among
	// the voters, it never votes or stands, and follows whichever leader
	// it finds by fetching from any voter (observer.go).
	Observer bool

	ElectionTimeout    time.Duration // quorum.election.timeout.ms, 1s
	FetchTimeout       time.Duration // quorum.fetch.timeout.ms, 2s
	ElectionBackoffMax time.Duration // quorum.election.backoff.max.ms, 1s
	RetryBackoff       time.Duration // quorum.retry.backoff.ms, 20ms
	RequestTimeout     time.Duration // quorum.request.timeout.ms, 2s: BeginQuorumEpoch/EndQuorumEpoch resend period
	FetchMaxWait       time.Duration // the fetch long-poll bound (500ms): an unanswered Fetch is sent again after it

	// FetchMaxEntries caps the records in one FetchResponse, as a fetch's
	// MaxBytes does; 0 is no cap.
	FetchMaxEntries int
	// FetchSnapshotMaxBytes caps the bytes of one FetchSnapshot answer
	// (KafkaRaftClient's MAX_FETCH_SIZE_BYTES, 8 MiB); 0 is no cap.
	FetchSnapshotMaxBytes int

	// Jitter draws a duration in [0, max) from the runtime's own seeded
	// stream; it is the node's only randomness (election timeouts and
	// backoffs, as KafkaRaftClient draws from its Random). Nil draws 0.
	Jitter func(max time.Duration) time.Duration
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ElectionTimeout, time.Second)
	def(&c.FetchTimeout, 2*time.Second)
	def(&c.ElectionBackoffMax, time.Second)
	def(&c.RetryBackoff, 20*time.Millisecond)
	def(&c.RequestTimeout, 2*time.Second)
	def(&c.FetchMaxWait, 500*time.Millisecond)
}

// NotLeaderError is Propose on a node that does not lead.
type NotLeaderError struct {
	Epoch    int32
	LeaderID int32 // -1 if unknown
}

func (e NotLeaderError) Error() string {
	return fmt.Sprintf("not leader: epoch %d leader %d", e.Epoch, e.LeaderID)
}

// remote is LeaderState's view of one other voter (ReplicaState).
type remote struct {
	end       int64    // fetch offset of its last consistent fetch, -1 if none this epoch
	lastFetch env.Time // last fetch in this epoch, or when the epoch began
	caughtUp  env.Time // last fetch from the leader's end, 0 if none this epoch
	acked     bool     // BeginQuorumEpoch (or EndQuorumEpoch, resigned) acknowledged
	sentAt    env.Time // last BeginQuorumEpoch/EndQuorumEpoch sent
}

// Node is one voter's (or observer's) Raft core.
type Node struct {
	cfg    Config
	voters []int32 // sorted
	peers  []int32 // voters but this node, sorted: see others
	now    env.Time
	// Observer: the voter its next fetch for the leader goes to
	// (maybeSendAnyVoterFetch), and when it may send one after an answer
	// that named no leader.
	bootstrap  int
	retryAfter env.Time

	role     Role
	epoch    int32
	votedFor int32
	leader   int32
	stored   QuorumState // last PersistQuorumState emitted (or restarted from)

	// The log holds the entries [start, LogEnd()); those below start are
	// in the snapshot at start (snapshot.go), whose last entry's epoch is
	// startEpoch. latest is the newest snapshot this node holds.
	log        []Entry
	start      int64
	startEpoch int32
	latest     Snapshot
	flushed    int64
	hw         int64

	// Unattached, Prospective, Candidate, Resigned.
	electionDeadline env.Time
	retries          int
	// Candidate after losing: backing off until backoffUntil.
	backingOff   bool
	backoffUntil env.Time
	// Prospective, Candidate: answers this round (EpochElection), the
	// round's request, and when to ask again a voter whose request failed.
	granted, rejected map[int32]bool
	voteReq           VoteRequest
	voteResend        map[int32]env.Time

	// Follower (FollowerState).
	leaderHW      int64 // the high watermark the leader last sent, -1 until one came
	snapFetch     *snapshotFetch
	fetchDeadline env.Time
	hasFetched    bool // a fetch succeeded since it began following, and the leader has not resigned
	fetchInFlight bool
	fetchSentAt   env.Time
	// Leader: fetches it has nothing for, held until it appends or their
	// MaxWait passes (KafkaRaftClient's fetchPurgatory), by voter.
	parked map[int32]parkedFetch

	// Leader and Resigned.
	leaderEpoch int32
	epochStart  int64
	remotes     map[int32]*remote
	// Leader: observers that fetched this epoch (LeaderState's
	// observerStates); they never count toward the high watermark.
	observers map[int32]*remote

	effects   []Effect
	violation string // a rule broken inside a step, reported by Check
	hwFloor   int64  // the high watermark at the last Check
	// epochsChecked is the log prefix Check has seen in order (entries
	// change only by truncation, which cuts it back).
	epochsChecked int64
}

// New is a node restarted from its persisted quorum state and its durable
// log (all of which counts as flushed) at now. A node that led its epoch
// comes back Resigned and asks the others to elect (KafkaRaftClient's
// initialize); one that knew a leader comes back following it; else
// Unattached, keeping its vote.
func New(cfg Config, st QuorumState, snap Snapshot, log []Entry, now env.Time) *Node {
	cfg.defaults()
	n := &Node{cfg: cfg, voters: slices.Sorted(slices.Values(cfg.Voters)), now: now, leaderHW: -1,
		epoch: st.Epoch, votedFor: st.VotedID, leader: st.LeaderID, stored: st}
	n.peers = slices.DeleteFunc(slices.Clone(n.voters), func(v int32) bool { return v == cfg.ID })
	n.restore(snap, log)
	if last := n.lastEpoch(n.LogEnd()); last > n.epoch {
		// The quorum-state file is older than the log (lost or torn on a
		// disk that failed it): Unattached in the log's epoch, no vote, no
		// leader (QuorumState.initialize: "Epoch from quorum store file is
		// smaller than last written epoch in the log").
		n.epoch, n.votedFor, n.leader = last, NoID, NoID
	}
	if n.leader != NoID && !n.isVoter(n.leader) {
		// A leader the voter set does not hold (a quorum-state file read
		// back with another id in it: JSON carries no checksum): not one
		// to follow, for its endpoints are unknown. Unattached in the
		// epoch, as QuorumState.initialize does ("the leader ... is not a
		// member of the latest voter set; transitioning to unattached").
		n.leader = NoID
	}
	if slices.Contains(n.voters, cfg.ID) == cfg.Observer {
		panic(fmt.Sprintf("raft: node %d (observer %v) and voters %v", cfg.ID, cfg.Observer, n.voters))
	}
	if cfg.Observer {
		n.votedFor = NoID
		n.bootstrap = int(n.jitter(time.Duration(len(n.voters))))
		if n.isVoter(n.leader) {
			n.becomeFollower(n.leader, now)
		} else {
			n.becomeUnattached(now, 0)
			n.fetchAny(now)
		}
		return n
	}
	switch {
	case n.leader == cfg.ID:
		n.votedFor = cfg.ID
		n.resign(now)
	case n.leader != NoID:
		n.becomeFollower(n.leader, now)
	default:
		n.becomeUnattached(now, n.electionTimeout())
	}
	if len(n.voters) == 1 && n.role != Candidate {
		// The only voter has no one to wait for: it stands at once, and
		// its own vote elects it (KafkaRaftClient.initialize: "When there
		// is only a single voter, become candidate immediately").
		n.becomeCandidate(now)
	}
	return n
}

// Accessors.

func (n *Node) ID() int32            { return n.cfg.ID }
func (n *Node) Role() Role           { return n.role }
func (n *Node) Epoch() int32         { return n.epoch }
func (n *Node) VotedFor() int32      { return n.votedFor }
func (n *Node) LeaderID() int32      { return n.leader }
func (n *Node) LogEnd() int64        { return n.start + int64(len(n.log)) }
func (n *Node) LogStart() int64      { return n.start }
func (n *Node) FlushedEnd() int64    { return n.flushed }
func (n *Node) HighWatermark() int64 { return n.hw }

// LeaderHighWatermark is the high watermark as the leader last reported it
// to this follower, not capped at the follower's log end (a reader of the
// log knows from it whether it has caught up: MetadataLoader's
// stillNeedToCatchUp); ok false while none came from the current leader.
// On the leader it is its own.
func (n *Node) LeaderHighWatermark() (hw int64, ok bool) {
	if n.role == Leader {
		return n.hw, true
	}
	return n.leaderHW, n.role == Follower && n.leaderHW >= 0
}
func (n *Node) QuorumState() QuorumState { return QuorumState{n.epoch, n.votedFor, n.leader} }
func (n *Node) Voters() []int32          { return slices.Clone(n.voters) }
func (n *Node) majority() int            { return len(n.voters)/2 + 1 }
func (n *Node) isVoter(id int32) bool    { _, ok := slices.BinarySearch(n.voters, id); return ok }

// others is every voter but this node, in id order: the node's own slice,
// made once (the voters never change), not to be modified.
func (n *Node) others() []int32 { return n.peers }

// lastEpoch is the epoch of the entry before end (start <= end <= LogEnd):
// the snapshot's at the log start, 0 for an empty prefix.
func (n *Node) lastEpoch(end int64) int32 {
	if end <= n.start {
		return n.startEpoch
	}
	return n.log[end-1-n.start].Epoch
}

// Entries returns the log entries in [from, to), clipped to the log.
// Those below HighWatermark are committed.
func (n *Node) Entries(from, to int64) []Entry {
	from, to = max(from, n.start), min(to, n.LogEnd())
	if from >= to {
		return nil
	}
	return slices.Clone(n.log[from-n.start : to-n.start])
}

// endOffsetForEpoch is ReplicatedLog.endOffsetForEpoch: the largest epoch
// at or below epoch in the log and the offset where it ends; the
// snapshot's epoch and end if the retained entries hold none; (0, 0) if
// nothing does.
func (n *Node) endOffsetForEpoch(epoch int32) EpochEndOffset {
	for i := len(n.log) - 1; i >= 0; i-- {
		if n.log[i].Epoch <= epoch {
			return EpochEndOffset{Epoch: n.log[i].Epoch, EndOffset: n.start + int64(i+1)}
		}
	}
	if n.start > 0 && n.startEpoch <= epoch {
		return EpochEndOffset{Epoch: n.startEpoch, EndOffset: n.start}
	}
	return EpochEndOffset{}
}

// upToDate is KafkaRaftClient's isLogUpToDate: the candidate's (last
// epoch, end offset) is at least ours, lexicographically.
func (n *Node) upToDate(lastEpoch int32, end int64) bool {
	my := n.lastEpoch(n.LogEnd())
	return lastEpoch > my || lastEpoch == my && end >= n.LogEnd()
}

func (n *Node) jitter(max time.Duration) time.Duration {
	if n.cfg.Jitter == nil || max <= 0 {
		return 0
	}
	d := n.cfg.Jitter(max)
	if d < 0 || d >= max {
		panic(fmt.Sprintf("raft: Jitter(%v) drew %v, outside [0, %v)", max, d, max))
	}
	return d
}

// electionTimeout is QuorumState's randomElectionTimeoutMs: the timeout
// plus up to as much again.
func (n *Node) electionTimeout() time.Duration {
	return n.cfg.ElectionTimeout + n.jitter(n.cfg.ElectionTimeout)
}

// electionBackoff is KafkaRaftClient's binaryExponentialElectionBackoffMs:
// a random multiple of the retry backoff, doubling with each lost round,
// capped at quorum.election.backoff.max.ms.
func (n *Node) electionBackoff() time.Duration {
	b := n.cfg.RetryBackoff << min(n.retries, 16)
	b = min(b, n.cfg.ElectionBackoffMax)
	return n.cfg.RetryBackoff/2 + n.jitter(b)
}

// persist emits PersistQuorumState if the quorum state changed since the
// last one: before any Send that follows, as QuorumState writes its
// ElectionState before the transition is visible.
func (n *Node) persist() {
	st := n.QuorumState()
	if st != n.stored {
		n.stored = st
		n.emit(PersistQuorumState{Epoch: st.Epoch, VotedID: st.VotedID, LeaderID: st.LeaderID})
	}
}

// Transitions (QuorumState.transitionTo*).

func (n *Node) clearRoleState() {
	n.backingOff, n.granted, n.rejected, n.voteResend = false, nil, nil, nil
	n.fetchInFlight, n.hasFetched = false, false
	n.leaderHW, n.snapFetch = -1, nil
	n.remotes, n.observers = nil, nil
	// A held fetch is answered: this node no longer leads the epoch it was
	// sent in (fetchPurgatory.completeAllExceptionally).
	for _, id := range n.parkedIDs() {
		m := n.parked[id].req
		delete(n.parked, id)
		n.send(id, FetchResponse{ErrorCode: NotLeaderOrFollower, LeaderEpoch: n.epoch, LeaderID: n.leader, HighWatermark: -1,
			FetchOffset: m.FetchOffset, LastFetchedEpoch: m.LastFetchedEpoch})
	}
}

// parkedFetch is a fetch the leader holds.
type parkedFetch struct {
	req   FetchRequest
	until env.Time
}

func (n *Node) parkedIDs() []int32 {
	ids := make([]int32, 0, len(n.parked))
	for id := range n.parked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// VoterState is one voter as the leader sees it (DescribeQuorum's
// ReplicaState): its log end (the fetch offset of its last fetch, -1 if
// none this epoch; the leader's own end for itself), its last fetch and
// when it last fetched from the leader's end (0 if never this epoch).
type VoterState struct {
	ID                  int32
	LogEnd              int64
	LastFetch, CaughtUp env.Time
}

// VoterStates is every voter's state, the leader first then by id, as
// LeaderState.describeQuorum reports it; nil unless the node leads.
func (n *Node) VoterStates() []VoterState {
	if n.role != Leader {
		return nil
	}
	out := []VoterState{{ID: n.cfg.ID, LogEnd: n.LogEnd(), LastFetch: n.now, CaughtUp: n.now}}
	for _, v := range n.others() {
		r := n.remotes[v]
		out = append(out, VoterState{ID: v, LogEnd: r.end, LastFetch: r.lastFetch, CaughtUp: r.caughtUp})
	}
	return out
}

// Parked reports whether the leader holds a fetch from voter id: the
// runtime keeps that request until the core answers it.
func (n *Node) Parked(id int32) bool { _, ok := n.parked[id]; return ok }

// answerParked answers the held fetches that now have records (after an
// append) or whose wait is over (at a tick).
func (n *Node) answerParked(now env.Time) {
	for _, id := range n.parkedIDs() {
		pf := n.parked[id]
		if pf.req.FetchOffset < n.LogEnd() || !now.Before(pf.until) {
			delete(n.parked, id)
			n.send(id, n.fetchAnswer(id, pf.req))
		}
	}
}

// bumpTo moves to a higher epoch seen in a message: no vote, no leader yet.
func (n *Node) bumpTo(epoch int32) {
	n.epoch, n.votedFor, n.leader = epoch, NoID, NoID
}

// learn handles an epoch and leader named in any message: a higher epoch
// makes the node Unattached in it, or Follower if the leader is named; a
// leader named in the current epoch, when the node knows none, makes it
// Follower. It reports whether the node changed state.
func (n *Node) learn(epoch, leader int32, now env.Time) bool {
	if epoch > n.epoch {
		n.bumpTo(epoch)
		if leader != NoID && leader != n.cfg.ID && n.isVoter(leader) {
			n.becomeFollower(leader, now)
		} else {
			n.becomeUnattached(now, n.electionTimeout())
		}
		return true
	}
	if epoch == n.epoch && leader != NoID && leader != n.cfg.ID && n.isVoter(leader) {
		switch n.role {
		case Unattached, Candidate:
			n.becomeFollower(leader, now)
			return true
		case Prospective:
			// A pre-vote answer naming a leader of our epoch we did not
			// know: follow it (KIP-996). One naming the leader we lost
			// says nothing new; the round decides.
			if n.leader == NoID {
				n.becomeFollower(leader, now)
				return true
			}
		}
	}
	return false
}

func (n *Node) becomeUnattached(now env.Time, timeout time.Duration) {
	n.clearRoleState()
	n.role = Unattached
	n.leader = NoID
	n.electionDeadline = now.Add(timeout)
	n.persist()
}

func (n *Node) becomeFollower(leader int32, now env.Time) {
	n.clearRoleState()
	n.role, n.leader = Follower, leader
	n.retries = 0
	n.fetchDeadline = now.Add(n.cfg.FetchTimeout)
	n.persist()
	n.maybeFetch(now)
}

// becomeProspective asks the others for pre-votes without bumping the
// epoch or persisting anything (KIP-996). A follower keeps its leader's id
// to go back to.
func (n *Node) becomeProspective(now env.Time) {
	leader := n.leader
	n.clearRoleState()
	n.role, n.leader = Prospective, leader
	n.askForVotes(now, true)
	n.tallyPreVotes(now)
}

// becomeCandidate bumps the epoch, votes for itself, persists, and asks
// for votes (CandidateState).
func (n *Node) becomeCandidate(now env.Time) {
	n.clearRoleState()
	n.role = Candidate
	n.epoch, n.votedFor, n.leader = n.epoch+1, n.cfg.ID, NoID
	n.persist() // before the requests: the vote for itself is durable first
	n.askForVotes(now, false)
	n.tallyVotes(now)
}

// askForVotes opens a round of pre-votes or votes in the current epoch:
// its own vote counted, the election timer armed, a request to every
// other voter with the node's last offset and epoch.
func (n *Node) askForVotes(now env.Time, preVote bool) {
	n.electionDeadline = now.Add(n.electionTimeout())
	n.granted = map[int32]bool{n.cfg.ID: true}
	n.rejected = map[int32]bool{}
	n.voteResend = map[int32]env.Time{}
	n.voteReq = VoteRequest{PreVote: preVote, CandidateEpoch: n.epoch, CandidateID: n.cfg.ID,
		LastOffsetEpoch: n.lastEpoch(n.LogEnd()), LastOffset: n.LogEnd()}
	for _, v := range n.others() {
		n.send(v, n.voteReq)
	}
}

// becomeLeader writes the leader-change entry of its epoch and announces
// itself with BeginQuorumEpoch (LeaderState; KafkaRaftClient.onBecomeLeader).
func (n *Node) becomeLeader(now env.Time) {
	n.clearRoleState()
	n.role, n.leader, n.leaderEpoch = Leader, n.cfg.ID, n.epoch
	n.retries = 0
	n.persist()
	n.epochStart = n.LogEnd()
	n.appendEntry(Entry{Offset: n.LogEnd(), Epoch: n.epoch, LeaderChange: true})
	n.remotes = map[int32]*remote{}
	for _, v := range n.others() {
		n.remotes[v] = &remote{end: -1, lastFetch: now, sentAt: now}
		n.send(v, BeginQuorumEpochRequest{LeaderEpoch: n.epoch, LeaderID: n.cfg.ID})
	}
	n.maybeAdvanceHW()
}

// resign gives up the leadership of the epoch (check quorum, or a restart
// of a leader): Resigned, EndQuorumEpoch to the others, most caught up
// first (LeaderState.nonLeaderVotersByDescendingFetchOffset).
func (n *Node) resign(now env.Time) {
	ends := map[int32]int64{}
	for v, r := range n.remotes {
		ends[v] = r.end
	}
	n.clearRoleState()
	n.role, n.leader, n.leaderEpoch = Resigned, n.cfg.ID, n.epoch
	n.electionDeadline = now.Add(n.electionTimeout())
	n.persist()
	succ := slices.Clone(n.others())
	slices.SortStableFunc(succ, func(a, b int32) int {
		ea, eb := ends[a], ends[b]
		if ea != eb {
			if ea > eb {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	n.remotes = map[int32]*remote{}
	for _, v := range succ {
		n.remotes[v] = &remote{end: -1, sentAt: now}
	}
	n.sendEndQuorum(succ)
}

func (n *Node) sendEndQuorum(succ []int32) {
	for _, v := range succ {
		n.send(v, EndQuorumEpochRequest{LeaderEpoch: n.epoch, LeaderID: n.cfg.ID, PreferredSuccessors: succ})
	}
}

// successors is the EndQuorumEpoch order a resigned node sends again.
func (n *Node) successors() []int32 {
	var out []int32
	for _, v := range n.others() {
		if n.remotes[v] != nil {
			out = append(out, v)
		}
	}
	return out
}

// loseElection handles a lost or timed-out round. A prospective goes back
// to following the leader it had, or waits a backoff as Unattached; a
// candidate backs off, then becomes Prospective (KafkaRaftClient's
// pollCandidate / prospectiveTransitionAfterElectionLoss).
func (n *Node) loseElection(now env.Time) {
	n.retries++
	switch n.role {
	case Prospective:
		if n.leader != NoID && n.leader != n.cfg.ID {
			n.becomeFollower(n.leader, now)
		} else {
			n.becomeUnattached(now, n.electionBackoff())
		}
	case Candidate:
		n.backingOff = true
		n.backoffUntil = now.Add(n.electionBackoff())
	}
}

func (n *Node) tallyPreVotes(now env.Time) {
	if len(n.granted) >= n.majority() {
		n.becomeCandidate(now)
	} else if len(n.rejected) > len(n.voters)-n.majority() {
		n.loseElection(now)
	}
}

func (n *Node) tallyVotes(now env.Time) {
	if n.backingOff {
		return
	}
	if len(n.granted) >= n.majority() {
		n.becomeLeader(now)
	} else if len(n.rejected) > len(n.voters)-n.majority() {
		n.loseElection(now)
	}
}

// Steps.

// Tick is time passing: election, fetch and check-quorum timers, and
// resends.
func (n *Node) Tick(now env.Time) {
	n.advance(now)
	if n.cfg.Observer {
		n.observerTick(now)
		return
	}
	switch n.role {
	case Unattached:
		if !now.Before(n.electionDeadline) {
			n.becomeProspective(now)
		}
	case Prospective:
		if !now.Before(n.electionDeadline) {
			n.loseElection(now)
			return
		}
		n.resendVotes(now)
	case Candidate:
		if n.backingOff {
			if !now.Before(n.backoffUntil) {
				n.becomeProspective(now)
			}
		} else if !now.Before(n.electionDeadline) {
			n.loseElection(now)
		} else {
			n.resendVotes(now)
		}
	case Follower:
		if !now.Before(n.fetchDeadline) {
			n.becomeProspective(now)
			return
		}
		if n.fetchInFlight && now.Sub(n.fetchSentAt) >= n.fetchGiveUp() {
			n.fetchInFlight = false
		}
		if !now.Before(n.retryAfter) {
			n.maybeFetch(now)
		}
	case Leader:
		n.checkQuorum(now)
		if n.role != Leader {
			return
		}
		n.answerParked(now)
		for _, v := range n.others() {
			r := n.remotes[v]
			if !r.acked && now.Sub(r.sentAt) >= n.cfg.RequestTimeout {
				r.sentAt = now
				n.send(v, BeginQuorumEpochRequest{LeaderEpoch: n.epoch, LeaderID: n.cfg.ID})
			}
		}
	case Resigned:
		if !now.Before(n.electionDeadline) {
			n.becomeProspective(now)
			return
		}
		succ := n.successors()
		for _, v := range succ {
			r := n.remotes[v]
			if !r.acked && now.Sub(r.sentAt) >= n.cfg.RequestTimeout {
				r.sentAt = now
				n.send(v, EndQuorumEpochRequest{LeaderEpoch: n.epoch, LeaderID: n.cfg.ID, PreferredSuccessors: succ})
			}
		}
	}
}

// NextTick is the earliest time Tick may have something to do, so that a
// runtime need not call it more often: a deadline of the role's timers, or
// now plus poll where the node keeps no single deadline (a resigned
// leader's resends). The only voter, leading and holding no observer's
// fetch, has no timer at all: the zero Time says never.
func (n *Node) NextTick(now env.Time, poll time.Duration) env.Time {
	soon := now.Add(poll)
	if n.cfg.Observer {
		return n.observerNextTick(now)
	}
	switch n.role {
	case Unattached:
		return n.electionDeadline
	case Prospective:
		return n.nextVoteResend(n.electionDeadline)
	case Candidate:
		if n.backingOff {
			return n.backoffUntil
		}
		return n.nextVoteResend(n.electionDeadline)
	case Leader:
		if len(n.voters) == 1 && len(n.parked) == 0 {
			return 0 // alone, and holding no observer's fetch
		}
		next := env.Time(0)
		window := n.cfg.FetchTimeout + n.cfg.FetchTimeout/2
		consider := func(at env.Time) {
			if at > now && (next == 0 || at < next) {
				next = at
			}
		}
		for _, v := range n.others() {
			r := n.remotes[v]
			consider(r.lastFetch.Add(window)) // when check quorum stops counting it
			if !r.acked {
				consider(r.sentAt.Add(n.cfg.RequestTimeout))
			}
		}
		for _, pf := range n.parked {
			consider(pf.until)
		}
		if next == 0 {
			return soon // every voter already past: the next fetch decides
		}
		return next
	case Follower:
		next := n.fetchDeadline
		switch {
		case n.fetchInFlight:
			next = min(next, n.fetchSentAt.Add(n.fetchGiveUp()))
		case n.flushed == n.LogEnd():
			// An answer with an error, or a request that failed: fetch
			// again once the backoff is over.
			next = min(next, now.Add(n.cfg.RetryBackoff))
		}
		return next
	}
	return soon
}

// checkQuorum is KAFKA-15489's check-quorum timer: a leader that has not
// had a fetch from a majority of voters (itself included) within 1.5 ×
// quorum.fetch.timeout.ms resigns (LeaderState.timeUntilCheckQuorumExpires).
func (n *Node) checkQuorum(now env.Time) {
	window := n.cfg.FetchTimeout + n.cfg.FetchTimeout/2
	heard := 1
	for _, v := range n.others() {
		if now.Sub(n.remotes[v].lastFetch) < window {
			heard++
		}
	}
	if heard < n.majority() {
		n.resign(now)
	}
}

func (n *Node) advance(now env.Time) {
	if now > n.now {
		n.now = now
	}
}

// Flushed is the runtime's word that the log up to end is durable.
func (n *Node) Flushed(end int64) {
	end = min(end, n.LogEnd())
	if end <= n.flushed {
		return
	}
	n.flushed = end
	switch n.role {
	case Leader:
		n.maybeAdvanceHW()
	case Follower:
		n.maybeFetch(n.now)
	}
}

// Propose appends data as an entry of the leader's epoch and returns its
// offset; it commits once the high watermark passes it. A non-leader
// answers NotLeaderError naming the leader it knows.
func (n *Node) Propose(data []byte) (int64, error) {
	if n.role != Leader {
		return -1, NotLeaderError{Epoch: n.epoch, LeaderID: n.leader}
	}
	off := n.LogEnd()
	n.appendEntry(Entry{Offset: off, Epoch: n.epoch, Data: slices.Clone(data)})
	return off, nil
}

func (n *Node) appendEntry(e Entry) {
	n.log = append(n.log, e)
	n.emit(AppendLog{Entries: []Entry{e}})
	if n.role == Leader {
		n.answerParked(n.now)
	}
}

// RequestFailed is a request this node sent that will have no answer: the
// connection to its peer failed or was closed under it. Kafka's
// KafkaNetworkChannel answers such a request itself with
// BROKER_NOT_AVAILABLE, and RequestManager.onResponseResult backs the
// peer off for quorum.retry.backoff.ms before the next request to it. So
// here: a follower's or observer's fetch (or snapshot fetch) goes again
// after the backoff, rather than after its fetch timeout, and a voter that
// was asked for its vote is asked again after the backoff while the round
// is open (CandidateState's unrecorded voters). Other requests are sent
// again on their timers (BeginQuorumEpoch, EndQuorumEpoch).
func (n *Node) RequestFailed(to int32, req Message, now env.Time) {
	n.advance(now)
	switch m := req.(type) {
	case FetchRequest:
		if n.fetchInFlight && n.snapFetch == nil && (n.cfg.Observer || to == n.leader) &&
			m.FetchOffset == n.fetchFrom() && m.CurrentLeaderEpoch == n.epoch {
			n.fetchInFlight = false
			n.retryAfter = now.Add(n.cfg.RetryBackoff)
		}
	case FetchSnapshotRequest:
		if f := n.snapFetch; n.fetchInFlight && f != nil && to == n.leader && m.SnapshotID == f.id && m.Position == int64(len(f.data)) {
			n.fetchInFlight = false
			n.retryAfter = now.Add(n.cfg.RetryBackoff)
		}
	case VoteRequest:
		if n.voteResend == nil || n.backingOff || m != n.voteReq || n.granted[to] || n.rejected[to] {
			return
		}
		n.voteResend[to] = now.Add(n.cfg.RetryBackoff)
	}
}

// resendVotes asks again, once their backoff is over, the voters whose
// vote request failed this round.
func (n *Node) resendVotes(now env.Time) {
	for _, v := range n.others() {
		at, ok := n.voteResend[v]
		if !ok || now.Before(at) {
			continue
		}
		delete(n.voteResend, v)
		if !n.granted[v] && !n.rejected[v] {
			n.send(v, n.voteReq)
		}
	}
}

// nextVoteResend is the earlier of deadline and the next vote resend.
func (n *Node) nextVoteResend(deadline env.Time) env.Time {
	next := deadline
	for _, v := range n.others() {
		if at, ok := n.voteResend[v]; ok && at < next {
			next = at
		}
	}
	return next
}

// Receive is message msg from voter from arriving at now.
func (n *Node) Receive(from int32, msg Message, now env.Time) {
	n.advance(now)
	if from == n.cfg.ID {
		return
	}
	_, fetch := msg.(FetchRequest)
	_, fetchSnap := msg.(FetchSnapshotRequest)
	if !n.isVoter(from) && (!(fetch || fetchSnap) || n.cfg.Observer) {
		return // only an observer's fetches come from outside the voters
	}
	_, answer := msg.(FetchResponse)
	_, snapAnswer := msg.(FetchSnapshotResponse)
	if n.cfg.Observer && !answer && !snapAnswer {
		return // an observer is asked nothing
	}
	switch m := msg.(type) {
	case VoteRequest:
		n.onVote(from, m, now)
	case VoteResponse:
		n.onVoteResponse(from, m, now)
	case BeginQuorumEpochRequest:
		n.onBeginQuorumEpoch(from, m, now)
	case BeginQuorumEpochResponse:
		if !n.learn(m.LeaderEpoch, m.LeaderID, now) && n.role == Leader && m.LeaderEpoch == n.epoch && m.ErrorCode == None {
			n.remotes[from].acked = true
		}
	case EndQuorumEpochRequest:
		n.onEndQuorumEpoch(from, m, now)
	case EndQuorumEpochResponse:
		if !n.learn(m.LeaderEpoch, m.LeaderID, now) && n.role == Resigned && m.LeaderEpoch == n.epoch && n.remotes[from] != nil {
			n.remotes[from].acked = true
		}
	case FetchRequest:
		n.onFetch(from, m, now)
	case FetchResponse:
		n.onFetchResponse(from, m, now)
	case FetchSnapshotRequest:
		n.onFetchSnapshot(from, m, now)
	case FetchSnapshotResponse:
		n.onFetchSnapshotResponse(from, m, now)
	default:
		panic(fmt.Sprintf("raft: unknown message %T", msg))
	}
}

// onVote is KafkaRaftClient.handleVoteRequest with each state's
// canGrantVote.
func (n *Node) onVote(from int32, m VoteRequest, now env.Time) {
	if m.CandidateID != from {
		return
	}
	reply := func(granted bool) {
		n.send(from, VoteResponse{LeaderEpoch: n.epoch, LeaderID: n.leader, VoteGranted: granted})
	}
	if m.CandidateEpoch < n.epoch {
		reply(false)
		return
	}
	upToDate := n.upToDate(m.LastOffsetEpoch, m.LastOffset)
	if m.PreVote {
		// KIP-996: a pre-vote changes nothing, even from a higher epoch. It
		// is refused by a leader, and by a follower that has fetched from
		// its leader within the fetch timeout.
		grant := upToDate
		switch n.role {
		case Leader:
			grant = false
		case Follower:
			if n.hasFetched && now.Before(n.fetchDeadline) {
				grant = false
			}
		}
		reply(grant)
		return
	}
	bumped := m.CandidateEpoch > n.epoch
	if bumped {
		n.bumpTo(m.CandidateEpoch)
	}
	// Same epoch now: a vote is granted once per epoch, to a candidate
	// whose log is at least as up to date, by a node that knows no leader
	// in the epoch.
	grant := upToDate && n.leader == NoID && (n.votedFor == NoID || n.votedFor == from)
	if grant && n.votedFor == NoID {
		n.votedFor = from
		bumped = true
	}
	if bumped {
		// Unattached in the new epoch (with the vote, if cast), persisted
		// in one write before the reply.
		n.becomeUnattached(now, n.electionTimeout())
	}
	reply(grant)
}

func (n *Node) onVoteResponse(from int32, m VoteResponse, now env.Time) {
	if n.learn(m.LeaderEpoch, m.LeaderID, now) {
		return
	}
	switch n.role {
	case Prospective:
		// A pre-vote answer carries the responder's epoch, which may be
		// below ours; one above was handled by learn.
		if m.ErrorCode != None {
			return
		}
		if m.VoteGranted {
			n.granted[from] = true
		} else {
			n.rejected[from] = true
		}
		n.tallyPreVotes(now)
	case Candidate:
		if m.LeaderEpoch != n.epoch || m.ErrorCode != None {
			return
		}
		if m.VoteGranted {
			n.granted[from] = true
		} else {
			n.rejected[from] = true
		}
		n.tallyVotes(now)
	}
}

func (n *Node) onBeginQuorumEpoch(from int32, m BeginQuorumEpochRequest, now env.Time) {
	if m.LeaderID != from {
		return
	}
	if m.LeaderEpoch < n.epoch {
		n.send(from, BeginQuorumEpochResponse{ErrorCode: FencedLeaderEpoch, LeaderEpoch: n.epoch, LeaderID: n.leader})
		return
	}
	n.learn(m.LeaderEpoch, m.LeaderID, now)
	n.send(from, BeginQuorumEpochResponse{LeaderEpoch: n.epoch, LeaderID: n.leader})
}

// onEndQuorumEpoch: the leader resigned. Its follower stops refusing
// pre-votes and stands after a backoff by its place among the preferred
// successors, the first at once (KafkaRaftClient.endEpochElectionBackoff).
func (n *Node) onEndQuorumEpoch(from int32, m EndQuorumEpochRequest, now env.Time) {
	if m.LeaderID != from {
		return
	}
	if m.LeaderEpoch < n.epoch {
		n.send(from, EndQuorumEpochResponse{ErrorCode: FencedLeaderEpoch, LeaderEpoch: n.epoch, LeaderID: n.leader})
		return
	}
	n.learn(m.LeaderEpoch, m.LeaderID, now)
	if n.role == Follower && n.leader == from && m.LeaderEpoch == n.epoch {
		n.hasFetched = false
		pos := slices.Index(m.PreferredSuccessors, n.cfg.ID)
		var backoff time.Duration
		switch {
		case pos < 0:
			backoff = n.cfg.ElectionBackoffMax
		case pos > 0:
			backoff = min(n.cfg.RetryBackoff<<min(pos, 16), n.cfg.ElectionBackoffMax)
		}
		if d := now.Add(backoff); d < n.fetchDeadline {
			n.fetchDeadline = d
		}
	}
	n.send(from, EndQuorumEpochResponse{LeaderEpoch: n.epoch, LeaderID: n.leader})
}

// onFetch is the leader's handleFetchRequest: validateLeaderOnlyRequest,
// then validateOffsetAndEpoch, then the records from FetchOffset.
func (n *Node) onFetch(from int32, m FetchRequest, now env.Time) {
	if m.ReplicaID != from {
		return
	}
	fail := func(code ErrorCode) {
		n.send(from, FetchResponse{ErrorCode: code, LeaderEpoch: n.epoch, LeaderID: n.leader, HighWatermark: -1,
			FetchOffset: m.FetchOffset, LastFetchedEpoch: m.LastFetchedEpoch})
	}
	switch {
	case m.CurrentLeaderEpoch < n.epoch:
		fail(FencedLeaderEpoch)
		return
	case m.CurrentLeaderEpoch > n.epoch:
		fail(UnknownLeaderEpoch)
		return
	case n.role != Leader:
		fail(NotLeaderOrFollower)
		return
	}
	r := n.remote(from)
	r.lastFetch, r.acked = now, true
	resp := n.fetchAnswer(from, m)
	if resp.SnapshotID != nil {
		n.send(from, resp) // a snapshot to fetch: never held
		return
	}
	if len(resp.Records) == 0 && resp.DivergingEpoch == nil && m.MaxWait > 0 {
		// Nothing to send: hold it until an append or MaxWait (the leader's
		// fetchPurgatory, completed when the log end passes its offset).
		if n.parked == nil {
			n.parked = map[int32]parkedFetch{}
		}
		n.parked[from] = parkedFetch{req: m, until: now.Add(m.MaxWait)}
		return
	}
	n.send(from, resp)
}

// fetchAnswer is the leader's answer to a valid fetch: a divergence, or the
// records from its offset (the follower's end counted toward the high
// watermark), and the high watermark.
func (n *Node) fetchAnswer(from int32, m FetchRequest) FetchResponse {
	r := n.remote(from)
	resp := FetchResponse{LeaderEpoch: n.epoch, LeaderID: n.cfg.ID, FetchOffset: m.FetchOffset, LastFetchedEpoch: m.LastFetchedEpoch}
	if n.needsSnapshot(m.FetchOffset, m.LastFetchedEpoch) {
		id := n.latest.ID
		resp.SnapshotID = &id
	} else if e := n.endOffsetForEpoch(m.LastFetchedEpoch); m.FetchOffset > e.EndOffset || m.LastFetchedEpoch != e.Epoch {
		resp.DivergingEpoch = &e
	} else {
		r.end = m.FetchOffset
		if m.FetchOffset >= n.LogEnd() {
			r.caughtUp = n.now
		}
		n.maybeAdvanceHW()
		recs := n.log[m.FetchOffset-n.start:]
		if c := n.cfg.FetchMaxEntries; c > 0 && len(recs) > c {
			recs = recs[:c]
		}
		resp.Records = slices.Clone(recs)
	}
	resp.HighWatermark = n.hw
	return resp
}

// maybeAdvanceHW is LeaderState.maybeUpdateHighWatermark: the largest
// offset a majority of voters holds (the leader by its flushed end),
// once it is past the start of the leader's epoch; never backwards.
func (n *Node) maybeAdvanceHW() {
	var room [8]int64 // a quorum of up to 8 needs no allocation
	ends := append(room[:0], n.flushed)
	for _, v := range n.others() {
		ends = append(ends, n.remotes[v].end)
	}
	slices.Sort(ends)
	slices.Reverse(ends)
	m := ends[n.majority()-1]
	if m > n.epochStart && m > n.hw {
		n.hw = m
	}
}

func (n *Node) onFetchResponse(from int32, m FetchResponse, now env.Time) {
	if n.learn(m.LeaderEpoch, m.LeaderID, now) {
		return
	}
	if n.cfg.Observer && n.role == Unattached {
		n.fetchInFlight = false // a voter that knows no leader: ask the next
		n.retryAfter = now.Add(n.cfg.RetryBackoff)
		return
	}
	if n.role != Follower || from != n.leader || m.LeaderEpoch != n.epoch {
		return
	}
	// Only the answer to a fetch from where the follower stands now.
	at := n.fetchFrom()
	if m.FetchOffset != at || at != n.LogEnd() || m.LastFetchedEpoch != n.lastEpoch(at) {
		return
	}
	n.fetchInFlight = false
	if m.ErrorCode != None {
		n.retryAfter = now.Add(n.cfg.RetryBackoff)
		return
	}
	n.hasFetched = true
	n.fetchDeadline = now.Add(n.cfg.FetchTimeout)
	if d := m.DivergingEpoch; d != nil {
		n.truncateToEndOffset(*d)
		n.maybeFetch(now)
		return
	}
	if id := m.SnapshotID; id != nil {
		n.fetchSnapshot(*id, now) // the leader has dropped what we lack
		return
	}
	recs := m.Records
	if len(recs) > 0 && recs[0].Offset != n.LogEnd() {
		return
	}
	if len(recs) > 0 {
		recs = slices.Clone(recs)
		n.log = append(n.log, recs...)
		n.emit(AppendLog{Entries: recs})
	}
	// FollowerState.updateHighWatermark: the leader's, capped at our end.
	n.leaderHW = max(n.leaderHW, m.HighWatermark)
	if hw := min(m.HighWatermark, n.LogEnd()); hw > n.hw {
		n.hw = hw
	}
	// With records, the next fetch goes once they are flushed (Flushed);
	// without, at once: the leader holds it until it has something.
	n.maybeFetch(now)
}

// truncateToEndOffset is KafkaMetadataLog.truncateToEndOffset: cut to the
// smaller of the leader's end of the diverging epoch and ours, or to our
// end of the largest epoch below it if we lack that epoch.
func (n *Node) truncateToEndOffset(d EpochEndOffset) {
	var to int64
	if d.Epoch == 0 {
		to = min(d.EndOffset, n.LogEnd())
	} else if local := n.endOffsetForEpoch(d.Epoch); local.Epoch == d.Epoch {
		to = min(local.EndOffset, d.EndOffset)
	} else {
		to = local.EndOffset
	}
	if to >= n.LogEnd() {
		return
	}
	if to < n.hw && n.violation == "" {
		n.violation = fmt.Sprintf("truncation to %d below the high watermark %d (committed entries are never truncated)", to, n.hw)
	}
	if to < n.start {
		// Below what this node snapshotted: committed, and never cut.
		if n.violation == "" {
			n.violation = fmt.Sprintf("truncation to %d below the log start %d", to, n.start)
		}
		return
	}
	n.log = n.log[:to-n.start]
	n.flushed = min(n.flushed, to)
	n.epochsChecked = min(n.epochsChecked, to)
	n.emit(TruncateLog{To: to})
}

// maybeFetch sends the follower's next Fetch, if none is outstanding and
// everything appended is flushed: its fetch offset is its flushed end.
func (n *Node) maybeFetch(now env.Time) {
	if n.role != Follower || n.fetchInFlight {
		return
	}
	if n.snapFetch != nil {
		n.sendFetchSnapshot(now) // on with the snapshot being fetched
		return
	}
	if n.fetchFrom() != n.LogEnd() {
		return
	}
	n.sendFetch(n.leader, now)
}

// sendFetch sends a Fetch from where the node stands.
func (n *Node) sendFetch(to int32, now env.Time) {
	at := n.fetchFrom()
	n.fetchInFlight, n.fetchSentAt = true, now
	n.send(to, FetchRequest{ReplicaID: n.cfg.ID, FetchOffset: at,
		LastFetchedEpoch: n.lastEpoch(at), CurrentLeaderEpoch: n.epoch, MaxWait: n.cfg.FetchMaxWait})
}

// fetchFrom is where the next fetch starts: a voter's flushed end (the
// leader counts what a voter fetches from toward the high watermark, so
// only what is durable), an observer's log end (it counts toward nothing,
// and KafkaRaftClient.appendAsFollower flushes only for voters).
func (n *Node) fetchFrom() int64 {
	if n.cfg.Observer {
		return n.LogEnd()
	}
	return n.flushed
}

// fetchGiveUp is how long a follower waits for a fetch's answer before it
// sends another: the leader may hold it for FetchMaxWait, and the request
// times out after quorum.request.timeout.ms on top.
func (n *Node) fetchGiveUp() time.Duration { return n.cfg.FetchMaxWait + n.cfg.RequestTimeout }
