package faults

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/probe"
)

// TopicPartition names a partition, for the roles "leader of" and "a
// follower of".
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Options describe the run a schedule is made for: how long the workload
// lasts, which nodes there are, which roles exist. Zero fields take the
// defaults their comments give.
type Options struct {
	// Duration is how long the workload runs. Every fault is undone before
	// it ends; HealAll then lifts anything left and the drain phase starts.
	Duration time.Duration

	Brokers []string
	// Controllers are the controller nodes, the quorum's voters (none if
	// the cluster has no separate controller). Faults aim at "the active
	// controller" and, with more than one, at "a controller"; an episode
	// takes at most one down, a minority of any quorum of three or five.
	Controllers []string
	Clients     []string
	Sink        string // "" if the workload has no sink store

	// Partitions, Groups and TransactionalIDs are what the roles "leader
	// of", "a follower of", "the group coordinator of" and "the transaction
	// coordinator of" may name.
	Partitions       []TopicPartition
	Groups           []string
	TransactionalIDs []string

	// RateScale multiplies how often episodes come (it divides the quiet
	// intervals between them); 0 means 1.
	RateScale float64
	// DiskFaultyMax is how many brokers may have disk faults in one run; 0
	// means a minority, (len(Brokers)-1)/2. Set it to (RF-1)/2 when the
	// replication factor is below the broker count. Negative means none.
	DiskFaultyMax int
	// DiskPrefixes are the file-name prefixes disk faults aim at; empty
	// means "" (any file).
	DiskPrefixes []string
	// SettleTime is, in the power class, the least time between one power
	// loss being undone and the next, so the restarted node can catch up
	// before another loses its unsynced data; 0 means 5 s.
	SettleTime time.Duration
	// EpisodesMax bounds how many faults Gen draws; 0 means 16.
	EpisodesMax int

	// Triggers are the probes the run's workload can reach, for targeted
	// faults: a fault armed on one lands right after it is hit, inside the
	// window the probe marks (a crash between a consumer's commit and its
	// processing, an isolation of a leader that just acknowledged what its
	// followers lack). The first is the workload's main window, drawn three
	// times in four. Empty: no targeted faults.
	Triggers []Trigger
}

// Trigger is a probe (package probe) a targeted fault may wait for, and
// the subject its hit must be about ("" for any).
type Trigger struct {
	Probe, On string
}

func (o Options) withDefaults() Options {
	if o.RateScale == 0 {
		o.RateScale = 1
	}
	if len(o.DiskPrefixes) == 0 {
		o.DiskPrefixes = []string{""}
	}
	if o.SettleTime == 0 {
		o.SettleTime = 5 * time.Second
	}
	if o.EpisodesMax == 0 {
		o.EpisodesMax = 16
	}
	return o
}

// diskFaultyMax is DiskFaultyMax with its default applied.
func (o Options) diskFaultyMax() int {
	switch {
	case o.DiskFaultyMax == 0:
		return max(0, (len(o.Brokers)-1)/2)
	case o.DiskFaultyMax < 0:
		return 0
	}
	return min(o.DiskFaultyMax, len(o.Brokers))
}

// tick is the grain of generated times, so schedules read "+12.5s".
const tick = 100 * time.Millisecond

// warmUp is when the first episode may begin: the applications have
// connected and their producers have ids, so the first fault meets a
// working pipeline rather than one still booting.
const warmUp = time.Second

// electionTime is how long a fault must keep a broker from the controller
// for another to be elected in its place: the simulation's
// broker.session.timeout.ms (6 s) and a heartbeat to spare.
const electionTime = 6500 * time.Millisecond

// chooser is where a generator's choices come from: a seeded stream for
// the nemesis, rapid's draws for Gen (so failing cases shrink toward
// choice 0: the first role, the shortest fault, the earliest time).
type chooser interface {
	intn(n int) int
}

type randChooser struct{ r *env.Rand }

func (c randChooser) intn(n int) int { return c.r.Intn(n) }

// ticks draws a duration of lo to hi ticks.
func ticks(c chooser, lo, hi int) time.Duration {
	return time.Duration(lo+c.intn(hi-lo+1)) * tick
}

// episode is one fault drawn whole: its opening actions, and how long
// until they are undone. Episodes are laid end to end (see pace): one at a
// time, each undone before the next begins.
type episode struct {
	acts   []Action      // the opening actions (several for a correlated power loss)
	window time.Duration // a trigger's window: the undo comes this much later
	length time.Duration // until the undoing actions; 0 if none
	undo   Kind          // KindStart, KindResume, KindHeal, or 0
	power  bool          // a power loss: the power class wants SettleTime after it
	// then is an episode that follows this one at once (no quiet
	// interval): a fault aimed at the window this one's recovery opens.
	then *episode
	// follows marks an episode that was another's then: it goes only
	// where that one went.
	follows bool
	// minLength is the least length that makes the fault what it is (an
	// isolation outlasting broker.session.timeout.ms, so the controller
	// elects another): an episode the workload's end would cut shorter is
	// dropped instead.
	minLength time.Duration
}

