package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/report"
	"github.com/kafkasim/kafkasim/scenarios"
)

// cell is one configuration under one fault class: what `kafkasim
// explore` measured over its seeds. It carries everything a merge of
// shards needs to give the cell one run would (per guarantee whether every
// seed held it, every seed's acknowledged fraction, the seeds that reached
// each probe, each guarantee's lowest failing seed), so a merge is exact.
type cell struct {
	// Base is the base scenario's name, Expect and Order what it claims
	// (a cell breaking them fails in JUnit).
	Base   string             `json:"base"`
	Expect checkers.Guarantee `json:"expect"`
	Order  checkers.Order     `json:"order,omitempty"`
	// Config is the configuration as NAME=VALUE pairs, the axes' order.
	Config []string `json:"config"`
	Faults string   `json:"faults"`
	Seeds  int      `json:"seeds"` // the seeds run (a shard's share)
	// Of is the seeds asked (--seeds N): with Shard, the cell's key in a
	// resumed or merged run.
	Of    int    `json:"of"`
	Shard string `json:"shard,omitempty"`
	// Observed is the strongest guarantee that held on every seed, with
	// the base's order when that held too: "exactly-once in partition
	// order", "at-least-once", "at-least-once, at-most-once", "none".
	Observed string                      `json:"observed"`
	Held     map[checkers.Guarantee]bool `json:"held"`
	// OrderHeld: the base scenario's order (if it claims one) held on
	// every seed.
	OrderHeld bool `json:"order_held"`
	// Failures are, per guarantee (or order) that did not hold, its
	// lowest failing seed, strongest guarantee first.
	Failures  []cellFailure  `json:"failures,omitempty"`
	AckMedian float64        `json:"acknowledged_median"`
	AckP10    float64        `json:"acknowledged_p10"`
	Acked     []float64      `json:"acknowledged_fractions"`
	Reached   map[string]int `json:"probes_reached"`
	// Errors counts runs the harness could not complete (not a verdict).
	Errors int    `json:"errors,omitempty"`
	Error  string `json:"error,omitempty"`
}

// cellFailure is a guarantee's first failing seed in a cell.
type cellFailure struct {
	Breaks    string `json:"breaks"` // a guarantee, or "partition order" / "key order"
	Seed      uint64 `json:"seed"`
	Anomalies string `json:"anomalies"`
	Repro     string `json:"repro"`
}

func newCell(config []string, faults string, of int) *cell {
	return &cell{Config: config, Faults: faults, Of: of, OrderHeld: true, Reached: map[string]int{},
		Held: map[checkers.Guarantee]bool{checkers.ExactlyOnce: true, checkers.AtLeastOnce: true, checkers.AtMostOnce: true}}
}

// key names the cell in a grid: its configuration and fault class.
func (c *cell) key() string { return strings.Join(c.Config, " ") + " @" + c.Faults }

// label is the configuration as a row of the grid prints it.
func (c *cell) label() string {
	if len(c.Config) == 0 {
		return "(base)"
	}
	return strings.Join(c.Config, " ")
}

var guarantees = []checkers.Guarantee{checkers.ExactlyOnce, checkers.AtLeastOnce, checkers.AtMostOnce}

// add folds one seed's run of s into the cell; repro is the command that
// replays it.
func (c *cell) add(s scenarios.Scenario, seed uint64, r *scenarios.Result, repro string) {
	c.Seeds++
	c.Acked = append(c.Acked, r.Power.AcknowledgedFraction())
	for _, p := range r.Probes {
		c.Reached[p.Name]++
	}
	for _, g := range guarantees {
		if r.Panic == "" && r.Verdict.Holds(g) {
			continue
		}
		c.Held[g] = false
		names := anomaliesBreaking(r, g)
		c.fail(string(g), seed, names, repro)
	}
	if o := s.Order; o != checkers.NoOrder && (r.Panic != "" || !r.Verdict.OrderHeld) {
		c.OrderHeld = false
		c.fail(string(o)+" order", seed, anomalyNames(r), repro)
	}
}

// anomaliesBreaking names what broke g in r (a panic breaks everything).
func anomaliesBreaking(r *scenarios.Result, g checkers.Guarantee) string {
	if r.Panic != "" {
		return "panic"
	}
	var names []string
	for _, a := range r.Verdict.Breaking(g) {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	return strings.Join(names, ",")
}

// fail records seed as what breaks a guarantee, if it is the lowest yet.
func (c *cell) fail(breaks string, seed uint64, anomalies, repro string) {
	for i, f := range c.Failures {
		if f.Breaks == breaks {
			if seed < f.Seed {
				c.Failures[i] = cellFailure{breaks, seed, anomalies, repro}
			}
			return
		}
	}
	c.Failures = append(c.Failures, cellFailure{breaks, seed, anomalies, repro})
	slices.SortStableFunc(c.Failures, func(a, b cellFailure) int { return failureRank(a.Breaks) - failureRank(b.Breaks) })
}

func failureRank(breaks string) int {
	if i := slices.Index(guarantees, checkers.Guarantee(breaks)); i >= 0 {
		return i
	}
	return len(guarantees)
}

// absorb folds another shard's share of the same cell into c.
func (c *cell) absorb(o *cell) {
	c.Seeds += o.Seeds
	c.Acked = append(c.Acked, o.Acked...)
	for p, n := range o.Reached {
		c.Reached[p] += n
	}
	for g, held := range o.Held {
		if !held {
			c.Held[g] = false
		}
	}
	c.OrderHeld = c.OrderHeld && o.OrderHeld
	for _, f := range o.Failures {
		c.fail(f.Breaks, f.Seed, f.Anomalies, f.Repro)
	}
	c.Errors += o.Errors
	if c.Error == "" {
		c.Error = o.Error
	}
}

// judge fills the derived fields once every seed is in.
func (c *cell) judge(order checkers.Order) {
	slices.Sort(c.Acked)
	c.AckMedian, c.AckP10 = quantile(c.Acked, 0.5), quantile(c.Acked, 0.1)
	var held []string
	for _, g := range guarantees {
		if c.Held[g] {
			held = append(held, string(g))
		}
	}
	switch {
	case c.Seeds == 0:
		c.Observed = "error"
	case len(held) == 0:
		c.Observed = string(checkers.None)
	case held[0] == string(checkers.ExactlyOnce):
		c.Observed = held[0]
	default:
		c.Observed = strings.Join(held, ", ")
	}
	if order != checkers.NoOrder && c.OrderHeld && c.Seeds > 0 {
		c.Observed += fmt.Sprintf(" in %s order", order)
	}
}

// short is the cell as the grid prints it: the observed guarantee in a
// word or two.
func (c *cell) short() string {
	out := shortWords[toneOfHeld(c.Held, c.Seeds, 0)]
	if c.Order != checkers.NoOrder && c.OrderHeld && c.Seeds > 0 {
		out += "+order"
	}
	if c.Errors > 0 && c.Seeds > 0 {
		out += "!"
	}
	return out
}

// shortWords are the grid's words for what a cell kept.
var shortWords = map[report.Tone]string{report.ExactlyOnce: "EOS", report.Both: "ALO+AMO", report.AtLeastOnce: "ALO",
	report.AtMostOnce: "AMO", report.NoGuarantee: "none", report.Error: "ERROR"}

// quantile of sorted xs (nearest rank; 0 with none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[int(q*float64(len(xs)-1))]
}
