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

// Supported reports whether this package can compress and decompress c.
func (c Compression) Supported() bool { return c == CompressionNone || c == CompressionGzip }

// DecompressedBytesMax bounds the decompressed size of one batch's records,
// so a small hostile batch cannot make the broker allocate gigabytes. It is
// Kafka's default message.max.bytes rounded up to a power of two, times 16.
const DecompressedBytesMax = 16 << 20

func decompress(c Compression, data []byte) ([]byte, error) {
	switch c {
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, errorf(ErrCorrupt, "gzip: %v", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, DecompressedBytesMax+1))
		if err != nil {
			return nil, errorf(ErrCorrupt, "gzip: %v", err)
		}
		if len(out) > DecompressedBytesMax {
			return nil, errorf(ErrCorrupt, "gzip: records decompress past %d bytes", DecompressedBytesMax)
		}
		return out, nil
	}
	return nil, errorf(ErrUnsupportedCompression, "codec %s (%d)", c, int8(c))
}

func compress(c Compression, data []byte) ([]byte, error) {
	switch c {
	case CompressionGzip:
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		// Writes to a bytes.Buffer cannot fail.
		_, _ = zw.Write(data)
		_ = zw.Close()
		return buf.Bytes(), nil
	}
	return nil, errorf(ErrUnsupportedCompression, "codec %s (%d)", c, int8(c))
}
