package log_test

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/log"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim/disk"
)

// A leader appends, syncs half of what it has, loses power, and recovers the
// synced half.
func Example() {
	d := disk.New()
	cfg := log.Config{Topic: "orders", Partition: 0, SegmentBytesMax: 1 << 20, FlushIntervalMessages: 0, KIP360ProducerIDRecovery: true}
	l, _ := log.Open(d, cfg)

	res, _ := l.AppendAsLeader(record.Values(1000, []byte("a"), []byte("b")), 1)
	fmt.Println("appended", res.FirstOffset, "to", res.LastOffset)
	_ = l.Flush()
	_, _ = l.AppendAsLeader(record.Values(1001, []byte("c")), 1)
	fmt.Println("log end", l.LogEndOffset(), "unflushed", l.UnflushedMessages())

	d.PowerLoss(false, env.NewRand(1))
	l, _ = log.Open(d, cfg)
	fmt.Println("after power loss: log end", l.LogEndOffset())

	data, _ := l.Read(0, 1<<20, l.LogEndOffset())
	batches, _ := record.Split(data)
	recs, _ := batches[0].DecodeRecords()
	fmt.Printf("offset %d: %s\n", batches[0].BaseOffset()+int64(recs[1].OffsetDelta), recs[1].Value)
	// Output:
	// appended 0 to 1
	// log end 3 unflushed 1
	// after power loss: log end 2
	// offset 1: b
}
