package client

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cluster is one client's view of the cluster: the brokers' addresses, the
// leader and leader epoch of each partition it cares about, and one
// connection per broker. It refreshes metadata when asked (after a
// NOT_LEADER_OR_FOLLOWER, a disconnect, a fenced epoch ...), at most once
// per retry.backoff.ms, and at least every metadata.max.age.ms.
type cluster struct {
	e      env.Env
	router *rpc.Router
	opts   ConnectionOptions
	// changed is called after every metadata answer and every connection
	// that became ready: the owner re-evaluates what it can send.
	changed func()

	conns   map[string]*rpc.Client // by address (or another key: see connAs)
	warming map[string]bool        // a connection attempt is under way
	brokers map[int32]string       // broker id → address
	topics  map[string]*topicInfo
	applied uint64 // Metadata answers applied so far: topics changes only with it
	wanted  map[string]bool

	inflight    bool        // a Metadata request is out
	stale       bool        // a refresh is wanted
	lastRefresh env.Time    // when the last request ended: the backoff's base
	timer       env.TimerID // the end of the refresh backoff
	timerAt     env.Time
	ageTimer    env.TimerID // metadata.max.age.ms
	rotate      int         // which candidate to try next when none is connected
	closed      bool
}

type topicInfo struct {
	code  int16 // topic-level error of the last answer
	id    [16]byte
	parts []partitionInfo
}

type partitionInfo struct {
	leader int32 // metadata.NoLeader when unknown
	epoch  int32 // leader epoch, -1 unknown
}

func newCluster(e env.Env, r *rpc.Router, opts ConnectionOptions, changed func()) *cluster {
	c := &cluster{
		e: e, router: r, opts: opts, changed: changed,
		conns: map[string]*rpc.Client{}, warming: map[string]bool{},
		brokers: map[int32]string{}, topics: map[string]*topicInfo{}, wanted: map[string]bool{},
		stale: true,
	}
	return c
}

// connTo returns the connection to addr, made on first use.
func (c *cluster) connTo(addr string) *rpc.Client { return c.connAs(addr, addr) }

// connAs returns a connection to addr kept under key: a second
// connection to a broker, as Kafka's consumer talks to its group
// coordinator on its own connection so that offset commits do not queue
// behind long-polled fetches (a broker serves one request per connection
// at a time).
func (c *cluster) connAs(key, addr string) *rpc.Client {
	conn := c.conns[key]
	if conn == nil {
		conn = rpc.NewClient(c.router, addr, rpc.ClientOptions{
			ClientID:            c.opts.ClientID,
			Speaks:              Versions,
			ReconnectBackoff:    c.opts.ReconnectBackoff,
			ReconnectBackoffMax: c.opts.ReconnectBackoffMax,
		})
		c.conns[key] = conn
	}
	return conn
}

// broker returns the connection to broker id, if its address is known.
func (c *cluster) broker(id int32) (*rpc.Client, bool) {
	addr, ok := c.brokers[id]
	if !ok {
		return nil, false
	}
	return c.connTo(addr), true
}

// ready returns broker id's connection if it is up. If it is not, a
// connection attempt starts (a cheap Metadata request for no topics: this
// is how a request-driven client dials, as Kafka's NetworkClient.ready
// initiates a connect) and changed is called when it ends. Producers send
// only on ready connections, so that every produce request they hand over
// is on the wire — never held back unsent, where a later send after its
// outcome was reported would turn a definite failure into a lie.
func (c *cluster) ready(id int32) (*rpc.Client, bool) {
	conn, ok := c.broker(id)
	if !ok {
		c.requestUpdate()
		return nil, false
	}
	if conn.Ready() {
		return conn, true
	}
	c.warm(conn)
	return conn, false
}

func (c *cluster) warm(conn *rpc.Client) {
	addr := conn.Addr()
	if c.warming[addr] || c.closed {
		return
	}
	c.warming[addr] = true
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none (null would be all)
	conn.Do(req, c.opts.SocketConnectionSetupTimeout, func(_ kmsg.Response, err error) {
		delete(c.warming, addr)
		if c.closed {
			return
		}
		if err != nil {
			c.requestUpdate()
		}
		c.changed()
	})
}

