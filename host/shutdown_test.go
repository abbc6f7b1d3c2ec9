package host_test

import (
	"io"
	"sync/atomic"
	"testing"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

// stopper is a process that writes a file when asked to stop cleanly.
type stopper struct {
	e       env.Env
	stopped *atomic.Int32
	halt    bool
}

func (p *stopper) Start(e env.Env) {
	p.e = e
	if p.halt {
		e.Halt("told to")
	}
}
func (p *stopper) Connected(env.ConnID, string, bool) {}
func (p *stopper) Received(env.ConnID, []byte)        {}
func (p *stopper) Closed(env.ConnID)                  {}
func (p *stopper) Stop() {
	p.stopped.Add(1)
	_ = p.e.Disk().Append("clean-shutdown", []byte("bye"))
}

// Shutdown, as on SIGTERM, runs the process's Stop on its loop — where it
// may still use its disk — and then stops the node; a later Stop or
// Shutdown does nothing more.
func TestShutdownRunsTheProcessStopThenStops(t *testing.T) {
	var stopped atomic.Int32
	dir := t.TempDir()
	n, err := host.Start(host.Options{Listen: "127.0.0.1:0", DataDir: dir, Log: io.Discard},
		func() env.Process { return &stopper{stopped: &stopped} })
	if err != nil {
		t.Fatal(err)
	}
	n.Shutdown()
	<-n.Done()
	n.Shutdown()
	n.Stop()
	if got := stopped.Load(); got != 1 {
		t.Fatalf("Stop ran %d times, want once", got)
	}
	d, err := host.OpenDisk(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if b, err := d.ReadFile("clean-shutdown"); err != nil || string(b) != "bye" {
		t.Fatalf("disk after Shutdown: %q, %v; want the file Stop wrote", b, err)
	}
}

// A process that halted is not asked to stop: its Env is inert.
func TestShutdownAfterHaltSkipsTheProcessStop(t *testing.T) {
	var stopped atomic.Int32
	n, err := host.Start(host.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Log: io.Discard},
		func() env.Process { return &stopper{stopped: &stopped, halt: true} })
	if err != nil {
		t.Fatal(err)
	}
	<-n.Done()
	n.Shutdown()
	if got := stopped.Load(); got != 0 {
		t.Fatalf("Stop ran %d times after Halt, want never", got)
	}
}
