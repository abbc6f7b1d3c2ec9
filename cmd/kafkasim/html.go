package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/report"
	"github.com/kafkasim/kafkasim/scenarios"
)

// The --html page of explore, matrix and merge (package report): the grid
// coloured by observed guarantee, each cell opening its details and the
// timeline of its first failure. A failure's timeline comes from
// replaying the repro line the cell carries, so a merge of shards draws
// the same page one run does.

// replayJob parses a repro line ("kafkasim run --scenario S --set K=V
// --seed N") into the run it names.
func replayJob(line string) (job, error) {
	args := strings.Fields(strings.TrimPrefix(line, "kafkasim run "))
	fs := newFlags("run")
	sf := addScenarioFlags(fs)
	seed := fs.Uint64("seed", 1, "")
	if err := fs.Parse(args); err != nil {
		return job{}, fmt.Errorf("repro %q: %v", line, err)
	}
	s, err := sf.load()
	if err != nil {
		return job{}, fmt.Errorf("repro %q: %v", line, err)
	}
	return job{s: s, seed: *seed}, nil
}

// replay runs every line (in parallel) and returns each result by line;
// a line that cannot run is left out, its error returned.
func replay(lines []string, parallel int) (map[string]*scenarios.Result, error) {
	var jobs []job
	var firstErr error
	for _, l := range lines {
		j, err := replayJob(l)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		j.index = len(jobs)
		jobs = append(jobs, j)
	}
	got := map[string]*scenarios.Result{}
	next := 0
	runJobs(func() (job, bool) {
		if next == len(jobs) {
			return job{}, false
		}
		next++
		return jobs[next-1], true
	}, parallel, func(o outcome) {
		if o.err != nil {
			if firstErr == nil {
				firstErr = o.err
			}
			return
		}
		got[lines[o.index]] = o.r
	})
	return got, firstErr
}

// timelineOf is the first failure's timeline: what broke breaks at seed,
// its witnesses among the anomalies that break it.
func timelineOf(r *scenarios.Result, breaks string, seed uint64, line string) *report.Timeline {
	if r == nil {
		return nil
	}
	g := checkers.Guarantee(breaks)
	if _, err := checkers.ParseGuarantee(breaks); err != nil {
		g = "" // an order: every anomaly's witnesses
	}
	caption := fmt.Sprintf("the run of seed %d, where %s first broke (%s)", seed, breaks, line)
	if r.Panic != "" {
		caption += ": panic: " + r.Panic
	}
	return report.TimelineOf(caption, r.History, r.Verdict, g)
}

func toneOfHeld(held map[checkers.Guarantee]bool, seeds, errors int) report.Tone {
	switch {
	case seeds == 0 || errors > 0:
		return report.Error
	case held[checkers.ExactlyOnce]:
		return report.ExactlyOnce
	case held[checkers.AtLeastOnce] && held[checkers.AtMostOnce]:
		return report.Both
	case held[checkers.AtLeastOnce]:
		return report.AtLeastOnce
	case held[checkers.AtMostOnce]:
		return report.AtMostOnce
	}
	return report.NoGuarantee
}

// probeFacts lists the probes reached, in the probe catalogue's order.
func probeFacts(reached map[string]int) []report.Fact {
	var out []report.Fact
	for _, p := range probe.Names() {
		if n := reached[p]; n > 0 {
			out = append(out, report.Fact{Name: p, Value: fmt.Sprint(n)})
		}
	}
	return out
}

