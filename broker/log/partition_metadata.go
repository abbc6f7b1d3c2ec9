package log

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/kafkasim/kafkasim/env"
)

// PartitionMetadataFile names the file in a partition's directory that
// records the id of the topic the log belongs to (Kafka's
// PartitionMetadataFile, KIP-516: "version: 0" and "topic_id: <base64>").
// A topic deleted and created again under the same name has a new id, so a
// broker that finds a log with another id knows it for a stray of the old
// topic and deletes it instead of serving it.
const PartitionMetadataFile = "partition.metadata"

func partitionMetadataName(topic string, partition int32) string {
	return Dir(topic, partition) + "/" + PartitionMetadataFile
}

// TopicID reads the topic id recorded in the partition's directory; ok is
// false when none is (a log written before ids were recorded, or none at
// all).
func TopicID(d env.Disk, topic string, partition int32) (id [16]byte, ok bool, err error) {
	name := partitionMetadataName(topic, partition)
	data, err := d.ReadFile(name)
	if errors.Is(err, env.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	var version, encoded string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(k) {
		case "version":
			version = strings.TrimSpace(v)
		case "topic_id":
			encoded = strings.TrimSpace(v)
		}
	}
	raw, derr := base64.RawURLEncoding.DecodeString(encoded)
	if version != "0" || derr != nil || len(raw) != len(id) {
		return id, false, fmt.Errorf("%s: malformed (version %q, topic_id %q)", name, version, encoded)
	}
	copy(id[:], raw)
	return id, true, nil
}

// SetTopicID records the topic id in the partition's directory, durably.
func SetTopicID(d env.Disk, topic string, partition int32, id [16]byte) error {
	data := fmt.Sprintf("version: 0\ntopic_id: %s\n", base64.RawURLEncoding.EncodeToString(id[:]))
	return env.WriteFileAtomic(d, partitionMetadataName(topic, partition), []byte(data))
}

// Delete removes a partition's directory: every segment, index, sidecar
// and checkpoint, the partition metadata last, so that a crash part way
// leaves files that still name the deleted topic's id (and are deleted
// again when found). The log must not be used afterwards.
func Delete(d env.Disk, topic string, partition int32) error {
	meta := partitionMetadataName(topic, partition)
	for _, name := range d.List(Dir(topic, partition) + "/") {
		if name == meta {
			continue
		}
		if err := d.Remove(name); err != nil {
			return err
		}
	}
	return d.Remove(meta)
}
