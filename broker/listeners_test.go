package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Brokers reach each other on their own listener (KIP-103), and only it may
// perform Kafka's CLUSTER_ACTION. A client that connects to a leader's
// client listener and pretends to be a follower, writes a transaction
// marker, or asks to verify a transaction as a broker does (KIP-890) is
// refused with the errors Kafka's KafkaApis gives a principal without that
// operation, and nothing moves: had the follower fetch been served at the
// log end, the leader would count a follower that has nothing as caught up.
// The same follower fetch on the inter-broker listener is served. And each
// listener's Metadata names the brokers' endpoints on that listener, as
// Kafka's metadata cache answers.
func TestAClientConnectionCannotReplicateOrWriteTransactionMarkers(t *testing.T) {
	c := newCluster(t, 7, 3, config.Default())
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	c.createTopic(tp.Topic, 1, 3)
	leader := c.leaderOf(tp)
	require.GreaterOrEqual(t, leader, 0)
	require.Zero(t, c.produce(leader, tp, -1, "a", "b").ErrorCode)
	require.NoError(t, c.w.RunFor(time.Second))
	before, _ := c.broker(leader).Partition(tp)
	follower := int32((leader + 1) % 3)

	followerFetch := func() *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = follower, 0, 1, 1<<20
		req.ReplicaState.ID = follower // where v15+ carries it
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = tp.Topic, c.topicID(tp.Topic) // by id from v13
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, before.LogEndOffset, 1<<20, before.LeaderEpoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	resp, err := c.call(c.brokers[leader], followerFetch())
	require.NoError(t, err)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, "a follower fetch on the client listener")

	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 4242, 0, true, 1
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = tp.Topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	markers.Markers = append(markers.Markers, m)
	resp, err = c.call(c.brokers[leader], markers)
	require.NoError(t, err)
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode, "WriteTxnMarkers on the client listener")

	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	vt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	vt.TransactionalID, vt.ProducerID, vt.VerifyOnly = "txn", 4242, true
	vtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	vtt.Topic, vtt.Partitions = tp.Topic, []int32{0}
	vt.Topics = append(vt.Topics, vtt)
	verify.Transactions = append(verify.Transactions, vt)
	resp, err = c.call(c.brokers[leader], verify)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.GetVersion(), int16(4))
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.(*kmsg.AddPartitionsToTxnResponse).ErrorCode, "a broker's AddPartitionsToTxn on the client listener")

	require.NoError(t, c.w.RunFor(time.Second))
	after, _ := c.broker(leader).Partition(tp)
	require.Equal(t, before.LogEndOffset, after.LogEndOffset, "no marker was written")
	require.Equal(t, before.HighWatermark, after.HighWatermark)

	internal := metadata.JoinAddr(c.brokers[leader], interBrokerPort)
	resp, err = c.call(internal, followerFetch())
	require.NoError(t, err)
	part := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	require.Zero(t, part.ErrorCode, "the same follower fetch on the inter-broker listener")
	require.Equal(t, before.HighWatermark, part.HighWatermark)

	meta := kmsg.NewPtrMetadataRequest()
	resp, err = c.call(c.brokers[0], meta)
	require.NoError(t, err)
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		require.Equal(t, c.brokers[b.NodeID], metadata.JoinAddr(b.Host, b.Port), "the client listener names client endpoints")
	}
	resp, err = c.call(metadata.JoinAddr(c.brokers[0], interBrokerPort), kmsg.NewPtrMetadataRequest())
	require.NoError(t, err)
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		require.Equal(t, metadata.JoinAddr(c.brokers[b.NodeID], interBrokerPort), metadata.JoinAddr(b.Host, b.Port), "the inter-broker listener names inter-broker endpoints")
	}
}