// candidates lists the addresses to ask for cluster-wide things: known
// brokers by id, then bootstrap servers not among them.
func (c *cluster) candidates() []string {
	ids := make([]int32, 0, len(c.brokers))
	for id := range c.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]string, 0, len(ids)+len(c.opts.BootstrapServers))
	for _, id := range ids {
		out = append(out, c.brokers[id])
	}
	for _, b := range c.opts.BootstrapServers {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// leastLoaded picks a connection for a request any broker can answer
// (Metadata, InitProducerId, FindCoordinator): a ready one with the
// fewest requests in flight, else the next candidate in turn. It returns
// the timeout to use: a connection not yet up gets
// socket.connection.setup.timeout.ms to come up.
func (c *cluster) leastLoaded() (*rpc.Client, time.Duration) {
	cands := c.candidates()
	var best *rpc.Client
	for _, addr := range cands {
		conn := c.conns[addr]
		if conn != nil && conn.Ready() && (best == nil || conn.Inflight() < best.Inflight()) {
			best = conn
		}
	}
	if best != nil {
		return best, c.opts.RequestTimeout
	}
	addr := cands[c.rotate%len(cands)]
	c.rotate++
	return c.connTo(addr), min(c.opts.RequestTimeout, c.opts.SocketConnectionSetupTimeout)
}

// want adds topics to those the client asks metadata for.
func (c *cluster) want(topics ...string) {
	for _, t := range topics {
		if !c.wanted[t] {
			c.wanted[t] = true
			c.stale = true
		}
	}
	if c.stale {
		c.requestUpdate()
	}
}

// partitions returns how many partitions topic has, if known.
func (c *cluster) partitions(topic string) (int, bool) {
	t := c.topics[topic]
	if t == nil || t.code != 0 || len(t.parts) == 0 {
		return 0, false
	}
	return len(t.parts), true
}

// leader returns the leader of tp and its epoch, if known.
func (c *cluster) leader(tp TopicPartition) (int32, int32, bool) {
	t := c.topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.parts) {
		return metadata.NoLeader, -1, false
	}
	p := t.parts[tp.Partition]
	return p.leader, p.epoch, p.leader != metadata.NoLeader
}

// leaderEpoch returns the cached leader epoch of tp, or -1.
func (c *cluster) leaderEpoch(tp TopicPartition) int32 {
	_, epoch, _ := c.leader(tp)
	return epoch
}

// invalidate forgets tp's leader until the next refresh, which it asks
// for: the partition is not sent to until metadata names a leader again.
func (c *cluster) invalidate(tp TopicPartition) {
	if t := c.topics[tp.Topic]; t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.parts) {
		t.parts[tp.Partition].leader = metadata.NoLeader
	}
	c.requestUpdate()
}

// requestUpdate asks for a metadata refresh as soon as the backoff allows.
func (c *cluster) requestUpdate() {
	c.stale = true
	c.maybeRefresh()
}

func (c *cluster) maybeRefresh() {
	if c.closed || c.inflight || !c.stale {
		return
	}
	now := c.e.WallClock()
	if c.lastRefresh != 0 {
		if at := c.lastRefresh.Add(c.opts.RetryBackoff); now < at {
			c.armAt(at)
			return
		}
	}
	c.refresh()
}

// armAt makes sure maybeRefresh runs at t.
func (c *cluster) armAt(t env.Time) {
	if c.timer != 0 && c.timerAt <= t {
		return
	}
	if c.timer != 0 {
		c.e.Cancel(c.timer)
	}
	c.timerAt = t
	c.timer = c.e.AfterFunc(t.Sub(c.e.WallClock()), func() {
		c.timer = 0
		c.maybeRefresh()
	})
}