// chain appends e and whatever follows it to eps, e after gap and each
// follower at once.
func chain(eps []episode, gaps []time.Duration, e episode, gap time.Duration) ([]episode, []time.Duration) {
	for {
		next := e.then
		e.then = nil
		eps, gaps = append(eps, e), append(gaps, gap)
		if next == nil {
			return eps, gaps
		}
		e, gap = *next, 0
		e.follows = true
	}
}

// feature is one fault of the swarm: a way to draw an episode.
type feature struct {
	name  string
	class Class
	draw  func(g *generator, c chooser) episode
}

// generator knows the run's shape: the role menus faults draw targets from.
type generator struct {
	o      Options
	class  Class
	feats  []feature
	faulty []string // brokers whose disks may be faulted

	brokerRoles []Target
	crashable   []Target
	powerable   []Target
	pausable    []Target
	clockable   []Target
	reachable   []Target // network targets
	linkable    []Target // ends of a link: the network targets and every named node
	frames      []frameRoute
	named       []string // every named node, for partitions
	// catchUp are the partitions whose follower-fetch-out-of-sync the
	// trigger menu offers.
	catchUp []TopicPartition
}

type frameRoute struct {
	from, to Target
	frame    string
}

func newGenerator(c Class, o Options, faulty func(n int) []string) *generator {
	o = o.withDefaults()
	if c != ClassNone && o.Duration <= 0 {
		panic("faults: Options.Duration must be positive")
	}
	g := &generator{o: o, class: c}
	for _, tp := range o.Partitions {
		g.brokerRoles = append(g.brokerRoles, Leader(tp.Topic, tp.Partition))
	}
	for _, tp := range o.Partitions {
		g.brokerRoles = append(g.brokerRoles, Follower(tp.Topic, tp.Partition))
	}
	for _, grp := range o.Groups {
		g.brokerRoles = append(g.brokerRoles, GroupCoordinator(grp))
	}
	for _, id := range o.TransactionalIDs {
		g.brokerRoles = append(g.brokerRoles, TxnCoordinator(id))
	}
	if len(o.Brokers) > 0 {
		g.brokerRoles = append(g.brokerRoles, RandomBroker())
	}
	var controller, client, sink []Target
	if len(o.Controllers) > 0 {
		controller = []Target{Controller()}
	}
	if len(o.Controllers) > 1 {
		controller = append(controller, AnyController())
	}
	if len(o.Clients) > 0 {
		client = []Target{AnyClient()}
	}
	if o.Sink != "" {
		sink = []Target{Node(o.Sink)}
	}
	g.crashable = slices.Concat(g.brokerRoles, controller, client, sink)
	g.powerable = slices.Concat(g.brokerRoles, controller, sink)
	g.pausable = slices.Concat(g.brokerRoles, controller, client)
	g.clockable = slices.Concat(g.brokerRoles, controller, client, sink)
	g.reachable = g.crashable
	g.named = slices.Concat(o.Brokers, o.Controllers, o.Clients, nonEmpty(o.Sink))
	g.linkable = slices.Clone(g.reachable)
	for _, n := range g.named {
		g.linkable = append(g.linkable, Node(n))
	}

	for _, tp := range o.Partitions {
		leader := Leader(tp.Topic, tp.Partition)
		if len(client) > 0 {
			g.frames = append(g.frames, frameRoute{AnyClient(), leader, "Produce"})
		}
		g.frames = append(g.frames, frameRoute{Follower(tp.Topic, tp.Partition), leader, "Fetch"})
		for _, id := range o.TransactionalIDs {
			g.frames = append(g.frames, frameRoute{TxnCoordinator(id), leader, "WriteTxnMarkers"})
		}
	}
	if len(client) > 0 {
		for _, id := range o.TransactionalIDs {
			for _, f := range []string{"EndTxn", "AddPartitionsToTxn", "TxnOffsetCommit"} {
				to := TxnCoordinator(id)
				if f == "TxnOffsetCommit" && len(o.Groups) > 0 {
					to = GroupCoordinator(o.Groups[0])
				}
				g.frames = append(g.frames, frameRoute{AnyClient(), to, f})
			}
		}
		for _, grp := range o.Groups {
			g.frames = append(g.frames, frameRoute{AnyClient(), GroupCoordinator(grp), "OffsetCommit"})
		}
	}
	for _, tp := range o.Partitions {
		if slices.Contains(o.Triggers, Trigger{Probe: probe.FollowerFetchOutOfSync, On: tp.String()}) {
			g.catchUp = append(g.catchUp, tp)
		}
	}
	if n := o.diskFaultyMax(); n > 0 && c&ClassDisk != 0 {
		g.faulty = faulty(n)
		// A minority of a quorum of three or more controllers too: the
		// first (len-1)/2 of them (their metadata logs, snapshots and
		// quorum state; a majority keeps every committed entry).
		g.faulty = append(g.faulty, o.Controllers[:controllerDiskFaultyMax(o)]...)
	}
	for _, f := range features {
		if c&f.class != 0 && g.can(f.name) {
			g.feats = append(g.feats, f)
		}
	}
	return g
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// can reports whether the run's shape gives feature name something to hit.
func (g *generator) can(name string) bool {
	switch name {
	case "crash", "restart":
		return len(g.crashable) > 0
	case "power-loss", "power-loss-torn":
		return len(g.powerable) > 0
	case "power-loss-correlated":
		return len(g.o.Brokers) >= 2
	case "power-loss-correlated-controllers":
		return len(g.o.Controllers) >= 3
	case "partition", "cut", "cut-one-way", "clog", "reset":
		return len(g.named) >= 2
	case "isolate", "clog-node", "reset-node":
		return len(g.reachable) > 0 && len(g.named) >= 2
	case "delay-frame":
		return len(g.frames) > 0
	case "fail-sync", "fail-read", "corrupt":
		return len(g.faulty) > 0
	case "skew", "drift":
		return len(g.clockable) > 0
	case "pause":
		return len(g.pausable) > 0
	case "crash-on-trigger", "isolate-on-trigger", "reset-on-trigger", "pause-on-trigger", "power-loss-on-trigger":
		return len(g.o.Triggers) > 0
	case "partition-on-trigger":
		return len(g.o.Triggers) > 0 && len(g.o.Clients) > 0
	case "power-loss-correlated-on-trigger":
		return len(g.o.Triggers) > 0 && len(g.o.Brokers) >= 2
	case "crash-leader-then-successor-on-truncation":
		return slices.ContainsFunc(g.o.Triggers, isTruncation)
	case "followers-cut-then-leader-isolated-on-catch-up":
		return len(g.catchUp) > 0 && len(g.o.Controllers) > 0
	case "delay-txn-request-on-trigger":
		return len(g.o.TransactionalIDs) > 0 && g.offers(probe.TransactionAwaitingCommit)
	}
	panic("faults: unknown feature " + name)
}

func pick[T any](c chooser, xs []T) T { return xs[c.intn(len(xs))] }

// pickLink draws the two ends of a link, never the same entry twice.
func pickLink(c chooser, xs []Target) (Target, Target) {
	i := c.intn(len(xs))
	j := c.intn(len(xs) - 1)
	if j >= i {
		j++
	}
	return xs[i], xs[j]
}

func link(kind Kind, c chooser, xs []Target) Action {
	a, b := pickLink(c, xs)
	return Action{Kind: kind, Target: a, Peer: b}
}

func one(a Action, length time.Duration, undo Kind) episode {
	return episode{acts: []Action{a}, length: length, undo: undo}
}

// isTruncation: a trigger on a follower cutting its log, for a partition.
func isTruncation(t Trigger) bool {
	switch t.Probe {
	case probe.FollowerTruncated, probe.FollowerTruncatedToHighWatermark, probe.FollowerTruncatedByEpoch:
		return t.On != ""
	}
	return false
}

// aims are the windows each targeted fault is best aimed at: a crash
// delivers what the node already sent, so it aims at a step not yet taken
// (a commit, a catch-up); an isolation, a partition or a reset loses what
// is in flight, so they aim at an answer on its way; a correlated power
// loss at the instant after an acknowledgment, before anything is synced
// (a produce's; or, from a processor about to commit, its transaction's:
// EndTxn is answered once PrepareCommit is replicated, before the markers
// are written, let alone synced, and the processor moves on).
var aims = map[string][]string{
	"crash-on-trigger": {probe.TransactionAwaitingCommit, probe.CommittedBeforeProcessing, probe.ProcessedBeforeCommit,
		probe.TransactionPrepared, probe.OffsetCommitAwaitingReplication, probe.ProduceAwaitingReplication, probe.LeaderElected},
	"reset-on-trigger":                               {probe.ProduceAnswered},
	"partition-on-trigger":                           {probe.OffsetCommitAwaitingReplication, probe.ProduceAnswered, probe.ProduceAcknowledgedBeforeReplication},
	"isolate-on-trigger":                             {probe.ProduceAcknowledgedBeforeReplication, probe.TransactionAwaitingCommit, probe.OffsetCommitAwaitingReplication, probe.LeaderElected},
	"power-loss-on-trigger":                          {probe.ProduceAcknowledgedBeforeReplication, probe.ProduceAnswered, probe.TransactionAwaitingCommit, probe.OffsetCommitAwaitingReplication},
	"power-loss-correlated-on-trigger":               {probe.ProduceAnswered, probe.TransactionAwaitingCommit},
	"pause-on-trigger":                               {probe.TransactionAwaitingCommit, probe.CommittedBeforeProcessing, probe.ProcessedBeforeCommit},
	"followers-cut-then-leader-isolated-on-catch-up": {probe.FollowerFetchOutOfSync},
	"delay-txn-request-on-trigger":                   {probe.TransactionAwaitingCommit},
	"crash-leader-then-successor-on-truncation":      {probe.FollowerTruncated, probe.FollowerTruncatedToHighWatermark, probe.FollowerTruncatedByEpoch},
}

// aimsAtMain reports whether the targeted feature name is aimed at the
// run's main window (the trigger menu's first entry): the nemesis weighs
// such a fault up.
func (g *generator) aimsAtMain(name string) bool {
	return len(g.o.Triggers) > 0 && slices.Contains(aims[name], g.o.Triggers[0].Probe)
}

// triggered arms e's opening action on a trigger drawn from the run's
// menu, aimed at the probed node, with a window of 0.3 to 2 s: three
// times in four the window the feature is best aimed at — the run's main
// one (the menu's first entry) if the feature aims at it, else the first
// of its aims the menu offers, else the main one — and otherwise any
// entry.
func triggered(g *generator, c chooser, name string, e episode) episode {
	want := g.o.Triggers[0].Probe
	if !g.aimsAtMain(name) {
		for _, p := range aims[name] {
			if g.offers(p) {
				want = p
				break
			}
		}
	}
	var aimed []Trigger
	for _, t := range g.o.Triggers {
		if t.Probe == want {
			aimed = append(aimed, t)
		}
	}
	tr := pick(c, aimed)
	if c.intn(4) == 3 {
		tr = pick(c, g.o.Triggers)
	}
	e.window = ticks(c, 3, 20)
	e.acts[0].When, e.acts[0].On, e.acts[0].Within = tr.Probe, tr.On, e.window
	return e
}

// features are the faults of every class, simplest first within a class.
var features = []feature{
	{"crash", ClassCrash, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindCrash, Target: pick(c, g.crashable)}, ticks(c, 5, 80), KindStart)
	}},
	{"restart", ClassCrash, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindRestart, Target: pick(c, g.crashable)}, 0, 0)
	}},
	{"partition", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindPartition, Groups: g.drawGroups(c)}, ticks(c, 5, 100), KindHeal)
	}},
	{"isolate", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindIsolate, Target: pick(c, g.reachable)}, ticks(c, 5, 100), KindHeal)
	}},
	{"cut", ClassNetwork, func(g *generator, c chooser) episode {
		return one(link(KindCut, c, g.linkable), ticks(c, 5, 100), KindHeal)
	}},
	{"cut-one-way", ClassNetwork, func(g *generator, c chooser) episode {
		return one(link(KindCutOneWay, c, g.linkable), ticks(c, 5, 100), KindHeal)
	}},
	{"clog", ClassNetwork, func(g *generator, c chooser) episode {
		a := link(KindClog, c, g.linkable)
		a.For = ticks(c, 1, 50)
		return one(a, 0, 0)
	}},
	{"clog-node", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindClog, Target: pick(c, g.reachable), For: ticks(c, 1, 50)}, 0, 0)
	}},
	{"reset", ClassNetwork, func(g *generator, c chooser) episode {
		return one(link(KindReset, c, g.linkable), 0, 0)
	}},
	{"reset-node", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindReset, Target: pick(c, g.reachable)}, 0, 0)
	}},
	{"delay-frame", ClassNetwork, func(g *generator, c chooser) episode {
		r := pick(c, g.frames)
		return one(Action{Kind: KindDelayFrame, Frame: r.frame, Target: r.from, Peer: r.to, By: ticks(c, 1, 50), Count: 1 + c.intn(3)}, 0, 0)
	}},
	{"power-loss", ClassPower | ClassCorrelatedPower, func(g *generator, c chooser) episode {
		e := one(Action{Kind: KindPowerLoss, Target: pick(c, g.powerable)}, ticks(c, 5, 80), KindStart)
		e.power = true
		return e
	}},
	{"power-loss-torn", ClassPower | ClassCorrelatedPower, func(g *generator, c chooser) episode {
		e := one(Action{Kind: KindPowerLoss, Target: pick(c, g.powerable), Torn: true}, ticks(c, 5, 80), KindStart)
		e.power = true
		return e
	}},
	{"power-loss-correlated", ClassCorrelatedPower, func(g *generator, c chooser) episode {
		brokers := slices.Clone(g.o.Brokers)
		k := 2 + c.intn(len(brokers)-1)
		e := episode{length: ticks(c, 5, 80), undo: KindStart, power: true}
		for range k {
			i := c.intn(len(brokers))
			e.acts = append(e.acts, Action{Kind: KindPowerLoss, Target: Node(brokers[i]), Torn: c.intn(2) == 1})
			brokers = slices.Delete(brokers, i, i+1)
		}
		return e
	}},
	{"power-loss-correlated-controllers", ClassCorrelatedPower, func(g *generator, c chooser) episode {
		// A majority of the quorum, or all of it, loses power at once
		// (one rack, one feed), as the class takes several brokers: what
		// they had not fsynced is gone from all of them.
		ctls := slices.Clone(g.o.Controllers)
		majority := len(ctls)/2 + 1
		k := majority + c.intn(len(ctls)-majority+1)
		e := episode{length: ticks(c, 5, 80), undo: KindStart, power: true}
		for range k {
			i := c.intn(len(ctls))
			e.acts = append(e.acts, Action{Kind: KindPowerLoss, Target: Node(ctls[i]), Torn: c.intn(2) == 1})
			ctls = slices.Delete(ctls, i, i+1)
		}
		return e
	}},
	{"fail-sync", ClassDisk, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindFailSync, Target: Node(pick(c, g.faulty)), Count: 1 + c.intn(3)}, ticks(c, 5, 80), KindStart)
	}},
	{"fail-read", ClassDisk, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindFailRead, Target: Node(pick(c, g.faulty)), Count: 1 + c.intn(3), Prefix: pick(c, g.o.DiskPrefixes)}, ticks(c, 5, 80), KindStart)
	}},
	{"corrupt", ClassDisk, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindCorrupt, Target: Node(pick(c, g.faulty)), Prefix: pick(c, g.o.DiskPrefixes)}, ticks(c, 5, 80), KindStart)
	}},
	{"pause", ClassClock, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindPause, Target: pick(c, g.pausable)}, ticks(c, 1, 100), KindResume)
	}},
	{"skew", ClassClock, func(g *generator, c chooser) episode {
		// An NTP step of up to 10 s, stepped back when the episode ends,
		// so offsets never pile up: a clock minutes off stretches every
		// wall-clock deadline by minutes (Kafka's clients and ISR read the
		// wall clock), beyond what a drain can wait for.
		by := ticks(c, 1, 100)
		if c.intn(2) == 1 {
			by = -by
		}
		return one(Action{Kind: KindSkew, Target: pick(c, g.clockable), By: by}, ticks(c, 5, 80), KindSkew)
	}},
	{"drift", ClassClock, func(g *generator, c chooser) episode {
		ppm := int64(1+c.intn(100)) * 1000
		if c.intn(2) == 1 {
			ppm = -ppm
		}
		return one(Action{Kind: KindDrift, Target: pick(c, g.clockable), PPM: ppm}, 0, 0)
	}},

	// Targeted faults: each waits for a probe of the run's trigger menu and
	// hits the node that reached it, inside the window the probe marks.
	{"crash-on-trigger", ClassCrash, func(g *generator, c chooser) episode {
		return triggered(g, c, "crash-on-trigger", one(Action{Kind: KindCrash, Target: Probed()}, ticks(c, 3, 40), KindStart))
	}},
	{"crash-leader-then-successor-on-truncation", ClassCrash, func(g *generator, c chooser) episode {
		// KIP-101's first scenario: a partition's leader crashed; when the
		// election makes a follower cut its log — to its high watermark
		// (which lags the leader's by a fetch) without KIP-101, by the
		// leader's epochs with it — the new leader crashed at once, before
		// that follower fetches again. Elected next, a follower that cut
		// to its high watermark lacks what the first leader's covered; one
		// that asked the epochs does not. Both stay down long enough for
		// each election to happen.
		// Aimed at the main window if it is a truncation, else at any
		// truncation (whichever rule the brokers follow), else at what
		// the menu has.
		var ts, any []Trigger
		for _, t := range g.o.Triggers {
			if isTruncation(t) {
				ts = append(ts, t)
			}
			if t.Probe == probe.FollowerTruncated {
				any = append(any, t)
			}
		}
		if len(any) > 0 {
			ts = any
		}
		tr := pick(c, ts)
		if main := g.o.Triggers[0]; isTruncation(main) {
			tr = main
		}
		topic, p, _ := parseTopicPartition(tr.On)
		e := episode{acts: []Action{
			{Kind: KindCrash, Target: Leader(topic, p)},
			{Kind: KindCrash, Target: Leader(topic, p), When: tr.Probe, On: tr.On},
		}, length: ticks(c, 65, 100), undo: KindStart}
		e.minLength = electionTime
		e.window = ticks(c, 70, 100) // the first election: electionTime and a little
		e.acts[1].Within = e.window
		return e
	}},
	{"reset-on-trigger", ClassNetwork, func(g *generator, c chooser) episode {
		// Every connection of the probed node reset: what it just sent is
		// lost (an answer, so the request is retried).
		return triggered(g, c, "reset-on-trigger", one(Action{Kind: KindReset, Target: Probed()}, 0, 0))
	}},
	{"partition-on-trigger", ClassNetwork, func(g *generator, c chooser) episode {
		// The probed node and the clients cut from every other node: what
		// it just sent to its peers is lost, what it sent to clients
		// arrives (an acknowledgment its followers never fetch).
		side := []Target{Probed()}
		for _, n := range g.o.Clients {
			side = append(side, Node(n))
		}
		// Mostly longer than broker.session.timeout.ms, so another is
		// elected while it still answers.
		e := triggered(g, c, "partition-on-trigger", one(Action{Kind: KindPartition, Groups: [][]Target{side}}, ticks(c, 65, 120), KindHeal))
		e.minLength = electionTime
		return e
	}},
	{"isolate-on-trigger", ClassNetwork, func(g *generator, c chooser) episode {
		// An isolation loses what is in flight (a crash delivers what was
		// sent): the follower's fetch answer, the commit's response.
		return triggered(g, c, "isolate-on-trigger", one(Action{Kind: KindIsolate, Target: Probed()}, ticks(c, 5, 100), KindHeal))
	}},
	{"power-loss-on-trigger", ClassPower | ClassCorrelatedPower, func(g *generator, c chooser) episode {
		e := triggered(g, c, "power-loss-on-trigger", one(Action{Kind: KindPowerLoss, Target: Probed(), Torn: c.intn(2) == 1}, ticks(c, 5, 80), KindStart))
		e.power = true
		return e
	}},
	{"power-loss-correlated-on-trigger", ClassCorrelatedPower, func(g *generator, c chooser) episode {
		// Every broker loses power in the same instant, right after the
		// probe: what was acknowledged and not yet synced is gone everywhere.
		e := episode{length: ticks(c, 5, 80), undo: KindStart, power: true}
		for _, b := range g.o.Brokers {
			e.acts = append(e.acts, Action{Kind: KindPowerLoss, Target: Node(b), Torn: c.intn(2) == 1})
		}
		e = triggered(g, c, "power-loss-correlated-on-trigger", e)
		for i := range e.acts {
			e.acts[i].When, e.acts[i].On, e.acts[i].Within = e.acts[0].When, e.acts[0].On, e.acts[0].Within
		}
		return e
	}},
	{"followers-cut-then-leader-isolated-on-catch-up", ClassNetwork, func(g *generator, c chooser) episode {
		// The followers of a partition cut off from everyone, long enough
		// to leave the ISR (the leader acknowledges alone); healed; then
		// the leader isolated the moment a follower, outside the ISR,
		// fetches to catch up, long enough to be fenced — the window of an
		// unclean election.
		tp := pick(c, g.catchUp)
		side := append([]Target{Leader(tp.Topic, tp.Partition)}, g.quorum()...)
		for _, n := range g.o.Clients {
			side = append(side, Node(n))
		}
		e := one(Action{Kind: KindPartition, Groups: [][]Target{side}}, ticks(c, 75, 100), KindHeal)
		e.minLength = electionTime
		next := one(Action{Kind: KindIsolate, Target: Probed(), When: probe.FollowerFetchOutOfSync, On: tp.String()}, ticks(c, 65, 90), KindHeal)
		next.minLength = electionTime
		next.window = ticks(c, 25, 50)
		next.acts[0].Within = next.window
		e.then = &next
		return e
	}},
	{"delay-txn-request-on-trigger", ClassNetwork, func(g *generator, c chooser) episode {
		// A processor's next EndTxns (one to three: a slow link), or now
		// and then its next produces to an output partition, held back
		// 1.2-2 s — past a request timeout of a second, so the client
		// retries, and the late one lands as the next transaction gets
		// going: the late EndTxn of KIP-890 part 2, which commits that
		// transaction early (the more productive window, hence seven in
		// eight), the late produce of part 1.
		id := pick(c, g.o.TransactionalIDs)
		a := Action{Kind: KindDelayFrame, Frame: "EndTxn", Target: Probed(), Peer: TxnCoordinator(id), By: ticks(c, 12, 20), Count: 1 + c.intn(3),
			When: probe.TransactionAwaitingCommit, On: id}
		if len(g.o.Partitions) > 0 && c.intn(8) == 7 {
			tp := pick(c, g.o.Partitions)
			a.Frame, a.Peer, a.Count = "Produce", Leader(tp.Topic, tp.Partition), 1+c.intn(2)
		}
		e := one(a, 0, 0)
		e.window = ticks(c, 5, 30)
		e.acts[0].Within = e.window
		return e
	}},
	{"pause-on-trigger", ClassClock, func(g *generator, c chooser) episode {
		return triggered(g, c, "pause-on-trigger", one(Action{Kind: KindPause, Target: Probed()}, ticks(c, 1, 100), KindResume))
	}},
}

