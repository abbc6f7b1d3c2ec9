package broker

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/broker/defect"
	"github.com/kafkasim/kafkasim/probe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isrTick shrinks the ISR of every partition this broker leads by the
// followers that have not caught up for replica.lag.time.max.ms.
func (b *Broker) isrTick() {
	defer b.e.AfterFunc(b.cfg.ReplicaLagTimeMax/2, b.isrTick)
	for _, p := range b.sortedPartitions() {
		p.maybeShrinkISR()
	}
}

func (p *partition) maybeShrinkISR() {
	if p.role != roleLeader || p.pendingISR != nil {
		return
	}
	now := p.b.e.WallClock() // Kafka: Partition.getOutOfSyncReplicas, time.milliseconds()
	var out []int32
	for _, r := range p.state.ISR {
		if f := p.followers[r]; r != p.b.opts.ID && f != nil && now.Sub(f.lastCaughtUp) > p.b.cfg.ReplicaLagTimeMax {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return
	}
	isr := slices.DeleteFunc(slices.Clone(p.state.ISR), func(r int32) bool { return slices.Contains(out, r) })
	p.b.e.Log("isr-shrink", "partition", p.tp.String(), "out", fmt.Sprint(out), "isr", fmt.Sprint(isr))
	p.proposeISR(isr)
}

// maybeExpandISR adds a follower that has caught up to the high watermark
// and to the start of the current leader epoch.
func (p *partition) maybeExpandISR(r int32) {
	if p.role != roleLeader || p.pendingISR != nil || p.state.InISR(r) {
		return
	}
	f := p.followers[r]
	start, ok := p.epochStartOffset()
	hw := p.hw
	if p.b.cfg.Defects.Has(defect.ISRExpansionIgnoresHighWatermark) {
		hw = 0
	}
	if f == nil || !ok || f.logEnd < hw || f.logEnd < start {
		return
	}
	isr := append(slices.Clone(p.state.ISR), r)
	slices.Sort(isr)
	p.b.e.Log("isr-expand", "partition", p.tp.String(), "in", r, "isr", fmt.Sprint(isr))
	p.proposeISR(isr)
	if p.pendingISR != nil {
		p.b.e.Probe(probe.ISRExpansionPending, p.tp.String())
	}
}

// epochStartOffset is where the leader's current epoch begins in its log.
func (p *partition) epochStartOffset() (int64, bool) {
	entries := p.log.EpochEntries()
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Epoch == p.state.LeaderEpoch {
			return entries[i].StartOffset, true
		}
	}
	return 0, false
}

// proposeISR sends an AlterPartition; until the controller answers, the
// high watermark waits for the union of the old and new ISR.
func (p *partition) proposeISR(isr []int32) {
	b := p.b
	if b.brokerEpoch < 0 {
		return
	}
	for _, r := range isr {
		if p.state.InISR(r) {
			continue
		}
		// A replica joins the ISR only once it holds everything the high
		// watermark covers and has reached the start of the leader's
		// epoch (KAFKA-7128): else a failover to it loses what this
		// leader committed in its epoch.
		f := p.followers[r]
		start, ok := p.epochStartOffset()
		if f == nil || !ok || f.logEnd < p.hw || f.logEnd < start {
			end := int64(-1)
			if f != nil {
				end = f.logEnd
			}
			panic(invariantf("%v: replica %d proposed for the ISR at log end %d, below the high watermark %d or the epoch %d start %d", p.tp, r, end, p.hw, p.state.LeaderEpoch, start))
		}
	}
	p.pendingISR = isr
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID = b.opts.ID
	req.BrokerEpoch = b.brokerEpoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = p.tp.Topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p.tp.Partition
	rp.LeaderEpoch = p.state.LeaderEpoch
	rp.NewISR = slices.Clone(isr)
	rp.PartitionEpoch = p.state.PartitionEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	epoch := p.state.LeaderEpoch
	b.controller.Do(req, 5*b.cfg.BrokerHeartbeatInterval, func(resp kmsg.Response, err error) {
		if b.partitions[p.tp] != p || p.role != roleLeader || p.state.LeaderEpoch != epoch || !slices.Equal(p.pendingISR, isr) {
			return // the world moved on
		}
		p.pendingISR = nil
		if err != nil {
			return // retried by the next shrink tick or fetch
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
		if code != 0 || got == nil {
			b.e.Log("alter-partition-refused", "partition", p.tp.String(), "error", kerr.ErrorForCode(code).Error())
			return
		}
		if got.LeaderEpoch == p.state.LeaderEpoch && got.PartitionEpoch > p.state.PartitionEpoch {
			ps := p.state.Clone()
			ps.ISR = slices.Clone(got.ISR)
			ps.PartitionEpoch = got.PartitionEpoch
			p.state = ps
			if len(ps.ISR) == 1 && len(ps.Replicas) > 1 {
				b.e.Probe(probe.ISRShrunkToLeader, p.tp.String())
			}
			p.maybeAdvanceHighWatermark()
		}
	})
}
