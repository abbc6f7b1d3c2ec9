package main

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

const brokerUsage = `usage: kafkasim broker --id N [--listen ADDR] [--inter-broker-listen ADDR] --data DIR [--controller ID@ADDR[,ID@ADDR...] | --controller ADDR] [cluster flags]

Runs one broker on TCP until SIGTERM or SIGINT (a clean shutdown: logs
flushed, high watermarks checkpointed; exit 0). After a crash (SIGKILL) it
recovers from DIR. The --listen ADDR is also the address advertised to
clients, so it must be one they can dial (not 0.0.0.0). Other brokers reach
this one on its inter-broker listener, which alone may replicate and write
transaction markers (a client connection is refused them, as a Kafka cluster
whose ACLs grant CLUSTER_ACTION only to the inter-broker principal); it is
registered with the controllers, so nobody needs to be told its address.
Batches may be uncompressed or compressed with gzip, snappy, lz4 or zstd.

`

func runBroker(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("broker")
	fs.Usage = func() { fmt.Fprint(fs.Output(), brokerUsage); fs.PrintDefaults() }
	id := fs.Int("id", -1, "broker id, 0 or more, unique in the cluster (required)")
	listen := fs.String("listen", DefaultBrokerListen, "address to listen on and advertise to clients (port 0: any free port, printed on start)")
	interBroker := fs.String("inter-broker-listen", "", "address of the inter-broker listener (inter.broker.listener.name "+interBrokerListener+"), advertised to other brokers; empty: the --listen host at any free port, printed on start")
	data := fs.String("data", "", "directory holding the broker's logs (required)")
	ctl := fs.String("controller", DefaultControllerListen, "the controllers as ID@HOST:PORT, comma separated, as given to their --quorum (controller.quorum.voters), or the address of a lone controller: the broker follows their metadata log and sends its requests to the active one")
	clusterID := fs.String("cluster-id", DefaultClusterID, "cluster id reported to clients")
	hwCheckpoint := 5 * time.Second
	fs.Var(msFlag{&hwCheckpoint}, "replica.high.watermark.checkpoint.interval.ms", "how often high watermarks are written to disk")
	cfg := config.Default()
	clusterFlags(fs, &cfg)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := checkCommon(fs, stderr, "broker", *data, cfg); code != 0 {
		return code
	}
	switch {
	case *id < 0 || *id >= int(controller.ID):
		fmt.Fprintf(stderr, "kafkasim broker: --id %d: give a broker id from 0 to %d\n", *id, controller.ID-1)
		return 2
	case hwCheckpoint <= 0:
		fmt.Fprintf(stderr, "kafkasim broker: replica.high.watermark.checkpoint.interval.ms must be positive\n")
		return 2
	}
	controllers, err := parseControllers(*ctl)
	if err != nil {
		fmt.Fprintf(stderr, "kafkasim broker: --controller %s: %v\n", *ctl, err)
		return 2
	}
	if err := checkAdvertisable(*listen); err != nil {
		fmt.Fprintf(stderr, "kafkasim broker: --listen %s: %v\n", *listen, err)
		return 2
	}
	if *interBroker == "" {
		host, _, _ := net.SplitHostPort(*listen)
		*interBroker = net.JoinHostPort(host, "0")
	}
	if err := checkAdvertisable(*interBroker); err != nil {
		fmt.Fprintf(stderr, "kafkasim broker: --inter-broker-listen %s: %v\n", *interBroker, err)
		return 2
	}
	logDir, err := filepath.Abs(*data)
	if err != nil {
		logDir = *data
	}
	opts := broker.Options{ID: int32(*id), Controllers: controllers, ClusterID: *clusterID, Cluster: cfg,
		HighWatermarkCheckpointInterval: hwCheckpoint, InterBrokerListener: interBrokerListener, LogDir: logDir}
	hopts := host.Options{Listen: *listen, Listeners: map[string]string{interBrokerListener: *interBroker}, DataDir: *data}
	return serveNode(stdout, stderr, fmt.Sprintf("broker %d", *id), hopts, func() env.Process { return broker.New(opts) })
}

// interBrokerListener names a real-mode broker's inter-broker listener, as
// the simulated clusters name theirs.
const interBrokerListener = "INTERNAL"

// parseControllers reads a broker's --controller: the quorum's voters as
// ID@HOST:PORT (what the controllers' --quorum says), or one HOST:PORT, a
// lone controller with the default node id.
func parseControllers(s string) (map[int32]string, error) {
	if !strings.Contains(s, "@") {
		if strings.Contains(s, ",") {
			return nil, fmt.Errorf("several controllers are named ID@HOST:PORT, as in their --quorum")
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, err
		}
		return map[int32]string{controller.ID: s}, nil
	}
	return parseVoters(s)
}