// explorePage is the grid as a page; each cell's first failure is
// replayed for its timeline.
func explorePage(g grid, seeds, parallel int) (report.Page, error) {
	var lines []string
	for _, c := range g.cells {
		if len(c.Failures) > 0 {
			lines = append(lines, c.Failures[0].Repro)
		}
	}
	results, err := replay(lines, parallel)
	rows, byKey := g.rows()
	p := report.Page{
		Title:   fmt.Sprintf("kafkasim explore %s", g.base.Name),
		Summary: []string{fmt.Sprintf("base scenario %s claims %s; %d configurations x %d fault classes, %d seeds a cell", g.base.Name, g.base.Claim(), len(rows), len(g.classes), seeds)},
		Corner:  "configuration",
		Columns: g.classes,
		Legend:  []report.Tone{report.ExactlyOnce, report.Both, report.AtLeastOnce, report.AtMostOnce, report.NoGuarantee, report.Error},
	}
	ids := map[*cell]string{}
	for i, c := range g.cells {
		ids[c] = fmt.Sprintf("d-%d", i)
	}
	for _, label := range rows {
		row := report.Row{Label: label}
		for _, class := range g.classes {
			c := byKey[label+" @"+class]
			if c == nil {
				row.Cells = append(row.Cells, report.Cell{})
				continue
			}
			row.Cells = append(row.Cells, report.Cell{Text: c.Observed, Sub: fmt.Sprintf("acknowledged %.2f / p10 %.2f", c.AckMedian, c.AckP10),
				Tone: toneOfHeld(c.Held, c.Seeds, c.Errors), Detail: ids[c], Title: c.key()})
		}
		p.Rows = append(p.Rows, row)
	}
	if len(g.skipped) > 0 {
		n := report.Note{Title: "not run (Kafka refuses the combination)"}
		for _, s := range g.skipped {
			n.Items = append(n.Items, strings.Join(s.Config, " ")+": "+s.Skipped)
		}
		p.Notes = append(p.Notes, n)
	}
	for _, c := range g.cells {
		d := report.Detail{ID: ids[c], Title: c.label() + " under " + c.Faults,
			Facts: []report.Fact{{Name: "observed", Value: c.Observed}, {Name: "seeds", Value: fmt.Sprint(c.Seeds)},
				{Name: "acknowledged", Value: fmt.Sprintf("median %.2f, 10th percentile %.2f", c.AckMedian, c.AckP10)}},
			Probes: probeFacts(c.Reached)}
		if c.Error != "" {
			d.Facts = append(d.Facts, report.Fact{Name: "errors", Value: fmt.Sprintf("%d: %s", c.Errors, c.Error)})
		}
		for _, f := range c.Failures {
			d.Failures = append(d.Failures, report.Failure{Breaks: f.Breaks, Seed: f.Seed, Anomalies: f.Anomalies, Repro: f.Repro})
		}
		if len(c.Failures) > 0 {
			f := c.Failures[0]
			d.Timeline = timelineOf(results[f.Repro], f.Breaks, f.Seed, f.Repro)
		}
		p.Details = append(p.Details, d)
	}
	return p, err
}

// matrixPage is the catalogue's matrix as a page: a row per scenario,
// its observed guarantee and result coloured; each row's first failing
// seed (a twin's first catch) replayed for its timeline.
func matrixPage(list []scenarios.Scenario, rows map[string]*row, title string, parallel int) (report.Page, error) {
	var lines []string
	for _, s := range list {
		if rw := rows[s.Name]; rw.Repro != "" {
			lines = append(lines, rw.Repro)
		}
	}
	results, err := replay(lines, parallel)
	p := report.Page{
		Title:   title,
		Corner:  "scenario",
		Columns: []string{"faults", "claims", "checks", "observed", "acknowledged", "result"},
		Legend:  []report.Tone{report.Pass, report.Fail, report.Untested, report.ExactlyOnce, report.Both, report.AtLeastOnce, report.AtMostOnce, report.NoGuarantee},
	}
	for i, s := range list {
		rw := rows[s.Name]
		id := fmt.Sprintf("d-%d", i)
		result := report.Fail
		switch {
		case !rw.Twin && rw.Error == "" && rw.Violated == 0 && len(rw.NeverReached) > 0:
			result = report.Untested
		case rw.Pass:
			result = report.Pass
		}
		p.Rows = append(p.Rows, report.Row{Label: rw.Scenario, Cells: []report.Cell{
			{Text: rw.Faults}, {Text: rw.Claims}, {Text: rw.Checked},
			{Text: rw.Observed, Tone: toneOfHeld(rw.Held, rw.Seeds, 0), Detail: id},
			{Text: fmt.Sprintf("%.2f / %.2f", rw.AckMedian, rw.AckP10), Title: "median / 10th percentile"},
			{Text: rw.Result, Tone: result, Detail: id},
		}})
		d := report.Detail{ID: id, Title: rw.Scenario + ": " + s.Description,
			Facts: []report.Fact{{Name: "judged", Value: rw.Checked}, {Name: "result", Value: rw.Result}, {Name: "seeds", Value: fmt.Sprint(rw.Seeds)},
				{Name: "acknowledged", Value: fmt.Sprintf("median %.2f, 10th percentile %.2f", rw.AckMedian, rw.AckP10)}},
			Probes: probeFacts(rw.Reached)}
		if len(rw.Required) > 0 {
			d.Facts = append(d.Facts, report.Fact{Name: "probes required", Value: strings.Join(rw.Required, ", ")})
		}
		if rw.Repro != "" {
			// What the first failing seed broke: the judged guarantee, or
			// where that held on every seed, the judged order.
			breaks := string(s.Checked())
			if rw.Held[s.Checked()] && s.CheckedOrder() != checkers.NoOrder {
				breaks = string(s.CheckedOrder()) + " order"
			}
			d.Failures = []report.Failure{{Breaks: breaks, Seed: rw.FirstSeed, Anomalies: rw.Anomalies, Repro: rw.Repro}}
			d.Timeline = timelineOf(results[rw.Repro], breaks, rw.FirstSeed, rw.Repro)
		}
		p.Details = append(p.Details, d)
	}
	return p, err
}

