package record_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkasim/kafkasim/broker/record"
)

var codecs = []record.Compression{
	record.CompressionNone, record.CompressionGzip, record.CompressionSnappy,
	record.CompressionLz4, record.CompressionZstd,
}

// recordSets are the record lists every codec must carry intact: the small
// batch of a quiet producer, null keys and values and headers, and a batch
// large enough to span many snappy chunks, lz4 blocks and zstd blocks, half
// compressible, half not.
func recordSets() map[string][]record.Record {
	noise := make([]byte, 200<<10)
	x := uint32(1)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		noise[i] = byte(x)
	}
	var big []record.Record
	for i := range 300 {
		v := noise[i*600 : i*600+600]
		if i%2 == 0 {
			v = bytes.Repeat([]byte(fmt.Sprintf("value %d ", i)), 60)
		}
		big = append(big, record.Record{Key: []byte(fmt.Sprint(i)), Value: v, TimestampDelta: int64(i)})
	}
	return map[string][]record.Record{
		"one": {{Value: []byte("v")}},
		"nulls and headers": {
			{Key: []byte("k"), Value: nil, Headers: []record.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "n"}}},
			{Key: nil, Value: []byte{}, TimestampDelta: 5},
		},
		"big": big,
	}
}

func requireSameRecords(t *testing.T, want, got []record.Record) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.Key, g.Key, "record %d key", i)
		require.Equal(t, w.Key == nil, g.Key == nil, "record %d key nullness", i)
		require.Equal(t, w.Value, g.Value, "record %d value", i)
		require.Equal(t, w.Value == nil, g.Value == nil, "record %d value nullness", i)
		require.Equal(t, w.TimestampDelta, g.TimestampDelta, "record %d timestamp", i)
		require.Equal(t, int32(i), g.OffsetDelta)
		require.Equal(t, len(w.Headers), len(g.Headers), "record %d headers", i)
		for j := range w.Headers {
			require.Equal(t, w.Headers[j].Key, g.Headers[j].Key)
			require.Equal(t, w.Headers[j].Value, g.Headers[j].Value)
			require.Equal(t, w.Headers[j].Value == nil, g.Headers[j].Value == nil)
		}
	}
}

func encodeWith(t *testing.T, c record.Compression, recs []record.Record) record.Batch {
	t.Helper()
	h := record.NewHeader()
	h.FirstTimestamp = 1700000000000
	h.Attributes = record.Attributes(c)
	b, err := record.Encode(h, recs)
	require.NoError(t, err)
	return b
}

// compressedSection is a batch's records section and the codec it is in.
type compressedSection struct {
	codec record.Compression
	data  []byte
}

// recordsSection is the uncompressed records section for recs.
func recordsSection(t *testing.T, recs []record.Record) []byte {
	t.Helper()
	return encodeWith(t, record.CompressionNone, recs).Records()
}

