package checkers

import (
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/model"
)

// Linearizability chooses how partition logs are checked.
type Linearizability int

const (
	// Fast is the O(n log n) offset-based checker (the default).
	Fast Linearizability = iota
	// Porcupine runs porcupine on every partition (with PorcupineTimeout):
	// the reference, exponential in overlapping operations.
	Porcupine
	// Both runs both and panics if they disagree on a decided partition.
	Both
)

// DefaultPorcupineTimeout bounds each porcupine run when
// Options.PorcupineTimeout is zero.
const DefaultPorcupineTimeout = 10 * time.Second

// DefaultWitnessesMax is how many witnesses per anomaly are kept when
// Options.WitnessesMax is zero.
const DefaultWitnessesMax = 3

// Options say what the workload promises and how to check it.
type Options struct {
	// Order is the order the configuration promises; the order anomalies
	// up to it are judged (OrderHeld), the others only reported.
	Order Order
	// Rebalancing: group consumers may change assignment without a
	// recorded rebalance, so poll-skip and nonmonotonic-poll are not judged
	// across polls of a group consumer.
	Rebalancing bool
	// Linearizability selects the partition-log checker.
	Linearizability Linearizability
	// PorcupineTimeout bounds each porcupine run (logs under Porcupine or
	// Both, committed-offset registers always). Zero: DefaultPorcupineTimeout.
	PorcupineTimeout time.Duration
	// WitnessesMax is how many witnesses to keep per anomaly. Zero:
	// DefaultWitnessesMax.
	WitnessesMax int
	// Compacted lists the compacted topics (cleanup.policy holds compact).
	// A log cleaner may remove a record of theirs that a later record of
	// its key supersedes, and an aborted transaction's: reads that skip
	// one, and one no read returned, are no anomaly there
	// (model.Resolution.Compact), and replicas may hold different cleaned
	// copies of a batch. Their logs are judged by the fast checker alone,
	// whatever Linearizability says: porcupine's model has no cleaner.
	Compacted []string
	// HTML, if set, is a file to write porcupine's visualization of one
	// partition log to, fault events annotated: the first non-linearizable
	// log, else the one the first anomaly is about, else the first log.
	HTML string
}

// Check judges a history: it validates it, checks every partition log for
// linearizability, the committed offsets with porcupine, every anomaly and
// delivery, and returns the verdict. The error is for an invalid history or
// a failure to write the HTML file; the verdict is complete in the latter
// case.
func Check(h history.History, opts Options) (Verdict, error) {
	r, err := model.ValidateAndResolve(h)
	if err != nil {
		return Verdict{}, err
	}
	if opts.PorcupineTimeout == 0 {
		opts.PorcupineTimeout = DefaultPorcupineTimeout
	}
	if opts.WitnessesMax == 0 {
		opts.WitnessesMax = DefaultWitnessesMax
	}
	rep := newReport(opts.WitnessesMax)
	v := Verdict{Stats: Stats{Ops: len(h)}, OrderHeld: true}
	if len(opts.Compacted) > 0 {
		r.Compact(h, func(topic string) bool { return slices.Contains(opts.Compacted, topic) })
	}
	v.Stats.Partitions = len(r.Partitions)
	a := newAnalysis(h, r, opts, rep)
	var clients map[string]int
	log := func(i int) model.Log { // porcupine's operations, built only for porcupine
		if clients == nil {
			clients = model.Clients(h)
		}
		return r.Log(h, clients, i)
	}
	var fast []LogResult
	if opts.Linearizability != Porcupine || len(opts.Compacted) > 0 {
		fast = checkLogs(r)
	}
	illegal := -1
	for i := range r.Partitions {
		res := checkLogWith(r, i, fast, log, opts)
		v.Logs = append(v.Logs, res)
		switch res.Result {
		case porcupine.Illegal:
			if illegal < 0 {
				illegal = i
			}
			w := Witness{Message: fmt.Sprintf("%s: porcupine found no linearization", res.TP)}
			if res.Violation != nil {
				w.Message = res.Violation.String()
				w.Ops = a.ref(res.Violation.Ops...)
			}
			rep.add("nonlinearizable", w)
		case porcupine.Unknown:
			v.Inconclusive = true
		}
	}
	for _, reg := range model.OffsetRegistersOf(h, a.rare) {
		switch model.CheckOffsets(reg, opts.PorcupineTimeout) {
		case porcupine.Illegal:
			rep.add("stale-offset-fetch", Witness{
				Message: fmt.Sprintf("group %s %s: the commits and offset fetches have no linearization as one register", reg.Group, reg.TP),
				Ops:     a.registerRefs(reg)})
		case porcupine.Unknown:
			v.Inconclusive = true
		}
	}
	a.checkAnomalies()
	stats, notes := a.checkDelivery()
	v.Stats.Intents, v.Stats.Acknowledged, v.Stats.Outputs = stats.Intents, stats.Acknowledged, stats.Outputs
	v.Notes = append(notes, compactionNotes(r)...)
	v.Anomalies = rep.list()
	held := map[Guarantee]bool{ExactlyOnce: !v.Inconclusive, AtLeastOnce: true, AtMostOnce: true, None: true}
	for _, an := range v.Anomalies {
		for _, g := range an.Breaks {
			held[g] = false
		}
		if o := anomalies[an.Name].order; o != NoOrder && opts.Order.covers(o) {
			v.OrderHeld = false
		}
	}
	for _, g := range []Guarantee{ExactlyOnce, AtLeastOnce, AtMostOnce, None} {
		if held[g] {
			v.Held = append(v.Held, g)
		}
	}
	v.Observed = v.Held[0]
	if opts.HTML != "" {
		if i := pictured(h, r.Partitions, illegal, v.Anomalies); i >= 0 {
			if err := VisualizeLog(h, log(i), opts.HTML, opts.PorcupineTimeout); err != nil {
				return v, err
			}
		}
	}
	return v, nil
}