// targeted reports whether feature name waits for a trigger.
func targeted(name string) bool {
	return strings.HasSuffix(name, "-on-trigger") || strings.HasSuffix(name, "-on-catch-up")
}

// offers reports whether the run's trigger menu holds probe name.
func (g *generator) offers(name string) bool {
	return slices.ContainsFunc(g.o.Triggers, func(t Trigger) bool { return t.Probe == name })
}

// quorum is every controller, by name: a side of a partition that is to
// keep "the controller" must keep the quorum, for a leader left with the
// active controller alone, cut from the other voters, is no leader for
// long — they elect another active controller, which fences it (and the
// ISR shrink it asks for never commits), so its followers' isolation
// becomes a clean failover instead of the ISR shrinking to the leader.
func (g *generator) quorum() []Target {
	ts := make([]Target, len(g.o.Controllers))
	for i, n := range g.o.Controllers {
		ts[i] = Node(n)
	}
	return ts
}

// drawGroups draws the sides of a partition: one role cut off from the
// rest, a minority of brokers (maybe with the controller) cut from the
// majority, a partition's leader left with the clients only (cut from the
// controller and its followers, it answers producers while another is
// elected), a partition's leader left with the controllers and the clients
// (its followers cut off from everyone: the ISR shrinks to the leader,
// which acknowledges alone), or every named node on a random side.
func (g *generator) drawGroups(c chooser) [][]Target {
	// The leader-alone shapes are Kafka's classic losses; they come first.
	switch [...]int{0, 1, 2, 3, 3, 4, 4, 4}[c.intn(8)] {
	case 0:
		return [][]Target{{pick(c, g.reachable)}}
	case 4:
		if len(g.o.Partitions) > 0 && len(g.o.Clients) > 0 {
			tp := pick(c, g.o.Partitions)
			side := []Target{Leader(tp.Topic, tp.Partition)}
			for _, n := range g.o.Clients {
				side = append(side, Node(n))
			}
			return [][]Target{side}
		}
	case 3:
		if len(g.o.Partitions) > 0 && len(g.o.Controllers) > 0 {
			tp := pick(c, g.o.Partitions)
			side := append([]Target{Leader(tp.Topic, tp.Partition)}, g.quorum()...)
			for _, n := range g.o.Clients {
				side = append(side, Node(n))
			}
			return [][]Target{side}
		}
	case 1:
		if len(g.o.Brokers) >= 3 {
			brokers := slices.Clone(g.o.Brokers)
			var minority []Target
			for range 1 + c.intn((len(brokers)-1)/2) {
				i := c.intn(len(brokers))
				minority = append(minority, Node(brokers[i]))
				brokers = slices.Delete(brokers, i, i+1)
			}
			if len(g.o.Controllers) > 0 && c.intn(2) == 1 {
				// One controller with the broker minority: a quorum's
				// minority too (its only one, for a quorum of one).
				ctl := g.o.Controllers[0]
				if len(g.o.Controllers) > 1 {
					ctl = pick(c, g.o.Controllers)
				}
				minority = append(minority, Node(ctl))
			}
			return [][]Target{minority}
		}
	}
	var sides [2][]Target
	for _, n := range g.named {
		s := c.intn(2)
		sides[s] = append(sides[s], Node(n))
	}
	// Both sides must hold a node, or nothing is cut.
	for i := range sides {
		if other := sides[1-i]; len(sides[i]) == 0 {
			sides[i], sides[1-i] = other[len(other)-1:], other[:len(other)-1]
		}
	}
	return [][]Target{sides[0], sides[1]}
}

