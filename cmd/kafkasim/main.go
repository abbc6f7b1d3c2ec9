// Command kafkasim runs deterministic simulations of a Kafka-style cluster
// and checks which delivery guarantees hold.
//
// Exit codes: 0 all expectations met, 1 a violation or mismatch found,
// 2 bad input.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

func main() {
	tuneGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// tuneGC lets the heap grow to 9x the live data between collections
// (GOGC=800) under a 4 GiB ceiling, unless GOGC or GOMEMLIMIT say
// otherwise: a simulated world allocates a great deal and keeps little
// (a few tens of MB live per world), so the default spends a third of a
// matrix's CPU collecting; this takes 40% off the wall time of `kafkasim
// matrix` for about 200 MB of memory.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(800)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(4 << 30)
	}
}

const usage = `usage: kafkasim <command> [flags]

commands:
  demo    run the built-in demo world (nodes streaming frames under seeded faults)
          and print its trace hash
  controller --listen ADDR --data DIR
          real mode: run the controller on TCP (kafkasim controller -h for flags)
  broker --id N --listen ADDR --data DIR --controller ID@ADDR,...|ADDR
          real mode: run a broker on TCP (kafkasim broker -h for flags)
  create-topic --topic NAME [--partitions N] [--replication-factor R] [--bootstrap ADDR]
          real mode: create a topic through the Kafka protocol
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runDemo(nil, stdout, stderr)
	}
	switch args[0] {
	case "demo":
		return runDemo(args[1:], stdout, stderr)
	case "controller":
		return runController(args[1:], stdout, stderr)
	case "broker":
		return runBroker(args[1:], stdout, stderr)
	case "create-topic":
		return runCreateTopic(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage+scenarioUsage)
		return 0
	}
	if f, ok := scenarioCommands[args[0]]; ok {
		return f(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "kafkasim: unknown command %q (kafkasim help lists them)\n", args[0])
	return exitBadInput
}
