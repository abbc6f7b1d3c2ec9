package broker

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerChannel carries the broker's requests to the active controller
// (registration, heartbeats, AlterPartition, forwarded CreateTopics,
// producer-id blocks). Like Kafka's NodeToControllerChannelManager it
// sends them to the quorum's leader as the broker's observer of the
// metadata log knows it; while it knows none, or after the one it asked
// answered NOT_CONTROLLER or did not answer at all, it moves on round the
// controllers, and the caller's retry goes there.
type controllerChannel struct {
	b      *Broker
	ids    []int32 // sorted
	addrs  map[int32]string
	at     int
	client *rpc.Client
	to     int32 // the controller client talks to
}

func newControllerChannel(b *Broker, addrs map[int32]string) *controllerChannel {
	return &controllerChannel{b: b, ids: slices.Sorted(maps.Keys(addrs)), addrs: addrs}
}

func (ch *controllerChannel) current() *rpc.Client {
	to := ch.ids[ch.at%len(ch.ids)]
	if q := ch.b.quorum; q != nil {
		if leader, _ := q.Leader(); ch.addrs[leader] != "" {
			to = leader
		}
	}
	if ch.client != nil && ch.to != to {
		ch.client.Close()
		ch.client = nil
	}
	if ch.client == nil {
		ch.to = to
		ch.client = rpc.NewClient(ch.b.rt, ch.addrs[to], rpc.ClientOptions{ClientID: fmt.Sprintf("broker-%d", ch.b.opts.ID), Speaks: controllerVersions})
	}
	return ch.client
}

// Do sends req to the controller the channel is at.
func (ch *controllerChannel) Do(req kmsg.Request, timeout time.Duration, cb func(kmsg.Response, error)) {
	client := ch.current()
	client.Do(req, timeout, func(resp kmsg.Response, err error) {
		if (err != nil || notController(resp)) && len(ch.ids) > 1 && ch.client == client {
			ch.b.e.Log("controller-moved-on", "from", ch.addrs[ch.to], "why", why(err))
			client.Close()
			ch.client = nil
			ch.at = slices.Index(ch.ids, ch.to) + 1
		}
		cb(resp, err)
	})
}

func why(err error) string {
	if err != nil {
		return err.Error()
	}
	return "NOT_CONTROLLER"
}

// notController reports whether a controller answered that it is not the
// active one (DescribeQuorum: not the quorum's leader).
func notController(resp kmsg.Response) bool {
	code := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == code
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == code
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == code
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == code
	case *kmsg.CreateTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == code
	case *kmsg.DeleteTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == code
	case *kmsg.CreatePartitionsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == code
	case *kmsg.ElectLeadersResponse:
		return r.ErrorCode == code
	case *kmsg.AlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == code
	case *kmsg.IncrementalAlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == code
	case *kmsg.DescribeQuorumResponse:
		return len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 &&
			r.Topics[0].Partitions[0].ErrorCode == kerr.NotLeaderForPartition.Code
	}
	return false
}
