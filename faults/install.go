package faults

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
)

// Fired is one action as it happened: when, what, and the nodes its targets
// resolved to. The runner turns these into the history's fault annotations.
type Fired struct {
	At     env.Time // world time it fired
	Action Action
	Node   string     // what Target resolved to ("" if the action has none)
	Peer   string     // what Peer resolved to
	Groups [][]string // what a partition's groups resolved to
	// Skipped says why the action did nothing ("" when it was applied): a
	// role no node played, a tag whose action was skipped, a link from a
	// node to itself, a corruption that found no file.
	Skipped string
}

// String prints the action and where it landed:
// "+12.5s crash leader of orders/0 → n2".
func (f Fired) String() string {
	s := f.Action.String()
	switch {
	case f.Skipped != "":
		return s + " → skipped: " + f.Skipped
	case f.Groups != nil:
		gs := make([]string, len(f.Groups))
		for i, g := range f.Groups {
			gs[i] = "[" + strings.Join(g, " ") + "]"
		}
		return s + " → " + strings.Join(gs, " ")
	case f.Peer != "":
		return s + " → " + f.Node + " " + f.Peer
	case f.Node != "":
		return s + " → " + f.Node
	}
	return s
}

// Installation is a schedule installed on a world: it records what fired
// and remembers the clock faults it applied, so HealAll can undo them.
type Installation struct {
	w      *sim.World
	res    Resolver
	rand   *env.Rand
	tags   map[string]string
	fired  []Fired
	onFire func(Fired)
	armed  []*armed // triggers waiting for their probe, in arming order
}

// armed is a triggered action between its At and its window's end.
type armed struct {
	a    Action
	done bool
}

// Install schedules every action of s on w at start+At (actions whose time
// has passed fire at once). Roles are resolved by res when each action
// fires, with randomness from the world's "faults/resolve" stream; every action,
// applied or skipped, writes a trace note and is recorded in Fired. A
// schedule that fails Validate or names a node the world lacks is an error,
// and nothing is scheduled.
func Install(w *sim.World, s Schedule, res Resolver, start env.Time) (*Installation, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	for _, a := range s {
		for _, t := range a.targets() {
			if t.Role == RoleNode && w.Node(t.Name) == nil {
				return nil, fmt.Errorf("faults: %q names node %s, which the world does not have", a.String(), t.Name)
			}
			if t.IsRole() && t.Role != RoleProbed && res == nil {
				return nil, fmt.Errorf("faults: %q needs a Resolver for %q", a.String(), t.String())
			}
		}
	}
	in := &Installation{
		w: w, res: res, rand: w.Rand("faults/resolve"),
		tags: map[string]string{},
	}
	triggers := false
	for _, a := range s.Sorted() {
		if a.When == "" {
			w.At(start.Add(a.At), func() { in.fire(a, "") })
			continue
		}
		triggers = true
		w.At(start.Add(a.At), func() { in.arm(a) })
	}
	if triggers {
		w.OnProbe(in.probeHit)
	}
	return in, nil
}

// arm starts waiting for a's probe; if it is not hit within a.Within, a is
// recorded as skipped.
func (in *Installation) arm(a Action) {
	t := &armed{a: a}
	in.armed = append(in.armed, t)
	in.w.Trace().Note("faults: armed " + a.String())
	in.w.After(a.Within, func() {
		if t.done {
			return
		}
		t.done = true
		in.disarm()
		in.record(Fired{At: in.w.Now(), Action: a, Skipped: fmt.Sprintf("%s not hit within %v", a.When, a.Within)})
	})
}

// probeHit fires every armed trigger the hit matches, each right after the
// event that hit it, in the order they were armed.
func (in *Installation) probeHit(h sim.ProbeHit) {
	for _, t := range in.armed {
		if t.done || h.Name != t.a.When || (t.a.On != "" && h.Subject != t.a.On) {
			continue
		}
		t.done = true
		a, node := t.a, h.Node
		in.w.At(in.w.Now(), func() { in.fire(a, node) })
	}
	in.disarm()
}

// disarm drops the triggers that fired or expired.
func (in *Installation) disarm() {
	in.armed = slices.DeleteFunc(in.armed, func(t *armed) bool { return t.done })
}

// OnFire calls f with each action as it fires, after it is recorded.
func (in *Installation) OnFire(f func(Fired)) { in.onFire = f }

// Fired lists the actions that have fired so far, in order.
func (in *Installation) Fired() []Fired { return slices.Clone(in.fired) }

