package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/probe"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kind is what an action does.
type Kind uint8

const (
	KindCrash      Kind = iota + 1 // kill the process; its page cache survives
	KindPowerLoss                  // cut the power: unsynced bytes lost, maybe the last write torn
	KindStart                      // boot a crashed or powered-off node (a running one is left alone)
	KindRestart                    // bounce: crash if running, then start at once
	KindPause                      // freeze the node (a stop-the-world pause)
	KindResume                     // unfreeze it
	KindPartition                  // split the network into groups
	KindIsolate                    // cut one node off from every other, both ways
	KindCut                        // cut the link between two nodes, both ways
	KindCutOneWay                  // cut frames from one node to another
	KindHeal                       // lift every cut
	KindClog                       // hold every frame of a node or a link for a while
	KindReset                      // reset the connections of a node or a link
	KindDelayFrame                 // hold back the next matching frames on a link
	KindSkew                       // step a node's clock
	KindDrift                      // make a node's clock run fast or slow
	KindFailSync                   // fail a node's next disk syncs
	KindFailRead                   // fail a node's next disk reads
	KindCorrupt                    // flip a bit in a file on a node's disk
	kindEnd
)

var kindNames = [...]string{
	KindCrash: "crash", KindPowerLoss: "power-loss", KindStart: "start", KindRestart: "restart",
	KindPause: "pause", KindResume: "resume", KindPartition: "partition", KindIsolate: "isolate",
	KindCut: "cut", KindCutOneWay: "cut-one-way", KindHeal: "heal", KindClog: "clog",
	KindReset: "reset", KindDelayFrame: "delay-frame", KindSkew: "skew", KindDrift: "drift",
	KindFailSync: "fail-sync", KindFailRead: "fail-read", KindCorrupt: "corrupt",
}

