// Package inflight is the one request client under kafkasim's two
// protocols, the Kafka protocol (broker/rpc) and the sink's (broker/sink):
// a connection to one server, dialed on first use and redialed with
// exponential backoff and jitter (Kafka's reconnect.backoff.ms and
// reconnect.backoff.max.ms), carrying calls pipelined — queued until the
// connection is ready, then sent in order, any number in flight — as
// Kafka's NetworkClient keeps its InFlightRequests per node.
//
// The contract:
//
//   - A call ends exactly once: with its answer, or with one of the
//     protocol's Errors. NotSentInTime and Closed (for calls still
//     waiting) mean it certainly never left the process; Timeout,
//     InflightOnTimeout and Disconnected mean it was sent and may or may
//     not have been processed. A sent call is never re-sent by the Conn
//     (that could apply a write twice).
//   - A sent call whose timeout passes drops the connection, as Kafka's
//     clients do: answers come in order on it, and the only way past a
//     lost one is a new connection.
//   - The protocol encodes (Send), runs its handshake if it has one
//     (Handshake, Push, MarkReady: Kafka's ApiVersions), and matches
//     answers to calls (Inflight, End); the Conn owns the queues, the
//     timers, the connection's life and the backoff.
//
// It has no goroutines and reaches the world only through env.Env.
package inflight
