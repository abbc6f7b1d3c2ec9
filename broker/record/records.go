package record

import (
	"encoding/binary"
	"math"
)

// Record is one record of a batch. Decoded records alias the batch (or its
// decompressed buffer): copy what must outlive it.
type Record struct {
	Attributes     int8
	TimestampDelta int64  // from the batch's FirstTimestamp, in ms
	OffsetDelta    int32  // from the batch's BaseOffset
	Key            []byte // nil is a null key
	Value          []byte // nil is a null value (a tombstone)
	Headers        []RecordHeader
}

// RecordHeader is one record header. Kafka's header keys are never null.
type RecordHeader struct {
	Key   string
	Value []byte // nil is a null value
}

// recordSizeMin is the smallest encoded record: length, attributes,
// timestamp delta, offset delta, key length, value length, header count,
// one byte each. It bounds how many records a byte count can hold, so a
// hostile record count never drives an allocation.
const recordSizeMin = 7

// appendRecord appends r with the given offset delta in Kafka's encoding.
func appendRecord(dst []byte, r *Record, offsetDelta int32) []byte {
	var scratch [binary.MaxVarintLen64]byte
	body := bodySize(r, offsetDelta)
	dst = binary.AppendVarint(dst, int64(body))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(offsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		n := binary.PutVarint(scratch[:], int64(len(h.Key)))
		dst = append(dst, scratch[:n]...)
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func bytesSize(b []byte) int {
	if b == nil {
		return 1
	}
	return varintSize(int64(len(b))) + len(b)
}

// bodySize is the record's length field: everything after it.
func bodySize(r *Record, offsetDelta int32) int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(offsetDelta)) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	return n
}

// reader decodes Kafka varints and byte strings from a bounded slice.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = errorf(ErrCorrupt, format, args...)
	}
}

func (r *reader) varlong() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int32 {
	v := r.varlong()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("varint %d out of int32 range", v)
		return 0
	}
	return int32(v)
}

func (r *reader) int8() int8 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail("record ends early")
		return 0
	}
	v := int8(r.b[0])
	r.b = r.b[1:]
	return v
}

// bytes reads a varint length and that many bytes; -1 is null when
// nullable.
func (r *reader) bytes(nullable bool, what string) []byte {
	n := r.varint()
	if r.err != nil {
		return nil
	}
	if n == -1 && nullable {
		return nil
	}
	if n < 0 {
		r.fail("%s length %d", what, n)
		return nil
	}
	if int(n) > len(r.b) {
		r.fail("%s length %d, %d bytes left", what, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// decodeRecords calls fn for each of count records in data. The record
// passed to fn is reused between calls.
func decodeRecords(data []byte, count int32, fn func(i int32, r *Record) error) error {
	rd := reader{b: data}
	var rec Record
	for i := int32(0); i < count; i++ {
		length := rd.varint()
		if rd.err != nil {
			return errorf(ErrCorrupt, "record %d of %d: %v", i, count, rd.err)
		}
		if length < 0 || int(length) > len(rd.b) {
			return errorf(ErrCorrupt, "record %d of %d: length %d, %d bytes left", i, count, length, len(rd.b))
		}
		body := reader{b: rd.b[:length]}
		rd.b = rd.b[length:]
		rec.Attributes = body.int8()
		rec.TimestampDelta = body.varlong()
		rec.OffsetDelta = body.varint()
		rec.Key = body.bytes(true, "key")
		rec.Value = body.bytes(true, "value")
		headers := body.varint()
		if body.err == nil && (headers < 0 || int(headers) > len(body.b)/2) {
			body.fail("header count %d with %d bytes left", headers, len(body.b))
		}
		rec.Headers = rec.Headers[:0]
		if body.err == nil && headers > 0 {
			rec.Headers = make([]RecordHeader, 0, headers)
		}
		for h := int32(0); body.err == nil && h < headers; h++ {
			k := body.bytes(false, "header key")
			v := body.bytes(true, "header value")
			rec.Headers = append(rec.Headers, RecordHeader{Key: string(k), Value: v})
		}
		if body.err == nil && len(body.b) != 0 {
			body.fail("%d bytes left inside the record", len(body.b))
		}
		if body.err != nil {
			return errorf(ErrCorrupt, "record %d of %d: %v", i, count, body.err)
		}
		if err := fn(i, &rec); err != nil {
			return err
		}
	}
	if len(rd.b) != 0 {
		return errorf(ErrCorrupt, "%d bytes after the %d records the header declares", len(rd.b), count)
	}
	return nil
}

// recordsData returns the batch's records section, decompressed.
func (b Batch) recordsData() ([]byte, error) {
	c := b.Compression()
	if c == CompressionNone {
		return b.Records(), nil
	}
	return decompress(c, b.Records())
}

// DecodeRecords decodes every record. It does not check the CRC (Validate
// does). Records alias b, or the decompressed buffer for a compressed batch.
func (b Batch) DecodeRecords() ([]Record, error) {
	data, err := b.recordsData()
	if err != nil {
		return nil, err
	}
	count := b.RecordCount()
	prealloc := min(int(count), len(data)/recordSizeMin)
	recs := make([]Record, 0, prealloc)
	err = decodeRecords(data, count, func(_ int32, r *Record) error {
		c := *r
		if len(c.Headers) == 0 {
			c.Headers = nil
		}
		r.Headers = nil // the next record gets its own slice
		recs = append(recs, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// Validate checks a batch as a broker must before appending it: magic, CRC,
// a record count matching the offset range, every record well formed with
// offset deltas 0, 1, 2, ... in order, and a control batch holding exactly
// one transaction marker. It allocates nothing for an uncompressed batch
// without headers.
func (b Batch) Validate() error {
	if b.Magic() != Magic {
		return errorf(ErrMagic, "magic %d", b.Magic())
	}
	if err := b.VerifyCRC(); err != nil {
		return err
	}
	count := b.RecordCount()
	if count <= 0 {
		return errorf(ErrInvalid, "batch at offset %d declares %d records", b.BaseOffset(), count)
	}
	if int64(b.LastOffsetDelta())+1 != int64(count) {
		return errorf(ErrInvalid, "batch at offset %d: last offset delta %d for %d records", b.BaseOffset(), b.LastOffsetDelta(), count)
	}
	if b.HasProducerID() && b.BaseSequence() < 0 && !b.IsControl() {
		return errorf(ErrInvalid, "producer %d batch with sequence %d", b.ProducerID(), b.BaseSequence())
	}
	data, err := b.recordsData()
	if err != nil {
		return err
	}
	err = decodeRecords(data, count, func(i int32, r *Record) error {
		if r.OffsetDelta != i {
			return errorf(ErrInvalid, "record %d has offset delta %d", i, r.OffsetDelta)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if b.IsControl() {
		if _, err := b.EndTxnMarker(); err != nil {
			return err
		}
	}
	return nil
}
