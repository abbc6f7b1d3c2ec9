package main

import (
	"flag"
	"fmt"
	"io"

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
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, controllerUsage); fs.PrintDefaults() }
	listen := fs.String("listen", DefaultControllerListen, "address to listen on (port 0: any free port, printed on start)")
	data := fs.String("data", "", "directory holding the controller's metadata log (required)")
	cfg := config.Default()
	clusterFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	if code := checkCommon(fs, stderr, "controller", *data, cfg); code != 0 {
		return code
	}
	return serveNode(stdout, stderr, "controller", host.Options{Listen: *listen, DataDir: *data},
		func() env.Process { return controller.New(cfg) })
}
