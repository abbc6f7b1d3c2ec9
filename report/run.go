package report

import (
	"html/template"
	"io"
)

// RunPage is one run's page (`kafkasim run --html F`): a header that says
// what is wrong — the scenario, the seed, the verdict, each anomaly with
// its witnesses linked to their operations on the timeline, the faults
// fired linked to their marks — and the run's timeline at a readable
// scale, opened at the first witness.
type RunPage struct {
	Title     string
	Facts     []Fact
	Repro     string
	Anomalies []RunAnomaly
	Timeline  *Timeline // Wide and Anchors
	// Schedule is the fault schedule as it played out, an action a line:
	// one that fired links to its mark (fault-N), one skipped says why.
	Schedule []OpLink
	// Porcupine names the file beside the page holding Porcupine's
	// linearizability view of the partition at fault ("" if none).
	Porcupine string
	// Open is the anchor the page opens at: the first witness drawn
	// ("op-17"), "" to open at the top.
	Open string
}

// RunAnomaly is one named anomaly of the run.
type RunAnomaly struct {
	Name, Class, Breaks string
	Count               int
	Witnesses           []RunWitness
}

// RunWitness is one witness: the checker's words and the operations it
// names, each a link to its bar.
type RunWitness struct {
	Message string
	Ops     []OpLink
}

// OpLink is an operation a witness names; Anchor is "" when the timeline
// does not draw it.
type OpLink struct{ Anchor, Label string }

// WriteRun renders p as one HTML document. Its only script sets the
// location to p.Open when the page is opened without one and scrolls
// what the location names to the middle of the window, so the page opens
// at the first witness, highlighted (:target).
func WriteRun(w io.Writer, p RunPage) error {
	return runPage.Execute(w, p)
}

var runPage = template.Must(template.New("run").Funcs(template.FuncMap{
	"svg": func(t *Timeline) template.HTML { return t.svg() },
}).Parse(pageHead + `h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 16px 0 4px; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 4px 0; }
dt { color: #555; } dd { margin: 0; }
.violated { color: #b71c1c; font-weight: 600; } .holds { color: #1b5e20; font-weight: 600; }
.anomaly { margin: 4px 0 8px; } .anomaly ul { margin: 2px 0; }
.timeline { border: 1px solid #ddd; padding: 4px 0; }
rect:target { stroke: #ff6f00; stroke-width: 4; }
line:target { stroke-width: 5; }
.faults { font-size: 13px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<dl>{{range .Facts}}<dt>{{.Name}}</dt><dd{{if eq .Name "verdict"}} class="{{.Value}}"{{end}}>{{.Value}}</dd>{{end}}</dl>
{{if .Repro}}<p>replay: <code>{{.Repro}}</code></p>{{end}}
{{if .Porcupine}}<p>Porcupine's view of the partition at fault: <a href="{{.Porcupine}}">{{.Porcupine}}</a></p>{{end}}
{{if .Anomalies}}<h2>anomalies</h2>
{{range .Anomalies}}<div class="anomaly"><b>{{.Name}}</b> ({{.Class}}{{if .Breaks}}, breaks {{.Breaks}}{{end}}): {{.Count}} found
<ul>{{range .Witnesses}}<li>{{.Message}}{{range .Ops}} {{if .Anchor}}<a href="#{{.Anchor}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}{{end}}</li>{{end}}</ul></div>
{{end}}{{end}}
{{if .Schedule}}<h2>fault schedule</h2>
<ol class="faults">{{range .Schedule}}<li>{{if .Anchor}}<a href="#{{.Anchor}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}</li>{{end}}</ol>{{end}}
{{with .Timeline}}<h2>{{.Caption}}</h2>
<div class="timeline">{{svg .}}</div>
{{end}}
{{if .Open}}<script>
if (!location.hash) location.hash = {{.Open}};
const target = document.getElementById(location.hash.slice(1));
if (target) target.scrollIntoView({block: "center", inline: "center"});
</script>{{end}}
</body>
</html>
`))
