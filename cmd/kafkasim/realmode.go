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
	for _, d := range config.BrokerConfigDefs() {
		fs.Var(configFlag{d, c}, d.Name, d.Doc)
	}
}

// configFlag is one of the cluster's settings as a flag.
type configFlag struct {
	d config.BrokerConfigDef
	c *config.Cluster
}

func (f configFlag) String() string {
	if f.c == nil {
		return ""
	}
	return f.d.Get(f.c)
}
func (f configFlag) Set(s string) error { return f.d.Set(f.c, s) }
func (f configFlag) IsBoolFlag() bool   { return f.d.IsBool() }

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
	d, err := config.ParseMs(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}
