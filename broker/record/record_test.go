package record_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkasim/kafkasim/broker/record"
)

// kgoStyleBatch builds a batch the way franz-go's producer does, with kmsg's
// structs and its own CRC computation, so that these tests hold our decoder
// to what real clients send.
func kgoStyleBatch(t *testing.T, pid int64, epoch int16, seq int32, attrs int16, recs []kmsg.Record) []byte {
	t.Helper()
	var body []byte
	for i := range recs {
		r := recs[i]
		r.OffsetDelta = int32(i)
		// kmsg wants Length filled in: encode once to measure.
		r.Length = 0
		tmp := r.AppendTo(nil)
		_, n := binary.Varint(tmp)
		r.Length = int32(len(tmp) - n)
		body = r.AppendTo(body)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       1700000000000,
		MaxTimestamp:         1700000000000 + int64(len(recs)-1),
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	rb.Length = int32(record.BatchHeaderSize - record.LogOverhead + len(body))
	raw := rb.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(raw[17:], crc)
	return raw
}

func TestBatchFromKafkaClientDecodes(t *testing.T) {
	recs := []kmsg.Record{
		{Key: []byte("k0"), Value: []byte("v0"), TimestampDelta64: 0},
		{Key: nil, Value: []byte("v1"), TimestampDelta64: 1, Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "n", Value: nil}}},
		{Key: []byte{}, Value: nil, TimestampDelta64: 2},
	}
	raw := kgoStyleBatch(t, 7, 3, 41, 0, recs)

	b, err := record.Parse(raw)
	require.NoError(t, err)
	require.NoError(t, b.Validate())
	h := b.Header()
	require.Equal(t, int64(0), h.BaseOffset)
	require.Equal(t, int32(-1), h.PartitionLeaderEpoch)
	require.Equal(t, record.Magic, h.Magic)
	require.Equal(t, int32(2), h.LastOffsetDelta)
	require.Equal(t, int64(1700000000002), h.MaxTimestamp)
	require.Equal(t, int64(7), h.ProducerID)
	require.Equal(t, int16(3), h.ProducerEpoch)
	require.Equal(t, int32(41), h.BaseSequence)
	require.Equal(t, int32(43), b.LastSequence())
	require.Equal(t, int32(3), h.RecordCount)
	require.Equal(t, len(raw), b.Size())
	require.False(t, b.IsTransactional())
	require.False(t, b.IsControl())

	got, err := b.DecodeRecords()
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, []byte("k0"), got[0].Key)
	require.Equal(t, []byte("v0"), got[0].Value)
	require.Nil(t, got[1].Key)
	require.Equal(t, int64(1), got[1].TimestampDelta)
	require.Equal(t, []record.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "n", Value: nil}}, got[1].Headers)
	require.NotNil(t, got[2].Key)
	require.Empty(t, got[2].Key)
	require.Nil(t, got[2].Value, "a null value (tombstone) stays null")
	require.Equal(t, int32(2), got[2].OffsetDelta)
}

func TestEncodedBatchReadsBackInKafkaClientStructs(t *testing.T) {
	h := record.NewHeader()
	h.BaseOffset = 1234
	h.PartitionLeaderEpoch = 9
	h.FirstTimestamp = 5000
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 77, 1, record.NoSequence+1
	h.Attributes = record.AttrTransactional
	recs := []record.Record{
		{Key: []byte("a"), Value: []byte("1"), TimestampDelta: 3},
		{Value: []byte("2"), Headers: []record.RecordHeader{{Key: "trace", Value: []byte("id")}}},
	}
	b, err := record.Encode(h, recs)
	require.NoError(t, err)

	var kb kmsg.RecordBatch
	require.NoError(t, kb.ReadFrom(b))
	require.Equal(t, int64(1234), kb.FirstOffset)
	require.Equal(t, int32(len(b)-12), kb.Length)
	require.Equal(t, int32(9), kb.PartitionLeaderEpoch)
	require.Equal(t, int8(2), kb.Magic)
	require.Equal(t, int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))), kb.CRC)
	require.Equal(t, int16(record.AttrTransactional), kb.Attributes)
	require.Equal(t, int32(1), kb.LastOffsetDelta)
	require.Equal(t, int64(5003), kb.MaxTimestamp, "max timestamp is the first plus the largest delta")
	require.Equal(t, int32(2), kb.NumRecords)

	rest := kb.Records
	var got []kmsg.Record
	for len(rest) > 0 {
		length, n := binary.Varint(rest)
		require.Positive(t, n)
		var r kmsg.Record
		require.NoError(t, r.ReadFrom(rest[:n+int(length)]))
		got = append(got, r)
		rest = rest[n+int(length):]
	}
	require.Len(t, got, 2)
	require.Equal(t, []byte("a"), got[0].Key)
	require.Equal(t, int64(3), got[0].TimestampDelta64)
	require.Equal(t, int32(1), got[1].OffsetDelta)
	require.Nil(t, got[1].Key)
	require.Equal(t, "trace", got[1].Headers[0].Key)
}

