package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

// Default listen addresses: Kafka's client port for a broker, the port a
// KRaft controller conventionally takes. Loopback unless told otherwise.
const (
	DefaultBrokerListen     = "127.0.0.1:9092"
	DefaultControllerListen = "127.0.0.1:9093"
	DefaultClusterID        = "kafkasim"
)

// serveNode runs one process until a signal asks it to stop (exit 0) or it
// halts (exit 1).
func serveNode(stdout, stderr io.Writer, what string, opts host.Options, factory func() env.Process) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	opts.Log = stderr
	node, err := host.Start(opts, factory)
	if err != nil {
		fmt.Fprintf(stderr, "kafkasim %s: %v\n", what, err)
		return 1
	}
	fmt.Fprintf(stdout, "kafkasim %s listening on %s, data in %s\n", what, node.Addr(), opts.DataDir)
	for _, name := range slices.Sorted(maps.Keys(opts.Listeners)) {
		fmt.Fprintf(stdout, "kafkasim %s listener %s on %s\n", what, name, node.ListenerAddr(name))
	}
	select {
	case s := <-sigs:
		// A second signal while shutting down gets the default action.
		signal.Stop(sigs)
		fmt.Fprintf(stdout, "kafkasim %s: %v, shutting down\n", what, s)
		node.Shutdown()
		fmt.Fprintf(stdout, "kafkasim %s: stopped\n", what)
		return 0
	case <-node.Done():
		node.Stop()
		fmt.Fprintf(stderr, "kafkasim %s: halted (the reason is logged above)\n", what)
		return 1
	}
}

func checkCommon(fs *flag.FlagSet, stderr io.Writer, what, data string, cfg config.Cluster) int {
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "kafkasim %s: unexpected argument %q\n", what, fs.Arg(0))
		return 2
	case data == "":
		fmt.Fprintf(stderr, "kafkasim %s: --data DIR is required: the directory holding its files\n", what)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "kafkasim %s: %v\n", what, err)
		return 2
	}
	return 0
}

// checkAdvertisable refuses listen addresses a client could not dial: the
// broker advertises its listen address as is.
func checkAdvertisable(addr string) error {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if h == "" {
		return errors.New("no host; the broker advertises this address to clients, so name one they can dial, e.g. 127.0.0.1:9092")
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
		return errors.New("an unspecified address cannot be advertised to clients; listen on the address they dial, e.g. 127.0.0.1:9092")
	}
	return nil
}

// clusterFlags registers the cluster's knobs under Kafka's own names; the
// defaults are config.Default's.
func clusterFlags(fs *flag.FlagSet, c *config.Cluster) {
	fs.IntVar(&c.MinInsyncReplicas, "min.insync.replicas", c.MinInsyncReplicas, "in-sync replicas an acks=all write needs")
	fs.BoolVar(&c.UncleanLeaderElection, "unclean.leader.election.enable", c.UncleanLeaderElection, "let an out-of-sync replica become leader (may lose acknowledged writes)")
	fs.Int64Var(&c.LogFlushIntervalMessages, "log.flush.interval.messages", c.LogFlushIntervalMessages, "fsync the log after this many messages; 0 never (rely on replication)")
	fs.BoolVar(&c.LeaderEpochTruncation, "kip101.leader.epoch.truncation", c.LeaderEpochTruncation, "followers truncate by OffsetForLeaderEpoch; false: to their high watermark (pre-KIP-101)")
	fs.BoolVar(&c.FetchEpochValidation, "kip320.fetch.epoch.validation", c.FetchEpochValidation, "fence fetches that carry a stale leader epoch (KIP-320)")
	fs.BoolVar(&c.TransactionPartitionVerification, "transaction.partition.verification.enable", c.TransactionPartitionVerification, "verify transactional writes against the coordinator (KIP-890 part 1)")
	fs.BoolVar(&c.EpochBumpPerTransaction, "kip890.epoch.bump.per.transaction", c.EpochBumpPerTransaction, "bump the producer epoch on every transaction end (KIP-890 part 2)")
	fs.BoolVar(&c.MetadataLogFsync, "metadata.log.fsync", c.MetadataLogFsync, "controllers fsync the metadata log before an entry counts (Kafka always does); false: committed metadata can be lost to a power loss")
	fs.Int64Var(&c.MetadataLogMaxRecordBytesBetweenSnapshots, "metadata.log.max.record.bytes.between.snapshots", c.MetadataLogMaxRecordBytesBetweenSnapshots, "snapshot the metadata once the entries applied since the last snapshot hold this many bytes")
	fs.Var(msFlag{&c.ReplicaLagTimeMax}, "replica.lag.time.max.ms", "a follower this far behind leaves the ISR")
	fs.Var(msFlag{&c.ReplicaFetchWaitMax}, "replica.fetch.wait.max.ms", "longest a follower's fetch waits for data")
	fs.Var(msFlag{&c.ReplicaFetchBackoff}, "replica.fetch.backoff.ms", "pause after a failed replica fetch")
	fs.Var(msFlag{&c.BrokerSessionTimeout}, "broker.session.timeout.ms", "a broker silent this long is fenced by the controller")
	fs.Var(msFlag{&c.BrokerHeartbeatInterval}, "broker.heartbeat.interval.ms", "how often a broker heartbeats to the controller")
	fs.Int64Var(&c.SegmentBytes, "log.segment.bytes", c.SegmentBytes, "size at which a log segment rolls")
	fs.IntVar(&c.DefaultReplicationFactor, "default.replication.factor", c.DefaultReplicationFactor, "replication factor of topics created without one")
	fs.IntVar(&c.OffsetsTopicPartitions, "offsets.topic.num.partitions", c.OffsetsTopicPartitions, "partitions of __consumer_offsets")
	fs.IntVar(&c.OffsetsTopicReplicationFactor, "offsets.topic.replication.factor", c.OffsetsTopicReplicationFactor, "replication factor of __consumer_offsets")
	fs.IntVar(&c.TransactionTopicPartitions, "transaction.state.log.num.partitions", c.TransactionTopicPartitions, "partitions of __transaction_state")
	fs.IntVar(&c.TransactionTopicReplicationFactor, "transaction.state.log.replication.factor", c.TransactionTopicReplicationFactor, "replication factor of __transaction_state")
	fs.Var(msFlag{&c.TransactionTimeoutMax}, "transaction.max.timeout.ms", "longest transaction timeout a producer may ask for")
	fs.Var(msFlag{&c.GroupInitialRebalanceDelay}, "group.initial.rebalance.delay.ms", "wait for more members before a new group's first rebalance")
	fs.Var(msFlag{&c.GroupSessionTimeoutMin}, "group.min.session.timeout.ms", "shortest session timeout a group member may ask for")
	fs.Var(msFlag{&c.GroupSessionTimeoutMax}, "group.max.session.timeout.ms", "longest session timeout a group member may ask for")
}

// msFlag is a duration written as Kafka writes its *.ms settings: whole
// milliseconds. A Go duration ("1.5s") is accepted too.
type msFlag struct{ d *time.Duration }

func (f msFlag) String() string {
	if f.d == nil {
		return "0"
	}
	return strconv.FormatInt(f.d.Milliseconds(), 10)
}

func (f msFlag) Set(s string) error {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
			return fmt.Errorf("%d ms out of range", ms)
		}
		*f.d = time.Duration(ms) * time.Millisecond
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want milliseconds or a duration such as 1.5s")
	}
	if d < 0 {
		return fmt.Errorf("negative duration %v", d)
	}
	*f.d = d
	return nil
}
