package sink

import (
	"errors"
	"fmt"

	"github.com/kafkasim/kafkasim/env"
)

// The store's files on its node's disk.
const (
	// logFile holds one record per write since the snapshot, appended and
	// synced before the write is acknowledged.
	logFile = "sink/log"
	// snapshotFile holds the whole state as of some revision; it is
	// replaced atomically (env.WriteFileAtomic) when the log is compacted.
	snapshotFile = "sink/snapshot"
)

// Recovery is what a server's Start found on its disk.
type Recovery struct {
	// Revision is the revision recovered: every write up to it is in the
	// state served.
	Revision uint64
	// SnapshotRevision is the revision of the snapshot loaded (0: none).
	SnapshotRevision uint64
	// Records is the number of log records replayed past the snapshot.
	Records int
	// Tail says why the log's tail was cut: "" (it was clean), "torn" (it
	// ends inside a record: a write cut short by a power loss) or "corrupt"
	// (a whole record failed its checksum: damage on the disk, which loses
	// that record and every one after it).
	Tail string
	// TruncatedBytes is how many bytes of tail were cut.
	TruncatedBytes int64
}

// errSnapshotCorrupt is a snapshot that fails its checksum. The log before
// it is gone, so no consistent state can be rebuilt: the server halts
// rather than serve a made-up one.
var errSnapshotCorrupt = errors.New("snapshot corrupt")

// storage is the durable half of the store: the log file and the snapshot.
type storage struct {
	disk         env.Disk
	logBytes     int64 // the log's length, page cache included
	durableBytes int64 // the log's length at its last successful sync
}

// recoverStorage rebuilds the state from the snapshot and the log, cuts a
// torn or corrupt tail off the log, and syncs what remains, so that the
// state served is durable even if the last incarnation crashed with
// records still in the page cache. An error wrapping errSnapshotCorrupt is
// permanent; any other (a failed read, sync or truncate) may pass.
func recoverStorage(d env.Disk) (*storage, *state, Recovery, error) {
	var rec Recovery
	s := newState()
	snap, err := d.ReadFile(snapshotFile)
	switch {
	case errors.Is(err, env.ErrNotExist):
	case err != nil:
		return nil, nil, rec, fmt.Errorf("read %s: %w", snapshotFile, err)
	default:
		if s, err = decodeSnapshot(snap); err != nil {
			return nil, nil, rec, fmt.Errorf("%s: %w: %v", snapshotFile, errSnapshotCorrupt, err)
		}
	}
	rec.SnapshotRevision = s.revision

	data, err := d.ReadFile(logFile)
	exists := err == nil
	if err != nil && !errors.Is(err, env.ErrNotExist) {
		return nil, nil, rec, fmt.Errorf("read %s: %w", logFile, err)
	}
	off := 0
	for off < len(data) {
		revision, puts, n, fate := readRecord(data[off:])
		if fate != recordOK {
			rec.Tail = fate.String()
			break
		}
		if revision <= rec.SnapshotRevision && rec.Records == 0 {
			// Written before the snapshot; the compaction that took the
			// snapshot did not get to empty the log.
			off += n
			continue
		}
		assert(revision == s.revision+1, "log record at byte %d has revision %d after revision %d", off, revision, s.revision)
		s.apply(puts)
		rec.Records++
		off += n
	}
	if off < len(data) {
		rec.TruncatedBytes = int64(len(data) - off)
		if err := d.Truncate(logFile, int64(off)); err != nil {
			return nil, nil, rec, fmt.Errorf("truncate %s to %d: %w", logFile, off, err)
		}
	}
	if exists {
		if err := d.Sync(logFile); err != nil {
			return nil, nil, rec, fmt.Errorf("sync %s: %w", logFile, err)
		}
	}
	rec.Revision = s.revision
	st := &storage{disk: d, logBytes: int64(off), durableBytes: int64(off)}
	return st, s, rec, nil
}

// append writes one record to the log's page cache. If the disk refuses,
// the log is cut back to where it was; an error from that cut too means
// the log's tail is unknown (halt).
func (st *storage) append(record []byte) (err, cutErr error) {
	if err := st.disk.Append(logFile, record); err != nil {
		if cutErr := st.cut(st.logBytes); cutErr != nil {
			return err, cutErr
		}
		return err, nil
	}
	st.logBytes += int64(len(record))
	return nil, nil
}

// sync makes the log durable.
func (st *storage) sync() error {
	if st.logBytes == st.durableBytes {
		return nil
	}
	if err := st.disk.Sync(logFile); err != nil {
		return err
	}
	st.durableBytes = st.logBytes
	return nil
}

// rollback cuts every unsynced record off the log (a shrinking truncate is
// durable at once), after a failed sync: those writes were never
// acknowledged and must not come back after a restart.
func (st *storage) rollback() error {
	if err := st.cut(st.durableBytes); err != nil {
		return err
	}
	st.logBytes = st.durableBytes
	return nil
}

func (st *storage) cut(size int64) error {
	err := st.disk.Truncate(logFile, size)
	if errors.Is(err, env.ErrNotExist) && size == 0 {
		return nil
	}
	return err
}

// compact replaces the snapshot with the whole (durable) state and empties
// the log. A crash between the two leaves a log whose records the snapshot
// already holds; recovery skips them.
func (st *storage) compact(s *state) error {
	assert(st.logBytes == st.durableBytes, "compacting with %d unsynced log bytes", st.logBytes-st.durableBytes)
	if err := env.WriteFileAtomic(st.disk, snapshotFile, encodeSnapshot(s)); err != nil {
		return fmt.Errorf("write %s: %w", snapshotFile, err)
	}
	if err := st.disk.Truncate(logFile, 0); err != nil {
		return fmt.Errorf("truncate %s: %w", logFile, err)
	}
	st.logBytes, st.durableBytes = 0, 0
	return nil
}
