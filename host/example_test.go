package host_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/host"
)

// echoProcess answers every frame with itself. It is ordinary process code:
// it would run unchanged in the simulator.
type echoProcess struct{ e env.Env }

func (p *echoProcess) Start(e env.Env)                                   { p.e = e }
func (p *echoProcess) Connected(c env.ConnID, peer string, inbound bool) {}
func (p *echoProcess) Received(c env.ConnID, frame []byte)               { p.e.Send(c, frame) }
func (p *echoProcess) Closed(c env.ConnID)                               {}

// A process runs on real TCP, and a client that knows only Kafka's framing
// talks to it.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "kafkasim-example")
	defer os.RemoveAll(dir)
	node, err := host.Start(host.Options{Listen: "127.0.0.1:0", DataDir: dir, Log: io.Discard},
		func() env.Process { return &echoProcess{} })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Stop()

	conn, err := net.Dial("tcp", node.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))

	msg := []byte("hello")
	conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...))
	var size [4]byte
	io.ReadFull(conn, size[:])
	reply := make([]byte, binary.BigEndian.Uint32(size[:]))
	io.ReadFull(conn, reply)
	fmt.Printf("echo: %s\n", reply)
	// Output: echo: hello
}
