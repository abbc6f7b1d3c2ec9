package raft_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kafkasim/kafkasim/broker/raft"
	"github.com/kafkasim/kafkasim/env"
)

// TestTranscripts runs testdata/*.txt: stories of a few voters driven step
// by step through the cluster harness. Each command prints the messages
// delivered and the effects each node asked for; a broken invariant
// prints INVARIANT. Rewrite the expected output with -rewrite.
//
// Commands:
//
//	new voters=N [jitter=(d1,..)] [fetch-max=K]  N voters 1..N; node i draws jitter di (capped below the max asked), else 0
//	                                   K records at most per fetch
//	tick [node=I] at=T                 time T on node I's clock (all nodes if no node)
//	deliver [from=I] [to=J] [rounds=K] the queued messages that match, in order; K rounds (default 1) of what is then queued
//	drop [from=I] [to=J]               lose the queued messages that match
//	fail [from=I] [to=J]               the queued requests that match fail, as on a reset connection: each sender is told (RequestFailed)
//	queue                              print the queued messages
//	propose node=I data=X
//	flush [node=I]                     make node I's log durable and tell it (all nodes if no node)
//	crash node=I | restart node=I      lose memory and the unflushed log / start again from the disk
//	isolate node=I | heal              lose everything I sends or is sent / stop losing
//	partition from=I to=J              lose what goes between I and J, both ways, until heal
//	state | log node=I
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var c *cluster
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) (out string) {
			if d.Cmd != "new" && c == nil {
				d.Fatalf(t, "no cluster yet: start with new")
			}
			var b strings.Builder
			if c != nil {
				c.out = &b
			}
			defer func() {
				if p := recover(); p != nil {
					out = b.String() + fmt.Sprintf("panic: %v\n", p)
				}
			}()
			switch d.Cmd {
			case "new":
				n := int(intArg(d, "voters", 3))
				voters := make([]int32, n)
				for i := range voters {
					voters[i] = int32(i + 1)
				}
				jit := durs(d, "jitter")
				base := defaultConfig(voters, func(id int32) func(time.Duration) time.Duration {
					if int(id) > len(jit) {
						return nil
					}
					j := jit[id-1]
					return func(max time.Duration) time.Duration { return min(j, max-1) }
				})
				fetchMax := int(intArg(d, "fetch-max", 0))
				snapMax := int(intArg(d, "snapshot-chunk", 0))
				c = newCluster(n, func(id int32) raft.Config {
					cfg := base(id)
					cfg.FetchMaxEntries = fetchMax
					cfg.FetchSnapshotMaxBytes = snapMax
					return cfg
				})
				for i := range intArg(d, "observers", 0) {
					c.addObserver(int32(101 + i)) // observers are 101, 102, ...
				}
				// Start-up effects (the first fetches of restarted
				// followers, none here) are not printed.
				return c.state()
			case "tick":
				at := durArg(d, "at")
				for _, id := range nodes(d, c) {
					c.tick(id, env.Time(at))
				}
			case "deliver":
				for range intArg(d, "rounds", 1) {
					var batch []envelope
					c.queue = slices.DeleteFunc(c.queue, func(e envelope) bool {
						if matches(d, e) {
							batch = append(batch, e)
							return true
						}
						return false
					})
					for _, e := range batch {
						c.deliver(e)
					}
				}
			case "drop":
				for _, e := range take(d, c) {
					fmt.Fprintf(&b, "dropped %s\n", e)
				}
			case "fail":
				for _, e := range take(d, c) {
					c.failRequest(e)
				}
			case "queue":
				for _, e := range c.queue {
					fmt.Fprintf(&b, "%s\n", e)
				}
			case "propose":
				var data string
				d.ScanArgs(t, "data", &data)
				off, err := c.propose(int32(intArg(d, "node", 1)), data)
				if err != nil {
					fmt.Fprintf(&b, "error: %v\n", err)
				} else {
					fmt.Fprintf(&b, "offset %d\n", off)
				}
			case "snapshot":
				// The node's state machine snapshots what its committed
				// entries made: data at its high watermark (or at=).
				var data string
				d.ScanArgs(t, "data", &data)
				id := int32(intArg(d, "node", 1))
				n := c.nodes[id]
				if err := n.Snapshot(intArg(d, "at", n.HighWatermark()), []byte(data)); err != nil {
					fmt.Fprintf(&b, "error: %v\n", err)
				}
				c.apply(id)
			case "flush":
				for _, id := range nodes(d, c) {
					c.flush(id)
				}
			case "crash":
				c.crash(int32(intArg(d, "node", 1)))
				return c.state()
			case "restart":
				c.start(int32(intArg(d, "node", 1)))
			case "isolate":
				c.cut[int32(intArg(d, "node", 1))] = true
				return "ok\n"
			case "partition":
				c.links[[2]int32{int32(intArg(d, "from", 0)), int32(intArg(d, "to", 0))}] = true
				return "ok\n"
			case "heal":
				clear(c.cut)
				clear(c.links)
				return "ok\n"
			case "state":
				return c.state()
			case "log":
				n := c.nodes[int32(intArg(d, "node", 1))]
				if n == nil {
					return "down\n"
				}
				for _, e := range n.Entries(0, n.LogEnd()) {
					mark := ""
					if e.Offset < n.HighWatermark() {
						mark = " committed"
					}
					fmt.Fprintf(&b, "%s%s\n", e, mark)
				}
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			if b.Len() == 0 {
				return "(nothing)\n"
			}
			return b.String()
		})
	})
}

// take removes from the queue the messages that match and returns them.
func take(d *datadriven.TestData, c *cluster) []envelope {
	var taken []envelope
	c.queue = slices.DeleteFunc(c.queue, func(e envelope) bool {
		if matches(d, e) {
			taken = append(taken, e)
			return true
		}
		return false
	})
	return taken
}

func matches(d *datadriven.TestData, e envelope) bool {
	if d.HasArg("from") && int32(intArg(d, "from", 0)) != e.from {
		return false
	}
	if d.HasArg("to") && int32(intArg(d, "to", 0)) != e.to {
		return false
	}
	return true
}

func nodes(d *datadriven.TestData, c *cluster) []int32 {
	if d.HasArg("node") {
		return []int32{int32(intArg(d, "node", 1))}
	}
	return c.ids
}

func intArg(d *datadriven.TestData, key string, def int64) int64 {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			v, err := strconv.ParseInt(a.Vals[0], 10, 64)
			if err != nil {
				panic(fmt.Sprintf("%s=%q: %v", key, a.Vals[0], err))
			}
			return v
		}
	}
	return def
}

func durArg(d *datadriven.TestData, key string) time.Duration {
	ds := durs(d, key)
	if len(ds) != 1 {
		panic(fmt.Sprintf("%s: want one duration", key))
	}
	return ds[0]
}

func durs(d *datadriven.TestData, key string) []time.Duration {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			var out []time.Duration
			for _, v := range a.Vals {
				dur, err := time.ParseDuration(v)
				if err != nil {
					panic(fmt.Sprintf("%s=%q: %v", key, v, err))
				}
				out = append(out, dur)
			}
			return out
		}
	}
	return nil
}