func TestBaseOffsetAndLeaderEpochAreRewrittenWithoutBreakingTheCRC(t *testing.T) {
	b := record.Values(1, []byte("x"), []byte("y"))
	crc := b.CRC()
	b.SetBaseOffset(1 << 40)
	b.SetPartitionLeaderEpoch(12)
	require.NoError(t, b.Validate())
	require.Equal(t, crc, b.CRC())
	require.Equal(t, int64(1<<40), b.BaseOffset())
	require.Equal(t, int64(1<<40+1), b.LastOffset())
	require.Equal(t, int64(1<<40+2), b.NextOffset())
	require.Equal(t, int32(12), b.PartitionLeaderEpoch())
}

func TestEveryFlippedBitPastTheCRCFieldIsDetected(t *testing.T) {
	b := record.Values(1, []byte("hello"), []byte("world"))
	for i := 17; i < len(b); i++ {
		for bit := 0; bit < 8; bit++ {
			c := b.Clone()
			c[i] ^= 1 << bit
			require.Error(t, c.Validate(), "flip at byte %d bit %d", i, bit)
		}
	}
}

func TestChecksumMismatchMapsToCorruptMessage(t *testing.T) {
	b := record.Values(1, []byte("v"))
	b[len(b)-1] ^= 0xff
	err := b.Validate()
	require.ErrorIs(t, err, record.ErrChecksum)
	require.ErrorIs(t, err, kerr.CorruptMessage)
	var ke *kerr.Error
	require.True(t, errors.As(err, &ke))
	require.Equal(t, kerr.CorruptMessage.Code, ke.Code)
}

func TestTransactionMarkerRoundTrips(t *testing.T) {
	for _, typ := range []record.ControlType{record.ControlAbort, record.ControlCommit} {
		b := record.EncodeEndTxnMarker(500, 4, 99, 2, 1234, record.EndTxnMarker{Type: typ, CoordinatorEpoch: 17})
		require.NoError(t, b.Validate())
		require.True(t, b.IsControl())
		require.True(t, b.IsTransactional())
		require.Equal(t, int64(99), b.ProducerID())
		require.Equal(t, int16(2), b.ProducerEpoch())
		require.Equal(t, record.NoSequence, b.BaseSequence())
		require.Equal(t, int64(500), b.LastOffset())
		m, err := b.EndTxnMarker()
		require.NoError(t, err)
		require.Equal(t, record.EndTxnMarker{Type: typ, CoordinatorEpoch: 17}, m)
		require.Equal(t, typ == record.ControlCommit, m.Commit())

		// The bytes are Kafka's: key = version 0, type; value = version 0, epoch.
		recs, err := b.DecodeRecords()
		require.NoError(t, err)
		require.Equal(t, []byte{0, 0, 0, byte(typ)}, recs[0].Key)
		require.Equal(t, []byte{0, 0, 0, 0, 0, 17}, recs[0].Value)
	}
}

func TestDataBatchIsNotAMarker(t *testing.T) {
	_, err := record.Values(1, []byte("x")).EndTxnMarker()
	require.ErrorIs(t, err, record.ErrInvalid)
}

func TestSplitConcatenatedBatches(t *testing.T) {
	a := record.Values(1, []byte("a"))
	b := record.Values(2, []byte("b"), []byte("c"))
	a.SetBaseOffset(0)
	b.SetBaseOffset(1)
	stream := append(append([]byte(nil), a...), b...)

	batches, err := record.Split(stream)
	require.NoError(t, err)
	require.Len(t, batches, 2)
	require.Equal(t, int64(1), batches[1].BaseOffset())
	require.Equal(t, int32(2), batches[1].RecordCount())

	// A fetch response cut at its byte limit: whole batches, then ErrTruncated.
	batches, err = record.Split(stream[:len(stream)-3])
	require.ErrorIs(t, err, record.ErrTruncated)
	require.Len(t, batches, 1)

	batches, err = record.Split(stream[:len(a)+5])
	require.ErrorIs(t, err, record.ErrTruncated)
	require.Len(t, batches, 1)
}

