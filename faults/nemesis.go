package faults

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/env"
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

	Brokers    []string
	Controller string // "" if the cluster has no separate controller node
	Clients    []string
	Sink       string // "" if the workload has no sink store

	// Partitions, Groups and TransactionalIDs are what the roles "leader
	// of", "a follower of", "the group coordinator of" and "the transaction
	// coordinator of" may name.
	Partitions       []TopicPartition
	Groups           []string
	TransactionalIDs []string

	// RateScale multiplies every fault's rate; 0 means 1.
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
// until they are undone.
type episode struct {
	at     time.Duration
	acts   []Action      // the opening actions (several for a correlated power loss)
	length time.Duration // until the undoing actions; 0 if none
	undo   Kind          // KindStart, KindResume, KindHeal, or 0
	lane   lane
}

type lane uint8

const (
	laneFree  lane = iota
	laneCut        // partitions and cuts: one at a time, each healed before the next
	lanePower      // power losses: one episode at a time
)

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
	if o.Controller != "" {
		controller = []Target{Controller()}
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
	g.named = slices.Concat(o.Brokers, nonEmpty(o.Controller), o.Clients, nonEmpty(o.Sink))
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
	if n := o.diskFaultyMax(); n > 0 && c&ClassDisk != 0 {
		g.faulty = faulty(n)
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

func one(a Action, length time.Duration, undo Kind, l lane) episode {
	return episode{acts: []Action{a}, length: length, undo: undo, lane: l}
}

// features are the faults of every class, simplest first within a class.
var features = []feature{
	{"crash", ClassCrash, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindCrash, Target: pick(c, g.crashable)}, ticks(c, 10, 100), KindStart, laneFree)
	}},
	{"restart", ClassCrash, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindRestart, Target: pick(c, g.crashable)}, 0, 0, laneFree)
	}},
	{"partition", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindPartition, Groups: g.drawGroups(c)}, ticks(c, 10, 200), KindHeal, laneCut)
	}},
	{"isolate", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindIsolate, Target: pick(c, g.reachable)}, ticks(c, 10, 200), KindHeal, laneCut)
	}},
	{"cut", ClassNetwork, func(g *generator, c chooser) episode {
		return one(link(KindCut, c, g.linkable), ticks(c, 10, 200), KindHeal, laneCut)
	}},
	{"cut-one-way", ClassNetwork, func(g *generator, c chooser) episode {
		return one(link(KindCutOneWay, c, g.linkable), ticks(c, 10, 200), KindHeal, laneCut)
	}},
	{"clog", ClassNetwork, func(g *generator, c chooser) episode {
		a := link(KindClog, c, g.linkable)
		a.For = ticks(c, 1, 50)
		return one(a, 0, 0, laneFree)
	}},
	{"clog-node", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindClog, Target: pick(c, g.reachable), For: ticks(c, 1, 50)}, 0, 0, laneFree)
	}},
	{"reset", ClassNetwork, func(g *generator, c chooser) episode {
		return one(link(KindReset, c, g.linkable), 0, 0, laneFree)
	}},
	{"reset-node", ClassNetwork, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindReset, Target: pick(c, g.reachable)}, 0, 0, laneFree)
	}},
	{"delay-frame", ClassNetwork, func(g *generator, c chooser) episode {
		r := pick(c, g.frames)
		return one(Action{Kind: KindDelayFrame, Frame: r.frame, Target: r.from, Peer: r.to, By: ticks(c, 1, 50), Count: 1 + c.intn(3)}, 0, 0, laneFree)
	}},
	{"power-loss", ClassPower | ClassCorrelatedPower, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindPowerLoss, Target: pick(c, g.powerable)}, ticks(c, 10, 100), KindStart, lanePower)
	}},
	{"power-loss-torn", ClassPower | ClassCorrelatedPower, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindPowerLoss, Target: pick(c, g.powerable), Torn: true}, ticks(c, 10, 100), KindStart, lanePower)
	}},
	{"power-loss-correlated", ClassCorrelatedPower, func(g *generator, c chooser) episode {
		brokers := slices.Clone(g.o.Brokers)
		k := 2 + c.intn(len(brokers)-1)
		e := episode{length: ticks(c, 10, 100), undo: KindStart, lane: lanePower}
		for range k {
			i := c.intn(len(brokers))
			e.acts = append(e.acts, Action{Kind: KindPowerLoss, Target: Node(brokers[i]), Torn: c.intn(2) == 1})
			brokers = slices.Delete(brokers, i, i+1)
		}
		return e
	}},
	{"fail-sync", ClassDisk, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindFailSync, Target: Node(pick(c, g.faulty)), Count: 1 + c.intn(3)}, ticks(c, 10, 100), KindStart, laneFree)
	}},
	{"fail-read", ClassDisk, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindFailRead, Target: Node(pick(c, g.faulty)), Count: 1 + c.intn(3), Prefix: pick(c, g.o.DiskPrefixes)}, ticks(c, 10, 100), KindStart, laneFree)
	}},
	{"corrupt", ClassDisk, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindCorrupt, Target: Node(pick(c, g.faulty)), Prefix: pick(c, g.o.DiskPrefixes)}, ticks(c, 10, 100), KindStart, laneFree)
	}},
	{"pause", ClassClock, func(g *generator, c chooser) episode {
		return one(Action{Kind: KindPause, Target: pick(c, g.pausable)}, ticks(c, 1, 150), KindResume, laneFree)
	}},
	{"skew", ClassClock, func(g *generator, c chooser) episode {
		by := ticks(c, 1, 600)
		if c.intn(2) == 1 {
			by = -by
		}
		return one(Action{Kind: KindSkew, Target: pick(c, g.clockable), By: by}, 0, 0, laneFree)
	}},
	{"drift", ClassClock, func(g *generator, c chooser) episode {
		ppm := int64(1+c.intn(100)) * 1000
		if c.intn(2) == 1 {
			ppm = -ppm
		}
		return one(Action{Kind: KindDrift, Target: pick(c, g.clockable), PPM: ppm}, 0, 0, laneFree)
	}},
}

