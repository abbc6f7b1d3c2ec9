package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/probe"
	"github.com/kafkasim/kafkasim/report"
	"github.com/kafkasim/kafkasim/scenarios"
)

// runJSON is run --json's object.
type runJSON struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Checked  string `json:"checked"`
	Verdict  string `json:"verdict"` // holds, untested or violated
	// Untested lists the claim's probes the run never reached.
	Untested  []string `json:"untested,omitempty"`
	Observed  string   `json:"observed"`
	Failure   string   `json:"failure,omitempty"`
	Anomalies []string `json:"anomalies,omitempty"`
	TraceHash string   `json:"trace_hash"`
	Repro     string   `json:"repro,omitempty"`
	Events    uint64   `json:"events"`
	Simulated string   `json:"simulated"`
	// Power and Probes: what the run put at stake and what it reached.
	Power                scenarios.Power `json:"power"`
	AcknowledgedFraction float64         `json:"acknowledged_fraction"`
	Probes               probe.Counts    `json:"probes"`
}

func toJSON(r *scenarios.Result, reproLine string) runJSON {
	j := runJSON{Scenario: r.Scenario, Seed: r.Seed, Checked: string(r.Checked), Verdict: r.Word(), Untested: r.Untested,
		Observed: string(r.Observed), Failure: r.Failure, TraceHash: r.TraceHash, Events: r.Events, Simulated: r.Simulated.String(),
		Power: r.Power, AcknowledgedFraction: r.Power.AcknowledgedFraction(), Probes: r.Probes}
	if j.Probes == nil {
		j.Probes = probe.Counts{}
	}
	for _, a := range r.Verdict.Anomalies {
		j.Anomalies = append(j.Anomalies, a.Name)
	}
	if !r.Holds {
		j.Repro = reproLine
	}
	return j
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run")
	sf := addScenarioFlags(fs)
	seed := fs.Uint64("seed", 1, "the run's root seed")
	faultsFile := fs.String("faults", "", "a fault schedule (JSON, from shrink) instead of the nemesis's")
	messages := fs.Int("messages", 0, "override the workload's message count")
	traceFile := fs.String("trace", "", "write the full trace here as JSON lines")
	htmlFile := fs.String("html", "", "write the run's page here: what is wrong, witnesses linked to the timeline, opened at the first (and Porcupine's view of the partition at fault beside it, F.porcupine.html)")
	historyFile := fs.String("history", "", "write the history here as JSON lines (for kafkasim check)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	defectName := fs.String("defect", "", "plant this broker bug (kafkasim selftest lists them)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	s, err := sf.load()
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	opts := scenarios.RunOptions{Seed: *seed, Messages: *messages}
	if *htmlFile != "" {
		opts.HTML = porcupinePath(*htmlFile)
		_ = os.Remove(opts.HTML) // a previous run's would be linked as this one's
	}
	if *defectName != "" {
		d, err := defect.Parse(*defectName)
		if err != nil {
			return badInput(stderr, "%v", err)
		}
		opts.Defects = defect.Of(d)
	}
	if *faultsFile != "" {
		sched, err := loadSchedule(*faultsFile)
		if err != nil {
			return badInput(stderr, "%v", err)
		}
		opts.Faults = &sched
	}
	if err := scenarios.CheckRun(s, opts); err != nil {
		return badInput(stderr, "%v", err)
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return badInput(stderr, "%v", err)
		}
		defer f.Close()
		opts.TraceJSON = f
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "seed: %d\nscenario: %s\n", *seed, s.Name)
	}
	r, err := scenarios.Run(s, opts)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	if *historyFile != "" && r.History != nil {
		if err := writeHistory(*historyFile, r.History); err != nil {
			return badInput(stderr, "%v", err)
		}
	}
	line := repro(sf, nil, *seed, *faultsFile, *messages)
	if *htmlFile != "" {
		porcupine := ""
		if _, err := os.Stat(opts.HTML); err == nil {
			porcupine = filepath.Base(opts.HTML)
		}
		if err := writeHTML(*htmlFile, func(w io.Writer) error { return report.WriteRun(w, runPageOf(r, line, porcupine)) }); err != nil {
			return badInput(stderr, "%v", err)
		}
	}
	if *asJSON {
		b, _ := json.Marshal(toJSON(r, line))
		fmt.Fprintln(stdout, string(b))
	} else {
		printRun(stdout, r, line)
	}
	if !r.Holds {
		return exitViolation
	}
	return exitOK
}

func printRun(w io.Writer, r *scenarios.Result, reproLine string) {
	checked := string(r.Checked)
	if r.Order != "" {
		checked += " in " + string(r.Order) + " order"
	}
	fmt.Fprintf(w, "checked: %s\n", checked)
	fmt.Fprintf(w, "verdict: %s\n", r.Word())
	if len(r.Untested) > 0 {
		fmt.Fprintf(w, "untested: the claim's probes %s were never reached\n", strings.Join(r.Untested, ", "))
	}
	fmt.Fprintf(w, "observed: %s\n", r.Observed)
	if !r.Holds {
		fmt.Fprintf(w, "failure: %s\n", r.Failure)
	}
	for _, line := range strings.Split(strings.TrimRight(r.Summary(), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if r.Stack != "" {
		fmt.Fprintln(w, "stack:")
		for _, line := range strings.Split(strings.TrimSpace(r.Stack), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "faults: %d actions\n", len(r.Schedule))
	fmt.Fprintf(w, "power: %s\n", r.Power)
	fmt.Fprintf(w, "probes: %s\n", scenarios.ProbesLine(r.Probes))
	fmt.Fprintf(w, "simulated: %v, %d events\n", r.Simulated, r.Events)
	fmt.Fprintf(w, "trace-hash: %s\n", r.TraceHash)
	if !r.Holds {
		fmt.Fprintf(w, "repro: %s\n", reproLine)
	}
}

func writeHistory(path string, h history.History) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := h.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