func (k Kind) String() string {
	if k > 0 && k < kindEnd {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// ParseKind parses a kind's name; an unknown name is an error that quotes it.
func ParseKind(s string) (Kind, error) {
	for k := KindCrash; k < kindEnd; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("faults: unknown fault kind %q (known: %s)", s, strings.Join(kindNames[1:], ", "))
}

// MarshalText prints the kind's name.
func (k Kind) MarshalText() ([]byte, error) {
	if k == 0 || k >= kindEnd {
		return nil, fmt.Errorf("faults: invalid kind %d", k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText parses a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	*k = v
	return err
}

// Action is one timed step of a fault schedule. Which fields it uses
// depends on its Kind; the others stay zero, so an action prints as one
// line and parses back from it (see String and ParseAction):
//
//	+1s crash leader of orders/0 as $1      Target, Tag
//	+1s power-loss torn n2                  Target, Torn
//	+4s start $1                            Target (start, restart, pause, resume, isolate alike)
//	+2s partition [n1, the active controller] [n2] Groups; nodes in no group form one more
//	+2s cut n1 <-> n2                       Target, Peer (cut-one-way: n1 -> n2)
//	+6s heal                                (nothing)
//	+3s clog n1 <-> n2 for 2s               Target, Peer (optional), For
//	+3s reset n1                            Target, Peer (optional)
//	+3s delay-frame EndTxn a client -> n1 by 1.5s x1   Frame, Target, Peer, By, Count
//	+5s skew n3 by -3s                      Target, By
//	+5s drift n3 by +500ppm                 Target, PPM
//	+7s fail-sync n1 x2                     Target, Count
//	+7s fail-read n1 x1 under "orders-0/"   Target, Count, Prefix (optional)
//	+7s corrupt n1 under "orders-0/"        Target, Prefix (optional)
//
// Any action may wait for a probe (a trigger, When/On/Within):
//
//	+5s when produce-acknowledged-before-replication on input/0 within 3s: isolate the probed node as $1
type Action struct {
	// At is when the action fires, measured from the start of the workload.
	At   time.Duration
	Kind Kind
	// Target is the node acted on; for a link (cut, cut-one-way, clog,
	// reset, delay-frame) it is the sending end.
	Target Target
	// Peer is the other end of a link; zero for a node-wide clog or reset.
	Peer Target
	// Groups are the sides of a partition.
	Groups [][]Target
	// Torn makes a power loss tear the last unsynced write.
	Torn bool
	// For is how long a clog holds frames.
	For time.Duration
	// By is a delayed frame's extra latency, or a skew's clock step
	// (negative steps the clock back).
	By time.Duration
	// PPM is a drift's rate in parts per million (negative runs slow; 0
	// stops drifting). |PPM| is at most 100,000.
	PPM int64
	// Count is how many frames are delayed, or syncs or reads fail.
	Count int
	// Prefix restricts a read failure or corruption to files whose names
	// start with it ("" for any file).
	Prefix string
	// Frame selects the frames a delay-frame holds back: a Kafka API name
	// as kmsg names it ("Produce", "EndTxn") matching requests by their key
	// (the frame's first two bytes, big-endian), or "any".
	Frame string
	// Tag names the node Target resolved to, so later actions can say "$tag"
	// (a start undoing this crash hits the node crashed, not today's leader).
	Tag string

	// When makes the action a trigger: armed at At, it fires right after
	// the first hit of the probe named When (package probe) about subject
	// On ("" for any subject) no later than At+Within, so the fault lands
	// inside the window the probe marks; a probe not hit in time skips the
	// action. "the probed node" then names the node that hit it.
	When   string
	On     string
	Within time.Duration
}

func (k Kind) hasTarget() bool { return k != KindPartition && k != KindHeal }

func (k Kind) isLink() bool {
	switch k {
	case KindCut, KindCutOneWay, KindClog, KindReset, KindDelayFrame:
		return true
	}
	return false
}

// Validate reports the first field that does not fit the action's kind.
func (a Action) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("faults: %s: "+format, append([]any{a.Kind}, args...)...)
	}
	if a.Kind == 0 || a.Kind >= kindEnd {
		return fmt.Errorf("faults: invalid kind %d", a.Kind)
	}
	if a.At < 0 {
		return bad("negative time %v", a.At)
	}
	k := a.Kind
	if k.hasTarget() {
		if a.Target.IsZero() {
			return bad("no target")
		}
		if err := a.Target.validate(); err != nil {
			return err
		}
	} else if !a.Target.IsZero() {
		return bad("takes no target")
	}
	switch {
	case k == KindCut || k == KindCutOneWay || k == KindDelayFrame:
		if a.Peer.IsZero() {
			return bad("no peer")
		}
	case k.isLink():
	default:
		if !a.Peer.IsZero() {
			return bad("takes no peer")
		}
	}
	if !a.Peer.IsZero() {
		if err := a.Peer.validate(); err != nil {
			return err
		}
	}
	if k == KindPartition {
		if len(a.Groups) == 0 {
			return bad("no groups")
		}
		for _, g := range a.Groups {
			if len(g) == 0 {
				return bad("empty group")
			}
			for _, t := range g {
				if err := t.validate(); err != nil {
					return err
				}
			}
		}
	} else if a.Groups != nil {
		return bad("takes no groups")
	}
	if a.Torn && k != KindPowerLoss {
		return bad("cannot be torn")
	}
	if (a.For != 0) != (k == KindClog) || a.For < 0 {
		return bad("bad clog duration %v", a.For)
	}
	switch k {
	case KindDelayFrame:
		if a.By <= 0 {
			return bad("delay must be positive, got %v", a.By)
		}
	case KindSkew:
		if a.By == 0 {
			return bad("zero skew")
		}
	default:
		if a.By != 0 {
			return bad("takes no duration (by %v)", a.By)
		}
	}
	if a.PPM != 0 && k != KindDrift || a.PPM < -100_000 || a.PPM > 100_000 {
		return bad("bad drift %dppm", a.PPM)
	}
	switch k {
	case KindDelayFrame, KindFailSync, KindFailRead:
		if a.Count < 1 {
			return bad("count must be at least 1, got %d", a.Count)
		}
	default:
		if a.Count != 0 {
			return bad("takes no count")
		}
	}
	if a.Prefix != "" && k != KindFailRead && k != KindCorrupt {
		return bad("takes no file prefix")
	}
	if k == KindDelayFrame {
		if _, err := FrameMatcher(a.Frame); err != nil {
			return err
		}
	} else if a.Frame != "" {
		return bad("takes no frame selector")
	}
	if a.Tag != "" && (!k.hasTarget() || !validName(a.Tag)) {
		return bad("bad tag %q", a.Tag)
	}
	switch {
	case a.When == "" && (a.On != "" || a.Within != 0):
		return bad("a subject or window without a trigger (when)")
	case a.When != "" && !probe.Known(a.When):
		return bad("unknown probe %q in trigger (known: %s)", a.When, strings.Join(probe.Names(), ", "))
	case a.When != "" && a.Within <= 0:
		return bad("trigger on %s needs a positive window (within), got %v", a.When, a.Within)
	case a.On != "" && !validName(a.On):
		return bad("bad trigger subject %q", a.On)
	}
	if a.When == "" {
		for _, t := range a.targets() {
			if t.Role == RoleProbed {
				return bad("%q is only for actions with a trigger (when)", t.String())
			}
		}
	}
	return nil
}

// String prints the action as one line that ParseAction reads back, e.g.
// "+12.5s crash leader of orders/0 as $1".
func (a Action) String() string {
	var b strings.Builder
	b.WriteString("+" + a.At.String() + " ")
	if a.When != "" {
		b.WriteString("when " + a.When)
		if a.On != "" {
			b.WriteString(" on " + a.On)
		}
		b.WriteString(" within " + a.Within.String() + ": ")
	}
	b.WriteString(a.Kind.String())
	word := func(s string) { b.WriteString(" " + s) }
	switch a.Kind {
	case KindPowerLoss:
		if a.Torn {
			word("torn")
		}
	case KindDelayFrame:
		word(a.Frame)
	case KindPartition:
		for _, g := range a.Groups {
			names := make([]string, len(g))
			for i, t := range g {
				names[i] = t.String()
			}
			word("[" + strings.Join(names, ", ") + "]")
		}
	}
	if a.Kind.hasTarget() {
		word(a.Target.String())
	}
	if !a.Peer.IsZero() {
		arrow := "<->"
		if a.Kind == KindCutOneWay || a.Kind == KindDelayFrame {
			arrow = "->"
		}
		word(arrow + " " + a.Peer.String())
	}
	switch a.Kind {
	case KindClog:
		word("for " + a.For.String())
	case KindDelayFrame:
		word("by " + a.By.String())
	case KindSkew:
		word("by " + signed(a.By))
	case KindDrift:
		word(fmt.Sprintf("by %+dppm", a.PPM))
	}
	if a.Count != 0 {
		word(fmt.Sprintf("x%d", a.Count))
	}
	if a.Prefix != "" {
		word("under " + strconv.Quote(a.Prefix))
	}
	if a.Tag != "" {
		word("as $" + a.Tag)
	}
	return b.String()
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

var countRE = regexp.MustCompile(`^x([0-9]+)$`)

// ParseAction parses one line as Action.String prints it. Errors name the
// line and what in it was not understood.
func ParseAction(line string) (Action, error) {
	a, err := parseAction(strings.TrimSpace(line))
	if err != nil {
		return Action{}, fmt.Errorf("%w (in %q)", err, strings.TrimSpace(line))
	}
	return a, nil
}

func parseAction(line string) (Action, error) {
	var a Action
	head, rest, _ := strings.Cut(line, " ")
	if !strings.HasPrefix(head, "+") {
		return a, fmt.Errorf("faults: action must start with +time, e.g. +1.5s")
	}
	at, err := time.ParseDuration(head[1:])
	if err != nil {
		return a, fmt.Errorf("faults: bad time %q", head)
	}
	a.At = at
	rest = strings.TrimSpace(rest)
	if clause, ok := strings.CutPrefix(rest, "when "); ok {
		clause, after, found := strings.Cut(clause, ":")
		if !found {
			return a, fmt.Errorf("faults: a trigger reads \"when <probe> [on <subject>] within <duration>: <action>\"")
		}
		if err := a.parseTrigger(strings.Fields(clause)); err != nil {
			return a, err
		}
		rest = strings.TrimSpace(after)
	}
	kindWord, rest, _ := strings.Cut(rest, " ")
	if a.Kind, err = ParseKind(kindWord); err != nil {
		return a, err
	}
	if a.Kind == KindPartition {
		a.Groups, err = parseGroups(rest)
		if err != nil {
			return a, err
		}
		return a, a.Validate()
	}
	toks, err := tokenize(rest)
	if err != nil {
		return a, err
	}
	// Suffixes come off the right end, in the reverse of the order String
	// writes them; each is a keyword and a value, so a node may be named
	// like a keyword without confusing the parser.
	pop := func(keyword string) (string, bool) {
		n := len(toks)
		if n >= 3 && toks[n-2] == keyword {
			v := toks[n-1]
			toks = toks[:n-2]
			return v, true
		}
		return "", false
	}
	if n := len(toks); n >= 3 && toks[n-2] == "as" && strings.HasPrefix(toks[n-1], "$") {
		a.Tag = toks[n-1][1:]
		toks = toks[:n-2]
	}
	if a.Kind == KindFailRead || a.Kind == KindCorrupt {
		if q, ok := pop("under"); ok {
			if a.Prefix, err = strconv.Unquote(q); err != nil {
				return a, fmt.Errorf("faults: bad file prefix %s", q)
			}
		}
	}
	switch a.Kind {
	case KindDelayFrame, KindFailSync, KindFailRead:
		n := len(toks)
		var m []string
		if n >= 2 {
			m = countRE.FindStringSubmatch(toks[n-1])
		}
		if m == nil {
			return a, fmt.Errorf("faults: %s needs a count like x1", a.Kind)
		}
		a.Count, _ = strconv.Atoi(m[1])
		toks = toks[:n-1]
	}
	switch a.Kind {
	case KindClog:
		v, ok := pop("for")
		if !ok {
			return a, fmt.Errorf("faults: clog needs \"for <duration>\"")
		}
		if a.For, err = time.ParseDuration(v); err != nil {
			return a, fmt.Errorf("faults: bad duration %q", v)
		}
	case KindDelayFrame, KindSkew:
		v, ok := pop("by")
		if !ok {
			return a, fmt.Errorf("faults: %s needs \"by <duration>\"", a.Kind)
		}
		if a.By, err = time.ParseDuration(v); err != nil {
			return a, fmt.Errorf("faults: bad duration %q", v)
		}
	case KindDrift:
		v, ok := pop("by")
		ppm, found := strings.CutSuffix(v, "ppm")
		if !ok || !found {
			return a, fmt.Errorf("faults: drift needs \"by <n>ppm\"")
		}
		if a.PPM, err = strconv.ParseInt(ppm, 10, 64); err != nil {
			return a, fmt.Errorf("faults: bad drift %q", v)
		}
	}
	switch a.Kind {
	case KindPowerLoss:
		if len(toks) > 1 && toks[0] == "torn" {
			a.Torn = true
			toks = toks[1:]
		}
	case KindDelayFrame:
		if len(toks) < 1 {
			return a, fmt.Errorf("faults: delay-frame needs a frame selector")
		}
		a.Frame = toks[0]
		toks = toks[1:]
	}
	if a.Kind == KindHeal {
		if len(toks) != 0 {
			return a, fmt.Errorf("faults: heal takes nothing, got %q", strings.Join(toks, " "))
		}
		return a, a.Validate()
	}
	arrow := -1
	for i, t := range toks {
		if t == "->" || t == "<->" {
			if arrow >= 0 {
				return a, fmt.Errorf("faults: two arrows")
			}
			arrow = i
		}
	}
	targetToks := toks
	if arrow >= 0 {
		want := "<->"
		if a.Kind == KindCutOneWay || a.Kind == KindDelayFrame {
			want = "->"
		}
		if toks[arrow] != want {
			return a, fmt.Errorf("faults: %s links nodes with %q", a.Kind, want)
		}
		targetToks = toks[:arrow]
		if a.Peer, err = ParseTarget(strings.Join(toks[arrow+1:], " ")); err != nil {
			return a, err
		}
	}
	if a.Target, err = ParseTarget(strings.Join(targetToks, " ")); err != nil {
		return a, err
	}
	return a, a.Validate()
}

// parseTrigger reads "<probe> [on <subject>] within <duration>".
func (a *Action) parseTrigger(toks []string) error {
	if len(toks) < 3 || toks[len(toks)-2] != "within" {
		return fmt.Errorf("faults: a trigger reads \"when <probe> [on <subject>] within <duration>\", got %q", strings.Join(toks, " "))
	}
	d, err := time.ParseDuration(toks[len(toks)-1])
	if err != nil {
		return fmt.Errorf("faults: bad trigger window %q", toks[len(toks)-1])
	}
	a.When, a.Within = toks[0], d
	switch rest := toks[1 : len(toks)-2]; {
	case len(rest) == 2 && rest[0] == "on":
		a.On = rest[1]
	case len(rest) != 0:
		return fmt.Errorf("faults: a trigger reads \"when <probe> [on <subject>] within <duration>\", got %q", strings.Join(toks, " "))
	}
	return nil
}

// tokenize splits on spaces, keeping a double-quoted string whole.
func tokenize(s string) ([]string, error) {
	var toks []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return toks, nil
		}
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("faults: unterminated quote in %s", s)
			}
			toks = append(toks, q)
			s = s[len(q):]
			continue
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		toks = append(toks, s[:end])
		s = s[end:]
	}
}

