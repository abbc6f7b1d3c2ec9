package report

import (
	"html/template"
	"io"
	"strings"
)

// Page is one report: a coloured table and the details its cells open.
type Page struct {
	Title   string
	Summary []string // lines under the title: the command, the seeds
	Corner  string   // the header of the row-label column
	Columns []string
	Rows    []Row
	Legend  []Tone // the tones to explain, in order
	// Notes are lists below the table: "not run (Kafka refuses the
	// combination)" and their items.
	Notes   []Note
	Details []Detail
}

// Row is one line of the table: a label and one cell per column.
type Row struct {
	Label string
	Cells []Cell
}

// Cell is one entry of the table. A zero Cell is "not run".
type Cell struct {
	Text   string
	Sub    string // a second, smaller line (acknowledged fraction, seeds)
	Tone   Tone
	Detail string // the ID of the Detail it opens ("" for none)
	Title  string // hover text
}

// Tone is what a cell observed, as a colour.
type Tone string

// Tones, strongest first.
const (
	ExactlyOnce Tone = "eos"      // exactly-once held on every seed
	AtLeastOnce Tone = "alo"      // at-least-once, not at-most-once
	AtMostOnce  Tone = "amo"      // at-most-once, not at-least-once
	Both        Tone = "both"     // at-least-once and at-most-once, not exactly-once
	NoGuarantee Tone = "none"     // nothing held
	Pass        Tone = "pass"     // a claim held, a twin was caught
	Fail        Tone = "fail"     // a claim violated, a twin not caught
	Untested    Tone = "untested" // held where nothing was at stake
	Error       Tone = "error"    // runs could not complete
	Plain       Tone = ""         // no colour
)

var toneWords = map[Tone]string{
	ExactlyOnce: "exactly-once held on every seed",
	AtLeastOnce: "at-least-once held (duplicates seen)",
	AtMostOnce:  "at-most-once held (losses seen)",
	Both:        "at-least-once and at-most-once held, exactly-once did not",
	NoGuarantee: "no guarantee held",
	Pass:        "claim held / weak twin caught",
	Fail:        "claim violated / weak twin not caught",
	Untested:    "untested: a probe the claim names was never reached",
	Error:       "runs could not complete",
}

// Note is a titled list below the table.
type Note struct {
	Title string
	Items []string
}

// Detail is what a cell opens.
type Detail struct {
	ID       string
	Title    string
	Facts    []Fact
	Failures []Failure
	Probes   []Fact // probe name, seeds that reached it
	Timeline *Timeline
}

// Fact is one name: value line.
type Fact struct{ Name, Value string }

// Failure is a broken guarantee's first failing seed.
type Failure struct {
	Breaks    string // the guarantee (or order)
	Seed      uint64
	Anomalies string
	Repro     string
}

// Write renders p as one HTML document.
func Write(w io.Writer, p Page) error {
	return page.Execute(w, p)
}

// pageHead opens every page: the document, its title, the style's
// common rules (each template adds its own and closes the style).
const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1b1b1b; }
code { background: #f3f3f3; padding: 0 3px; }
svg text { font: 11px system-ui, sans-serif; }
`

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"legend":  func(t Tone) string { return toneWords[t] },
	"svg":     func(t *Timeline) template.HTML { return t.svg() },
	"join":    strings.Join,
	"nonzero": func(c Cell) bool { return c.Text != "" },
}).Parse(pageHead + `h1 { font-size: 20px; margin: 0 0 4px; }
.summary { color: #555; margin: 0 0 16px; }
table.grid { border-collapse: collapse; margin: 8px 0 16px; }
.grid th, .grid td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
.grid th { background: #f3f3f3; font-weight: 600; }
.grid td a { color: inherit; text-decoration: none; display: block; }
.grid td small { display: block; opacity: .75; }
.eos { background: #b9e4c0; } .alo { background: #f9e29c; } .amo { background: #fbc98e; }
.both { background: #e3e7a0; } .none { background: #f2a3a3; } .pass { background: #b9e4c0; }
.fail { background: #f2a3a3; } .untested { background: #d9d9f3; } .error { background: #c8c8c8; }
.notrun { color: #999; }
.legend span { display: inline-block; padding: 1px 8px; margin: 0 8px 4px 0; border: 1px solid #ccc; }
.detail { border: 1px solid #ddd; padding: 8px 12px; margin: 12px 0; }
.detail:target { border: 2px solid #1565c0; background: #f4f8ff; }
.detail h2 { font-size: 16px; margin: 0 0 6px; }
.detail dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 4px 0; }
.detail dt { color: #555; } .detail dd { margin: 0; }
.witnesses li, .faults li { font-size: 13px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Summary}}<p class="summary">{{.}}</p>
{{end}}
<table class="grid" id="grid">
<thead><tr><th>{{.Corner}}</th>{{range .Columns}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><th>{{.Label}}</th>{{range .Cells}}{{if nonzero .}}<td class="{{.Tone}}"{{if .Title}} title="{{.Title}}"{{end}}>{{if .Detail}}<a href="#{{.Detail}}">{{.Text}}{{if .Sub}}<small>{{.Sub}}</small>{{end}}</a>{{else}}{{.Text}}{{if .Sub}}<small>{{.Sub}}</small>{{end}}{{end}}</td>{{else}}<td class="notrun">not run</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
{{if .Legend}}<p class="legend">{{range .Legend}}<span class="{{.}}">{{legend .}}</span>{{end}}</p>{{end}}
{{range .Notes}}<h3>{{.Title}}</h3>
<ul>{{range .Items}}<li>{{.}}</li>{{end}}</ul>
{{end}}
{{range .Details}}<section class="detail" id="{{.ID}}">
<h2>{{.Title}}</h2>
<dl>{{range .Facts}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl>
{{if .Failures}}<h3>first failing seed per guarantee broken</h3>
<ul>{{range .Failures}}<li><b>{{.Breaks}}</b> at seed {{.Seed}} ({{.Anomalies}}): <code>{{.Repro}}</code></li>{{end}}</ul>{{end}}
{{if .Probes}}<h3>probes reached (seeds)</h3>
<p>{{range $i, $p := .Probes}}{{if $i}}, {{end}}{{$p.Name}} {{$p.Value}}{{end}}</p>{{end}}
{{with .Timeline}}<h3>{{.Caption}}</h3>
{{svg .}}
{{if .Witnesses}}<ul class="witnesses">{{range .Witnesses}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Faults}}<ul class="faults">{{range .Faults}}<li>{{.Label}}</li>{{end}}</ul>{{end}}
{{end}}</section>
{{end}}
</body>
</html>
`))
