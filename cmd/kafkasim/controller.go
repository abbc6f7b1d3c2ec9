package main

import (
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

const controllerUsage = `usage: kafkasim controller [--listen ADDR] --data DIR [--node-id N --quorum ID@ADDR,...] [cluster flags]

Runs a controller on TCP until SIGTERM or SIGINT (a clean shutdown, exit
0). After a crash (SIGKILL) it recovers from DIR. Alone it is a quorum of
one; with --quorum (Kafka's controller.quorum.voters: 1, 3 or 5 voters, ids
from 3000, this one's address its --listen) the voters elect the active
controller among themselves. Give brokers every controller's address. The
cluster flags must match the brokers'.

`

func runController(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("controller")
	fs.Usage = func() { fmt.Fprint(fs.Output(), controllerUsage); fs.PrintDefaults() }
	listen := fs.String("listen", DefaultControllerListen, "address to listen on (port 0: any free port, printed on start)")
	data := fs.String("data", "", "directory holding the controller's metadata log (required)")
	nodeID := fs.Int("node-id", int(controller.ID), "this controller's node id (node.id), 3000 or more")
	quorumVoters := fs.String("quorum", "", "the quorum's voters, ID@HOST:PORT comma separated (controller.quorum.voters); empty: this controller alone")
	cfg := config.Default()
	clusterFlags(fs, &cfg)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := checkCommon(fs, stderr, "controller", *data, cfg); code != 0 {
		return code
	}
	if _, _, err := net.SplitHostPort(*listen); err != nil {
		return badInput(stderr, "controller: --listen %s: %v", *listen, err)
	}
	o := controller.Options{NodeID: int32(*nodeID)}
	if *nodeID < int(controller.ID) {
		return badInput(stderr, "controller: --node-id %d: a controller's id is %d or more (brokers have the ids below)", *nodeID, controller.ID)
	}
	if *quorumVoters != "" {
		voters, err := parseVoters(*quorumVoters)
		if err != nil {
			return badInput(stderr, "controller: --quorum %s: %v", *quorumVoters, err)
		}
		own, ok := voters[o.NodeID]
		switch {
		case !ok:
			return badInput(stderr, "controller: --quorum %s: does not name --node-id %d", *quorumVoters, *nodeID)
		case own != *listen:
			return badInput(stderr, "controller: --quorum %s: names %d at %s, but --listen is %s", *quorumVoters, *nodeID, own, *listen)
		}
		o.Voters = voters
	}
	return serveNode(stdout, stderr, "controller", host.Options{Listen: *listen, DataDir: *data},
		func() env.Process { return controller.NewVoter(cfg, o) })
}

// parseVoters reads controller.quorum.voters: ID@HOST:PORT, comma
// separated, 1, 3 or 5 of them, ids from controller.ID, no id twice.
func parseVoters(s string) (map[int32]string, error) {
	voters := map[int32]string{}
	for _, v := range strings.Split(s, ",") {
		idText, addr, ok := strings.Cut(v, "@")
		id, err := strconv.Atoi(idText)
		switch {
		case !ok || err != nil:
			return nil, fmt.Errorf("%q is not ID@HOST:PORT", v)
		case id < int(controller.ID) || id > math.MaxInt32:
			return nil, fmt.Errorf("%q: a controller's id is %d or more", v, controller.ID)
		case voters[int32(id)] != "":
			return nil, fmt.Errorf("%q: id %d named twice", v, id)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %v", v, err)
		}
		voters[int32(id)] = addr
	}
	if n := len(voters); n != 1 && n != 3 && n != 5 {
		return nil, fmt.Errorf("%d voters: a quorum has 1, 3 or 5", n)
	}
	return voters, nil
}