// pace lays episodes end to end, as Jepsen's and TigerBeetle's nemeses
// pace theirs: each begins gaps[i] after the one before was undone, so the
// cluster recovers between faults and never has more down at once than one
// episode takes (a correlated power loss takes several brokers; every other
// episode one node or one cut). An episode that does not fit before the
// workload ends is shortened, or dropped. In the power class (without
// correlated-power) a power loss also waits SettleTime after the last one
// was undone, so no two replicas lose unsynced data together.
func (g *generator) pace(eps []episode, gaps []time.Duration) Schedule {
	end := g.o.Duration
	var s Schedule
	cursor := time.Duration(0)
	lastPower := time.Duration(-1)
	tags := 0
	placed := false // whether the last episode was placed (for its followers)
	for i, e := range eps {
		if e.follows && !placed {
			continue
		}
		placed = false
		at := max(cursor+gaps[i], warmUp)
		if e.power && lastPower >= 0 && !g.class.Has(ClassCorrelatedPower) {
			at = max(at, lastPower+g.o.SettleTime)
		}
		at = at / tick * tick
		if at >= end {
			break
		}
		if e.window > 0 && at+e.window >= end {
			e.window = (end - tick - at) / tick * tick
			if e.window < tick {
				continue
			}
			for j := range e.acts {
				if e.acts[j].When != "" {
					e.acts[j].Within = e.window
				}
			}
		}
		until := at + e.window + e.length
		if e.length > 0 && until >= end {
			until = end - tick
			if until-at-e.window < max(tick, e.minLength) {
				continue // too short to be what it is: maybe a later one fits
			}
		}
		if a := e.acts[0]; a.Kind == KindClog && at+a.For >= end {
			e.acts[0].For = (end - tick - at) / tick * tick
			if e.acts[0].For < tick {
				continue
			}
		}
		var undo Schedule
		for _, a := range e.acts {
			a.At = at
			if e.undo == KindStart || e.undo == KindResume || e.undo == KindSkew {
				u := Action{At: until, Kind: e.undo, Target: a.Target}
				if e.undo == KindSkew {
					u.By = -a.By
				}
				if a.Target.IsRole() || a.When != "" {
					tags++
					a.Tag = fmt.Sprint(tags)
					u.Target = Tagged(a.Tag)
				}
				undo = append(undo, u)
			}
			s = append(s, a)
		}
		if e.undo == KindHeal {
			undo = append(undo, Action{At: until, Kind: KindHeal})
		}
		s = append(s, undo...)
		placed = true
		cursor = at + e.window
		switch {
		case e.undo != 0:
			cursor = until
		case e.acts[0].Kind == KindClog:
			cursor = at + e.acts[0].For
		}
		if e.power {
			lastPower = cursor
		}
	}
	return s.Sorted()
}