// withRecords builds a batch around a records section as a client would
// send it: codec bits, record count, length and CRC all consistent, so
// that what follows is the codec's business alone.
func withRecords(c record.Compression, count int, section []byte) record.Batch {
	empty, _ := record.Encode(record.NewHeader(), nil)
	b := append(empty.Clone(), section...)
	binary.BigEndian.PutUint16(b[21:], uint16(c))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	binary.BigEndian.PutUint32(b[23:], uint32(max(count-1, 0)))
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestEveryCodecRoundTrips(t *testing.T) {
	for name, recs := range recordSets() {
		plain := len(recordsSection(t, recs))
		for _, c := range codecs {
			t.Run(fmt.Sprintf("%s/%s", c, name), func(t *testing.T) {
				require.True(t, c.Supported())
				b := encodeWith(t, c, recs)
				p, err := record.Parse(b)
				require.NoError(t, err)
				require.Equal(t, c, p.Compression())
				require.NoError(t, p.Validate())
				got, err := p.DecodeRecords()
				require.NoError(t, err)
				requireSameRecords(t, recs, got)
				if name == "big" && c != record.CompressionNone {
					require.Less(t, len(p.Records()), plain*3/4, "half the batch compresses")
				}
			})
		}
	}
}

func TestNoRecordsStillMakeAFrame(t *testing.T) {
	for _, c := range codecs {
		b := encodeWith(t, c, nil)
		if c != record.CompressionNone {
			require.NotEmpty(t, b.Records(), "%s", c)
		}
		got, err := b.DecodeRecords()
		require.NoError(t, err, "%s", c)
		require.Empty(t, got)
	}
}

// The bytes we write are framed as Kafka's Java producer frames them.
func TestEncodedFramingIsTheJavaProducers(t *testing.T) {
	recs := recordSets()["big"]
	section := recordsSection(t, recs)

	// Snappy: xerial, version 1 compatible with 1, then 32 KiB chunks.
	s := encodeWith(t, record.CompressionSnappy, recs).Records()
	require.Equal(t, []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}, s[:16])
	var joined []byte
	for rest := s[16:]; len(rest) > 0; {
		n := binary.BigEndian.Uint32(rest)
		chunk, err := snappy.DecodeStrict(nil, rest[4:4+n])
		require.NoError(t, err)
		require.LessOrEqual(t, len(chunk), 32<<10)
		joined = append(joined, chunk...)
		rest = rest[4+n:]
	}
	require.Equal(t, section, joined)

	// Lz4: Kafka's header, byte for byte (FLG version 1 + independent
	// blocks, BD 64 KiB, then the header checksum), and the end mark.
	l := encodeWith(t, record.CompressionLz4, recs).Records()
	require.Equal(t, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}, l[:7])
	require.Equal(t, []byte{0, 0, 0, 0}, l[len(l)-4:])
	got, err := io.ReadAll(lz4.NewReader(bytes.NewReader(l)))
	require.NoError(t, err)
	require.Equal(t, section, got)

	// Zstd: a standard frame.
	z := encodeWith(t, record.CompressionZstd, recs).Records()
	require.Equal(t, []byte{0x28, 0xb5, 0x2f, 0xfd}, z[:4])
}

// kgoCompressed is the records section franz-go's producer sends for recs.
func kgoCompressed(t *testing.T, codec kgo.CompressionCodec, section []byte) ([]byte, record.Compression) {
	t.Helper()
	comp, err := kgo.DefaultCompressor(codec)
	require.NoError(t, err)
	out, used := comp.Compress(new(bytes.Buffer), section)
	require.NotEqual(t, kgo.CodecError, used)
	return bytes.Clone(out), record.Compression(used)
}

func TestBatchesCompressedByOtherClientsDecode(t *testing.T) {
	recs := recordSets()["big"]
	section := recordsSection(t, recs)
	sections := map[string]compressedSection{}
	for name, codec := range map[string]kgo.CompressionCodec{
		"kgo gzip": kgo.GzipCompression(), "kgo snappy (raw)": kgo.SnappyCompression(),
		"kgo lz4": kgo.Lz4Compression(), "kgo zstd": kgo.ZstdCompression(),
	} {
		data, c := kgoCompressed(t, codec, section)
		sections[name] = compressedSection{c, data}
	}
	add := func(name string, c record.Compression, data []byte) {
		sections[name] = compressedSection{c, data}
	}
	add("xerial as sarama writes it", record.CompressionSnappy, xerial.Encode(nil, section))
	twoStreams := append(xerial.Encode(nil, section[:1000]), xerial.Encode(nil, section[1000:])...)
	add("two concatenated xerial streams", record.CompressionSnappy, twoStreams)
	lz4With := func(opts ...lz4.Option) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		require.NoError(t, w.Apply(opts...))
		_, err := w.Write(section)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	add("lz4 with block checksums", record.CompressionLz4, lz4With(lz4.BlockChecksumOption(true), lz4.BlockSizeOption(lz4.Block64Kb)))
	add("lz4 with a content size", record.CompressionLz4, lz4With(lz4.SizeOption(uint64(len(section)))))
	add("lz4 without checksums", record.CompressionLz4, lz4With(lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4.Block256Kb)))
	var zbuf bytes.Buffer
	zw, err := zstd.NewWriter(&zbuf, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	_, err = zw.Write(section)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	add("zstd streamed, no content size", record.CompressionZstd, zbuf.Bytes())
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	add("two zstd frames", record.CompressionZstd, zenc.EncodeAll(section[5000:], zenc.EncodeAll(section[:5000], nil)))

	for name, s := range sections {
		t.Run(name, func(t *testing.T) {
			b := withRecords(s.codec, len(recs), s.data)
			require.NoError(t, b.Validate())
			got, err := b.DecodeRecords()
			require.NoError(t, err)
			requireSameRecords(t, recs, got)
		})
	}
}