func TestGarbageStreamIsRefusedNotPanicked(t *testing.T) {
	zeros := make([]byte, 100)
	_, err := record.Split(zeros)
	require.ErrorIs(t, err, record.ErrCorrupt, "a zero length is below the header")

	b := record.Values(1, []byte("x"))
	b[16] = 1 // magic 1
	_, err = record.Parse(b)
	require.ErrorIs(t, err, record.ErrMagic)

	huge := record.Values(1, []byte("x")).Clone()
	binary.BigEndian.PutUint32(huge[8:], 0x7fffffff)
	_, err = record.Parse(huge)
	require.ErrorIs(t, err, record.ErrTruncated)

	_, err = record.Parse(append(record.Values(1, []byte("x")), 0))
	require.ErrorIs(t, err, record.ErrCorrupt, "bytes after a single batch")
}

func TestHostileRecordCountDoesNotAllocate(t *testing.T) {
	b := record.Values(1, []byte("x")).Clone()
	binary.BigEndian.PutUint32(b[57:], 0x7fffffff)
	binary.BigEndian.PutUint32(b[17:], b.ComputeCRC())
	// Bytes, not allocation counts: the race detector adds allocations of
	// its own, but a record count of 2^31 would cost gigabytes.
	var before, after runtime.MemStats
	var err error
	runtime.ReadMemStats(&before)
	for range 10 {
		_, err = b.DecodeRecords()
	}
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, record.ErrCorrupt)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "decoding a hostile record count allocated")
	require.Error(t, b.Validate())
}

func TestValidateRefusesBrokenOffsetDeltas(t *testing.T) {
	h := record.NewHeader()
	b, err := record.Encode(h, []record.Record{{Value: []byte("a")}, {Value: []byte("b")}})
	require.NoError(t, err)
	// Claim one record fewer than there are.
	c := b.Clone()
	binary.BigEndian.PutUint32(c[23:], 0)
	binary.BigEndian.PutUint32(c[17:], c.ComputeCRC())
	require.ErrorIs(t, c.Validate(), record.ErrInvalid)
	// An empty batch.
	e, err := record.Encode(h, nil)
	require.NoError(t, err)
	require.ErrorIs(t, e.Validate(), record.ErrInvalid)
}

func TestCodecsKafkaNeverAssignedAreRefused(t *testing.T) {
	h := record.NewHeader()
	recs := []record.Record{{Value: []byte("v")}}
	for _, c := range []record.Compression{5, 6, 7} {
		require.False(t, c.Supported())
		h.Attributes = record.Attributes(c)
		_, err := record.Encode(h, recs)
		require.ErrorIs(t, err, record.ErrUnsupportedCompression)

		// A client's batch with codec 5: header readable, CRC fine,
		// records refused with Kafka's error.
		raw := kgoStyleBatch(t, -1, -1, -1, int16(c), []kmsg.Record{{Value: []byte("x")}})
		pb, err := record.Parse(raw)
		require.NoError(t, err)
		require.NoError(t, pb.VerifyCRC())
		require.Equal(t, c, pb.Compression())
		err = pb.Validate()
		require.ErrorIs(t, err, record.ErrUnsupportedCompression)
		require.ErrorIs(t, err, kerr.UnsupportedCompressionType)
	}
}

func TestSequenceWrapsAtInt32(t *testing.T) {
	require.Equal(t, int32(4), record.IncrementSequence(0, 4))
	require.Equal(t, int32(0), record.IncrementSequence(1<<31-1, 1))
	require.Equal(t, int32(2), record.IncrementSequence(1<<31-2, 4))
	require.Equal(t, int32(1<<31-1), record.DecrementSequence(0, 1))
	require.Equal(t, int32(1<<31-2), record.DecrementSequence(2, 4))

	h := record.NewHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 1, 0, 1<<31-2
	b, err := record.Encode(h, make([]record.Record, 4))
	require.NoError(t, err)
	require.Equal(t, int32(1), b.LastSequence())
}
