// Package metadata is the cluster's shape as the controller decides it and
// brokers learn it: brokers and their addresses, topics, and per partition
// its replicas, leader, leader epoch, in-sync replicas and partition epoch.
// The metadata log's records (records.go) say how it changes; a State
// (state.go) is what the committed records make, applied alike by every
// controller and every broker following the log; an Image is the view of
// it brokers and clients use.
package metadata

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NoLeader is the leader id of a partition without one (offline).
const NoLeader int32 = -1

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return tp.Topic + "/" + strconv.Itoa(int(tp.Partition)) }

// Compare orders partitions by topic, then number.
func (tp TopicPartition) Compare(o TopicPartition) int {
	if c := strings.Compare(tp.Topic, o.Topic); c != 0 {
		return c
	}
	return int(tp.Partition) - int(o.Partition)
}

// Partition is the controller's record of one partition.
type Partition struct {
	TopicPartition
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	PartitionEpoch int32   `json:"partitionEpoch"`
}

// Clone returns a deep copy.
func (p Partition) Clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	return p
}

// InISR reports whether broker id is an in-sync replica.
func (p Partition) InISR(id int32) bool { return slices.Contains(p.ISR, id) }

// IsReplica reports whether broker id hosts a replica.
func (p Partition) IsReplica(id int32) bool { return slices.Contains(p.Replicas, id) }

// Broker is one registered broker.
type Broker struct {
	ID        int32      `json:"id"`
	Endpoints []Endpoint `json:"endpoints"`
}

// Endpoint is one listener of a broker, as its registration names it
// (RegisterBrokerRecord's EndPoints): PLAINTEXT for clients, and the
// inter-broker listener if the broker has its own (KIP-103).
type Endpoint struct {
	Listener string `json:"listener"`
	Addr     string `json:"addr"`
}

// AddrOn is the broker's address on the named listener, as Kafka's metadata
// cache answers a request with the endpoints of the listener it came in on;
// false if the broker registered no such listener.
func (b Broker) AddrOn(listener string) (string, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e.Addr, true
		}
	}
	return "", false
}

// Topic is a topic and its partitions, in partition order.
type Topic struct {
	Name       string      `json:"name"`
	ID         [16]byte    `json:"id"`
	Partitions []Partition `json:"partitions"`
	// Configs are the topic's config overrides (config.TopicConfigDefs),
	// as ConfigRecords set them; nil when it has none.
	Configs map[string]string `json:"configs,omitempty"`
}

// Image is a broker's view of the cluster.
type Image struct {
	ControllerEpoch int32
	Brokers         []Broker // live (unfenced) brokers, by id
	Topics          map[string]*Topic
	// GroupConfigs are the groups' config overrides, by group id.
	GroupConfigs map[string]map[string]string
}

// Broker returns the live broker with id.
func (img *Image) Broker(id int32) (Broker, bool) {
	i, ok := slices.BinarySearchFunc(img.Brokers, id, func(b Broker, id int32) int { return int(b.ID) - int(id) })
	if !ok {
		return Broker{}, false
	}
	return img.Brokers[i], true
}

// Partition returns a partition's state.
func (img *Image) Partition(tp TopicPartition) (Partition, bool) {
	t := img.Topics[tp.Topic]
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[tp.Partition], true
}

// TopicNames returns the topics, sorted.
func (img *Image) TopicNames() []string {
	names := make([]string, 0, len(img.Topics))
	for n := range img.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// SplitAddr splits "host:port" for Kafka's wire, which carries them apart.
// An address without a port (a simulated node's name) gets port -1.
func SplitAddr(addr string) (host string, port int32) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, -1
	}
	p, err := strconv.ParseInt(addr[i+1:], 10, 32)
	if err != nil {
		return addr, -1
	}
	return addr[:i], int32(p)
}

// JoinAddr is the inverse of SplitAddr.
func JoinAddr(host string, port int32) string {
	if port < 0 {
		return host
	}
	return host + ":" + strconv.Itoa(int(port))
}

// Internal topic names.
const (
	OffsetsTopic     = "__consumer_offsets"
	TransactionTopic = "__transaction_state"
)

var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// ValidTopicName reports whether name is a legal topic name (Kafka's
// Topic.validate: 1 to 249 of [a-zA-Z0-9._-], not "." or "..").
func ValidTopicName(name string) bool {
	return topicName.MatchString(name) && name != "." && name != ".."
}

// Internal reports whether topic is one of the cluster's own, which
// clients may not delete.
func Internal(topic string) bool { return topic == OffsetsTopic || topic == TransactionTopic }

// PartitionFor is Kafka's choice of internal partition for a group id or
// transactional id: abs(Java String.hashCode) mod partitions.
func PartitionFor(key string, partitions int) int32 {
	var h int32
	for _, r := range utf16(key) {
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(partitions)
}

// utf16 returns Java's char sequence of s.
func utf16(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}