// writeHTML renders a page into path.
func writeHTML(path string, render func(io.Writer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return nil
}

// runPageOf is one run's page: the header that says what is wrong, the
// timeline at a readable scale with every bar and fault mark an anchor,
// opened at the first witness drawn. porcupine names the file holding
// Porcupine's view beside it ("" if none was written).
func runPageOf(r *scenarios.Result, line, porcupine string) report.RunPage {
	t := report.TimelineOf(fmt.Sprintf("the run (%s, %d operations; hover a bar for the operation)", r.Simulated.Round(time.Millisecond), len(r.History)), r.History, r.Verdict, "")
	t.Wide, t.Anchors = true, true
	verdict := "holds"
	if !r.Holds {
		verdict = "violated"
	}
	judged := string(r.Checked)
	if r.Order != checkers.NoOrder {
		judged += " in " + string(r.Order) + " order"
	}
	p := report.RunPage{
		Title: fmt.Sprintf("%s, seed %d: %s", r.Scenario, r.Seed, verdict),
		Facts: []report.Fact{{Name: "scenario", Value: r.Scenario}, {Name: "seed", Value: fmt.Sprint(r.Seed)},
			{Name: "judged", Value: judged}, {Name: "verdict", Value: verdict}, {Name: "observed", Value: string(r.Observed)},
			{Name: "power", Value: r.Power.String()}, {Name: "trace hash", Value: r.TraceHash}},
		Repro: line, Timeline: t, Porcupine: porcupine,
	}
	if r.Panic != "" {
		p.Facts = append(p.Facts, report.Fact{Name: "panic", Value: r.Panic})
	}
	// The schedule as it played out: the k-th action that fired is the
	// k-th fault mark (the history records each as it fires).
	fired := 0
	for _, f := range r.Fired {
		link := report.OpLink{Label: f.String()}
		if f.Skipped == "" {
			if fired < len(t.Faults) {
				link.Label = fmt.Sprintf("%s (at %s)", f, time.Duration(t.Faults[fired].At).Round(time.Millisecond))
				link.Anchor = fmt.Sprintf("fault-%d", fired)
			}
			fired++
		}
		p.Schedule = append(p.Schedule, link)
	}
	for _, a := range r.Verdict.Anomalies {
		ra := report.RunAnomaly{Name: a.Name, Class: string(a.Class), Count: a.Count}
		var breaks []string
		for _, g := range a.Breaks {
			breaks = append(breaks, string(g))
		}
		ra.Breaks = strings.Join(breaks, ", ")
		for _, w := range a.Witnesses {
			rw := report.RunWitness{Message: w.Message}
			for _, op := range w.Ops {
				link := report.OpLink{Label: fmt.Sprintf("[op %d]", op.ID)}
				if t.Drew(op.ID) {
					link.Anchor = fmt.Sprintf("op-%d", op.ID)
					if p.Open == "" {
						p.Open = link.Anchor
					}
				}
				rw.Ops = append(rw.Ops, link)
			}
			ra.Witnesses = append(ra.Witnesses, rw)
		}
		p.Anomalies = append(p.Anomalies, ra)
	}
	return p
}

// porcupinePath is where run --html F puts Porcupine's view: F.porcupine.html
// (F's .html suffix replaced).
func porcupinePath(page string) string {
	return strings.TrimSuffix(page, ".html") + ".porcupine.html"
}