// pictured chooses the partition log Options.HTML shows: the first that is
// not linearizable; else the partition of the first anomaly's first witness
// (a lost write is linearizable up to the end of its log, yet worth seeing
// on the timeline); else the first log. -1 if there are none.
func pictured(h history.History, parts []model.Partition, illegal int, found []Anomaly) int {
	if illegal >= 0 || len(parts) == 0 {
		return illegal
	}
	byTP := map[history.TopicPartition]int{}
	for i := range parts {
		byTP[parts[i].TP] = i
	}
	ops := map[history.ID]*history.Op{}
	for i := range h {
		ops[h[i].ID] = &h[i]
	}
	for _, a := range found {
		for _, w := range a.Witnesses {
			for _, ref := range w.Ops {
				op := ops[ref.ID]
				if op == nil {
					continue
				}
				var tp history.TopicPartition
				switch {
				case op.Send != nil:
					tp = op.Send.TP
				case op.FinalRead != nil && op.FinalRead.Sink == "":
					tp = op.FinalRead.TP
				case op.Poll != nil && len(op.Poll.Fetched) > 0:
					tp = op.Poll.Fetched[0].TP
				default:
					continue
				}
				if i, ok := byTP[tp]; ok {
					return i
				}
			}
		}
	}
	return 0
}

// checkLogWith is the verdict on partition i of the checker opts choose:
// fast holds the fast checker's, log builds porcupine's operations.
func checkLogWith(r *model.Resolution, i int, fast []LogResult, log func(int) model.Log, opts Options) LogResult {
	if r.Partitions[i].Compacted {
		return fast[i] // porcupine's model has no log cleaner
	}
	switch opts.Linearizability {
	case Porcupine:
		return LogResult{TP: r.Partitions[i].TP, Result: model.CheckLog(log(i), opts.PorcupineTimeout)}
	case Both:
		if ref := model.CheckLog(log(i), opts.PorcupineTimeout); ref != porcupine.Unknown && ref != fast[i].Result {
			panic(fmt.Sprintf("checkers: fast log checker says %s and porcupine says %s on %s", fast[i].Result, ref, fast[i].TP))
		}
	}
	return fast[i]
}

func (a *analysis) registerRefs(r model.OffsetRegister) []OpRef {
	var ids []history.ID
	for _, op := range r.Ops {
		if len(ids) == DefaultWitnessesMax*2 {
			break
		}
		ids = append(ids, op.Metadata.(model.Meta).Op)
	}
	return a.ref(ids...)
}

// compactionNotes says, per compacted partition, how many of its records a
// log cleaner may have removed: the reads and losses the checks excused.
func compactionNotes(r *model.Resolution) []string {
	var notes []string
	for i := range r.Partitions {
		p := &r.Partitions[i]
		if !p.Compacted {
			continue
		}
		n := 0
		for _, rm := range p.Removable {
			if rm {
				n++
			}
		}
		notes = append(notes, fmt.Sprintf("%s is compacted: a log cleaner may have removed the records at %d of its offsets (superseded by a later record of their key, or aborted), so no read had to return them", p.TP, n))
	}
	return notes
}
