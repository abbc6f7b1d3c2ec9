package disk

import (
	"bytes"
	"hash/crc32"
	"slices"

	"github.com/kafkasim/kafkasim/env"
)

// PowerLoss drops every byte not made durable by Sync. With torn set, the
// unsynced writes of each file are instead let through in order up to a
// random cut, and the write the cut falls in is torn (only its first bytes
// land) — the disk was part-way through writeback when the power went. It
// returns the number of unsynced bytes lost. Each file whose content
// changed is reported to the observer as an OpPowerLoss: its size after, the
// bytes it shrank by and the checksum of what survived.
func (d *Disk) PowerLoss(torn bool, r *env.Rand) int64 {
	var lost int64
	for _, name := range d.List("") {
		f := d.files[name]
		before := int64(len(f.data))
		img := append([]byte(nil), f.durable...)
		if torn && len(f.pending) > 0 {
			total := int64(0)
			for _, w := range f.pending {
				total += w.n + 1
			}
			cut := r.Int63n(total + 1)
			for _, w := range f.pending {
				if cut <= 0 {
					break
				}
				n := min(w.n, cut)
				end := w.off + n
				if end > int64(len(img)) {
					img = resize(img, end)
				}
				copy(img[w.off:], f.pendingData(w)[:n])
				cut -= n + 1
			}
		}
		shrank := max(before-int64(len(img)), 0)
		lost += shrank
		if !bytes.Equal(img, f.data) {
			d.changed(f)
			if d.observe != nil {
				d.observe(Op{Kind: OpPowerLoss, Name: name, Off: int64(len(img)), N: shrank, Sum: crc32.Checksum(img, castagnoli)})
			}
		}
		f.data = img
		f.durable = append([]byte(nil), img...)
		f.pending = nil
		f.appendOnly = true
	}
	return lost
}

func resize(b []byte, n int64) []byte {
	if n <= int64(len(b)) {
		return b[:n]
	}
	return growTo(b, n)
}

// FailSyncs makes the next n Sync calls fail with env.ErrIO.
func (d *Disk) FailSyncs(n int) { d.syncFailures += n }

// FailReads makes the next n reads of files whose names start with prefix
// fail with env.ErrIO (a latent sector error).
func (d *Disk) FailReads(prefix string, n int) { d.readFailures[prefix] += n }

// Corrupt flips one bit of one byte in a file chosen among those whose names
// start with prefix, in both the page cache and the durable image (bit rot on
// the platter). It returns the file and offset, or ok false if no non-empty
// file matches.
func (d *Disk) Corrupt(prefix string, r *env.Rand) (name string, off int64, ok bool) {
	var names []string
	for _, n := range d.List(prefix) {
		if len(d.files[n].data) > 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", 0, false
	}
	name = names[r.Intn(len(names))]
	f := d.files[name]
	off = r.Int63n(int64(len(f.data)))
	bit := byte(1) << r.Intn(8)
	d.changed(f)
	f.data[off] ^= bit
	if off < int64(len(f.durable)) {
		f.durable[off] ^= bit
	}
	return name, off, true
}

// Clone returns a copy of d, page cache, durable images, pending writes,
// file versions and armed faults included, that keeps no memos (env.Memos)
// and has no observer: a reader run on both shows whether what it recalls
// on d is what it would derive afresh.
func (d *Disk) Clone() *Disk {
	c := New()
	c.names = slices.Clone(d.names)
	c.syncFailures, c.versions = d.syncFailures, d.versions
	c.Syncs, c.Writes, c.Reads = d.Syncs, d.Writes, d.Reads
	for prefix, n := range d.readFailures {
		c.readFailures[prefix] = n
	}
	for name, f := range d.files {
		g := &file{data: slices.Clone(f.data), durable: slices.Clone(f.durable), appendOnly: f.appendOnly, version: f.version}
		for _, w := range f.pending {
			w.data = slices.Clone(w.data)
			g.pending = append(g.pending, w)
		}
		c.files[name] = g
	}
	return c
}

// UnsyncedBytes is how many bytes across all files a power loss would drop
// right now (an upper bound when writes overlap).
func (d *Disk) UnsyncedBytes() int64 {
	var n int64
	for _, f := range d.files {
		n += pendingBytes(f)
	}
	return n
}

// Files is the number of files on the disk.
func (d *Disk) Files() int { return len(d.files) }

// ClearFaults disarms pending sync and read failures (rot already on the
// platter stays).
func (d *Disk) ClearFaults() {
	d.syncFailures = 0
	clear(d.readFailures)
}
