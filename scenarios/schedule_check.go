package scenarios

import (
	"fmt"
	"slices"

	"github.com/kafkasim/kafkasim/faults"
)

// CheckRun refuses, in one line, a run of s with o that cannot be made: a
// bad message override (applied before s is validated, so its bounds
// apply), an invalid scenario, a fault schedule naming a node, a partition,
// a group or a transactional id the run does not have.
func CheckRun(s Scenario, o RunOptions) error {
	if o.Messages < 0 {
		return fmt.Errorf("scenario %q: --messages %d < 0 (0 keeps the scenario's)", s.Name, o.Messages)
	}
	if o.Messages > 0 {
		s.Workload.Messages = o.Messages
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if o.Faults != nil {
		if err := s.checkSchedule(*o.Faults); err != nil {
			return fmt.Errorf("scenario %q: fault schedule: %w", s.Name, err)
		}
	}
	return nil
}

// checkSchedule refuses an action aimed at what the run has none of.
func (s Scenario) checkSchedule(sched faults.Schedule) error {
	nodes := s.nodeNames()
	topics := []string{inputTopic}
	if s.Workload.Kind == ConsumeTransformProduce {
		topics = append(topics, outputTopic)
	}
	check := func(a faults.Action, t faults.Target) error {
		switch t.Role {
		case faults.RoleNode:
			if !slices.Contains(nodes, t.Name) {
				return fmt.Errorf("%s: no node %q (the run has %v)", a, t.Name, nodes)
			}
		case faults.RoleLeader, faults.RoleFollower:
			if !slices.Contains(topics, t.Topic) || t.Partition < 0 || int(t.Partition) >= s.Cluster.Partitions {
				return fmt.Errorf("%s: no partition %s/%d (the run has %v, %d partitions each)", a, t.Topic, t.Partition, topics, s.Cluster.Partitions)
			}
		case faults.RoleGroupCoordinator:
			if s.Workload.Kind == ProduceOnly || t.Name != groupID {
				return fmt.Errorf("%s: no group %q", a, t.Name)
			}
		}
		return nil
	}
	for _, a := range sched {
		ts := []faults.Target{a.Target, a.Peer}
		for _, g := range a.Groups {
			ts = append(ts, g...)
		}
		for _, t := range ts {
			if err := check(a, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodeNames are the nodes a run of s has, as fault schedules name them.
func (s Scenario) nodeNames() []string {
	names := controllerNames(s.Cluster.Controllers)
	for i := range s.Cluster.Brokers {
		names = append(names, brokerNode(i))
	}
	for i := range s.Workload.Producers {
		names = append(names, producerNode(i))
	}
	switch s.Workload.Kind {
	case ConsumeProcessSink:
		names = append(names, sinkNode)
		for i := range s.Workload.Consumers {
			names = append(names, consumerNode(i))
		}
	case ConsumeTransformProduce:
		for i := range s.Workload.Consumers {
			names = append(names, processorNode(i))
		}
	}
	if s.Workload.Kind != ConsumeProcessSink {
		names = append(names, readerNode)
	}
	return names
}
