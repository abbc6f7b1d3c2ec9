package broker

import (
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isrTick lets every partition's core shrink its ISR by the followers that
// have not caught up for replica.lag.time.max.ms.
func (b *Broker) isrTick() {
	defer b.e.AfterFunc(b.cfg.ReplicaLagTimeMax/2, b.isrTick)
	for _, p := range b.sortedPartitions() {
		// On the wall clock: Kafka's Partition.getOutOfSyncReplicas reads
		// time.milliseconds().
		p.r.Tick(b.e.WallClock(), b.brokerEpoch >= 0)
		if err := p.apply(); err != nil {
			b.e.Halt(err.Error())
			return
		}
	}
}

// alterPartitionRetryBackoff is how long a proposal that got no answer
// waits before it goes again.
const alterPartitionRetryBackoff = 100 * time.Millisecond

// sendAlterPartition carries a core's ISR proposal to the controller and
// its answer back.
func (p *partition) sendAlterPartition(e replica.Effect) {
	b := p.b
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID = b.opts.ID
	req.BrokerEpoch = b.brokerEpoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = p.tp.Topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p.tp.Partition
	rp.LeaderEpoch = e.LeaderEpoch
	rp.NewISR = slices.Clone(e.ISR)
	rp.PartitionEpoch = e.PartitionEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	b.controller.Do(req, 5*b.cfg.BrokerHeartbeatInterval, func(resp kmsg.Response, err error) {
		res := alterPartitionResult(p, resp, err)
		answer := func() {
			if b.partitions[p.tp] != p {
				return // the replica was replaced
			}
			p.r.ISRAnswered(e.LeaderEpoch, e.ISR, res)
			if err := p.apply(); err != nil {
				b.e.Halt(err.Error())
			}
		}
		if res.Lost {
			// No answer, or one from a controller that is not the active
			// one: the core sends the proposal again, after a backoff, and
			// the channel has moved on to the controller the quorum now
			// names (Kafka's NodeToControllerRequestThread puts a request
			// answered NOT_CONTROLLER back first in its queue, for the
			// new controller; AlterPartitionManager retries with a backoff).
			b.e.AfterFunc(alterPartitionRetryBackoff, answer)
			return
		}
		answer()
	})
}

// alterPartitionResult reads the controller's answer for p.
func alterPartitionResult(p *partition, resp kmsg.Response, err error) replica.ISRResult {
	if err != nil || notController(resp) {
		return replica.ISRResult{Lost: true} // not applied where it went: send it again
	}
	ar := resp.(*kmsg.AlterPartitionResponse)
	code := ar.ErrorCode
	var got *kmsg.AlterPartitionResponseTopicPartition
	for i := range ar.Topics {
		for j := range ar.Topics[i].Partitions {
			if ar.Topics[i].Topic == p.tp.Topic && ar.Topics[i].Partitions[j].Partition == p.tp.Partition {
				got = &ar.Topics[i].Partitions[j]
			}
		}
	}
	if code == 0 && got != nil {
		code = got.ErrorCode
	}
	switch {
	case code != 0:
		return replica.ISRResult{Refused: kerr.ErrorForCode(code).Error(), Code: code}
	case got == nil:
		return replica.ISRResult{Refused: "no answer for the partition"}
	}
	return replica.ISRResult{LeaderEpoch: got.LeaderEpoch, PartitionEpoch: got.PartitionEpoch, ISR: got.ISR}
}
