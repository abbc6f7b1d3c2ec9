package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/kafkasim/kafkasim/scenarios"
)

func runList(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("list")
	asJSON := fs.Bool("json", false, "one JSON object per scenario")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
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