func TestFranzGoDecodesOurBatches(t *testing.T) {
	recs := recordSets()["big"]
	section := recordsSection(t, recs)
	dec := kgo.DefaultDecompressor()
	for _, c := range codecs[1:] {
		got, err := dec.Decompress(encodeWith(t, c, recs).Records(), kgo.CompressionCodecType(c))
		require.NoError(t, err, "%s", c)
		require.Equal(t, section, got, "%s", c)
	}
}

func TestXXH32MatchesTheReferenceVectors(t *testing.T) {
	require.Equal(t, uint32(0x02cc5d05), record.XXH32(nil))
	require.Equal(t, uint32(0x32d153ff), record.XXH32([]byte("abc")))
	// Kafka's lz4 frame header: FLG 0x60, BD 0x40, checksum 0x82.
	require.Equal(t, byte(0x82), byte(record.XXH32([]byte{0x60, 0x40})>>8))
}

// Kafka's lz4 reader takes independent blocks only; so do we.
func TestLz4DependentBlocksAreRefusedAsKafkaRefusesThem(t *testing.T) {
	l := bytes.Clone(encodeWith(t, record.CompressionLz4, recordSets()["one"]).Records())
	l[4] &^= 0x20
	l[6] = byte(record.XXH32(l[4:6]) >> 8)
	_, err := withRecords(record.CompressionLz4, 1, l).DecodeRecords()
	require.ErrorIs(t, err, record.ErrCorrupt)
	require.ErrorContains(t, err, "dependent blocks")
}

func TestTruncatedOrDamagedFramesFailCleanly(t *testing.T) {
	recs := recordSets()["nulls and headers"]
	for _, c := range codecs[1:] {
		section := encodeWith(t, c, recs).Records()
		for n := range len(section) {
			_, err := withRecords(c, len(recs), section[:n]).DecodeRecords()
			require.ErrorIs(t, err, record.ErrCorrupt, "%s cut to %d of %d bytes", c, n, len(section))
		}
		for i := range section {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				damaged := bytes.Clone(section)
				damaged[i] ^= flip
				got, err := withRecords(c, len(recs), damaged).DecodeRecords()
				if err != nil {
					require.ErrorIs(t, err, record.ErrCorrupt, "%s byte %d ^ %#x", c, i, flip)
					continue
				}
				require.Len(t, got, len(recs), "%s byte %d ^ %#x", c, i, flip)
			}
		}
	}
}

// allocatedBy reports the bytes fn allocates.
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A batch whose records inflate past DecompressedBytesMax is refused for
// every codec, having allocated little more than the bound.
func TestDecompressionBombsAreRefused(t *testing.T) {
	zeros := make([]byte, record.DecompressedBytesMax+1)
	bombs := map[string]compressedSection{}
	for _, c := range codecs[1:] {
		bombs[c.String()] = compressedSection{c, encodeWith(t, c, []record.Record{{Value: zeros}}).Records()}
	}
	raw, _ := kgoCompressed(t, kgo.SnappyCompression(), zeros)
	bombs["raw snappy"] = compressedSection{record.CompressionSnappy, raw}
	for name, bomb := range bombs {
		t.Run(name, func(t *testing.T) {
			require.Less(t, len(bomb.data), 1<<20)
			b := withRecords(bomb.codec, 1, bomb.data)
			var err error
			bytes := allocatedBy(func() { _, err = b.DecodeRecords() })
			require.ErrorIs(t, err, record.ErrCorrupt)
			require.ErrorContains(t, err, "past")
			t.Logf("%d compressed bytes refused after allocating %d", len(bomb.data), bytes)
			require.Less(t, bytes, uint64(5*record.DecompressedBytesMax/2), "allocated %d bytes", bytes)
		})
	}
}

// The bound is inclusive: records that decompress to exactly
// DecompressedBytesMax are fine.
func TestRecordsOfExactlyTheBoundDecompress(t *testing.T) {
	value := make([]byte, record.DecompressedBytesMax)
	recs := []record.Record{{Value: value}}
	over := len(recordsSection(t, recs)) - record.DecompressedBytesMax
	recs[0].Value = value[:len(value)-over]
	require.Len(t, recordsSection(t, recs), record.DecompressedBytesMax)
	for _, c := range codecs[1:] {
		got, err := encodeWith(t, c, recs).DecodeRecords()
		require.NoError(t, err, "%s", c)
		require.Len(t, got[0].Value, len(recs[0].Value))
	}
}

