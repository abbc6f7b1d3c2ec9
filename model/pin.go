package model

import (
	"slices"

	"github.com/kafkasim/kafkasim/history"
)

// resolve lays out one partition, given its definite appends: its
// indefinite sends pinned or dropped, its cells, the value of each record
// no definite claim explains, and its appends in offset order, chained.
func (r *Resolution) resolve(b *partitionBuild, apps []Append, indefinite, reads []int32, unexplained []unwritten) Partition {
	p := Partition{TP: b.tp, Reads: reads, FinalRead: b.finalRead, Appends: apps}
	if len(indefinite) > 0 {
		r.pin(b, &p, indefinite, unexplained)
	}
	lo, hi, count := b.rlo, b.rhi, b.records
	for _, a := range p.Appends {
		lo, hi = min(lo, a.Base), max(hi, a.Base+int64(a.Count)-1)
		count += int(a.Count)
	}
	p.Cells = newCells(lo, hi, count, func(yield func(int64)) {
		for _, a := range p.Appends {
			for j := int64(0); j < int64(a.Count); j++ {
				yield(a.Base + j)
			}
		}
		for _, k := range reads {
			rd := &r.Reads[k]
			for _, off := range r.RecordOffsets[rd.Record : rd.Record+rd.Count] {
				yield(off)
			}
		}
	})
	if len(unexplained) > 0 && (b.twice || len(p.Pinned) > 0) {
		r.explain(b, &p, unexplained)
	}
	p.ByOffset = byOffset(p.Appends, p.Cells)
	end := int64(0)
	for _, i := range p.ByOffset {
		a := &p.Appends[i]
		a.After = end
		end = a.Base + int64(a.Count)
	}
	return p
}

// explain finds, for each record that does not hold the first definite
// claim at its offset, the first other append of the log that wrote its
// value there: a later definite claim, or a pinned send.
func (r *Resolution) explain(b *partitionBuild, p *Partition, unexplained []unwritten) {
	others := map[int64][]int32{}
	for _, a := range p.Appends {
		if a.Definite && !b.twice {
			continue // every definite value is the first claim at its offset
		}
		for j := int32(0); j < a.Count; j++ {
			off, v := a.Base+int64(j), a.Value+j
			if a.Definite && b.at[b.cells.Of(off)] == v {
				continue
			}
			others[off] = append(others[off], v)
		}
	}
	for _, u := range unexplained {
		for _, v := range others[r.RecordOffsets[u.record]] {
			if r.Values[v] == u.value {
				r.RecordValues[u.record] = v
				break
			}
		}
	}
}

// pin places each indefinite send (info, or ok without an offset) at the
// base offset that explains most observations of its values no append
// claims yet — ties: the lowest — in invocation order, or drops it if it
// explains none.
func (r *Resolution) pin(b *partitionBuild, p *Partition, indefinite []int32, unexplained []unwritten) {
	cl := claims{r: r, b: b, extra: map[int64]string{}}
	slices.SortFunc(indefinite, func(x, y int32) int {
		a, b := &r.Sends[x], &r.Sends[y]
		if a.Call != b.Call {
			if a.Call < b.Call {
				return -1
			}
			return 1
		}
		return int(a.Op - b.Op)
	})
	// Where reads observed each indefinite value (its slot in seen), where
	// no definite claim explains it: an explained observation never places
	// a send.
	slot := make(map[string]int32, b.indefinite)
	slots := make([]int32, 0, b.indefinite) // per message of the sorted indefinite sends
	for _, k := range indefinite {
		s := &r.Sends[k]
		for _, v := range r.Values[s.Value : s.Value+s.Count] {
			i, ok := slot[v]
			if !ok {
				i = int32(len(slot))
				slot[v] = i
			}
			slots = append(slots, i)
		}
	}
	seen := make([][]int64, len(slot))
	for _, u := range unexplained {
		if i, ok := slot[u.value]; ok {
			if off := r.RecordOffsets[u.record]; !slices.Contains(seen[i], off) {
				seen[i] = append(seen[i], off)
			}
		}
	}
	for _, k := range indefinite {
		s := &r.Sends[k]
		msgs := r.Values[s.Value : s.Value+s.Count]
		obs := slots[:len(msgs)]
		slots = slots[len(msgs):]
		best, bestScore := int64(-1), 0
		for i, m := range msgs {
			for _, o := range seen[obs[i]] {
				base := o - int64(i)
				if v, taken := cl.at(o); base < 0 || (taken && v == m) {
					continue
				}
				score := 0
				for k, mk := range msgs {
					if at := base + int64(k); slices.Contains(seen[obs[k]], at) {
						if v, taken := cl.at(at); !taken || v != mk {
							score++
						}
					}
				}
				if score > bestScore || (score == bestScore && score > 0 && base < best) {
					best, bestScore = base, score
				}
			}
		}
		if bestScore == 0 {
			p.Dropped = append(p.Dropped, s.Op)
			continue
		}
		ret := history.Never
		if s.OK {
			ret = s.Return // acknowledged, offset unknown: it happened before it returned
		}
		s.Append = int32(len(p.Appends))
		p.Appends = append(p.Appends, Append{Op: s.Op, Sent: k, Call: s.Call, Return: ret, Base: best,
			Value: s.Value, Count: s.Count, Visibility: s.Visibility, Txn: s.Txn, After: history.NoOffset})
		p.Pinned = append(p.Pinned, s.Op)
		for k, mk := range msgs {
			if _, taken := cl.at(best + int64(k)); !taken {
				cl.extra[best+int64(k)] = mk
			}
		}
	}
}

// claims are the values appends put at offsets: the first definite claim
// at each (the build's), then what pinned sends claimed.
type claims struct {
	r     *Resolution
	b     *partitionBuild
	extra map[int64]string
}

func (c *claims) at(off int64) (string, bool) {
	if i := c.b.cells.Of(off); i >= 0 {
		if v := c.b.at[i]; v >= 0 {
			return c.r.Values[v], true
		}
	}
	v, ok := c.extra[off]
	return v, ok
}

// byOffset sorts appends by base offset, then op ID, in linear time: a
// counting sort over the cells of their bases (equal bases, which only a
// broken log has, sorted by op ID).
func byOffset(apps []Append, cells Cells) []int32 {
	start := make([]int32, cells.Len()+1)
	for _, a := range apps {
		start[cells.Of(a.Base)+1]++
	}
	for c := 1; c < len(start); c++ {
		start[c] += start[c-1]
	}
	by := make([]int32, len(apps))
	for i, a := range apps {
		c := cells.Of(a.Base)
		by[start[c]] = int32(i)
		start[c]++
	}
	for i := 0; i < len(by); {
		j := i + 1
		for j < len(by) && apps[by[j]].Base == apps[by[i]].Base {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(by[i:j], func(x, y int32) int { return int(apps[x].Op - apps[y].Op) })
		}
		i = j
	}
	return by
}
