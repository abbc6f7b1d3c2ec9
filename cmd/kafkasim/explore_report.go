package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/report"
)

// reportExplore judges every cell and prints the grid — rows the
// configurations, columns the fault classes, each cell the strongest
// guarantee every seed kept — then the acknowledged fractions, each
// cell's first failing seed per guarantee it broke with the command that
// replays it, and the configurations Kafka refuses; or one JSON object per
// cell and per refused configuration. It writes the JUnit file if junit
// names one: a test case per cell, failing when the cell breaks what the
// base scenario claims.
//
// Exit: 0 once the grid is computed (what a cell observed is a finding,
// not a failure of the command), 1 if some run could not complete (the
// cell's evidence is short), 2 on bad input (before anything runs).
func reportExplore(g grid, seeds int, asJSON bool, junit, htmlFile string, parallel int, suiteName string, stdout, stderr io.Writer) int {
	exit := exitOK
	suite := junitSuite{Name: suiteName}
	for _, c := range g.cells {
		c.judge(g.base.Order)
		if c.Errors > 0 {
			exit = exitViolation
		}
		suite.add(exploreCase(g, c))
	}
	for _, s := range g.skipped {
		suite.add(junitCase{Name: strings.Join(s.Config, " "), Classname: "explore." + g.base.Name, Skipped: &junitProblem{Message: s.Skipped}})
	}
	if err := writeJUnit(junit, suite); err != nil {
		fmt.Fprintln(stderr, err)
		return exitBadInput
	}
	if htmlFile != "" {
		p, err := explorePage(g, seeds, parallel)
		if err != nil {
			fmt.Fprintf(stderr, "kafkasim: --html: a failure's timeline: %v\n", err)
			exit = max(exit, exitViolation)
		}
		if err := writeHTML(htmlFile, func(w io.Writer) error { return report.Write(w, p) }); err != nil {
			fmt.Fprintln(stderr, err)
			return exitBadInput
		}
	}
	if asJSON {
		for _, c := range g.cells {
			b, _ := json.Marshal(c)
			fmt.Fprintln(stdout, string(b))
		}
		for _, s := range g.skipped {
			b, _ := json.Marshal(s)
			fmt.Fprintln(stdout, string(b))
		}
		return exit
	}
	rows, byKey := g.rows()
	fmt.Fprintf(stdout, "explore %s (claims %s): %d configurations x %d fault classes, %d seeds a cell", g.base.Name, g.base.Claim(), len(rows), len(g.classes), seeds)
	if len(g.cells) > 0 && g.cells[0].Shard != "" {
		fmt.Fprintf(stdout, " (shard %s)", g.cells[0].Shard)
	}
	fmt.Fprint(stdout, "\n\n")
	table := func(title string, text func(c *cell) string) {
		fmt.Fprintln(stdout, title)
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "CONFIGURATION\t%s\n", strings.ToUpper(strings.Join(g.classes, "\t")))
		for _, label := range rows {
			fmt.Fprint(tw, label)
			for _, class := range g.classes {
				t := "-"
				if c := byKey[label+" @"+class]; c != nil {
					t = text(c)
				}
				fmt.Fprintf(tw, "\t%s", t)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	table("observed guarantee (held on every seed):", (*cell).short)
	fmt.Fprintf(stdout, "  EOS exactly-once, ALO at-least-once, AMO at-most-once, +order: in %s order too, ! some runs errored\n\n", orderWord(g.base.Order))
	table("acknowledged fraction (median/p10):", func(c *cell) string { return fmt.Sprintf("%.2f/%.2f", c.AckMedian, c.AckP10) })
	fmt.Fprintln(stdout, "\nfirst failing seed per guarantee broken:")
	any := false
	for _, c := range g.cells {
		// Guarantees that first break on the same seed share a line.
		var seeds []uint64
		bySeed := map[uint64][]cellFailure{}
		for _, f := range c.Failures {
			if bySeed[f.Seed] == nil {
				seeds = append(seeds, f.Seed)
			}
			bySeed[f.Seed] = append(bySeed[f.Seed], f)
		}
		for _, seed := range seeds {
			any = true
			fs := bySeed[seed]
			var breaks, anomalies []string
			for _, f := range fs {
				breaks = append(breaks, f.Breaks)
				for _, a := range strings.Split(f.Anomalies, ",") {
					if !slices.Contains(anomalies, a) {
						anomalies = append(anomalies, a)
					}
				}
			}
			fmt.Fprintf(stdout, "  %s @%s: seed %d breaks %s (%s): %s\n", c.label(), c.Faults, seed, strings.Join(breaks, ", "), strings.Join(anomalies, ","), fs[0].Repro)
		}
		if c.Error != "" {
			fmt.Fprintf(stdout, "  %s @%s: %d runs errored: %s\n", c.label(), c.Faults, c.Errors, c.Error)
		}
	}
	if !any {
		fmt.Fprintln(stdout, "  none: every cell kept every guarantee")
	}
	if len(g.skipped) > 0 {
		fmt.Fprintln(stdout, "\nnot run (Kafka refuses the combination):")
		for _, s := range g.skipped {
			fmt.Fprintf(stdout, "  %s: %s\n", strings.Join(s.Config, " "), s.Skipped)
		}
	}
	return exit
}

func orderWord(o checkers.Order) string {
	if o == checkers.NoOrder {
		return "the claimed"
	}
	return string(o)
}

// rows are the grid's configurations in order, and its cells by key.
func (g grid) rows() ([]string, map[string]*cell) {
	var rows []string
	byKey := map[string]*cell{}
	for _, c := range g.cells {
		if len(rows) == 0 || rows[len(rows)-1] != c.label() {
			rows = append(rows, c.label())
		}
		byKey[c.label()+" @"+c.Faults] = c
	}
	return rows, byKey
}

// exploreCase is a cell as a JUnit test case: failing when the cell
// breaks the base scenario's claim, with the first failing seed's repro.
func exploreCase(g grid, c *cell) junitCase {
	jc := junitCase{Name: c.label() + " @" + c.Faults, Classname: "explore." + g.base.Name,
		SystemOut: fmt.Sprintf("observed %s over %d seeds; acknowledged median %.2f, p10 %.2f", c.Observed, c.Seeds, c.AckMedian, c.AckP10)}
	broken := ""
	if e := g.base.Expect; e != checkers.None && !c.Held[e] {
		broken = string(e)
	} else if o := g.base.Order; o != checkers.NoOrder && !c.OrderHeld {
		broken = string(o) + " order"
	}
	switch {
	case c.Error != "":
		jc.Error = &junitProblem{Message: c.Error, Type: "error"}
	case broken != "":
		for _, f := range c.Failures {
			if f.Breaks == broken {
				jc.Failure = &junitProblem{Message: fmt.Sprintf("observed %s; %s claims %s", c.Observed, g.base.Name, g.base.Claim()), Type: "violated",
					Text: fmt.Sprintf("%s\n%s breaks at seed %d (%s)", f.Repro, f.Breaks, f.Seed, f.Anomalies)}
			}
		}
	}
	return jc
}
