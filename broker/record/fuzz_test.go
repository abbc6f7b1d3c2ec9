package record_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"

	"github.com/kafkasim/kafkasim/broker/record"
)

// FuzzDecode feeds arbitrary bytes to everything that reads a batch stream.
// Nothing may panic, and whatever decodes must re-encode, with its codec, to
// records that decode the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(record.Values(1, []byte("a"), []byte("bc"))))
	f.Add([]byte(record.EncodeEndTxnMarker(3, 1, 5, 0, 9, record.EndTxnMarker{Type: record.ControlCommit, CoordinatorEpoch: 2})))
	two := append([]byte(record.Values(1, []byte("x"))), record.Values(2, nil, []byte{})...)
	f.Add(two)
	f.Add(two[:len(two)-4])
	recs := []record.Record{{Key: []byte("k"), Value: []byte("v"), Headers: []record.RecordHeader{{Key: "h"}}}, {Value: []byte("vvvvvvvvvvvvvvvvvvvv")}}
	for _, c := range codecs[1:] {
		h := record.NewHeader()
		h.Attributes = record.Attributes(c)
		b, _ := record.Encode(h, recs)
		f.Add([]byte(b))
	}
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
			requireReencodes(t, b)
		}
	})
}

// FuzzDecompress goes straight at the codecs: data is the records section
// of a one-record batch compressed with codec.
func FuzzDecompress(f *testing.F) {
	section := []byte(record.Values(1, []byte("value value value value"))[record.BatchHeaderSize:])
	for _, c := range codecs[1:] {
		h := record.NewHeader()
		h.Attributes = record.Attributes(c)
		b, _ := record.Encode(h, []record.Record{{Value: []byte("value value value value")}})
		f.Add(byte(c), []byte(b.Records()))
	}
	f.Add(byte(record.CompressionSnappy), snappy.Encode(nil, section))
	lz := make([]byte, lz4.CompressBlockBound(len(section)))
	var lzc lz4.Compressor
	n, _ := lzc.CompressBlock(section, lz)
	// A frame with every checksum, which our encoder never writes.
	frame := []byte{0x04, 0x22, 0x4d, 0x18, 0x74, 0x40, 0}
	frame[6] = byte(record.XXH32(frame[4:6]) >> 8)
	frame = binary.LittleEndian.AppendUint32(frame, uint32(n))
	frame = append(frame, lz[:n]...)
	frame = binary.LittleEndian.AppendUint32(frame, record.XXH32(lz[:n]))
	frame = binary.LittleEndian.AppendUint32(frame, 0)
	frame = binary.LittleEndian.AppendUint32(frame, record.XXH32(section))
	f.Add(byte(record.CompressionLz4), frame)

	f.Fuzz(func(t *testing.T, codec byte, data []byte) {
		requireReencodes(t, withRecords(record.Compression(codec&7), 1, data))
	})
}

func requireReencodes(t *testing.T, b record.Batch) {
	recs, err := b.DecodeRecords()
	if err != nil {
		return
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
