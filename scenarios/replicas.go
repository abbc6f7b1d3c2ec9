package scenarios

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/apps"
	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/sim/disk"
)

// replicaSampleEvery is how often, in simulated time, the workload phase
// reads every replica. Kafka's replication promises hold at every instant
// (the ISR agree below the high watermark, a leader holds what any leader
// committed), so a sample need not wait for a quiet point; sampling often
// sees a divergence that the cluster repairs, or hides, before the end.
const replicaSampleEvery = 2 * time.Second

// sampleReplicas reads every replica each replicaSampleEvery until the
// workload ends. Reading is an onlooker's (sim/disk Peek): it counts no
// read and meets no injected disk fault, so the run is the same with or
// without it except for the sampling events themselves.
func (c *cluster) sampleReplicas(rec *history.Recorder, until env.Time) {
	var next func()
	next = func() {
		if err := c.readReplicas(rec, c.samples.scan); err != nil {
			c.w.Trace().Note("replica sample: " + err.Error())
		}
		if at := c.w.Now().Add(replicaSampleEvery); at.Before(until) {
			c.w.At(at, next)
		}
	}
	c.w.At(c.w.Now().Add(replicaSampleEvery), next)
}

// readReplicas records every replica of every partition the cluster knows
// (internal topics too) as its broker's disk holds it now, read as a tool
// reads a log, with its own high watermark and whether its leader counts it
// in the ISR: the checkers' replica agreement works from these.
func (c *cluster) readReplicas(rec *history.Recorder, read replicaReader) error {
	c.checkControllersAgree()
	img := c.image()
	if img == nil {
		return nil
	}
	now := int64(c.w.Elapsed())
	for _, topic := range img.TopicNames() {
		for _, p := range img.Topics[topic].Partitions {
			tp := metadata.TopicPartition{Topic: p.Topic, Partition: p.Partition}
			// The leader and its ISR as the leader itself has them (the
			// ISR its high watermark waits for), not as an image: while
			// the controller is down the image is a broker's, possibly a
			// stale one (acks-all-retries seed 4565 of 10,000: a fenced
			// broker's image still listed a follower the leader had
			// dropped). A broker that believes it leads in an epoch older
			// than the image's is a zombie, not a leader (acks-all-retries
			// seed 43: the old leader, cut off, still leading epoch 0 after
			// the leader of epoch 1 crashed); of two in current epochs the
			// newer leads.
			states := map[int32]broker.PartitionState{}
			leader := int32(-1)
			for _, id := range p.Replicas {
				if int(id) >= len(c.brokers) {
					continue
				}
				if b, ok := c.w.Node(c.brokers[id]).Process().(*broker.Broker); ok {
					if st, ok := b.Partition(tp); ok {
						states[id] = st
						if st.Role == "leader" && st.LeaderEpoch >= p.LeaderEpoch && (leader < 0 || st.LeaderEpoch > states[leader].LeaderEpoch) {
							leader = id
						}
					}
				}
			}
			checkOneLeaderPerEpoch(tp, states)
			isr := p.ISR
			if leader >= 0 {
				isr = states[leader].ISR
			}
			for _, id := range p.Replicas {
				if int(id) >= len(c.brokers) {
					continue
				}
				name := c.brokers[id]
				k := replicaKey{name, tp}
				dump, unchanged, err := read(k, c.w.Node(name).Disk().Onlooker())
				if err != nil {
					return fmt.Errorf("reading %v on %s: %w", p.TopicPartition, name, err)
				}
				rep := history.Replica{TP: apps.HTP(p.TopicPartition), Broker: name, Leader: id == leader, InISR: slices.Contains(isr, id),
					HighWatermark: dump.HighWatermark, Stopped: dump.Stopped}
				if st, ok := states[id]; ok {
					rep.Online = true
					rep.HighWatermark = st.HighWatermark
				}
				rep.Batches = c.samples.batches(k, dump.Batches, unchanged)
				for _, e := range dump.Epochs {
					rep.Epochs = append(rep.Epochs, history.ReplicaEpoch{Epoch: e.Epoch, Start: e.StartOffset})
				}
				rec.Replica(now, "replica-reader", rep)
			}
		}
	}
	return nil
}

// replicaReader reads one replica's log off its broker's disk, and says
// how many of its leading batches are as the last read of it found them.
type replicaReader func(replicaKey, disk.Onlooker) (dump log.Dump, unchanged int, err error)

// finalReplicaRead reads every batch and checks every checksum, as the
// final read must, comparing nothing with earlier reads.
func finalReplicaRead(k replicaKey, d disk.Onlooker) (log.Dump, int, error) {
	dump, err := log.ReadDump(d, k.tp.Topic, k.tp.Partition)
	return dump, 0, err
}

// replicaSamples keeps, per replica, a scanner of its log and the batches
// of its last sample, so a sample costs what was written since the last
// (sampling every 2 s over a long run read each log whole, again and
// again), and a sample of a log that only grew shares the earlier
// sample's array (histories are read only).
type replicaSamples struct {
	scanners map[replicaKey]*log.DumpScanner
	last     map[replicaKey][]history.ReplicaBatch
}

type replicaKey struct {
	broker string
	tp     metadata.TopicPartition
}

func (rs *replicaSamples) scan(k replicaKey, d disk.Onlooker) (log.Dump, int, error) {
	if rs.scanners == nil {
		rs.scanners = map[replicaKey]*log.DumpScanner{}
	}
	sc := rs.scanners[k]
	if sc == nil {
		sc = &log.DumpScanner{}
		rs.scanners[k] = sc
	}
	return sc.Scan(d, k.tp.Topic, k.tp.Partition)
}

// batches returns dumped as history batches, given that its first
// unchanged batches are those of the replica's last sample. The result
// extends the last sample's array in place when the last sample is a
// prefix of dumped: the last sample is always the longest view of its
// array, so no earlier view sees the change.
func (rs *replicaSamples) batches(k replicaKey, dumped []log.DumpedBatch, unchanged int) []history.ReplicaBatch {
	if rs.last == nil {
		rs.last = map[replicaKey][]history.ReplicaBatch{}
	}
	prev := rs.last[k]
	shared := len(prev) <= len(dumped)
	for i := min(unchanged, len(prev)); shared && i < len(prev); i++ {
		shared = prev[i] == replicaBatch(dumped[i])
	}
	if !shared || prev == nil {
		prev = make([]history.ReplicaBatch, 0, len(dumped))
	} else if len(prev) == len(dumped) {
		return prev
	}
	out := prev
	for _, b := range dumped[len(prev):] {
		out = append(out, replicaBatch(b))
	}
	rs.last[k] = out
	return out
}
func replicaBatch(b log.DumpedBatch) history.ReplicaBatch {
	return history.ReplicaBatch{Base: b.BaseOffset, Last: b.LastOffset, Epoch: b.LeaderEpoch, CRC: b.CRC,
		Producer: b.ProducerID, ProducerEpoch: b.ProducerEpoch, Sequence: b.BaseSequence, Control: b.Control}
}