// Lengths inside a frame are claims: a small frame that claims a lot is
// refused, having allocated little.
func TestLyingLengthsDoNotDriveAllocations(t *testing.T) {
	xerialHeader := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	lying := binary.AppendUvarint(nil, 12<<20) // 12 MiB, claimed by 6 bytes
	lying = append(lying, 0, 'x')
	fourMiB := []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x70, 0} // BD: 4 MiB blocks
	fourMiB[6] = byte(record.XXH32(fourMiB[4:6]) >> 8)
	zstdFrame := func(contentSize uint64) []byte {
		// Single segment, 8-byte content size, then one truncated block.
		f := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
		f = binary.LittleEndian.AppendUint64(f, contentSize)
		return append(f, 0x05, 0x00, 0x00)
	}
	for name, tc := range map[string]struct {
		codec  record.Compression
		data   []byte
		budget uint64
	}{
		"raw snappy block":                 {record.CompressionSnappy, lying, 64 << 10},
		"xerial chunk":                     {record.CompressionSnappy, append(binary.BigEndian.AppendUint32(xerialHeader, uint32(len(lying))), lying...), 64 << 10},
		"xerial chunk length":              {record.CompressionSnappy, append(xerialHeader, 0x7f, 0xff, 0xff, 0xff, 1), 64 << 10},
		"lz4 4 MiB block":                  {record.CompressionLz4, append(fourMiB, 3, 0, 0, 0, 0xf0, 1, 2), 64 << 10},
		"lz4 block length":                 {record.CompressionLz4, append(fourMiB, 0xff, 0xff, 0x3f, 0, 1), 64 << 10},
		"zstd content size past the bound": {record.CompressionZstd, zstdFrame(1 << 40), 64 << 10},
		// zstd trusts a content size within the bound: see decompressZstd.
		"zstd content size within the bound": {record.CompressionZstd, zstdFrame(record.DecompressedBytesMax), record.DecompressedBytesMax + 1<<20},
	} {
		t.Run(name, func(t *testing.T) {
			b := withRecords(tc.codec, 1, tc.data)
			var err error
			n := allocatedBy(func() { _, err = b.DecodeRecords() })
			t.Logf("refused after allocating %d bytes: %v", n, err)
			require.ErrorIs(t, err, record.ErrCorrupt)
			require.Less(t, n, tc.budget, "allocated %d bytes", n)
		})
	}
}

// The simulator replays a seed to the same bytes: an encoding depends on
// nothing but its input, whatever was encoded before.
func TestEncodingDependsOnlyOnTheInput(t *testing.T) {
	sets := recordSets()
	for _, c := range codecs {
		first := encodeWith(t, c, sets["nulls and headers"])
		encodeWith(t, c, sets["big"])
		again := encodeWith(t, c, sets["nulls and headers"])
		require.Equal(t, first, again, "%s", c)
	}
	// The shared zstd encoder writes what a fresh one with the same
	// settings writes.
	fresh, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithZeroFrames(true))
	require.NoError(t, err)
	section := recordsSection(t, sets["big"])
	require.Equal(t, fresh.EncodeAll(section, nil), []byte(encodeWith(t, record.CompressionZstd, sets["big"]).Records()))
}

// broker/ runs on one event loop: the codecs must not start goroutines.
func TestCodecsStartNoGoroutines(t *testing.T) {
	// The codecs run inside a simulated world, which is single-threaded:
	// none may leave a goroutine behind (zstd's encoder does by default).
	// Counting runtime.NumGoroutine() flaked when another test's goroutine
	// ended meanwhile; the goroutine profile names whose code each runs.
	recs := recordSets()["big"]
	for _, c := range codecs {
		b := encodeWith(t, c, recs)
		_, err := b.DecodeRecords()
		require.NoError(t, err)
		var profile strings.Builder
		require.NoError(t, pprof.Lookup("goroutine").WriteTo(&profile, 1))
		for _, stack := range strings.Split(profile.String(), "\n\n") {
			if strings.Contains(stack, "TestCodecsStartNoGoroutines") {
				continue // this test's own goroutine
			}
			for _, pkg := range []string{"klauspost/compress", "pierrec/lz4", "golang/snappy", "kafkasim/broker/record."} {
				require.NotContains(t, stack, pkg, "%s left a goroutine running in %s", c, pkg)
			}
		}
	}
}
