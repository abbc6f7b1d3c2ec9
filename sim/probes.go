package sim

import "github.com/kafkasim/kafkasim/probe"

// ProbeHit is one hit of a coverage probe: which, about what, on which node
// ("" for the world's own, such as a power loss dropping unsynced bytes).
type ProbeHit struct {
	Name, Subject, Node string
}

// probes counts a world's probe hits. Counting is not traced: a probe never
// changes the trace hash.
type probes struct {
	counts    map[string]uint64
	listeners []func(ProbeHit)
}

func (p *probes) hit(h ProbeHit) {
	if p.counts == nil {
		p.counts = map[string]uint64{}
	}
	p.counts[h.Name]++
	for _, f := range p.listeners {
		f(h)
	}
}

// Probe counts a hit of probe name about subject, as the world's own (the
// harness derives some probes from what it sees).
func (w *World) Probe(name, subject string) { w.probes.hit(ProbeHit{Name: name, Subject: subject}) }

// Probes is every probe hit so far, sorted by name.
func (w *World) Probes() probe.Counts { return probe.FromMap(w.probes.counts) }

// OnProbe calls f with every probe hit from now on, synchronously, inside
// the event that hit it: f must not run process code. To act on a hit,
// schedule the action (w.At(w.Now(), ...)) so it runs after that event.
func (w *World) OnProbe(f func(ProbeHit)) { w.probes.listeners = append(w.probes.listeners, f) }
