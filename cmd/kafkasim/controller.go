package main

import (
	"fmt"
	"io"
	"net"

	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

const controllerUsage = `usage: kafkasim controller [--listen ADDR] --data DIR [cluster flags]

Runs the cluster's controller on TCP until SIGTERM or SIGINT (a clean
shutdown, exit 0). After a crash (SIGKILL) it recovers from DIR. The cluster
flags must match the brokers'.

`

func runController(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("controller")
	fs.Usage = func() { fmt.Fprint(fs.Output(), controllerUsage); fs.PrintDefaults() }
	listen := fs.String("listen", DefaultControllerListen, "address to listen on (port 0: any free port, printed on start)")
	data := fs.String("data", "", "directory holding the controller's metadata log (required)")
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
	return serveNode(stdout, stderr, "controller", host.Options{Listen: *listen, DataDir: *data},
		func() env.Process { return controller.New(cfg) })
}
