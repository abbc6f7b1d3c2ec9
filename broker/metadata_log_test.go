package broker_test

import (
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A leader crashes and restarts at once, its metadata log on disk naming it
// the leader. It must act on none of it: it publishes nothing until it has
// applied the log up to the quorum's high watermark and the controller has
// acknowledged its new registration caught up — which waits until its old
// session expired and the controller moved the leadership away. So it
// never leads the epoch it led before (acting on the old image would), and
// it ends registered, unfenced and with the controller's log applied.
func TestARestartedBrokerActsOnNoMetadataUntilItIsRegisteredAndCaughtUp(t *testing.T) {
	c := newCluster(t, 4, 3, config.Default())
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	c.createTopic(tp.Topic, 1, 3)
	leader := c.waitLeader(tp, -1, 30*time.Second)
	s, _ := c.broker(leader).Partition(tp)
	oldEpoch := s.LeaderEpoch

	node := c.w.Node(c.brokers[leader])
	node.Crash()
	node.Start()
	ctl := func() *controller.Controller {
		p, _ := c.w.Node("controller").Process().(*controller.Controller)
		return p
	}
	back := func() bool {
		b := c.broker(leader)
		return b != nil && !ctl().Fenced(int32(leader)) && b.MetadataApplied().End() == ctl().Applied().End()
	}
	ok, err := c.w.RunWhile(func() bool {
		if b := c.broker(leader); b != nil && b.Leads(tp) {
			s, _ := b.Partition(tp)
			require.Greater(t, s.LeaderEpoch, oldEpoch, "the restarted broker leads the epoch it led before: it acted on its old metadata")
		}
		return !back()
	}, 60*time.Second)
	require.NoError(t, err)
	require.True(t, ok, "the restarted broker registered, caught up and was unfenced")
}

// Metadata reaches a broker only through the controllers' log: a client
// connection sending UpdateMetadata (which KRaft brokers do not serve) is
// refused and changes nothing.
func TestUpdateMetadataFromAClientIsRefused(t *testing.T) {
	c := newCluster(t, 5, 3, config.Default())
	tp := metadata.TopicPartition{Topic: "orders", Partition: 0}
	c.createTopic(tp.Topic, 1, 3)
	before := c.broker(0).Image()
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version, req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 7, controller.ID, 1000, 1
	_, err := c.call(c.brokers[0], req)
	require.Error(t, err, "the broker does not serve UpdateMetadata")
	require.NoError(t, c.w.RunFor(time.Second))
	after := c.broker(0).Image()
	require.Equal(t, before.TopicNames(), after.TopicNames())
	require.NotEqual(t, int32(1000), after.ControllerEpoch)
}
