package record

import (
	"errors"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Kafka's zstd is standard zstd frames (zstd-jni), one or more, as the Java
// producer, franz-go and librdkafka write them.
//
// The decoder and encoder are shared by the process: building either
// allocates tables worth megabytes. Sharing them shares no state between
// worlds: DecodeAll and EncodeAll are stateless calls, safe for concurrent
// use (with concurrency 1, concurrent callers take turns), and each runs on
// its caller's goroutine and starts none; the streaming APIs, which can
// start goroutines, are not used. An encoding depends only on its input.
var zstdCodec = sync.OnceValues(func() (*zstd.Decoder, *zstd.Encoder) {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		// The decoder refuses a frame that declares more content than
		// this, or a window larger (the window is the most it keeps for
		// back-references), and stops a frame that outgrows it.
		zstd.WithDecoderMaxMemory(DecompressedBytesMax),
	)
	if err != nil {
		panic("record: zstd decoder: " + err.Error())
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderLevel(zstd.SpeedDefault), // zstd level 3, Kafka's default
		zstd.WithZeroFrames(true),                // no records still make a frame
	)
	if err != nil {
		panic("record: zstd encoder: " + err.Error())
	}
	return dec, enc
})

// decompressZstd decodes every frame. A frame that declares its content
// size gets that much room at once, so a batch lying about it costs one
// allocation of at most DecompressedBytesMax before it is refused: zstd can
// honestly expand tens of thousands of times, so the claim cannot be
// checked against the input's size as the other codecs' are. A frame that
// declares a window past DecompressedBytesMax is refused; Kafka's Java
// producer declares 2 MiB windows at its default level, 32 MiB and more at
// levels 20 and up.
func decompressZstd(data []byte) ([]byte, error) {
	dec, _ := zstdCodec()
	out, err := dec.DecodeAll(data, nil)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return nil, errorf(ErrCorrupt, "zstd: records decompress past %d bytes: %v", DecompressedBytesMax, err)
	case err != nil:
		return nil, errorf(ErrCorrupt, "zstd: %v", err)
	}
	return out, nil
}

func compressZstd(data []byte) []byte {
	_, enc := zstdCodec()
	return enc.EncodeAll(data, nil)
}
