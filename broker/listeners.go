package broker

import (
	"fmt"
	"strconv"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker has a client listener, PLAINTEXT, at its node's main address, and
// may have an inter-broker listener of its own (Options.InterBrokerListener,
// Kafka's inter.broker.listener.name; KIP-103 separates the two). It
// registers both; other brokers reach it for replication, transaction
// markers and transaction verification only on the inter-broker one, and
// clients learn only addresses on the listener they asked on, as Kafka's
// metadata cache answers with the endpoints of the request's listener.
//
// When the inter-broker listener is its own, the broker grants Kafka's
// CLUSTER_ACTION only to connections on it, as a cluster whose ACLs give the
// inter-broker principal alone that operation does: a follower fetch
// (TOPIC_AUTHORIZATION_FAILED for every partition), WriteTxnMarkers and
// AddPartitionsToTxn v4+ (CLUSTER_AUTHORIZATION_FAILED) from a client
// connection are refused, so no client can replicate, move a partition's
// high watermark or write a transaction's markers (KafkaApis
// handleFetchRequest, handleWriteTxnMarkersRequest,
// handleAddPartitionsToTxnRequest).

// ClientListener is the name the client listener registers under.
const ClientListener = "PLAINTEXT"

// listenerName is the registered name of the listener a request came in on.
func listenerName(envListener string) string {
	if envListener == "" {
		return ClientListener
	}
	return envListener
}

// interBrokerListener is the listener brokers reach each other on.
func (b *Broker) interBrokerListener() string {
	if b.opts.InterBrokerListener != "" {
		return b.opts.InterBrokerListener
	}
	return ClientListener
}

// clusterAction reports whether the request's connection may perform
// Kafka's CLUSTER_ACTION: always when the broker has no inter-broker
// listener of its own, else only on that listener.
func (b *Broker) clusterAction(r *rpc.Request) bool {
	return b.opts.InterBrokerListener == "" || r.Listener == b.opts.InterBrokerListener
}

// endpoints are the listeners the broker registers, the client one first.
func (b *Broker) endpoints() []kmsg.BrokerRegistrationRequestListener {
	names := []string{""}
	if b.opts.InterBrokerListener != "" {
		names = append(names, b.opts.InterBrokerListener)
	}
	var ls []kmsg.BrokerRegistrationRequestListener
	for _, name := range names {
		addr := b.e.ListenerAddr(name)
		if addr == "" {
			panic(fmt.Sprintf("broker %d: inter.broker.listener.name %s: the node has no such listener", b.opts.ID, name))
		}
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name = listenerName(name)
		host, port := metadata.SplitAddr(addr)
		l.Host = host
		if port > 0 {
			l.Port = uint16(port)
		}
		ls = append(ls, l)
	}
	return ls
}

// peerClient returns the client in clients for broker id on the
// inter-broker listener, made on first use and remade when the broker's
// address there changes; false if the broker is not live or registered no
// such listener. The client's id is "broker-<this broker's id><suffix>".
func (b *Broker) peerClient(clients map[int32]*rpc.Client, id int32, suffix string) (*rpc.Client, bool) {
	br, ok := b.image.Broker(id)
	if !ok {
		return nil, false
	}
	addr, ok := br.AddrOn(b.interBrokerListener())
	if !ok {
		return nil, false
	}
	c := clients[id]
	if c == nil || c.Addr() != addr {
		if c != nil {
			c.Close()
		}
		clientID := "broker-" + strconv.Itoa(int(b.opts.ID)) + suffix
		c = rpc.NewClient(b.rt, addr, rpc.ClientOptions{ClientID: clientID, Speaks: Versions})
		clients[id] = c
	}
	return c, true
}
