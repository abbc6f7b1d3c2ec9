package log

// VersionedFiles is Files that can tell whether a file changed other than
// by growing: Version changes whenever bytes already in the file may have
// (an overwrite, a truncation, a power loss, bit rot, a new file under the
// name), and stays put while the file is only appended to. sim/disk's
// onlooker is one.
type VersionedFiles interface {
	Files
	Version(name string) (version uint64, ok bool)
}

// A DumpScanner reads one replica's log again and again, as ScanDump does,
// but parses only what was appended since its last scan: a segment whose
// version is unchanged keeps the batches read from it, and reading resumes
// where it stopped. Sampling a growing log every few seconds so costs what
// was written since, not the whole log each time.
type DumpScanner struct {
	batches []DumpedBatch
	segs    []scannedSegment
	// The checkpoints as last read, and the versions they were read at.
	checkpoints                             Dump
	epochsAt, watermarkAt, startAt          uint64
	haveEpochs, haveMarked, haveStart, read bool
	// The partition last scanned, its directory and its checkpoint
	// files' names, made once: a replica is sampled many times.
	named                                     bool
	topic                                     string
	partition                                 int32
	dir, epochsName, watermarkName, startName string
}

type scannedSegment struct {
	name    string
	version uint64
	from    int64 // the offset its first batch may not start below
	first   int   // its batches are batches[first:first+n]
	n       int
	read    int   // bytes parsed: the start of the first batch not taken
	next    int64 // the offset after its last batch
	stopped error // why it stopped before its end, if it did
}

// Scan returns the replica's log as ScanDump would now, and how many of its
// leading batches are the ones the previous Scan returned, unchanged. The
// dump's Batches are the scanner's own, valid until the next Scan.
//
// A log whose first segments were removed (retention, DeleteSegmentsBelow)
// keeps the batches read from the segments that remain; none of its
// leading batches is then unchanged.
func (s *DumpScanner) Scan(d VersionedFiles, topic string, partition int32) (dump Dump, unchanged int, err error) {
	if !s.named || s.topic != topic || s.partition != partition {
		s.named, s.topic, s.partition = true, topic, partition
		s.dir = Dir(topic, partition)
		s.epochsName, s.watermarkName = s.dir+"/"+epochCheckpointFile, s.dir+"/"+hwCheckpointFile
		s.startName = s.dir + "/" + logStartCheckpointFile
	}
	dir := s.dir
	dump = Dump{HighWatermark: -1, LogStartOffset: -1}
	unchanged = -1 // not yet known: everything so far is as before
	bases := segmentBases(d, dir)
	if len(bases) > 0 && s.dropLeading(logName(dir, bases[0])) {
		unchanged = 0
	}
	cut := func(at int) {
		if unchanged < 0 {
			unchanged = at
		}
		s.batches = s.batches[:at]
	}
	next := int64(0)
	segs := s.segs[:0:0]
	prefix := true // every segment so far is the one scanned before
	for i, base := range bases {
		name := logName(dir, base)
		version, _ := d.Version(name)
		data, rerr := d.ReadFile(name)
		if rerr != nil {
			return dump, 0, rerr
		}
		var seg scannedSegment
		if prefix && i < len(s.segs) && s.segs[i].name == name && s.segs[i].version == version && s.segs[i].from == next {
			seg = s.segs[i]
			if seg.read < len(data) {
				// Grown since: what follows this segment's batches is
				// stale, and parsing resumes where it stopped.
				cut(seg.first + seg.n)
				prefix = false
				before := len(s.batches)
				s.batches, seg.read, seg.next, seg.stopped = scanSegment(data, seg.read, seg.next, false, s.batches)
				seg.n += len(s.batches) - before
			}
		} else {
			if prefix {
				at := len(s.batches)
				if i < len(s.segs) {
					at = s.segs[i].first
				}
				cut(at)
				prefix = false
			}
			seg = scannedSegment{name: name, version: version, from: next, first: len(s.batches)}
			s.batches, seg.read, seg.next, seg.stopped = scanSegment(data, 0, next, false, s.batches)
			seg.n = len(s.batches) - seg.first
		}
		segs = append(segs, seg)
		next = seg.next
		if seg.stopped != nil {
			dump.Stopped = name + ": " + seg.stopped.Error()
			break
		}
	}
	if prefix && len(segs) < len(s.segs) {
		// Segments are gone from the end (or reading stops earlier).
		at := len(s.batches)
		if len(segs) > 0 {
			last := segs[len(segs)-1]
			at = last.first + last.n
		} else {
			at = 0
		}
		cut(at)
	}
	if unchanged < 0 {
		unchanged = len(s.batches)
	}
	s.segs = segs
	dump.Batches = s.batches
	s.readCheckpoints(d, &dump)
	return dump, unchanged, nil
}

// dropLeading forgets the segments scanned before the one named first, if
// first was scanned but not first: the log lost its head. The batches of
// the segments after stay; the loop in Scan checks their versions as
// usual. A segment where reading stopped is not kept this way (it was
// read against its predecessor's end, which is gone), and it reports
// whether it dropped anything.
func (s *DumpScanner) dropLeading(first string) bool {
	for j := 1; j < len(s.segs); j++ {
		if s.segs[j].name != first {
			continue
		}
		if s.segs[j].stopped != nil {
			return false
		}
		at := s.segs[j].first
		s.batches = append(s.batches[:0], s.batches[at:]...)
		s.segs = append(s.segs[:0], s.segs[j:]...)
		for k := range s.segs {
			s.segs[k].first -= at
		}
		// A fresh scan reads the first segment against offset 0; its
		// batches, taken against a higher bound, pass that too.
		s.segs[0].from = 0
		return true
	}
	return false
}

// readCheckpoints is readDumpCheckpoints, parsing a checkpoint file again
// only when its version moved (checkpoints are replaced, not appended, so
// any rewrite gives a new version).
func (s *DumpScanner) readCheckpoints(d VersionedFiles, out *Dump) {
	// Each file on its own: the high watermark's is rewritten at every
	// flush, the epoch cache's only when leadership moves.
	if ev, eok := d.Version(s.epochsName); !s.read || eok != s.haveEpochs || ev != s.epochsAt {
		s.checkpoints.Epochs = readDumpEpochs(d, s.epochsName)
		s.epochsAt, s.haveEpochs = ev, eok
	}
	if hv, hok := d.Version(s.watermarkName); !s.read || hok != s.haveMarked || hv != s.watermarkAt {
		s.checkpoints.HighWatermark = readDumpOffset(d, s.watermarkName, false)
		s.watermarkAt, s.haveMarked = hv, hok
	}
	if sv, sok := d.Version(s.startName); !s.read || sok != s.haveStart || sv != s.startAt {
		s.checkpoints.LogStartOffset = readDumpOffset(d, s.startName, true)
		s.startAt, s.haveStart = sv, sok
	}
	s.read = true
	out.Epochs, out.HighWatermark = s.checkpoints.Epochs, s.checkpoints.HighWatermark
	out.LogStartOffset = s.checkpoints.LogStartOffset
}
