package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/kafkasim/kafkasim/scenarios"
)

func runList(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object per scenario")
	if err := fs.Parse(args); err != nil {
		return exitBadInput
	}
	for _, s := range scenarios.List() {
		if *asJSON {
			b, _ := json.Marshal(s)
			fmt.Fprintln(stdout, string(b))
			continue
		}
		fmt.Fprintf(stdout, "%-40s %-24s %s\n", s.Name, s.Judged(), s.Description)
	}
	return exitOK
}