// resolve finds the node t names now; probed is the node whose probe hit
// fired the action ("" if none did).
func (in *Installation) resolve(t Target, probed string) (string, string) {
	switch t.Role {
	case RoleNode:
		return t.Name, ""
	case RoleProbed:
		if probed == "" {
			return "", "the probe was hit by no node"
		}
		return probed, ""
	case RoleTag:
		n, ok := in.tags[t.Name]
		if !ok {
			return "", fmt.Sprintf("$%s was not applied", t.Name)
		}
		return n, ""
	}
	n, ok := in.res.Resolve(t, in.rand)
	if !ok {
		return "", "no node is " + t.String()
	}
	if in.w.Node(n) == nil {
		return "", fmt.Sprintf("%s resolved to unknown node %q", t.String(), n)
	}
	return n, ""
}

func (in *Installation) fire(a Action, probed string) {
	f := Fired{At: in.w.Now(), Action: a}
	f.Skipped = in.apply(a, probed, &f)
	if f.Skipped == "" && a.Tag != "" {
		in.tags[a.Tag] = f.Node
	}
	in.record(f)
}

func (in *Installation) record(f Fired) {
	in.w.Trace().Note("faults: " + f.String())
	in.fired = append(in.fired, f)
	if in.onFire != nil {
		in.onFire(f)
	}
}

// apply resolves a's targets into f and acts; it returns why it did not.
func (in *Installation) apply(a Action, probed string, f *Fired) string {
	w := in.w
	var why string
	if !a.Target.IsZero() {
		if f.Node, why = in.resolve(a.Target, probed); why != "" {
			return why
		}
	}
	if !a.Peer.IsZero() {
		if f.Peer, why = in.resolve(a.Peer, probed); why != "" {
			return why
		}
		if f.Peer == f.Node {
			return fmt.Sprintf("both ends are %s", f.Node)
		}
	}
	if a.Kind == KindPartition {
		f.Groups = make([][]string, len(a.Groups))
		group := map[string]int{}
		for i, g := range a.Groups {
			for _, t := range g {
				n, why := in.resolve(t, probed)
				if why != "" {
					f.Groups = nil
					return why
				}
				if j, seen := group[n]; seen {
					if j != i {
						f.Groups = nil
						return fmt.Sprintf("%s is in two groups", n)
					}
					continue // named twice on one side ("the probed node" and its name)
				}
				group[n] = i
				f.Groups[i] = append(f.Groups[i], n)
			}
		}
	}
	n := w.Node(f.Node) // nil for kinds without a target
	switch a.Kind {
	case KindCrash:
		n.Crash()
	case KindPowerLoss:
		n.PowerLoss(a.Torn)
	case KindStart:
		n.Start()
	case KindRestart:
		n.Restart()
	case KindPause:
		n.Pause()
	case KindResume:
		n.Resume()
	case KindPartition:
		w.Partition(f.Groups...)
	case KindIsolate:
		w.Isolate(f.Node)
	case KindCut:
		w.Cut(f.Node, f.Peer)
	case KindCutOneWay:
		w.CutOneWay(f.Node, f.Peer)
	case KindHeal:
		w.Heal()
	case KindClog:
		if f.Peer == "" {
			w.ClogNode(f.Node, a.For)
		} else {
			w.Clog(f.Node, f.Peer, a.For)
		}
	case KindReset:
		if f.Peer == "" {
			w.ResetNode(f.Node)
		} else {
			w.ResetLink(f.Node, f.Peer)
		}
	case KindDelayFrame:
		match, _ := FrameMatcher(a.Frame) // validated at Install
		w.DelayFrame(f.Node, f.Peer, match, a.By, a.Count)
	case KindSkew:
		n.SkewClock(a.By)
	case KindDrift:
		n.DriftClock(a.PPM)
	case KindFailSync:
		n.FailSyncs(a.Count)
	case KindFailRead:
		n.FailReads(a.Prefix, a.Count)
	case KindCorrupt:
		if !n.CorruptByte(a.Prefix) {
			return fmt.Sprintf("no file under %q on %s", a.Prefix, f.Node)
		}
	default:
		panic(fmt.Sprintf("faults: unhandled kind %v", a.Kind))
	}
	return ""
}

// HealAll lifts every fault this installation left behind; it is the
// function HealAll, kept as a method so runners need not care which.
func (in *Installation) HealAll(nodes []string) { HealAll(in.w, nodes) }

// HealAll returns the world to health for the drain phase: every network
// fault is lifted (cuts, clogs, latency spikes, frame delays not yet
// spent), and each named node gets its clock back on world time, its
// pending disk faults disarmed, and is resumed if paused and started if
// down (crashed, halted, powered off or never started), in the order given.
func HealAll(w *sim.World, nodes []string) {
	w.Trace().Note("faults: heal all")
	w.HealNetwork()
	for _, name := range nodes {
		n := w.Node(name)
		if n == nil {
			panic(fmt.Sprintf("faults: HealAll: no node named %q", name))
		}
		n.ResetClock()
		n.ClearDiskFaults()
		if n.Paused() {
			n.Resume()
		}
		if !n.Running() {
			n.Start()
		}
	}
}
