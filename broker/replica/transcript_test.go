package replica_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/replica"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim/disk"
)

// TestTranscripts runs testdata/*.txt: stories of one replica's core driven
// step by step over a real log on a simulated disk. Each step prints the
// effects the core asks for; the harness carries out truncations (and
// prints what the core says after) and answers nothing unless told.
// Rewrite the expected output with -rewrite.
//
// Commands:
//
//	new [id=0] [kip101=false] [kip320=false] [lag=10s]   a replica of no role over an empty log
//	log-append n=N epoch=E        the leader's own append of N one-record batches, stamped with epoch E
//	log-follow n=N epoch=E        a follower's append of N one-record batches the leader of epoch E wrote
//	become-leader epoch=E isr=(..) [replicas=(..)] [partition-epoch=P] [at=T]
//	become-follower leader=L epoch=E isr=(..) [replicas=(..)] [partition-epoch=P]
//	update-isr isr=(..) partition-epoch=P                the controller's newer ISR, same epoch
//	fetch from=R offset=O [log-start=S] [current-epoch=E] [last-epoch=X] [at=T] [unregistered]
//	appended                                             the leader's log grew
//	tick at=T [unregistered]
//	answer [refused=WHY] [lost] [isr=(..)] [partition-epoch=P] [epoch=E]   the last proposal's answer
//	epoch-answer epoch=E end=O | diverged epoch=E end=O | out-of-range hw=H [log-start=S] | leader-hw hw=H
//	leader-log-start start=S                             a fetch response's log start offset
//	delete-records offset=O                              DeleteRecords at the leader (-1: its high watermark)
//	low-watermark [dead=(..)]                            the lowest log start, not counting the dead
//	skip-truncation
//	state
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h *harness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) (out string) {
			if d.Cmd != "new" && h == nil {
				d.Fatalf(t, "no replica yet: start with new")
			}
			defer func() {
				if p := recover(); p != nil {
					out += fmt.Sprintf("panic: %v\n", p)
				}
			}()
			switch d.Cmd {
			case "new":
				h = newHarness(t, d)
				return "ok\n"
			case "log-append":
				for range intArg(d, "n", 1) {
					if _, err := h.log.AppendAsLeader(h.record(), int32(intArg(d, "epoch", 0))); err != nil {
						return "error: " + err.Error() + "\n"
					}
				}
				return fmt.Sprintf("log end %d\n", h.log.LogEndOffset())
			case "log-follow":
				for range intArg(d, "n", 1) {
					b := h.record()
					b.SetBaseOffset(h.log.LogEndOffset())
					b.SetPartitionLeaderEpoch(int32(intArg(d, "epoch", 0)))
					if _, err := h.log.AppendAsFollower(b); err != nil {
						return "error: " + err.Error() + "\n"
					}
				}
				return fmt.Sprintf("log end %d\n", h.log.LogEndOffset())
			case "become-leader":
				a := h.assignment(d, h.id)
				if err := h.log.AssignEpoch(a.LeaderEpoch); err != nil {
					return "error: " + err.Error() + "\n"
				}
				h.r.BecomeLeader(a, at(d))
			case "become-follower":
				h.r.BecomeFollower(h.assignment(d, int32(intArg(d, "leader", 1))))
			case "update-isr":
				a := h.r.Assignment()
				a.ISR = ids(d, "isr")
				a.PartitionEpoch = int32(intArg(d, "partition-epoch", int64(a.PartitionEpoch)))
				h.r.UpdateISR(a)
			case "fetch":
				h.r.FollowerFetched(int32(intArg(d, "from", 1)), int32(intArg(d, "current-epoch", -1)), int32(intArg(d, "last-epoch", -1)),
					intArg(d, "offset", 0), intArg(d, "log-start", -1), at(d), !d.HasArg("unregistered"))
			case "appended":
				h.r.Appended()
			case "tick":
				h.r.Tick(at(d), !d.HasArg("unregistered"))
			case "answer":
				if h.proposed == nil {
					return "error: nothing proposed\n"
				}
				e := *h.proposed
				res := replica.ISRResult{LeaderEpoch: e.LeaderEpoch, PartitionEpoch: e.PartitionEpoch + 1, ISR: e.ISR}
				if d.HasArg("isr") {
					res.ISR = ids(d, "isr")
				}
				res.PartitionEpoch = int32(intArg(d, "partition-epoch", int64(res.PartitionEpoch)))
				res.LeaderEpoch = int32(intArg(d, "epoch", int64(res.LeaderEpoch)))
				if d.HasArg("refused") {
					var why string
					d.ScanArgs(t, "refused", &why)
					res = replica.ISRResult{Refused: why, Code: map[string]int16{"FENCED_LEADER_EPOCH": 74, "INVALID_UPDATE_VERSION": 95,
						"INELIGIBLE_REPLICA": 107, "OPERATION_NOT_ATTEMPTED": 55}[why]}
				}
				if d.HasArg("lost") {
					res = replica.ISRResult{Lost: true}
				}
				h.r.ISRAnswered(e.LeaderEpoch, e.ISR, res)
			case "epoch-answer":
				h.r.EpochAnswered(int32(intArg(d, "epoch", -1)), intArg(d, "end", -1))
			case "diverged":
				h.r.Diverged(int32(intArg(d, "epoch", -1)), intArg(d, "end", -1))
			case "out-of-range":
				fmt.Fprintf(&h.out, "cut: %v\n", h.r.OffsetOutOfRange(intArg(d, "hw", -1), intArg(d, "log-start", -1)))
			case "leader-log-start":
				h.r.LeaderLogStart(intArg(d, "start", -1))
			case "delete-records":
				start, ok := h.r.DeleteRecordsBefore(intArg(d, "offset", -1))
				fmt.Fprintf(&h.out, "delete-records: start %d ok %v\n", start, ok)
			case "low-watermark":
				var dead []int32
				if d.HasArg("dead") {
					dead = ids(d, "dead")
				}
				fmt.Fprintf(&h.out, "low-watermark %d\n", h.r.LowWatermark(func(id int32) bool { return !slices.Contains(dead, id) }))
			case "leader-hw":
				h.r.LeaderHighWatermark(intArg(d, "hw", -1))
			case "skip-truncation":
				h.r.SkipTruncation()
			case "state":
				return h.state()
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return h.drain()
		})
	})
}