// quietMeans are the mean quiet intervals a run may draw (before
// Options.RateScale): from a quarter of a second to 2 s between one
// episode's end and the next one's start.
var quietMeans = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}

// Generate draws a schedule of class c for the run o from r, swarm-style
// and paced: each fault of the class is enabled with even odds and given
// a weight of 1, 2 or 4 — a targeted one, when the run offers triggers,
// with odds of nine in ten and a weight of 2, 4 or 8, or 8, 16 or 32 when
// it is aimed at the run's main window (at least one fault is enabled);
// then episodes follow
// one another, each of an enabled fault drawn by weight, each after a
// quiet interval drawn around a mean chosen per run (0.25 to 2 s, divided
// by o.RateScale; none, half the time, before a targeted fault), each
// undone before the next begins. Runs differ in kind,
// pace and detail. The same stream state gives the same schedule. Pass
// w.Rand("faults") or env.NewRand(seed).Fork("faults").
func Generate(r *env.Rand, c Class, o Options) Schedule {
	o = o.withDefaults()
	g := newGenerator(c, o, func(n int) []string {
		brokers := slices.Clone(o.Brokers)
		r.Shuffle(len(brokers), func(i, j int) { brokers[i], brokers[j] = brokers[j], brokers[i] })
		return brokers[:1+r.Intn(n)]
	})
	if len(g.feats) == 0 {
		return Schedule{}
	}
	var on []feature
	var weights []int
	for _, f := range g.feats {
		odds, weight := 0.5, 1
		switch {
		case g.aimsAtMain(f.name):
			odds, weight = 0.9, 8
		case targeted(f.name):
			odds, weight = 0.9, 2
		}
		if r.Chance(odds) {
			on = append(on, f)
			weights = append(weights, weight<<r.Intn(3))
		}
	}
	if len(on) == 0 {
		on = append(on, g.feats[r.Intn(len(g.feats))])
		weights = append(weights, 1)
	}
	total := 0
	for _, w := range weights {
		total += w
	}
	meanTicks := max(2, int(float64(quietMeans[r.Intn(len(quietMeans))]/tick)/o.RateScale))
	ch := randChooser{r}
	var eps []episode
	var gaps []time.Duration
	// Enough episodes to fill the workload whatever their lengths; pace
	// drops what does not fit.
	for range int(o.Duration/tick)/max(1, meanTicks/2) + 1 {
		k := r.Intn(total)
		i := 0
		for ; k >= weights[i]; i++ {
			k -= weights[i]
		}
		gap := time.Duration(meanTicks/2+r.Intn(meanTicks+1)) * tick
		if targeted(on[i].name) && r.Chance(0.5) {
			// Recovery is where windows open (a follower catching up, an
			// ISR growing back, a new leader): half the time a targeted
			// fault is armed the moment the one before it is undone.
			gap = 0
		}
		eps, gaps = chain(eps, gaps, on[i].draw(g, ch), gap)
	}
	return g.pace(eps, gaps)
}
