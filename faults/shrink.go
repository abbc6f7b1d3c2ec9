package faults

import (
	"strconv"
	"strings"
)

// ShrinkOptions bound and report a Shrink.
type ShrinkOptions struct {
	// RunsMax bounds the calls of fails; 0 means 500. When it runs out,
	// Shrink returns the smallest failing case found so far.
	RunsMax int
	// SizeMin is the smallest workload size tried.
	SizeMin int
	// Log, if set, hears of each smaller failing case and of the result.
	Log func(format string, args ...any)
}

// Shrink minimizes a failing run: the fault schedule by delta debugging
// (ddmin) and the workload size (halving, then bisecting), repeated until
// neither gets smaller. fails(s, size) runs the workload of that size
// under s and reports whether it still fails; it must be deterministic.
//
// Faults are removed whole: a crash or power loss with the start that
// undoes it, a pause with its resume, a partition or cut with its heal (a
// heal stays while any partition or cut before it does), an action with
// every later one that targets its tag. So every schedule tried keeps the
// promises of the one given — no partition left unhealed, no node left
// down — and the result is 1-minimal: removing any one fault passes.
//
// Shrink is deterministic and calls fails at most opts.RunsMax times,
// never twice for the same case. If s does not fail at size, it is
// returned as is.
func Shrink(s Schedule, size int, fails func(Schedule, int) bool, opts ShrinkOptions) (Schedule, int) {
	if opts.RunsMax == 0 {
		opts.RunsMax = 500
	}
	s = s.Sorted()
	sh := &shrinker{s: s, st: analyze(s), fails: fails, opts: opts, memo: map[string]bool{}}
	var cur []int
	for i := range s {
		if sh.st.unit(i) {
			cur = append(cur, i)
		}
	}
	if !sh.try(cur, size) {
		sh.logf("shrink: the schedule does not fail at size %d; nothing to shrink", size)
		return s, size
	}
	for !sh.exhausted {
		next := sh.ddmin(cur, size)
		nextSize := sh.shrinkSize(next, size)
		if len(next) == len(cur) && nextSize == size {
			break
		}
		cur, size = next, nextSize
	}
	out := sh.build(cur)
	sh.logf("shrink: %d actions, size %d, after %d runs", len(out), size, sh.runs)
	return out, size
}

type shrinker struct {
	s         Schedule
	st        structure
	fails     func(Schedule, int) bool
	opts      ShrinkOptions
	memo      map[string]bool
	runs      int
	exhausted bool
}

func (sh *shrinker) logf(format string, args ...any) {
	if sh.opts.Log != nil {
		sh.opts.Log(format, args...)
	}
}

// build is the schedule of the chosen units and everything that goes with
// them: the actions undoing them, and nothing whose tag's owner is gone.
func (sh *shrinker) build(units []int) Schedule {
	chosen := make([]bool, len(sh.s))
	for _, u := range units {
		chosen[u] = true
	}
	in := make([]bool, len(sh.s))
	var out Schedule
	for i, a := range sh.s {
		ok := true
		for _, j := range sh.st.needs[i] {
			ok = ok && in[j]
		}
		switch {
		case sh.st.unit(i):
			ok = ok && chosen[i]
		case sh.st.closes[i] >= 0:
			ok = ok && in[sh.st.closes[i]]
		default: // a heal: kept while anything it lifts is
			lifts := false
			for _, j := range sh.st.healOf[i] {
				lifts = lifts || in[j]
			}
			ok = ok && lifts
		}
		in[i] = ok
		if ok {
			out = append(out, a)
		}
	}
	return out
}

// try reports whether the case fails, running it at most once.
func (sh *shrinker) try(units []int, size int) bool {
	var key strings.Builder
	key.WriteString(strconv.Itoa(size))
	for _, u := range units {
		key.WriteByte(',')
		key.WriteString(strconv.Itoa(u))
	}
	if v, ok := sh.memo[key.String()]; ok {
		return v
	}
	if sh.runs >= sh.opts.RunsMax {
		sh.exhausted = true
		return false
	}
	sh.runs++
	s := sh.build(units)
	v := sh.fails(s, size)
	sh.memo[key.String()] = v
	if v {
		sh.logf("shrink: run %d: fails with %d actions at size %d", sh.runs, len(s), size)
	}
	return v
}

// ddmin is Zeller's delta debugging over units: try each chunk alone, then
// each complement, refining the chunks until no single unit can go.
func (sh *shrinker) ddmin(c []int, size int) []int {
	if len(c) > 0 && sh.try(nil, size) {
		return nil
	}
	n := 2
	for len(c) >= 2 && !sh.exhausted {
		chunks := split(c, n)
		reduced := false
		for _, ch := range chunks {
			if sh.try(ch, size) {
				c, n, reduced = ch, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				if sh.try(comp, size) {
					c, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(c) {
				break
			}
			n = min(2*n, len(c))
		}
	}
	return c
}

// shrinkSize halves size while the case fails, then bisects between the
// last passing and the first failing size.
func (sh *shrinker) shrinkSize(units []int, size int) int {
	lowest := sh.opts.SizeMin
	for size/2 >= lowest && size/2 < size && !sh.exhausted && sh.try(units, size/2) {
		size /= 2
	}
	lo, hi := max(size/2, lowest-1), size // lo passes or is out of bounds; hi fails
	for hi-lo > 1 && !sh.exhausted {
		mid := lo + (hi-lo)/2
		if sh.try(units, mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// split cuts c into n nearly equal chunks, in order.
func split(c []int, n int) [][]int {
	var chunks [][]int
	start := 0
	for i := range n {
		end := start + (len(c)-start)/(n-i)
		chunks = append(chunks, c[start:end])
		start = end
	}
	return chunks
}

func complement(chunks [][]int, skip int) []int {
	var out []int
	for i, ch := range chunks {
		if i != skip {
			out = append(out, ch...)
		}
	}
	return out
}
