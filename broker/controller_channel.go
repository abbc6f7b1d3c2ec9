package broker

import (
	"fmt"
	"time"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerChannel carries the broker's requests to the active controller
// (registration, heartbeats, AlterPartition, forwarded CreateTopics,
// producer-id blocks). It talks to one controller at a time and moves on
// to the next when that one answers NOT_CONTROLLER or does not answer at
// all; the caller's retry then goes there. Kafka's
// NodeToControllerChannelManager learns the active controller from the
// quorum's metadata; a broker that does not fetch the metadata log yet
// learns it by asking round the voters.
type controllerChannel struct {
	b      *Broker
	addrs  []string
	at     int
	client *rpc.Client
}

func newControllerChannel(b *Broker, addrs []string) *controllerChannel {
	return &controllerChannel{b: b, addrs: addrs}
}

func (ch *controllerChannel) current() *rpc.Client {
	if ch.client == nil {
		ch.client = rpc.NewClient(ch.b.rt, ch.addrs[ch.at], rpc.ClientOptions{ClientID: fmt.Sprintf("broker-%d", ch.b.opts.ID), Speaks: controllerVersions})
	}
	return ch.client
}

// Do sends req to the controller the channel is at.
func (ch *controllerChannel) Do(req kmsg.Request, timeout time.Duration, cb func(kmsg.Response, error)) {
	client := ch.current()
	client.Do(req, timeout, func(resp kmsg.Response, err error) {
		if (err != nil || notController(resp)) && len(ch.addrs) > 1 && ch.client == client {
			ch.b.e.Log("controller-moved-on", "from", ch.addrs[ch.at], "why", why(err))
			client.Close()
			ch.client = nil
			ch.at = (ch.at + 1) % len(ch.addrs)
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
	case *kmsg.DescribeQuorumResponse:
		return len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 &&
			r.Topics[0].Partitions[0].ErrorCode == kerr.NotLeaderForPartition.Code
	}
	return false
}
