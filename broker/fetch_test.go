package broker_test

import (
	"testing"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// From Fetch v13 a consumer names topics by id (KIP-516): the answer
// carries the id back, and an id the broker does not know (a topic
// deleted, or never created) is UNKNOWN_TOPIC_ID. A client that speaks
// v12 at most still fetches by name.
func TestFetchByTopicID(t *testing.T) {
	c := newCluster(t, 93, 3, config.Default())
	c.createTopic("orders", 1, 3)
	leader := c.leaderOf(orders)
	require.Zero(t, c.produce(leader, orders, -1, "a").ErrorCode)
	vs, pr := c.fetch(leader, orders, 0) // at the highest version: by id
	require.Zero(t, pr.ErrorCode)
	require.Equal(t, []string{"a"}, vs)

	fetch := func(a *actor, id [16]byte) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.MaxBytes = -1, -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "orders", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return a.call(leader, req).(*kmsg.FetchResponse)
	}
	v17 := c.actor("v17", nil)
	resp := fetch(v17, c.topicID("orders"))
	require.Equal(t, int16(17), resp.Version)
	require.Equal(t, c.topicID("orders"), resp.Topics[0].TopicID)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	resp = fetch(v17, [16]byte{9})
	require.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[0].Partitions[0].ErrorCode)

	v12 := c.actor("v12", wire.NewVersions(wire.Range{Key: 1, Min: 4, Max: 12}))
	resp = fetch(v12, [16]byte{9}) // the id does not travel below v13
	require.Equal(t, int16(12), resp.Version)
	require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, "orders", resp.Topics[0].Topic)
}
