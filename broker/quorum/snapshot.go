package quorum

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	klog "github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/env"
)

// Snapshot files (KIP-630), beside the metadata log's segments:
// "__cluster_metadata-0/<end offset, 20 digits>-<epoch, 10
// digits>.checkpoint", Kafka's Snapshots.filenameFromSnapshotId. Each holds
// the state machine's bytes after a line "crc32c <hex>" over them, written
// with env.WriteFileAtomic (synced and renamed into place), so a torn or
// rotten snapshot is noticed instead of loaded. Only the latest is kept:
// writing one removes the older ones (KafkaMetadataLog.deleteBeforeSnapshot
// removes snapshots below the log start).

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func snapshotDir() string { return klog.Dir(Topic, 0) }

func snapshotName(id raft.SnapshotID) string {
	return fmt.Sprintf("%s/%020d-%010d.checkpoint", snapshotDir(), id.EndOffset, id.Epoch)
}

func parseSnapshotName(name string) (raft.SnapshotID, bool) {
	base, ok := strings.CutPrefix(name, snapshotDir()+"/")
	if !ok {
		return raft.SnapshotID{}, false
	}
	base, ok = strings.CutSuffix(base, ".checkpoint")
	if !ok || len(base) != 31 || base[20] != '-' {
		return raft.SnapshotID{}, false
	}
	end, err1 := strconv.ParseInt(base[:20], 10, 64)
	epoch, err2 := strconv.ParseInt(base[21:], 10, 32)
	if err1 != nil || err2 != nil {
		return raft.SnapshotID{}, false
	}
	return raft.SnapshotID{EndOffset: end, Epoch: int32(epoch)}, true
}

// writeSnapshot writes s durably, then removes every other snapshot file.
func writeSnapshot(d env.Disk, s raft.Snapshot) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "crc32c %08x\n", crc32.Checksum(s.Data, castagnoli))
	b.Write(s.Data)
	name := snapshotName(s.ID)
	if err := env.WriteFileAtomic(d, name, b.Bytes()); err != nil {
		return err
	}
	for _, other := range d.List(snapshotDir() + "/") {
		if _, ok := parseSnapshotName(other); ok && other != name {
			if err := d.Remove(other); err != nil {
				return err
			}
		}
	}
	return nil
}

// readLatestSnapshot reads the newest snapshot file; none is the zero
// Snapshot. One that fails its CRC is an error (the process halts, as a
// KRaft node that cannot load its snapshot does).
func readLatestSnapshot(d env.Disk) (raft.Snapshot, error) {
	var latest raft.SnapshotID
	name := ""
	for _, n := range d.List(snapshotDir() + "/") {
		if id, ok := parseSnapshotName(n); ok && id.EndOffset > latest.EndOffset {
			latest, name = id, n
		}
	}
	if name == "" {
		return raft.Snapshot{}, nil
	}
	data, err := d.ReadFile(name)
	if err != nil {
		return raft.Snapshot{}, fmt.Errorf("snapshot %s: %w", name, err)
	}
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if want := fmt.Sprintf("crc32c %08x", crc32.Checksum(rest, castagnoli)); !ok || string(line) != want {
		return raft.Snapshot{}, fmt.Errorf("snapshot %s: crc line %q, want %q", name, line, want)
	}
	return raft.Snapshot{ID: latest, Data: rest}, nil
}