// parseGroups reads "[a, b] [c]".
func parseGroups(s string) ([][]Target, error) {
	var groups [][]Target
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			break
		}
		if s[0] != '[' {
			return nil, fmt.Errorf("faults: partition groups look like [n1, n2] [n3], got %q", s)
		}
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, fmt.Errorf("faults: unclosed group in %q", s)
		}
		var g []Target
		for _, part := range strings.Split(s[1:end], ",") {
			t, err := ParseTarget(part)
			if err != nil {
				return nil, err
			}
			g = append(g, t)
		}
		groups = append(groups, g)
		s = s[end+1:]
	}
	return groups, nil
}

// FrameMatcher returns the predicate a delay-frame selector stands for:
// "any" matches every frame; a Kafka API name (kmsg.NameForKey, e.g.
// "Produce", "EndTxn") matches frames whose first two bytes are that API's
// key, big-endian — the start of every Kafka request. Responses start with
// a correlation id instead, so selectors are meant for the request
// direction (client → broker, follower → leader).
func FrameMatcher(selector string) (func(frame []byte) bool, error) {
	if selector == "any" {
		return nil, nil
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if kmsg.NameForKey(k) == selector {
			hi, lo := byte(uint16(k)>>8), byte(k)
			return func(frame []byte) bool { return len(frame) >= 2 && frame[0] == hi && frame[1] == lo }, nil
		}
	}
	return nil, fmt.Errorf("faults: unknown frame selector %q (want \"any\" or a Kafka API name such as Produce, Fetch, EndTxn)", selector)
}

