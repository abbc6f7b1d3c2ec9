package record_test

import (
	"fmt"

	"github.com/kafkasim/kafkasim/broker/record"
)

// A producer's idempotent batch, as the leader sees it: header fields read in
// place, the base offset assigned without touching the CRC.
func Example() {
	h := record.NewHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 42, 0, 10
	h.FirstTimestamp = 1700000000000
	raw, _ := record.Encode(h, []record.Record{{Key: []byte("k"), Value: []byte("v1")}, {Value: []byte("v2")}})

	b, err := record.Parse(raw)
	if err != nil || b.Validate() != nil {
		panic("bad batch")
	}
	b.SetBaseOffset(500)
	fmt.Println("records", b.RecordCount(), "offsets", b.BaseOffset(), "to", b.LastOffset())
	fmt.Println("producer", b.ProducerID(), "sequences", b.BaseSequence(), "to", b.LastSequence())
	fmt.Println("crc still valid:", b.VerifyCRC() == nil)
	// Output:
	// records 2 offsets 500 to 501
	// producer 42 sequences 10 to 11
	// crc still valid: true
}
