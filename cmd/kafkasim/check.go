package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check")
	expect := fs.String("expect", "none", "the guarantee the history must show (exit 1 if not)")
	htmlFile := fs.String("html", "", "write the visualization of a non-linearizable partition here")
	order := fs.String("order", "none", "the order promised: partition, key or none (exit 1 if broken)")
	compacted := fs.String("compacted", "", "comma-separated topics whose cleanup.policy holds compact: what their log cleaners may remove is not required of reads")
	ordered, err := reorder(args)
	if err != nil {
		return badInput(stderr, "check: %v (kafkasim check -h for help)", err)
	}
	if code, ok := parseFlags(fs, ordered, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return badInput(stderr, "check: want exactly one history file")
	}
	g, err := checkers.ParseGuarantee(*expect)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	o, err := checkers.ParseOrder(*order)
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return badInput(stderr, "%v", err)
	}
	defer f.Close()
	h, err := history.Read(f)
	if err != nil {
		return badInput(stderr, "history %s: %v", fs.Arg(0), err)
	}
	if len(h) == 0 {
		return badInput(stderr, "history %s: empty: no operation to judge", fs.Arg(0))
	}
	var topics []string
	for _, t := range strings.Split(*compacted, ",") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	v, err := checkers.Check(h, checkers.Options{Order: o, HTML: *htmlFile, Compacted: topics})
	if err != nil {
		return badInput(stderr, "history %s: %v", fs.Arg(0), err)
	}
	fmt.Fprint(stdout, v.Summary())
	holds := v.Holds(g) && (o == checkers.NoOrder || v.OrderHeld)
	fmt.Fprintf(stdout, "verdict: %s\n", verdictWord(holds))
	if !holds {
		return exitViolation
	}
	return exitOK
}

// reorder moves flags before positional arguments, so `check FILE --expect
// G` works as well as `check --expect G FILE`. Every flag of check takes a
// value (but -h): one without is refused here, not read as the file.
func reorder(args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			if strings.Contains(a, "=") || a == "-h" || a == "-help" || a == "--help" {
				continue
			}
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return nil, fmt.Errorf("flag needs an argument: %s", a)
			}
			flags = append(flags, args[i+1])
			i++
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...), nil
}
