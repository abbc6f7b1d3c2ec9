package record_test

import (
	"bytes"
	"testing"

	"github.com/kafkasim/kafkasim/broker/record"
)

// FuzzDecode feeds arbitrary bytes to everything that reads a batch stream.
// Nothing may panic, and whatever decodes must re-encode to records that
// decode the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(record.Values(1, []byte("a"), []byte("bc"))))
	f.Add([]byte(record.EncodeEndTxnMarker(3, 1, 5, 0, 9, record.EndTxnMarker{Type: record.ControlCommit, CoordinatorEpoch: 2})))
	two := append([]byte(record.Values(1, []byte("x"))), record.Values(2, nil, []byte{})...)
	f.Add(two)
	f.Add(two[:len(two)-4])
	h := record.NewHeader()
	h.Attributes = record.Attributes(record.CompressionGzip)
	gz, _ := record.Encode(h, []record.Record{{Key: []byte("k"), Value: []byte("v"), Headers: []record.RecordHeader{{Key: "h"}}}})
	f.Add([]byte(gz))
	f.Add(make([]byte, 61))

	f.Fuzz(func(t *testing.T, data []byte) {
		batches, _ := record.Split(data)
		for _, b := range batches {
			_ = b.Header()
			_ = b.LastSequence()
			_ = b.NextOffset()
			_ = b.VerifyCRC()
			_ = b.Validate()
			_, _ = b.EndTxnMarker()
			recs, err := b.DecodeRecords()
			if err != nil || b.Compression() != record.CompressionNone {
				continue
			}
			h := b.Header()
			again, err := record.Encode(h, recs)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			back, err := again.DecodeRecords()
			if err != nil {
				t.Fatalf("decode of re-encoded batch: %v", err)
			}
			if len(back) != len(recs) {
				t.Fatalf("%d records became %d", len(recs), len(back))
			}
			for i := range recs {
				a, z := recs[i], back[i]
				if a.Attributes != z.Attributes || a.TimestampDelta != z.TimestampDelta ||
					!bytes.Equal(a.Key, z.Key) || (a.Key == nil) != (z.Key == nil) ||
					!bytes.Equal(a.Value, z.Value) || (a.Value == nil) != (z.Value == nil) ||
					len(a.Headers) != len(z.Headers) {
					t.Fatalf("record %d changed: %+v became %+v", i, a, z)
				}
			}
			if err := again.VerifyCRC(); err != nil {
				t.Fatalf("re-encoded batch: %v", err)
			}
		}
	})
}
