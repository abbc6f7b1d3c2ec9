package broker_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafkasim/kafkasim/broker/config"
)

// TestTransactionCoordinatorTranscripts runs testdata/txn/*.txt: stories
// of one transactional id at its coordinator, told through the requests a
// producer sends to a three-broker cluster, printing the coordinator's
// state after each — the state machine of Kafka's TransactionMetadata
// (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort), its epoch and its partitions. Rewrite the expected
// output with -rewrite.
//
// Commands:
//
//	cluster [seed=N] [kip890=false] [verification=false]   a fresh cluster with topic orders (1 partition, RF 3)
//	producer name=P [id=T] [tv=1|2]   a producer of transactional id T (default pipeline), transaction protocol v1 or v2
//	init name=P                       InitProducerId
//	add name=P                        AddPartitionsToTxn orders/0
//	produce name=P values=(a,b)       a transactional batch of the producer's current epoch
//	end name=P commit|abort [epoch=E] EndTxn
//	complete name=P                   run until the coordinator has completed the transaction
//	crash-coordinator [id=T]          crash the broker coordinating T; run until another coordinates it
//	run for=D                         let simulated time pass
//	state [id=T]                      the coordinator's state of T
//	consume isolation=0|1             orders/0 as a consumer with that isolation level reads it
func TestTransactionCoordinatorTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/txn", func(t *testing.T, path string) {
		var c *cluster
		producers := map[string]*txnProducer{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(key, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == key && len(a.Vals) > 0 {
						return a.Vals[0]
					}
				}
				return def
			}
			p := producers[arg("name", "")]
			if d.Cmd != "cluster" && c == nil {
				d.Fatalf(t, "no cluster yet")
			}
			if strings.Contains("init add produce end complete", d.Cmd) && p == nil {
				d.Fatalf(t, "%s: no producer %q", d.Cmd, arg("name", ""))
			}
			switch d.Cmd {
			case "cluster":
				seed, _ := strconv.ParseUint(arg("seed", "1"), 10, 64)
				cfg := config.Default()
				cfg.EpochBumpPerTransaction = arg("kip890", "true") == "true"
				cfg.TransactionPartitionVerification = arg("verification", "true") == "true"
				c = newCluster(t, seed, 3, cfg)
				c.createTopic("orders", 1, 3)
				clear(producers)
				return "ok\n"
			case "producer":
				speaks := speaksTV2
				if arg("tv", "2") == "1" {
					speaks = speaksTV1
				}
				producers[arg("name", "")] = c.txnProducer(arg("name", ""), arg("id", "pipeline"), speaks)
				return "ok\n"
			case "init":
				p.init()
				return fmt.Sprintf("producer %d epoch %d\n", p.pid, p.epoch) + coordinatorState(c, p.id)
			case "add":
				return codeLine(p.add(orders)) + coordinatorState(c, p.id)
			case "produce":
				var values []string
				for _, a := range d.CmdArgs {
					if a.Key == "values" {
						values = a.Vals
					}
				}
				pr := p.produce(orders, values...)
				return codeLine(pr.ErrorCode) + coordinatorState(c, p.id)
			case "end":
				epoch := p.epoch
				if e := arg("epoch", ""); e != "" {
					n, _ := strconv.ParseInt(e, 10, 16)
					epoch = int16(n)
				}
				resp := p.endAt(epoch, d.HasArg("commit"))
				if resp.ErrorCode == 0 && resp.Version >= 5 && (resp.ProducerEpoch != p.epoch || resp.ProducerID != p.pid) {
					p.pid, p.epoch = resp.ProducerID, resp.ProducerEpoch
					clear(p.seq)
				}
				out := codeLine(resp.ErrorCode)
				if resp.Version >= 5 && resp.ErrorCode == 0 {
					out += fmt.Sprintf("next epoch %d\n", resp.ProducerEpoch)
				}
				return out + coordinatorState(c, p.id)
			case "complete":
				p.waitCompleted()
				return coordinatorState(c, p.id)
			case "crash-coordinator":
				id := arg("id", "pipeline")
				old := c.leaderOfTxn(id)
				c.w.Node(c.brokers[old]).Crash()
				ok, err := c.w.RunWhile(func() bool {
					now := c.leaderOfTxn(id)
					if now < 0 || now == old {
						return true
					}
					_, loaded := c.broker(now).Transaction(id)
					return !loaded
				}, 30*time.Second)
				if err != nil || !ok {
					d.Fatalf(t, "no new coordinator for %q: %v", id, err)
				}
				for _, p := range producers {
					p.coordinator = c.leaderOfTxn(id)
				}
				return fmt.Sprintf("coordinator broker-%d crashed, broker-%d took over\n", old, c.leaderOfTxn(id)) + coordinatorState(c, id)
			case "run":
				dur, err := time.ParseDuration(arg("for", "1s"))
				if err != nil {
					d.Fatalf(t, "for: %v", err)
				}
				if err := c.w.RunFor(dur); err != nil {
					d.Fatalf(t, "%v", err)
				}
				return coordinatorState(c, arg("id", "pipeline"))
			case "state":
				return coordinatorState(c, arg("id", "pipeline"))
			case "consume":
				iso, _ := strconv.ParseInt(arg("isolation", "1"), 10, 8)
				got := c.consume(orders, int8(iso))
				return fmt.Sprintf("values %v hw %d lso %d\n", got.values, got.hw, got.lso)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

func codeLine(code int16) string {
	if code == 0 {
		return "ok\n"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message + "\n"
}

// coordinatorState is the transaction's state at its coordinator.
func coordinatorState(c *cluster, id string) string {
	i := c.leaderOfTxn(id)
	if i < 0 || c.broker(i) == nil {
		return "no coordinator\n"
	}
	s, ok := c.broker(i).Transaction(id)
	if !ok {
		return fmt.Sprintf("broker-%d: no transaction %q\n", i, id)
	}
	pending := ""
	if s.Pending != "None" {
		pending = " pending " + s.Pending
	}
	return fmt.Sprintf("broker-%d: %s producer %d epoch %d partitions %v%s\n", i, s.State, s.ProducerID, s.ProducerEpoch, s.Partitions, pending)
}
