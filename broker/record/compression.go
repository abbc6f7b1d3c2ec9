package record

import (
	"bytes"
	"compress/gzip"
	"io"
)

// Compression is a batch's codec, the low three attribute bits.
type Compression int8

// Kafka's codecs.
const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLz4    Compression = 3
	CompressionZstd   Compression = 4
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLz4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return "unknown"
}

// Supported reports whether this package can compress and decompress c:
// every codec Kafka defines. The attribute bits have room for 5, 6 and 7,
// which no Kafka version assigns.
func (c Compression) Supported() bool { return c >= CompressionNone && c <= CompressionZstd }

// DecompressedBytesMax bounds the decompressed size of one batch's records,
// so a small hostile batch cannot make the broker allocate gigabytes. It is
// Kafka's default message.max.bytes rounded up to a power of two, times 16.
const DecompressedBytesMax = 16 << 20

// decompress returns the records section of a batch compressed with c.
// Every codec stops at DecompressedBytesMax; what each allocates before
// finding out that the input lies is bounded in its file.
func decompress(c Compression, data []byte) ([]byte, error) {
	switch c {
	case CompressionGzip:
		return decompressGzip(data)
	case CompressionSnappy:
		return decompressSnappy(data)
	case CompressionLz4:
		return decompressLz4(data)
	case CompressionZstd:
		return decompressZstd(data)
	}
	return nil, errorf(ErrUnsupportedCompression, "codec %s (%d)", c, int8(c))
}

// compress returns data compressed with c, framed as Kafka's Java producer
// frames it.
func compress(c Compression, data []byte) ([]byte, error) {
	switch c {
	case CompressionGzip:
		return compressGzip(data), nil
	case CompressionSnappy:
		return compressSnappy(data), nil
	case CompressionLz4:
		return compressLz4(data), nil
	case CompressionZstd:
		return compressZstd(data), nil
	}
	return nil, errorf(ErrUnsupportedCompression, "codec %s (%d)", c, int8(c))
}

// grow returns out with room for n more bytes, at least doubling its
// capacity when it must grow, so a batch decompressed piece by piece is
// copied a few times rather than at every piece. Callers keep len(out)+n
// within DecompressedBytesMax, and so does grow.
func grow(out []byte, n int) []byte {
	if cap(out)-len(out) >= n {
		return out
	}
	c := max(min(2*cap(out), DecompressedBytesMax), len(out)+n)
	grown := make([]byte, len(out), c)
	copy(grown, out)
	return grown
}

// decompressGzip streams, so the output grows with what the stream really
// holds (deflate expands at most 1032 to 1).
func decompressGzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, errorf(ErrCorrupt, "gzip: %v", err)
	}
	var out []byte
	for {
		if len(out) == DecompressedBytesMax {
			var probe [1]byte
			n, err := io.ReadFull(zr, probe[:])
			if n > 0 {
				return nil, errorf(ErrCorrupt, "gzip: records decompress past %d bytes", DecompressedBytesMax)
			}
			if err != io.EOF {
				return nil, errorf(ErrCorrupt, "gzip: %v", err)
			}
			return out, nil
		}
		if len(out) == cap(out) {
			out = grow(out, min(max(len(out), 512), DecompressedBytesMax-len(out)))
		}
		n, err := zr.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, errorf(ErrCorrupt, "gzip: %v", err)
		}
	}
}

func compressGzip(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	// Writes to a bytes.Buffer cannot fail.
	_, _ = zw.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}
