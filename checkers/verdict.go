package checkers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/history"
)

// Guarantee is a delivery guarantee, as KAFKA.md §6 defines them.
type Guarantee string

const (
	ExactlyOnce Guarantee = "exactly-once"
	AtLeastOnce Guarantee = "at-least-once"
	AtMostOnce  Guarantee = "at-most-once"
	None        Guarantee = "none"
)

// ParseGuarantee reads a guarantee's name.
func ParseGuarantee(s string) (Guarantee, error) {
	switch g := Guarantee(s); g {
	case ExactlyOnce, AtLeastOnce, AtMostOnce, None:
		return g, nil
	}
	return "", fmt.Errorf("checkers: unknown guarantee %q (want exactly-once, at-least-once, at-most-once or none)", s)
}

// Order is an order a configuration may promise beside its delivery
// guarantee (KAFKA.md §6): reordering loses and duplicates nothing, so it
// breaks no delivery guarantee, only the order promised.
type Order string

const (
	NoOrder Order = ""
	// PartitionOrder: each producer session's acknowledged sends to a
	// partition lie in the log in the order they were sent
	// (nonmonotonic-send), and the log holds no batch whose producer
	// sequence skips past one not written (sequence-gap) — Kafka's promise
	// for the idempotent producer, with up to five requests in flight.
	PartitionOrder Order = "partition"
	// KeyOrder: per-partition order, and the pipeline's output holds each
	// key's messages in their input order (key-order).
	KeyOrder Order = "key"
)

// ParseOrder reads an order's name ("" or "none" for no order).
func ParseOrder(s string) (Order, error) {
	switch o := Order(s); o {
	case NoOrder, PartitionOrder, KeyOrder:
		return o, nil
	case "none":
		return NoOrder, nil
	}
	return "", fmt.Errorf("checkers: unknown order %q (want partition, key or none)", s)
}

// covers reports whether promising o promises p too.
func (o Order) covers(p Order) bool { return o.rank() >= p.rank() }

func (o Order) rank() int {
	switch o {
	case PartitionOrder:
		return 1
	case KeyOrder:
		return 2
	}
	return 0
}

// Kind of violation an anomaly is.
type Class string

const (
	// Safety: something wrong happened.
	Safety Class = "safety"
	// Liveness: something right had not happened by the end of the run,
	// after faults healed and the system drained.
	Liveness Class = "liveness"
)

type anomalyInfo struct {
	class  Class
	breaks []Guarantee // the guarantees an occurrence violates
	order  Order       // the order an occurrence breaks (NoOrder: none)
	doc    string
}

var (
	breaksEO  = []Guarantee{ExactlyOnce}
	breaksALO = []Guarantee{AtLeastOnce, ExactlyOnce}
	breaksAMO = []Guarantee{AtMostOnce, ExactlyOnce}
)

// anomalies is the vocabulary: Jepsen's names (jepsen.tests.kafka) and
// KAFKA.md §6, plus a few this checker can tell apart.
var anomalies = map[string]anomalyInfo{
	"lost-write":           {Safety, breaksALO, NoOrder, "an acknowledged write that reads never returned although they returned later offsets"},
	"unseen":               {Liveness, breaksALO, NoOrder, "an acknowledged write no read returned by the end, after heal and drain"},
	"output-loss":          {Liveness, breaksALO, NoOrder, "an acknowledged input message with no effect in the final output"},
	"duplicate":            {Safety, breaksAMO, NoOrder, "one written value at two or more offsets"},
	"output-dup":           {Safety, breaksAMO, NoOrder, "an input message with more than one effect in the final output"},
	"inconsistent-offsets": {Safety, breaksEO, NoOrder, "two different values at one offset"},
	"G1a":                  {Safety, breaksEO, NoOrder, "a read returned a value written by a failed send or an aborted transaction"},
	"precommitted-read":    {Safety, breaksEO, NoOrder, "read_committed returned a transaction's write before the transaction asked to commit"},
	"read-past-lso":        {Safety, breaksEO, NoOrder, "read_committed returned a record at or past the last stable offset of the very fetch response that carried it"},
	"torn-transaction":     {Safety, breaksEO, NoOrder, "some but not all of a committed transaction's writes are in the final output"},
	"poll-skip":            {Safety, breaksEO, NoOrder, "a consumer, without a rebalance or seek, skipped offsets known to exist"},
	"nonmonotonic-poll":    {Safety, breaksEO, NoOrder, "a consumer, without a rebalance or seek, went back to or before offsets it had read"},
	// Reordering loses and duplicates nothing: by KAFKA.md §6 it breaks
	// the per-key order a configuration may promise, not a delivery
	// guarantee.
	"nonmonotonic-send":  {Safety, nil, PartitionOrder, "one producer's later send got a lower offset in a partition (reordering)"},
	"sequence-gap":       {Safety, nil, PartitionOrder, "a replica's log holds a producer's batch whose sequence skips past one it does not hold"},
	"offset-regression":  {Safety, breaksEO, NoOrder, "a group's committed offset moved backwards"},
	"offset-commit-lost": {Safety, breaksAMO, NoOrder, "the group's final committed offset is below an acknowledged commit: resuming there processes again what was committed past"},
	"final-read-stuck":   {Liveness, breaksALO, NoOrder, "a final read could not finish after heal and drain: the store did not serve what it holds"},
	"replica-divergence": {Safety, breaksALO, NoOrder, "two replicas hold different records below a high watermark: committed data a failover would lose or change"},
	"stale-offset-fetch": {Safety, breaksEO, NoOrder, "committed offsets are not a linearizable register: a fetch returned what was not the latest commit"},
	"nonlinearizable":    {Safety, breaksEO, NoOrder, "a partition log is not a linearizable append-only log"},
	"key-order":          {Safety, nil, KeyOrder, "the final output holds one key's messages out of input order"},
}

