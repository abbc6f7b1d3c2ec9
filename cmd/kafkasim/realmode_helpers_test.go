package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/history"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers for the real-mode tests: a cluster of kafkasim processes on
// loopback, driven by franz-go (kgo), a Kafka client nobody here wrote.
// Every wait has a deadline.

// buildKafkasim builds this command into a temporary directory, with the
// race detector if the test runs with it.
func buildKafkasim(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "kafkasim")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.CommandContext(ctx, goBin, append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// child is one kafkasim process. Its stdout and stderr go to a log file
// that outlives restarts.
type child struct {
	t      *testing.T
	name   string
	bin    string
	args   []string
	logs   string
	addr   string // the address it printed on start
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

var listeningRE = regexp.MustCompile(`listening on (\S+),`)

// startChild starts bin with args and waits for the line naming its
// address.
func startChild(t *testing.T, bin, name, logs string, args ...string) *child {
	t.Helper()
	c := &child{t: t, name: name, bin: bin, args: args, logs: logs}
	c.start()
	t.Cleanup(func() {
		if c.running() {
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

func (c *child) start() {
	c.t.Helper()
	log, err := os.OpenFile(c.logs, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(log, "=== %s %s\n", c.name, strings.Join(c.args, " "))
	cmd := exec.Command(c.bin, c.args...)
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		c.t.Fatalf("start %s: %v", c.name, err)
	}
	c.cmd, c.exited = cmd, make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		c.err = cmd.Wait()
		log.Close()
		close(c.exited)
	}()
	select {
	case c.addr = <-addr:
	case <-c.exited:
		c.t.Fatalf("%s exited on start (%v):\n%s", c.name, c.err, tail(c.logs, 20))
	case <-time.After(15 * time.Second):
		c.t.Fatalf("%s did not say where it listens within 15s:\n%s", c.name, tail(c.logs, 20))
	}
}

func (c *child) running() bool {
	if c.exited == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// kill is SIGKILL: no clean shutdown, the files as the crash left them.
func (c *child) kill() {
	c.t.Helper()
	_ = c.cmd.Process.Kill()
	c.wait(10 * time.Second)
}

// restart starts the process again on the address it had.
func (c *child) restart() {
	c.t.Helper()
	for i, a := range c.args {
		if a == "--listen" && i+1 < len(c.args) {
			c.args[i+1] = c.addr
		}
	}
	c.start()
}

// terminate is SIGTERM; it returns the exit code.
func (c *child) terminate() int {
	c.t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	c.wait(15 * time.Second)
	var ee *exec.ExitError
	switch {
	case c.err == nil:
		return 0
	case errors.As(c.err, &ee):
		return ee.ExitCode()
	}
	return -1
}

func (c *child) wait(d time.Duration) {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(d):
		c.t.Fatalf("%s did not exit within %v", c.name, d)
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// realCluster is a controller and brokers 0..n-1 as child processes.
type realCluster struct {
	t           *testing.T
	dir         string
	controllers []*child // a KRaft quorum of three, node ids 3000..3002
	brokers     []*child // by broker id
}

// startRealCluster starts three controllers and n brokers on free loopback
// ports with the given cluster flags. The quorum's addresses must be known
// before its voters start, so the controllers' ports are drawn free first.
func startRealCluster(t *testing.T, bin string, n int, flags ...string) *realCluster {
	t.Helper()
	dir := t.TempDir()
	c := &realCluster{t: t, dir: dir}
	var addrs, voters []string
	for i := range 3 {
		addr := freeLoopbackAddr(t)
		addrs = append(addrs, addr)
		voters = append(voters, fmt.Sprintf("%d@%s", 3000+i, addr))
	}
	for i, addr := range addrs {
		name := fmt.Sprintf("controller-%d", i)
		c.controllers = append(c.controllers, startChild(t, bin, name, filepath.Join(dir, name+".log"),
			append([]string{"controller", "--node-id", fmt.Sprint(3000 + i), "--quorum", strings.Join(voters, ","),
				"--listen", addr, "--data", filepath.Join(dir, name)}, flags...)...))
	}
	for id := range n {
		name := fmt.Sprintf("broker-%d", id)
		c.brokers = append(c.brokers, startChild(t, bin, name, filepath.Join(dir, name+".log"),
			append([]string{"broker", "--id", fmt.Sprint(id), "--listen", "127.0.0.1:0",
				"--data", filepath.Join(dir, name), "--controller", strings.Join(voters, ",")}, flags...)...))
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, ch := range append(slices.Clone(c.controllers), c.brokers...) {
				t.Logf("--- last lines of %s:\n%s", ch.name, tail(ch.logs, 15))
			}
		}
	})
	return c
}

// freeLoopbackAddr is a loopback address no one listens on just now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

var activeRE = regexp.MustCompile(`msg=controller-active node=\S+ epoch=(\d+)`)

// activeController is the running controller whose log says it became
// active in the highest epoch, nil if none has.
func (c *realCluster) activeController() *child {
	var best *child
	bestEpoch := -1
	for _, ch := range c.controllers {
		if !ch.running() {
			continue
		}
		b, err := os.ReadFile(ch.logs)
		if err != nil {
			continue
		}
		for _, m := range activeRE.FindAllSubmatch(b, -1) {
			if e, _ := strconv.Atoi(string(m[1])); e > bestEpoch {
				best, bestEpoch = ch, e
			}
		}
	}
	return best
}

func (c *realCluster) addrs() []string {
	var out []string
	for _, b := range c.brokers {
		out = append(out, b.addr)
	}
	return out
}

// shutdown sends SIGTERM to every process and expects clean exits.
func (c *realCluster) shutdown() {
	c.t.Helper()
	for _, ch := range append(slices.Clone(c.brokers), c.controllers...) {
		if !ch.running() {
			continue
		}
		if code := ch.terminate(); code != 0 {
			c.t.Errorf("%s exited %d on SIGTERM, want 0:\n%s", ch.name, code, tail(ch.logs, 10))
		}
	}
}

// eventually polls cond every 50 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// partitionState asks the cluster for one partition's leader and ISR.
func partitionState(ctx context.Context, cl *kgo.Client, topic string, partition int32) (leader int32, isr []int32, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return -1, nil, false
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.Partition == partition && p.ErrorCode == 0 {
			return p.Leader, p.ISR, true
		}
	}
	return -1, nil, false
}

// brokerCount is how many brokers the cluster's metadata names.
func brokerCount(ctx context.Context, cl *kgo.Client) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return 0
	}
	return len(resp.Brokers)
}

// createTopic creates a topic through the Kafka protocol.
func createTopic(ctx context.Context, t *testing.T, cl *kgo.Client, name string, partitions int32, rf int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("CreateTopics %s: error code %d", name, code)
	}
}

// clock gives history times: nanoseconds since the run began, from the
// monotonic clock, so a return is never before its call.
type clock struct{ base time.Time }

func (c clock) now() int64 { return int64(time.Since(c.base)) }

// pollRecords turns one partition's fetched records into history records.
func pollRecords(fs kgo.Fetches, topic string, partition int32) []history.Record {
	var out []history.Record
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Topic != topic || p.Partition != partition {
			return
		}
		for _, r := range p.Records {
			out = append(out, history.Record{Offset: r.Offset, Message: history.Message{Key: string(r.Key), Value: string(r.Value)}})
		}
	})
	return out
}

// kgoLog is a kgo logger writing to a file for post-mortems.
func kgoLog(t *testing.T, path string) kgo.Logger {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	t.Cleanup(func() { mu.Lock(); f.Close(); mu.Unlock() })
	return kgo.BasicLogger(lockedWriter{&mu, f}, kgo.LogLevelInfo, nil)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