func (c *cluster) refresh() {
	c.inflight = true
	c.stale = false
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	names := make([]string, 0, len(c.wanted))
	for t := range c.wanted {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	conn, timeout := c.leastLoaded()
	conn.Do(req, timeout, func(resp kmsg.Response, err error) {
		c.inflight = false
		c.lastRefresh = c.e.WallClock()
		if c.closed {
			return
		}
		if err != nil {
			c.stale = true
			c.e.Log("client-metadata-failed", "client", c.opts.ClientID, "addr", conn.Addr(), "error", err.Error())
		} else {
			c.apply(resp.(*kmsg.MetadataResponse))
			if c.ageTimer != 0 {
				c.e.Cancel(c.ageTimer)
			}
			c.ageTimer = c.e.AfterFunc(c.opts.MetadataMaxAge, func() {
				c.ageTimer = 0
				c.requestUpdate()
			})
		}
		c.maybeRefresh()
		c.changed()
	})
}

// apply folds a Metadata answer into the cache. A partition whose cached
// leader epoch is newer than the answer's keeps the cached leader: the
// answering broker lags (KIP-320).
func (c *cluster) apply(resp *kmsg.MetadataResponse) {
	c.applied++
	brokers := make(map[int32]string, len(resp.Brokers))
	for _, b := range resp.Brokers {
		brokers[b.NodeID] = metadata.JoinAddr(b.Host, b.Port)
	}
	c.brokers = brokers
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		old := c.topics[*rt.Topic]
		t := &topicInfo{code: rt.ErrorCode, id: rt.TopicID}
		if rt.ErrorCode == 0 {
			n := 0
			for _, rp := range rt.Partitions {
				n = max(n, int(rp.Partition)+1)
			}
			t.parts = make([]partitionInfo, n)
			for i := range t.parts {
				t.parts[i] = partitionInfo{leader: metadata.NoLeader, epoch: -1}
			}
			for _, rp := range rt.Partitions {
				if rp.Partition < 0 {
					continue
				}
				pi := partitionInfo{leader: rp.Leader, epoch: rp.LeaderEpoch}
				if rp.ErrorCode == kerr.LeaderNotAvailable.Code || rp.Leader < 0 {
					pi.leader = metadata.NoLeader
				}
				if old != nil && int(rp.Partition) < len(old.parts) && old.parts[rp.Partition].epoch > pi.epoch {
					pi = old.parts[rp.Partition]
				}
				t.parts[rp.Partition] = pi
			}
		}
		c.topics[*rt.Topic] = t
	}
}

// topicID is the topic's id, if the metadata knows the topic.
func (c *cluster) topicID(name string) ([16]byte, bool) {
	t := c.topics[name]
	if t == nil || t.code != 0 || t.id == ([16]byte{}) {
		return [16]byte{}, false
	}
	return t.id, true
}

// topicName is the name of the topic with id, if the metadata knows it.
func (c *cluster) topicName(id [16]byte) (string, bool) {
	for name, t := range c.topics {
		if t.code == 0 && t.id == id && id != ([16]byte{}) {
			return name, true
		}
	}
	return "", false
}

// close shuts every connection: calls in flight end with ErrDisconnected,
// waiting ones with ErrNotSent.
func (c *cluster) close() {
	if c.closed {
		return
	}
	c.closed = true
	for _, t := range []*env.TimerID{&c.timer, &c.ageTimer} {
		if *t != 0 {
			c.e.Cancel(*t)
			*t = 0
		}
	}
	addrs := make([]string, 0, len(c.conns))
	for a := range c.conns {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	for _, a := range addrs {
		c.conns[a].Close()
	}
}

// parseFindCoordinator reads either shape of the answer (a list from v4).
func parseFindCoordinator(r *kmsg.FindCoordinatorResponse) (int32, string, error) {
	code, id, host, port := r.ErrorCode, r.NodeID, r.Host, r.Port
	if r.Version >= 4 {
		if len(r.Coordinators) == 0 {
			code = kerr.UnknownServerError.Code
		} else {
			co := r.Coordinators[0]
			code, id, host, port = co.ErrorCode, co.NodeID, co.Host, co.Port
		}
	}
	if code != 0 {
		return -1, "", fmt.Errorf("FindCoordinator: %w", codeErr(code))
	}
	return id, metadata.JoinAddr(host, port), nil
}
