package record

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/snappy"
)

// Snappy comes in two framings, and Kafka's broker reads both
// (org.xerial.snappy.SnappyInputStream):
//
//   - xerial, which Kafka's Java producer writes: a 16-byte header (the magic
//     below, then version and minimum compatible version, big-endian int32s,
//     both 1), then chunks of a big-endian int32 length and a raw snappy
//     block, each block at most 32 KiB of input. A header may recur where a
//     chunk length is expected (concatenated streams).
//   - raw: one snappy block for the whole records section, which franz-go and
//     librdkafka write.
//
// A records section of at least 16 bytes that starts with the magic is
// xerial; anything else is raw, as SnappyInputStream decides. A chunk
// length can never look like the magic's first four bytes (they read as a
// negative int32), which is how a recurring header is told apart.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	// xerialBlockSize is SnappyOutputStream's default block size, the one
	// Kafka's producer uses.
	xerialBlockSize = 32 << 10
	// xerialVersion is what SnappyOutputStream writes, for the version and
	// the minimum compatible version alike; a reader refuses a lower one.
	xerialVersion = 1
	// snappyExpansionMax bounds how far a snappy block can expand: the best
	// a block can do is a 3-byte copy of 64 bytes. A block claiming more is
	// refused before anything is allocated for it.
	snappyExpansionMax = 22
)

func decompressSnappy(data []byte) ([]byte, error) {
	if len(data) >= xerialHeaderSize && bytes.HasPrefix(data, xerialMagic) {
		return decompressXerial(data)
	}
	n, err := snappyDecodedLen(data, -1, 0)
	if err != nil {
		return nil, err
	}
	return decodeSnappyBlock(make([]byte, 0, n), data, n, -1)
}

// decompressXerial reads a stream that starts with a header. A first pass
// checks the framing and adds up what the chunks claim, so the output is
// allocated once, and only for claims that hold up.
func decompressXerial(stream []byte) ([]byte, error) {
	total := 0
	err := xerialChunks(stream, func(chunk int, block []byte) error {
		n, err := snappyDecodedLen(block, chunk, total)
		total += n
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, total)
	err = xerialChunks(stream, func(chunk int, block []byte) error {
		n, _ := snappyDecodedLen(block, chunk, 0) // checked by the first pass
		var derr error
		out, derr = decodeSnappyBlock(out, block, n, chunk)
		return derr
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// xerialChunks calls fn with each chunk's raw snappy block.
func xerialChunks(stream []byte, fn func(chunk int, block []byte) error) error {
	for chunk := 0; len(stream) > 0; {
		if len(stream) < 4 {
			return errorf(ErrCorrupt, "snappy: %d bytes where chunk %d's length should be", len(stream), chunk)
		}
		if bytes.HasPrefix(stream, xerialMagic[:4]) {
			if len(stream) < xerialHeaderSize || !bytes.HasPrefix(stream, xerialMagic) {
				return errorf(ErrCorrupt, "snappy: broken xerial header before chunk %d", chunk)
			}
			if v := int32(binary.BigEndian.Uint32(stream[len(xerialMagic):])); v < xerialVersion {
				return errorf(ErrCorrupt, "snappy: xerial version %d", v)
			}
			stream = stream[xerialHeaderSize:]
			continue
		}
		size := int64(int32(binary.BigEndian.Uint32(stream)))
		stream = stream[4:]
		if size < 0 || size > int64(len(stream)) {
			return errorf(ErrCorrupt, "snappy: chunk %d of %d bytes, %d present", chunk, size, len(stream))
		}
		if err := fn(chunk, stream[:size]); err != nil {
			return err
		}
		stream = stream[size:]
		chunk++
	}
	return nil
}

// snappyDecodedLen is what a raw snappy block (xerial chunk number chunk,
// or -1 for raw snappy) claims to decompress to, refused if the block could
// not possibly hold that much or if it takes the records, decompressed so
// far to before, past DecompressedBytesMax.
func snappyDecodedLen(block []byte, chunk, before int) (int, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return 0, errorf(ErrCorrupt, "%s: %v", snappyWhat(chunk), err)
	}
	if int64(n) > snappyExpansionMax*int64(len(block)) {
		return 0, errorf(ErrCorrupt, "%s: %d bytes claim to decompress to %d", snappyWhat(chunk), len(block), n)
	}
	if before+n > DecompressedBytesMax {
		return 0, errorf(ErrCorrupt, "%s: records decompress past %d bytes", snappyWhat(chunk), DecompressedBytesMax)
	}
	return n, nil
}

// decodeSnappyBlock decodes a block of decoded length n onto out, which
// has the room.
func decodeSnappyBlock(out, block []byte, n, chunk int) ([]byte, error) {
	at := len(out)
	// DecodeStrict decodes in place when given the room, and refuses the
	// s2 extensions a Java (C++ snappy) reader would refuse.
	if _, err := snappy.DecodeStrict(out[at:at+n:at+n], block); err != nil {
		return nil, errorf(ErrCorrupt, "%s: %v", snappyWhat(chunk), err)
	}
	return out[:at+n], nil
}

func snappyWhat(chunk int) string {
	if chunk < 0 {
		return "snappy"
	}
	return fmt.Sprintf("snappy chunk %d", chunk)
}

// compressSnappy writes the xerial framing, as Kafka's Java producer does.
func compressSnappy(data []byte) []byte {
	out := make([]byte, 0, xerialHeaderSize+snappy.MaxEncodedLen(len(data))+4*(len(data)/xerialBlockSize+1))
	out = append(out, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, xerialVersion)
	out = binary.BigEndian.AppendUint32(out, xerialVersion)
	scratch := make([]byte, snappy.MaxEncodedLen(min(len(data), xerialBlockSize)))
	for len(data) > 0 {
		n := min(len(data), xerialBlockSize)
		block := snappy.Encode(scratch, data[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		data = data[n:]
	}
	return out
}
