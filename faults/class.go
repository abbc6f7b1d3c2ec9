package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Class is a set of fault classes: what a configuration claims to survive
// (DESIGN.md §5). It parses from and prints as a comma-separated union,
// "crash,network"; "none" is the empty set and "all" every class.
type Class uint8

const (
	ClassCrash           Class = 1 << iota // process crash and restart
	ClassNetwork                           // partitions, one-way cuts, clogs, resets, delayed frames
	ClassPower                             // power loss of one node at a time
	ClassCorrelatedPower                   // power loss of several nodes at once (up to every broker)
	ClassDisk                              // failed syncs and reads, corruption of a minority of brokers (and of controllers, with 3 or more)
	ClassClock                             // clock skew and drift, pauses

	ClassNone Class = 0
	ClassAll        = ClassCrash | ClassNetwork | ClassPower | ClassCorrelatedPower | ClassDisk | ClassClock
)

var classNames = []struct {
	c    Class
	name string
}{
	{ClassCrash, "crash"}, {ClassNetwork, "network"}, {ClassPower, "power"},
	{ClassCorrelatedPower, "correlated-power"}, {ClassDisk, "disk"}, {ClassClock, "clock"},
}

// ParseClass parses a union such as "crash,network". Unknown names are an
// error that lists them and the known ones.
func ParseClass(s string) (Class, error) {
	var c Class
	var unknown []string
	parts := strings.Split(s, ",")
	for _, p := range parts {
		p = strings.TrimSpace(p)
		switch p {
		case "none":
			continue
		case "all":
			c |= ClassAll
			continue
		}
		i := slices.IndexFunc(classNames, func(n struct {
			c    Class
			name string
		}) bool {
			return n.name == p
		})
		if i < 0 {
			unknown = append(unknown, fmt.Sprintf("%q", p))
			continue
		}
		c |= classNames[i].c
	}
	if len(unknown) > 0 {
		return 0, fmt.Errorf("faults: unknown fault class %s in %q (known: none, crash, network, power, correlated-power, disk, clock, all)",
			strings.Join(unknown, ", "), s)
	}
	return c, nil
}

// MustParseClass is ParseClass for names known at compile time.
func MustParseClass(s string) Class {
	c, err := ParseClass(s)
	if err != nil {
		panic(err)
	}
	return c
}

func (c Class) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassAll:
		return "all"
	}
	var names []string
	for _, n := range classNames {
		if c&n.c != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// Has reports whether c includes every class of d.
func (c Class) Has(d Class) bool { return c&d == d }

// MarshalText prints the class as its union of names.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a union of names.
func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	*c = v
	return err
}

// kinds are the action kinds a class allows.
func (c Class) kinds() map[Kind]bool {
	m := map[Kind]bool{}
	add := func(ks ...Kind) {
		for _, k := range ks {
			m[k] = true
		}
	}
	if c&ClassCrash != 0 {
		add(KindCrash, KindRestart, KindStart)
	}
	if c&ClassNetwork != 0 {
		add(KindPartition, KindIsolate, KindCut, KindCutOneWay, KindHeal, KindClog, KindReset, KindDelayFrame)
	}
	if c&(ClassPower|ClassCorrelatedPower) != 0 {
		add(KindPowerLoss, KindStart)
	}
	if c&ClassDisk != 0 {
		add(KindFailSync, KindFailRead, KindCorrupt, KindStart)
	}
	if c&ClassClock != 0 {
		add(KindSkew, KindDrift, KindPause, KindResume)
	}
	return m
}

