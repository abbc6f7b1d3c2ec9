package broker

import (
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultLogDir is the log directory a broker reports when its options
// name none (in the simulator the node's disk is the one directory).
const DefaultLogDir = "/var/lib/kafkasim"

// handleDescribeLogDirs reports this broker's one log directory and the
// size of every replica it holds there (or of those named), as Kafka's
// ReplicaManager.describeLogDirs does; the volume's total and usable
// bytes are not known here (-1). There are no future replicas (no
// reassignment between directories), so every offset lag is 0.
func (b *Broker) handleDescribeLogDirs(req *kmsg.DescribeLogDirsRequest) *kmsg.DescribeLogDirsResponse {
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir, dir.TotalBytes, dir.UsableBytes = b.opts.LogDir, -1, -1
	if dir.Dir == "" {
		dir.Dir = DefaultLogDir
	}
	var wanted map[metadata.TopicPartition]bool
	if req.Topics != nil {
		wanted = map[metadata.TopicPartition]bool{}
		for _, rt := range req.Topics {
			for _, part := range rt.Partitions {
				wanted[metadata.TopicPartition{Topic: rt.Topic, Partition: part}] = true
			}
		}
	}
	for _, p := range b.sortedPartitions() {
		if wanted != nil && !wanted[p.tp] {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != p.tp.Topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = p.tp.Topic
			dir.Topics = append(dir.Topics, t)
		}
		t := &dir.Topics[len(dir.Topics)-1]
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = p.tp.Partition, p.log.Size()
		t.Partitions = append(t.Partitions, rp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}