// actionJSON is an action as saved: durations as Go duration strings,
// targets as their phrases, absent fields omitted.
type actionJSON struct {
	At     string     `json:"at"`
	Kind   Kind       `json:"kind"`
	Target Target     `json:"target,omitzero"`
	Peer   Target     `json:"peer,omitzero"`
	Groups [][]Target `json:"groups,omitempty"`
	Torn   bool       `json:"torn,omitempty"`
	For    string     `json:"for,omitempty"`
	By     string     `json:"by,omitempty"`
	PPM    int64      `json:"ppm,omitempty"`
	Count  int        `json:"count,omitempty"`
	Prefix string     `json:"prefix,omitempty"`
	Frame  string     `json:"frame,omitempty"`
	Tag    string     `json:"tag,omitempty"`
	When   string     `json:"when,omitempty"`
	On     string     `json:"on,omitempty"`
	Within string     `json:"within,omitempty"`
}

// MarshalJSON writes the action as an object such as
// {"at":"12.5s","kind":"crash","target":"leader of orders/0","tag":"1"}.
func (a Action) MarshalJSON() ([]byte, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	j := actionJSON{At: a.At.String(), Kind: a.Kind, Target: a.Target, Peer: a.Peer, Groups: a.Groups,
		Torn: a.Torn, PPM: a.PPM, Count: a.Count, Prefix: a.Prefix, Frame: a.Frame, Tag: a.Tag, When: a.When, On: a.On}
	if a.Within != 0 {
		j.Within = a.Within.String()
	}
	if a.For != 0 {
		j.For = a.For.String()
	}
	if a.By != 0 {
		j.By = a.By.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes. Unknown fields, kinds and
// roles are errors that name them.
func (a *Action) UnmarshalJSON(b []byte) error {
	var j actionJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("faults: action %s: %s", bytes.TrimSpace(b), bare(err))
	}
	v := Action{Kind: j.Kind, Target: j.Target, Peer: j.Peer, Groups: j.Groups, Torn: j.Torn,
		PPM: j.PPM, Count: j.Count, Prefix: j.Prefix, Frame: j.Frame, Tag: j.Tag, When: j.When, On: j.On}
	var err error
	for _, d := range []struct {
		s   string
		dst *time.Duration
	}{{j.At, &v.At}, {j.For, &v.For}, {j.By, &v.By}, {j.Within, &v.Within}} {
		if d.s == "" {
			continue
		}
		if *d.dst, err = time.ParseDuration(d.s); err != nil {
			return fmt.Errorf("faults: action %s: bad duration %q", bytes.TrimSpace(b), d.s)
		}
	}
	if j.At == "" {
		return fmt.Errorf("faults: action %s: no \"at\"", bytes.TrimSpace(b))
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("%w (in %s)", err, bytes.TrimSpace(b))
	}
	*a = v
	return nil
}