// Check reports the first way s breaks what class c promises, under the
// cluster shape and workload of o:
//   - every action is of a kind the class allows, and fires before the
//     workload ends (o.Duration); clogs end by then too;
//   - every crash and power loss is undone by a start, every pause by a
//     resume, every partition or cut by a heal, before the workload ends;
//   - power (without correlated-power): at most one power loss is open at
//     once, and each begins at least o.SettleTime after the last one was
//     undone, so no two replicas lose unsynced data together;
//   - correlated-power: at most every broker is off at once;
//   - disk: faults hit named brokers, at most o.DiskFaultyMax of them, and
//     a minority of the controllers when there are three or more.
//
// The runner can use it to refuse a hand-written schedule (--faults) that
// would make a violation meaningless.
func (c Class) Check(s Schedule, o Options) error {
	if err := s.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	s = s.Sorted()
	allowed := c.kinds()
	for _, a := range s {
		if !allowed[a.Kind] {
			return fmt.Errorf("faults: %q is not in fault class %s", a.String(), c)
		}
		if a.At >= o.Duration {
			return fmt.Errorf("faults: %q fires after the workload ends (%v)", a.String(), o.Duration)
		}
		if a.At+a.For > o.Duration {
			return fmt.Errorf("faults: %q outlasts the workload (%v)", a.String(), o.Duration)
		}
		if a.At+a.Within > o.Duration {
			return fmt.Errorf("faults: %q: its trigger window outlasts the workload (%v)", a.String(), o.Duration)
		}
	}
	st := analyze(s)
	for i, a := range s {
		switch a.Kind {
		case KindCrash, KindPowerLoss, KindPause, KindPartition, KindIsolate, KindCut, KindCutOneWay:
			if st.closedBy[i] < 0 {
				return fmt.Errorf("faults: %q is never undone", a.String())
			}
			if u := s[st.closedBy[i]]; a.When != "" && u.At < a.At+a.Within {
				return fmt.Errorf("faults: %q is undone by %q before its trigger window ends", a.String(), u.String())
			}
		}
	}
	// Power-loss windows, walked in firing order.
	open, limit := 0, 1
	if c.Has(ClassCorrelatedPower) {
		limit = max(1, len(o.Brokers))
	}
	lastClosed := time.Duration(-1)
	for i, a := range s {
		if a.Kind == KindPowerLoss {
			open++
			if open > limit {
				return fmt.Errorf("faults: %q makes %d nodes lose power at once; class %s allows %d", a.String(), open, c, limit)
			}
			if !c.Has(ClassCorrelatedPower) && lastClosed >= 0 && a.At < lastClosed+o.SettleTime {
				return fmt.Errorf("faults: %q comes %v after the last power loss was undone; class %s wants %v to settle",
					a.String(), a.At-lastClosed, c, o.SettleTime)
			}
		}
		if j := st.closes[i]; j >= 0 && s[j].Kind == KindPowerLoss {
			open--
			lastClosed = a.At
		}
	}
	faulty, faultyControllers := map[string]bool{}, map[string]bool{}
	for _, a := range s {
		switch a.Kind {
		case KindFailSync, KindFailRead, KindCorrupt:
			switch {
			case a.Target.Role == RoleNode && slices.Contains(o.Brokers, a.Target.Name):
				faulty[a.Target.Name] = true
			case a.Target.Role == RoleNode && slices.Contains(o.Controllers, a.Target.Name):
				faultyControllers[a.Target.Name] = true
			default:
				return fmt.Errorf("faults: %q: disk faults must name a broker or a controller", a.String())
			}
		}
	}
	if len(faulty) > o.diskFaultyMax() {
		return fmt.Errorf("faults: disk faults on %d brokers (%s); class %s allows %d",
			len(faulty), strings.Join(slices.Sorted(maps.Keys(faulty)), ", "), c, o.diskFaultyMax())
	}
	if n := controllerDiskFaultyMax(o); len(faultyControllers) > n {
		return fmt.Errorf("faults: disk faults on %d controllers (%s); class %s allows %d of %d (a minority, with 3 or more)",
			len(faultyControllers), strings.Join(slices.Sorted(maps.Keys(faultyControllers)), ", "), c, n, len(o.Controllers))
	}
	return nil
}

// controllerDiskFaultyMax is how many controllers disk faults may hit: a
// minority of a quorum of three or more, none of a lone controller (whose
// metadata log has no other copy).
func controllerDiskFaultyMax(o Options) int {
	if len(o.Controllers) < 3 {
		return 0
	}
	return (len(o.Controllers) - 1) / 2
}

// structure is how a schedule's actions depend on each other: which action
// undoes which, and which earlier actions' tags each one uses.
type structure struct {
	closes   []int   // a start/resume: the crash/power-loss/pause it undoes; else -1
	healOf   [][]int // a heal: the partitions and cuts it lifts
	closedBy []int   // an opener: the action that undoes it; else -1
	needs    [][]int // the actions whose tags this one uses
}

func family(k Kind) Kind {
	switch k {
	case KindCrash, KindPowerLoss, KindFailSync, KindFailRead, KindCorrupt:
		return KindStart // undone by a start (a disk fault may halt the node)
	case KindPause:
		return KindResume
	case KindPartition, KindIsolate, KindCut, KindCutOneWay:
		return KindHeal
	}
	return 0
}

// analyze pairs up the actions of a sorted schedule. A start or resume
// undoes the action whose tag it targets, or else the latest open one on
// the same named node; a heal lifts every partition and cut since the
// previous heal.
func analyze(s Schedule) structure {
	st := structure{
		closes:   make([]int, len(s)),
		healOf:   make([][]int, len(s)),
		closedBy: make([]int, len(s)),
		needs:    make([][]int, len(s)),
	}
	owner := map[string]int{}
	var openCuts []int
	for i, a := range s {
		st.closes[i], st.closedBy[i] = -1, -1
		for _, t := range a.targets() {
			if t.Role == RoleTag {
				st.needs[i] = append(st.needs[i], owner[t.Name])
			}
		}
		switch a.Kind {
		case KindStart, KindResume:
			j := -1
			switch a.Target.Role {
			case RoleTag:
				if k := owner[a.Target.Name]; family(s[k].Kind) == a.Kind && st.closedBy[k] < 0 {
					j = k
				}
			case RoleNode:
				for k := i - 1; k >= 0; k-- {
					if family(s[k].Kind) == a.Kind && s[k].Target == a.Target && st.closedBy[k] < 0 {
						j = k
						break
					}
				}
			}
			if j >= 0 {
				st.closes[i], st.closedBy[j] = j, i
			}
		case KindSkew:
			// A skew of a tag whose action was a skew steps the clock
			// back: it undoes that one.
			if a.Target.Role == RoleTag {
				if k := owner[a.Target.Name]; s[k].Kind == KindSkew && st.closedBy[k] < 0 {
					st.closes[i], st.closedBy[k] = k, i
				}
			}
		case KindHeal:
			st.healOf[i] = openCuts
			for _, j := range openCuts {
				st.closedBy[j] = i
			}
			openCuts = nil
		}
		if family(a.Kind) == KindHeal {
			openCuts = append(openCuts, i)
		}
		if a.Tag != "" {
			owner[a.Tag] = i
		}
	}
	return st
}

// unit reports whether action i stands alone for delta debugging: it is
// not the undoing half of a pair.
func (st structure) unit(i int) bool { return st.closes[i] < 0 && st.healOf[i] == nil }
