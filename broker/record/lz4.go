package record

import (
	"encoding/binary"
	"math/bits"

	"github.com/pierrec/lz4/v4"
)

// Kafka's lz4 is one LZ4 frame (lz4_Frame_format.md, v1.5.1) read and
// written by its own Lz4BlockInputStream and Lz4BlockOutputStream, which
// accept less than the format allows: one frame per records section, and
// only independent blocks. This file does the framing the same way and
// leaves the blocks to pierrec/lz4 (its block functions are plain calls; its
// frame Reader would also take dependent blocks, legacy and skippable
// frames, and allocates a whole block buffer up front).
//
// A frame: magic (uint32 LE) | FLG | BD | [content size, 8 bytes] | HC |
// blocks | end mark (uint32 0) | [content checksum]. Each block is a uint32
// LE size, whose top bit marks a block stored uncompressed, the data, and an
// optional block checksum. HC is the second byte of the xxHash32 of FLG
// through the content size.
const (
	lz4Magic = 0x184D2204

	lz4FlagVersion         = 1 << 6 // FLG bits 6-7: version 01
	lz4FlagIndependent     = 1 << 5 // blocks do not refer to earlier blocks
	lz4FlagBlockChecksum   = 1 << 4
	lz4FlagContentSize     = 1 << 3
	lz4FlagContentChecksum = 1 << 2
	lz4FlagReserved        = 0x03 // bit 0 (dictionary id) and bit 1: Kafka refuses both

	lz4BlockStored = 1 << 31 // a block's size word: the data is not compressed

	// lz4BlockSizeCode is what Kafka's producer writes in BD: 4, 64 KiB
	// blocks. Readers take 4 through 7 (64 KiB to 4 MiB).
	lz4BlockSizeCode = 4
	lz4BlockSize     = 1 << (2*lz4BlockSizeCode + 8)

	// lz4ExpansionMax bounds how far an LZ4 block can expand: a sequence's
	// match length grows by at most 255 per input byte. Room for a block's
	// output is never more than this many times its size.
	lz4ExpansionMax = 255
)

func decompressLz4(data []byte) ([]byte, error) {
	if len(data) < 7 {
		return nil, errorf(ErrCorrupt, "lz4: %d bytes, a frame header needs 7", len(data))
	}
	if m := binary.LittleEndian.Uint32(data); m != lz4Magic {
		return nil, errorf(ErrCorrupt, "lz4: magic %08x", m)
	}
	flg, bd := data[4], data[5]
	switch {
	case flg&lz4FlagReserved != 0:
		return nil, errorf(ErrCorrupt, "lz4: reserved FLG bits %#x", flg&lz4FlagReserved)
	case flg>>6 != 1:
		return nil, errorf(ErrCorrupt, "lz4: frame version %d", flg>>6)
	case flg&lz4FlagIndependent == 0:
		// Kafka's reader decompresses each block alone.
		return nil, errorf(ErrCorrupt, "lz4: dependent blocks")
	case bd&0x8f != 0:
		return nil, errorf(ErrCorrupt, "lz4: reserved BD bits %#x", bd&0x8f)
	case bd>>4 < 4:
		return nil, errorf(ErrCorrupt, "lz4: block size code %d", bd>>4)
	}
	blockMax := 1 << (2*int(bd>>4) + 8)
	descriptor := data[4:6]
	if flg&lz4FlagContentSize != 0 {
		// Kafka skips the content size without checking it; so does this.
		if len(data) < 15 {
			return nil, errorf(ErrCorrupt, "lz4: %d bytes, a frame header with a content size needs 15", len(data))
		}
		descriptor = data[4:14]
	}
	rest := data[4+len(descriptor):]
	if hc := byte(xxh32(descriptor) >> 8); rest[0] != hc {
		return nil, errorf(ErrCorrupt, "lz4: header checksum %02x, computed %02x", rest[0], hc)
	}
	rest = rest[1:]

	var out []byte
	for i := 0; ; i++ {
		if len(rest) < 4 {
			return nil, errorf(ErrCorrupt, "lz4: frame ends before block %d or the end mark", i)
		}
		word := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		size := int(word &^ lz4BlockStored)
		if size == 0 {
			break // the end mark (Kafka takes it with the stored bit too)
		}
		if size > blockMax {
			return nil, errorf(ErrCorrupt, "lz4: block %d of %d bytes, frame blocks are at most %d", i, size, blockMax)
		}
		need := size
		if flg&lz4FlagBlockChecksum != 0 {
			need += 4
		}
		if len(rest) < need {
			return nil, errorf(ErrCorrupt, "lz4: block %d of %d bytes, %d present", i, need, len(rest))
		}
		block := rest[:size]
		if flg&lz4FlagBlockChecksum != 0 {
			if got, want := xxh32(block), binary.LittleEndian.Uint32(rest[size:]); got != want {
				return nil, errorf(ErrCorrupt, "lz4: block %d checksum %08x, computed %08x", i, want, got)
			}
		}
		rest = rest[need:]
		if word&lz4BlockStored != 0 {
			if len(out)+size > DecompressedBytesMax {
				return nil, errorf(ErrCorrupt, "lz4: records decompress past %d bytes", DecompressedBytesMax)
			}
			out = append(grow(out, size), block...)
			continue
		}
		room := min(blockMax, lz4ExpansionMax*size)
		left := DecompressedBytesMax - len(out)
		pastMax := room > left
		room = min(room, left)
		out = grow(out, room)
		at := len(out)
		n, err := lz4.UncompressBlock(block, out[at:at+room:at+room])
		if err != nil && pastMax {
			return nil, errorf(ErrCorrupt, "lz4: block %d is corrupt or decompresses past %d bytes", i, DecompressedBytesMax)
		}
		if err != nil {
			return nil, errorf(ErrCorrupt, "lz4: block %d: %v", i, err)
		}
		out = out[:at+n]
	}
	if flg&lz4FlagContentChecksum != 0 {
		if len(rest) < 4 {
			return nil, errorf(ErrCorrupt, "lz4: frame ends before its content checksum")
		}
		if got, want := xxh32(out), binary.LittleEndian.Uint32(rest); got != want {
			return nil, errorf(ErrCorrupt, "lz4: content checksum %08x, computed %08x", want, got)
		}
	}
	// Kafka's reader stops at the end of the frame; so does this, leaving
	// whatever follows unread.
	return out, nil
}