type harness struct {
	t        *testing.T
	id       int32
	log      *log.Log
	r        *replica.Replica
	proposed *replica.Effect
	out      strings.Builder
}

func newHarness(t *testing.T, d *datadriven.TestData) *harness {
	l, err := log.Open(disk.New(), log.Config{Topic: "p", Partition: 0, SegmentBytesMax: 1 << 20, KIP360ProducerIDRecovery: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, id: int32(intArg(d, "id", 0)), log: l}
	lag := 10 * time.Second
	if d.HasArg("lag") {
		var s string
		d.ScanArgs(t, "lag", &s)
		if lag, err = time.ParseDuration(s); err != nil {
			d.Fatalf(t, "lag: %v", err)
		}
	}
	h.r = replica.New(replica.Config{ID: h.id, Name: "p/0", ReplicaLagTimeMax: lag,
		LeaderEpochTruncation: boolArg(d, "kip101", true), FetchEpochValidation: boolArg(d, "kip320", true)}, coreLog{l}, 0)
	return h
}

// coreLog is the log as the core reads it (the broker's replicaLog).
type coreLog struct{ *log.Log }

func (l coreLog) EpochStart(epoch int32) (int64, bool) {
	start, ok := int64(0), false
	for e := range l.Epochs() {
		if e.Epoch == epoch {
			start, ok = e.StartOffset, true
		}
	}
	return start, ok
}

// drain prints the effects the steps queued, carrying out truncations.
func (h *harness) drain() string {
	for {
		effects := h.r.Ready()
		if len(effects) == 0 {
			break
		}
		for _, e := range effects {
			switch e.Kind {
			case replica.TraceLine:
				fmt.Fprintf(&h.out, "log %s%s\n", e.Event, fields(e.Fields))
			case replica.HitProbe:
				fmt.Fprintf(&h.out, "probe %s\n", e.Probe)
			case replica.ProposeISR:
				e := e
				h.proposed = &e
				fmt.Fprintf(&h.out, "propose isr=%v epoch=%d partition-epoch=%d\n", e.ISR, e.LeaderEpoch, e.PartitionEpoch)
			case replica.Wake:
				fmt.Fprintf(&h.out, "wake\n")
			case replica.Truncate:
				before := h.log.LogEndOffset()
				end, err := h.log.TruncateTo(e.To)
				if err != nil {
					fmt.Fprintf(&h.out, "truncate to=%d: error %v\n", e.To, err)
					continue
				}
				fmt.Fprintf(&h.out, "truncate to=%d (%s): log end %d -> %d\n", e.To, e.Why, before, end)
				h.r.Truncated(before, end, e.How, e.Why)
			case replica.MoveLogStart:
				var err error
				if e.Fully {
					err = h.log.TruncateFullyAndStartAt(e.To)
				} else {
					err = h.log.IncrementLogStartOffset(e.To)
				}
				if err != nil {
					fmt.Fprintf(&h.out, "move log start to=%d fully=%v: error %v\n", e.To, e.Fully, err)
					continue
				}
				fmt.Fprintf(&h.out, "move log start to=%d fully=%v: log %d-%d\n", e.To, e.Fully, h.log.LogStartOffset(), h.log.LogEndOffset())
				h.r.LogStartMoved(e.To)
			}
		}
	}
	if msg := h.r.InvariantViolation(); msg != "" {
		fmt.Fprintf(&h.out, "INVARIANT: %s\n", msg)
	}
	out := h.out.String()
	h.out.Reset()
	if out == "" {
		return "(nothing)\n"
	}
	return out
}

func (h *harness) state() string {
	a := h.r.Assignment()
	var b strings.Builder
	fmt.Fprintf(&b, "role %s leader %d epoch %d partition-epoch %d isr %v", h.r.Role(), a.Leader, a.LeaderEpoch, a.PartitionEpoch, a.ISR)
	if p := h.r.PendingISR(); p != nil {
		fmt.Fprintf(&b, " pending %v", p)
	}
	fmt.Fprintf(&b, "\nhw %d lso %d log-end %d", h.r.HighWatermark(), h.r.LastStableOffset(), h.log.LogEndOffset())
	if start := h.log.LogStartOffset(); start > 0 {
		fmt.Fprintf(&b, " log-start %d", start)
	}
	if h.r.TruncatePending() {
		b.WriteString(" truncate-pending")
	}
	b.WriteString("\n")
	for _, id := range a.Replicas {
		if f, ok := h.r.Remote(id); ok {
			fmt.Fprintf(&b, "follower %d log-end %d caught-up %v", id, f.LogEnd, time.Duration(f.LastCaughtUp))
			if f.LogStart >= 0 {
				fmt.Fprintf(&b, " log-start %d", f.LogStart)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// record is a batch of one record, so a transcript can cut the log at any
// offset (a log is cut at batch boundaries).
func (h *harness) record() record.Batch {
	return record.Values(1000, fmt.Appendf(nil, "v%d", h.log.LogEndOffset()))
}

func (h *harness) assignment(d *datadriven.TestData, leader int32) replica.Assignment {
	a := replica.Assignment{Leader: leader, LeaderEpoch: int32(intArg(d, "epoch", 0)), PartitionEpoch: int32(intArg(d, "partition-epoch", 0)),
		ISR: ids(d, "isr"), Replicas: []int32{0, 1, 2}}
	if d.HasArg("replicas") {
		a.Replicas = ids(d, "replicas")
	}
	return a
}

func fields(kv []any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	return b.String()
}

func at(d *datadriven.TestData) env.Time {
	for _, a := range d.CmdArgs {
		if a.Key == "at" && len(a.Vals) > 0 {
			dur, err := time.ParseDuration(a.Vals[0])
			if err != nil {
				panic(fmt.Sprintf("at=%q: %v", a.Vals[0], err))
			}
			return env.Time(dur)
		}
	}
	return 0
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

func boolArg(d *datadriven.TestData, key string, def bool) bool {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0] == "true"
		}
	}
	return def
}

func ids(d *datadriven.TestData, key string) []int32 {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			var out []int32
			for _, v := range a.Vals {
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil {
					panic(fmt.Sprintf("%s: %q: %v", key, v, err))
				}
				out = append(out, int32(n))
			}
			return out
		}
	}
	return nil
}
