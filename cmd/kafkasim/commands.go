package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/scenarios"
)

// Exit codes, as DESIGN.md §8 fixes them.
const (
	exitOK        = 0
	exitViolation = 1
	exitBadInput  = 2
)

// scenarioCommands are the commands over the guarantee matrix.
var scenarioCommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"list":     runList,
	"run":      runRun,
	"matrix":   runMatrix,
	"sweep":    runSweep,
	"shrink":   runShrink,
	"check":    runCheck,
	"selftest": runSelfTest,
	"merge":    runMerge,
	"explore":  runExplore,
}

const scenarioUsage = `  list    the built-in scenarios: name, claimed guarantee, description
  run --scenario S --seed N [--config F] [--set K=V] [--faults F] [--messages M] [--trace F] [--html F] [--history F] [--json]
          one run: verdict, trace hash, and on violation the command that replays it
  matrix [--seeds N] [--json] [--parallel P]
          every scenario over N seeds: expected versus observed, first failing seed
  matrix [--shard I/N] --json > F; merge F... [--json] [--junit F]
          a matrix split over machines, each shard's JSON combined into the
          matrix one run on the same seeds prints
  explore --scenario S --vary K=V1,V2 [--vary ...] [--faults C,...] [--seeds N] [--out F] [--json]
          the configuration x fault-class grid: per cell the strongest guarantee
          every seed kept, the first failing seed per guarantee broken, replayable
  sweep --scenario S --seeds A-B [--shard I/N] [--json]
          many seeds of one scenario, spread over shards
  shrink --scenario S --seed N [--out F]
          the smallest fault schedule and workload that still fail, saved for run --faults
  check FILE [--expect G] [--order O]
          re-check a saved history (from run --history or real mode)
  selftest [--seeds N] [--defects D,...] [--json] [--parallel P]
          plant each of a catalogue of realistic broker bugs and require the claims
          to catch it within N seeds: the checkers' own test
`

// newFlags is a command's flag set. It prints nothing itself: parseFlags
// reports a bad flag in one line and -h on stdout.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: kafkasim %s [flags]\n\nflags:\n", name)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. On -h it prints the command's usage on
// stdout (exit 0); on a bad flag, one line naming it and where help is
// (exit 2). ok says whether the command goes on.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(io.Discard)
		return exitOK, false
	}
	fmt.Fprintf(stderr, "kafkasim %s: %v (kafkasim %s -h for help)\n", fs.Name(), err, fs.Name())
	return exitBadInput, false
}

// badInput reports bad input in one line and returns exit code 2.
func badInput(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "kafkasim: "+format+"\n", args...)
	return exitBadInput
}

// scenarioFlags are --scenario and --config, accepted together wherever
// a scenario is named, and --set NAME=VALUE (repeatable) on top.
type scenarioFlags struct {
	name, config *string
	sets         *settings
}

// settings are --set's NAME=VALUE pairs, in the order given.
type settings []scenarios.Setting

func (ss *settings) String() string { return strings.TrimPrefix(ss.flags(), " ") }

func (ss *settings) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE, a scenario file's key (acks=1, faults=crash)", v)
	}
	*ss = append(*ss, scenarios.Setting{Name: name, Value: value})
	return nil
}

// flags renders the pairs as the --set flags that give them.
func (ss settings) flags() string {
	var b strings.Builder
	for _, kv := range ss {
		fmt.Fprintf(&b, " --set %s", kv)
	}
	return b.String()
}

func addScenarioFlags(fs *flag.FlagSet) scenarioFlags {
	f := scenarioFlags{
		name:   fs.String("scenario", "", "a built-in scenario (kafkasim list)"),
		config: fs.String("config", "", "a scenario file (JSON with Kafka's configuration names)"),
		sets:   &settings{},
	}
	fs.Var(f.sets, "set", "NAME=VALUE: change one key of the scenario, as its file names it (acks=1, min.insync.replicas=1, faults=crash); repeatable")
	return f
}

func (f scenarioFlags) load() (scenarios.Scenario, error) {
	var s scenarios.Scenario
	var err error
	switch {
	case *f.config != "" && *f.name != "":
		return scenarios.Scenario{}, fmt.Errorf("--scenario %s and --config %s: give one", *f.name, *f.config)
	case *f.config != "":
		s, err = scenarios.Load(*f.config)
	case *f.name != "":
		s, err = scenarios.Lookup(*f.name)
	default:
		return scenarios.Scenario{}, fmt.Errorf("--scenario or --config is required")
	}
	if err != nil {
		return scenarios.Scenario{}, err
	}
	if len(*f.sets) == 0 {
		return s, nil
	}
	return scenarios.Set(s, *f.sets...)
}

// base is the flags naming the scenario, without --set: "--scenario S" or
// "--config F".
func (f scenarioFlags) base() string {
	if *f.config != "" {
		return "--config " + *f.config
	}
	return "--scenario " + *f.name
}

// repro is the command that replays a run: the scenario f names, with
// its --set pairs and then extra's, at seed.
func repro(f scenarioFlags, extra settings, seed uint64, faultsFile string, messages int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kafkasim run %s%s%s --seed %d", f.base(), f.sets.flags(), extra.flags(), seed)
	if faultsFile != "" {
		fmt.Fprintf(&b, " --faults %s", faultsFile)
	}
	if messages > 0 {
		fmt.Fprintf(&b, " --messages %d", messages)
	}
	return b.String()
}

func verdictWord(holds bool) string {
	if holds {
		return "holds"
	}
	return "violated"
}

func loadSchedule(path string) (faults.Schedule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := faults.Load(f)
	if err != nil {
		return nil, fmt.Errorf("fault schedule %s: %w", path, err)
	}
	return s, nil
}