// compressLz4 writes what Kafka's Lz4BlockOutputStream writes: 64 KiB
// independent blocks, each stored uncompressed if compressing does not make
// it smaller, no checksums but the header's, and no content size.
func compressLz4(data []byte) []byte {
	blocks := len(data)/lz4BlockSize + 1
	out := make([]byte, 0, 7+len(data)+len(data)/lz4ExpansionMax+4*blocks+4)
	out = binary.LittleEndian.AppendUint32(out, lz4Magic)
	out = append(out, lz4FlagVersion|lz4FlagIndependent, lz4BlockSizeCode<<4)
	out = append(out, byte(xxh32(out[4:6])>>8))
	var c lz4.Compressor
	scratch := make([]byte, lz4.CompressBlockBound(min(len(data), lz4BlockSize)))
	for len(data) > 0 {
		block := data[:min(len(data), lz4BlockSize)]
		data = data[len(block):]
		n, err := c.CompressBlock(block, scratch)
		if err != nil || n == 0 || n >= len(block) {
			out = binary.LittleEndian.AppendUint32(out, uint32(len(block))|lz4BlockStored)
			out = append(out, block...)
			continue
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(n))
		out = append(out, scratch[:n]...)
	}
	return binary.LittleEndian.AppendUint32(out, 0)
}

// xxHash32 with seed 0, the checksum of LZ4 frames.
const (
	xxhPrime1 uint32 = 2654435761
	xxhPrime2 uint32 = 2246822519
	xxhPrime3 uint32 = 3266489917
	xxhPrime4 uint32 = 668265263
	xxhPrime5 uint32 = 374761393
)

func xxh32(b []byte) uint32 {
	n := uint32(len(b))
	var h uint32
	if len(b) >= 16 {
		p1, p2 := xxhPrime1, xxhPrime2 // variables: the seeds wrap around
		v1 := p1 + p2
		v2 := p2
		v3 := uint32(0)
		v4 := -p1
		for ; len(b) >= 16; b = b[16:] {
			v1 = xxhRound(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = xxhRound(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = xxhRound(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = xxhRound(v4, binary.LittleEndian.Uint32(b[12:]))
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = xxhPrime5
	}
	h += n
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * xxhPrime3
		h = bits.RotateLeft32(h, 17) * xxhPrime4
	}
	for _, c := range b {
		h += uint32(c) * xxhPrime5
		h = bits.RotateLeft32(h, 11) * xxhPrime1
	}
	h ^= h >> 15
	h *= xxhPrime2
	h ^= h >> 13
	h *= xxhPrime3
	h ^= h >> 16
	return h
}

func xxhRound(acc, in uint32) uint32 {
	return bits.RotateLeft32(acc+in*xxhPrime2, 13) * xxhPrime1
}
