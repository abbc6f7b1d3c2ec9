package report

import (
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

// Timeline is a failing run drawn over time.
type Timeline struct {
	Caption   string
	End       int64 // the history's last instant, ns since the world began
	Lanes     []Lane
	Faults    []Mark
	Witnesses []string // each witness of the anomalies shown, as the checker wrote it
	// Wide draws the timeline at a readable scale (a run's page scrolls
	// it) instead of fitting it to the page; Anchors gives every bar the
	// id op-N and every fault mark fault-N, for links to land on. One
	// timeline per page may have anchors.
	Wide, Anchors bool
	drawn         map[history.ID]bool
}

// Drew reports whether the timeline has a bar for operation id.
func (t *Timeline) Drew(id history.ID) bool { return t.drawn[id] }

// Lane is one process's operations.
type Lane struct {
	Name string
	Bars []Bar
}

// Bar is one operation.
type Bar struct {
	ID         history.ID
	Start, End int64 // End is the history's end for one that never returned
	Outcome    history.Outcome
	Witness    bool // an anomaly names it
	Label      string
}

// Mark is a fault the nemesis fired.
type Mark struct {
	At    int64
	Label string
	Fault int // its place among the faults fired: the anchor fault-N
}

// maxBars bounds what one timeline draws; a longer history is cut, and
// the caption says so.
const maxBars = 6000

// TimelineOf draws history h of a run whose verdict is v: every client
// operation but the sampled replica reads, the faults fired, and as
// witnesses the operations named by the anomalies that break g (all of
// them when g is "").
func TimelineOf(caption string, h history.History, v checkers.Verdict, g checkers.Guarantee) *Timeline {
	t := &Timeline{Caption: caption, drawn: map[history.ID]bool{}}
	witness := map[history.ID]string{}
	for _, a := range v.Anomalies {
		if g != "" && !slices.Contains(a.Breaks, g) {
			continue
		}
		for _, w := range a.Witnesses {
			t.Witnesses = append(t.Witnesses, a.Name+": "+w.Message)
			for _, op := range w.Ops {
				if _, ok := witness[op.ID]; !ok {
					witness[op.ID] = a.Name
				}
			}
		}
	}
	for i := range h {
		op := &h[i]
		t.End = max(t.End, op.Call)
		if op.Completed() {
			t.End = max(t.End, op.Return)
		}
	}
	lane := map[string]int{}
	bars := 0
	for i := range h {
		op := &h[i]
		switch {
		case op.Kind == history.KindNemesis:
			label := op.Process
			if op.Nemesis != nil {
				label = op.Nemesis.Description
			}
			t.Faults = append(t.Faults, Mark{At: op.Call, Label: fmt.Sprintf("%s %s", at(op.Call), label), Fault: len(t.Faults)})
			continue
		case op.Kind == history.KindReplica && witness[op.ID] == "":
			continue // the harness's sampled replica reads, unless a witness
		}
		if bars == maxBars {
			continue
		}
		bars++
		l, ok := lane[op.Process]
		if !ok {
			l = len(t.Lanes)
			lane[op.Process] = l
			t.Lanes = append(t.Lanes, Lane{Name: op.Process})
		}
		end := op.Return
		if !op.Completed() {
			end = t.End
		}
		label := op.String() + " " + string(op.Outcome)
		if op.Error != "" {
			label += ": " + op.Error
		}
		name, w := witness[op.ID]
		if w {
			label += " — witness of " + name
		}
		t.Lanes[l].Bars = append(t.Lanes[l].Bars, Bar{ID: op.ID, Start: op.Call, End: end, Outcome: op.Outcome, Witness: w, Label: label})
		t.drawn[op.ID] = true
	}
	if bars == maxBars {
		t.Caption += fmt.Sprintf(" (the first %d operations)", maxBars)
	}
	return t
}

func at(ns int64) string { return time.Duration(ns).Round(time.Millisecond).String() }

// Drawing constants, in pixels.
const (
	svgWidth  = 1100
	labelW    = 130
	laneH     = 16
	axisH     = 20
	minBarW   = 1.5
	markColor = "#c62828"
)

// svg draws the timeline: a lane per process, bars by outcome, witnesses
// outlined, faults as red lines across every lane.
func (t *Timeline) svg() template.HTML {
	if t == nil {
		return ""
	}
	plot := float64(svgWidth - labelW - 10)
	left := float64(labelW) // where time 0 is drawn
	if t.Wide {
		// 400 pixels a simulated second: a produce round trip is a few
		// pixels wide. The lane names stay in view beside the scrolled
		// plot.
		plot = max(plot, float64(t.End)/1e9*400)
		left = 8
	}
	width := int(left+plot) + 10
	x := func(ns int64) float64 {
		if t.End <= 0 {
			return left
		}
		return left + plot*float64(ns)/float64(t.End)
	}
	height := axisH + laneH*len(t.Lanes) + 4
	var b strings.Builder
	names := func() {
		for i, l := range t.Lanes {
			fmt.Fprintf(&b, `<text x="4" y="%d">%s</text>`, axisH+i*laneH+12, html.EscapeString(l.Name))
		}
	}
	if t.Wide {
		fmt.Fprintf(&b, `<div style="display:flex"><svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" style="flex:none">`, labelW, height)
		names()
		b.WriteString(`</svg><div style="overflow-x:auto">`)
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img">`, width, height)
	if !t.Wide {
		names()
	}
	// The axis: a tick every 100 pixels or so.
	ticks := max(10, int(plot/100))
	for i := 0; i <= ticks; i++ {
		ns := t.End * int64(i) / int64(ticks)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x(ns), axisH-4, x(ns), height)
		fmt.Fprintf(&b, `<text x="%.1f" y="12" text-anchor="middle">%s</text>`, x(ns), at(ns))
	}
	fill := map[history.Outcome]string{history.OK: "#81c784", history.Fail: "#e57373", history.Info: "#bdbdbd"}
	for i, l := range t.Lanes {
		y := axisH + i*laneH
		for _, bar := range l.Bars {
			w := max(minBarW, x(bar.End)-x(bar.Start))
			stroke := ""
			if bar.Witness {
				stroke = ` stroke="#0d47a1" stroke-width="2"`
			}
			id := ""
			if t.Anchors {
				id = fmt.Sprintf(` id="op-%d"`, bar.ID)
			}
			fmt.Fprintf(&b, `<rect%s x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>%s</title></rect>`,
				id, x(bar.Start), y+2, w, laneH-4, fill[bar.Outcome], stroke, html.EscapeString(bar.Label))
		}
	}
	for _, m := range t.Faults {
		id := ""
		if t.Anchors {
			id = fmt.Sprintf(` id="fault-%d"`, m.Fault)
		}
		fmt.Fprintf(&b, `<line%s x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5"><title>%s</title></line>`,
			id, x(m.At), axisH-4, x(m.At), height, markColor, html.EscapeString(m.Label))
	}
	b.WriteString(`</svg>`)
	if t.Wide {
		b.WriteString(`</div></div>`)
	}
	return template.HTML(b.String())
}