// AnomalyNames lists every anomaly the checkers can report, sorted.
func AnomalyNames() []string {
	names := make([]string, 0, len(anomalies))
	for n := range anomalies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// OpRef identifies an operation in a witness.
type OpRef struct {
	ID      history.ID
	Kind    history.Kind
	Process string
	Node    string
	Call    int64
	Return  int64 // history.Never if it never completed
}

func (r OpRef) String() string {
	ret := "never"
	if r.Return != history.Never {
		ret = fmt.Sprint(r.Return)
	}
	node := ""
	if r.Node != "" {
		node = " on " + r.Node
	}
	return fmt.Sprintf("op %d %s by %s%s [%d..%s]", r.ID, r.Kind, r.Process, node, r.Call, ret)
}

// Witness is one occurrence of an anomaly: what happened and the
// operations involved.
type Witness struct {
	Message string
	Ops     []OpRef
}

// Anomaly is every occurrence of one named anomaly.
type Anomaly struct {
	Name      string
	Class     Class
	Breaks    []Guarantee
	Count     int       // occurrences found
	Witnesses []Witness // the first few, in history order
}

// Verdict is what Check concludes about a history.
type Verdict struct {
	// Observed is the strongest guarantee that held. When at-least-once
	// and at-most-once both hold but exactly-once does not, it is
	// at-least-once; ask Holds for either.
	Observed Guarantee
	// OrderHeld: the order promised held (true when none was).
	OrderHeld bool
	// Inconclusive: porcupine timed out on some log or register, so
	// exactly-once is not claimed.
	Inconclusive bool
	Anomalies    []Anomaly // sorted by name
	Logs         []LogResult
	Stats        Stats
	// Notes say what could not be judged, and why.
	Notes []string
	// Held lists every guarantee that held, strongest first.
	Held []Guarantee
}

// Stats counts what was checked.
type Stats struct {
	Ops, Partitions, Intents, Acknowledged, Outputs int
}

// Holds reports whether guarantee g held. None always holds.
func (v Verdict) Holds(g Guarantee) bool {
	return g == None || slices.Contains(v.Held, g)
}

// Breaking returns the anomalies that violate guarantee g: what a
// scenario expecting g failed on, each with its class (safety or
// liveness).
func (v Verdict) Breaking(g Guarantee) []Anomaly {
	var out []Anomaly
	for _, a := range v.Anomalies {
		if slices.Contains(a.Breaks, g) {
			out = append(out, a)
		}
	}
	return out
}

// Safety and Liveness return the anomalies of that class.
func (v Verdict) Safety() []Anomaly   { return v.of(Safety) }
func (v Verdict) Liveness() []Anomaly { return v.of(Liveness) }

func (v Verdict) of(c Class) []Anomaly {
	var out []Anomaly
	for _, a := range v.Anomalies {
		if a.Class == c {
			out = append(out, a)
		}
	}
	return out
}

// Anomaly returns the named anomaly, if found.
func (v Verdict) Anomaly(name string) (Anomaly, bool) {
	for _, a := range v.Anomalies {
		if a.Name == name {
			return a, true
		}
	}
	return Anomaly{}, false
}

// Summary is a short human account: the guarantee observed, then one line
// per anomaly with its first witness.
func (v Verdict) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "observed: %s", v.Observed)
	if v.Inconclusive {
		b.WriteString(" (inconclusive: porcupine timed out; exactly-once not claimed)")
	}
	if !v.OrderHeld {
		b.WriteString("; the order promised was broken")
	}
	fmt.Fprintf(&b, "\nchecked %d ops over %d partitions, %d intents (%d acknowledged), %d outputs\n",
		v.Stats.Ops, v.Stats.Partitions, v.Stats.Intents, v.Stats.Acknowledged, v.Stats.Outputs)
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if len(v.Anomalies) == 0 {
		b.WriteString("no anomalies\n")
	}
	for _, a := range v.Anomalies {
		breaks := make([]string, len(a.Breaks))
		for i, g := range a.Breaks {
			breaks[i] = string(g)
		}
		if len(breaks) == 0 {
			breaks = []string{string(anomalies[a.Name].order) + " order"}
		}
		fmt.Fprintf(&b, "%s (%s, %d): breaks %s\n", a.Name, a.Class, a.Count, strings.Join(breaks, ", "))
		if len(a.Witnesses) > 0 {
			w := a.Witnesses[0]
			fmt.Fprintf(&b, "  %s\n", w.Message)
			for _, op := range w.Ops {
				fmt.Fprintf(&b, "    %s\n", op)
			}
		}
	}
	return b.String()
}

// report collects anomalies in a deterministic order.
type report struct {
	witnessesMax int
	found        map[string]*Anomaly
}

func newReport(witnessesMax int) *report {
	return &report{witnessesMax: witnessesMax, found: map[string]*Anomaly{}}
}

func (r *report) add(name string, w Witness) {
	info, ok := anomalies[name]
	if !ok {
		panic(fmt.Sprintf("checkers: unknown anomaly %q", name))
	}
	a := r.found[name]
	if a == nil {
		a = &Anomaly{Name: name, Class: info.class, Breaks: info.breaks}
		r.found[name] = a
	}
	a.Count++
	if len(a.Witnesses) < r.witnessesMax {
		a.Witnesses = append(a.Witnesses, w)
	}
}

func (r *report) list() []Anomaly {
	out := make([]Anomaly, 0, len(r.found))
	for _, a := range r.found {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b Anomaly) int { return strings.Compare(a.Name, b.Name) })
	return out
}
