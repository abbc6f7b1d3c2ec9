package model

import "slices"

// Cells number the offsets of one partition in offset order, so that the
// checkers keep what they know of each offset in arrays indexed by cell
// instead of maps keyed by offset. Dense — the usual case: offsets follow
// one another, with the gaps transaction markers leave — an offset's cell
// is its distance from the lowest, and a cell may be a gap nothing names.
// Sparse — offsets far apart, where a dense numbering would waste memory —
// an offset's cell is its rank among the distinct offsets named.
type Cells struct {
	lo     int64
	n      int32
	sorted []int64 // sparse: the distinct offsets, ascending; nil if dense
}

// newCells numbers the offsets between lo and hi that count values and
// records name; each lists them (only called when sparse).
func newCells(lo, hi int64, count int, each func(yield func(int64))) Cells {
	if hi < lo {
		return Cells{}
	}
	if hi-lo < 4*int64(count)+1024 {
		return Cells{lo: lo, n: int32(hi - lo + 1)}
	}
	sorted := make([]int64, 0, count)
	each(func(off int64) { sorted = append(sorted, off) })
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	return Cells{lo: sorted[0], n: int32(len(sorted)), sorted: sorted}
}

// Len is the number of cells.
func (c Cells) Len() int { return int(c.n) }

// Of is the cell of an offset, or -1 if it has none.
func (c Cells) Of(offset int64) int32 {
	if c.sorted == nil {
		if d := offset - c.lo; d >= 0 && d < int64(c.n) {
			return int32(d)
		}
		return -1
	}
	if i, found := slices.BinarySearch(c.sorted, offset); found {
		return int32(i)
	}
	return -1
}

// AtOrAfter is the first cell whose offset is at or after offset, Len()
// if there is none.
func (c Cells) AtOrAfter(offset int64) int32 {
	if c.sorted == nil {
		return int32(min(max(offset-c.lo, 0), int64(c.n)))
	}
	i, _ := slices.BinarySearch(c.sorted, offset)
	return int32(i)
}

// Offset is the offset of a cell.
func (c Cells) Offset(cell int32) int64 {
	if c.sorted == nil {
		return c.lo + int64(cell)
	}
	return c.sorted[cell]
}