// drawGroups draws the sides of a partition: one role cut off from the
// rest, a minority of brokers (maybe with the controller) cut from the
// majority, or every named node on a random side.
func (g *generator) drawGroups(c chooser) [][]Target {
	switch c.intn(3) {
	case 0:
		return [][]Target{{pick(c, g.reachable)}}
	case 1:
		if len(g.o.Brokers) >= 3 {
			brokers := slices.Clone(g.o.Brokers)
			var minority []Target
			for range 1 + c.intn((len(brokers)-1)/2) {
				i := c.intn(len(brokers))
				minority = append(minority, Node(brokers[i]))
				brokers = slices.Delete(brokers, i, i+1)
			}
			if g.o.Controller != "" && c.intn(2) == 1 {
				minority = append(minority, Node(g.o.Controller))
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

// assemble turns episodes into a schedule that keeps the class's promises:
// every fault undone before the workload ends, one partition or cut at a
// time, one power-loss episode at a time (with SettleTime between them
// unless the class allows correlated power loss), no two overlapping faults
// of one family on one named node. Episodes that cannot fit are dropped.
func (g *generator) assemble(eps []episode) Schedule {
	slices.SortStableFunc(eps, func(a, b episode) int { return cmp.Compare(a.at, b.at) })
	end := g.o.Duration
	var s Schedule
	cutFree, powerFree := time.Duration(0), time.Duration(0)
	busy := map[string]time.Duration{} // family/node → until
	tags := 0
	for _, e := range eps {
		if e.at >= end {
			continue
		}
		until := e.at + e.length
		if e.length > 0 && until >= end {
			until = end - tick
			if until-e.at < tick {
				continue
			}
		}
		if a := e.acts[0]; a.Kind == KindClog && e.at+a.For > end {
			e.acts[0].For = (end - e.at) / tick * tick
			if e.acts[0].For < tick {
				continue
			}
		}
		switch e.lane {
		case laneCut:
			if e.at < cutFree {
				continue
			}
			cutFree = until + tick
		case lanePower:
			if e.at < powerFree {
				continue
			}
			powerFree = until + tick
			if !g.class.Has(ClassCorrelatedPower) {
				powerFree = until + g.o.SettleTime
			}
		}
		if e.undo == KindStart || e.undo == KindResume {
			clash := false
			for _, a := range e.acts {
				if a.Target.Role == RoleNode && e.at < busy[e.undo.String()+"/"+a.Target.Name] {
					clash = true
				}
			}
			if clash {
				continue
			}
			for _, a := range e.acts {
				if a.Target.Role == RoleNode {
					busy[e.undo.String()+"/"+a.Target.Name] = until + tick
				}
			}
		}
		var undo Schedule
		for _, a := range e.acts {
			a.At = e.at
			if e.undo == KindStart || e.undo == KindResume {
				u := Action{At: until, Kind: e.undo, Target: a.Target}
				if a.Target.IsRole() {
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
	}
	return s.Sorted()
}

// Generate draws a schedule of class c for the run o from r, swarm-style:
// each fault of the class is enabled with even odds (at least one is), at a
// rate drawn per run — one every 3 to 48 s on average, scaled by
// o.RateScale — so runs differ in kind as well as in detail. The same
// stream state gives the same schedule. Pass w.Rand("faults") or
// env.NewRand(seed).Fork("faults").
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
	for _, f := range g.feats {
		if r.Chance(0.5) {
			on = append(on, f)
		}
	}
	if len(on) == 0 {
		on = append(on, g.feats[r.Intn(len(g.feats))])
	}
	means := []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 24 * time.Second, 48 * time.Second}
	ch := randChooser{r}
	var eps []episode
	for _, f := range on {
		meanTicks := max(1, int(float64(means[r.Intn(len(means))]/tick)/o.RateScale))
		for at := time.Duration(1+r.Intn(2*meanTicks)) * tick; at < o.Duration; at += time.Duration(1+r.Intn(2*meanTicks)) * tick {
			e := f.draw(g, ch)
			e.at = at
			eps = append(eps, e)
		}
	}
	return g.assemble(eps)
}
