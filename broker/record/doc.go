// Package record is Kafka's RecordBatch v2 (magic 2), byte for byte as Kafka
// lays it out, so that real Kafka clients and this broker read each other's
// batches.
//
// A batch on the wire and on disk:
//
//	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
//	magic int8 | crc uint32 | attributes int16 | lastOffsetDelta int32 |
//	firstTimestamp int64 | maxTimestamp int64 | producerId int64 |
//	producerEpoch int16 | baseSequence int32 | recordCount int32 | records
//
// The CRC-32C (Castagnoli) covers attributes through the end of the batch,
// so a broker can rewrite the base offset and the partition leader epoch in
// place without recomputing it.
//
// The contract:
//
//   - Batch is a view over encoded bytes. Its accessors read header fields
//     without decoding records and without allocating; they are valid on any
//     Batch returned by Parse, Next, Split or Encode (which guarantee at least
//     BatchHeaderSize bytes and a consistent length).
//   - Decoding never panics. It allocates no more than a small multiple of
//     its input, whatever the lengths inside claim; a compressed batch
//     decompresses to at most DecompressedBytesMax, and what it allocates on
//     the way follows what the input really holds (snappy expands at most
//     22 times, lz4 255, deflate 1032, and claims beyond that are refused
//     unallocated), except that a zstd frame stating its content size gets
//     that room at once, up to DecompressedBytesMax. Every failure is one of
//     the package's errors, each of which unwraps to the Kafka error code a
//     broker should answer with (errors.As to *kerr.Error).
//   - Compression: every codec Kafka defines, read as Kafka's broker reads
//     it and written as Kafka's Java producer writes it. gzip; snappy in
//     the xerial framing, and raw snappy on input (franz-go and librdkafka
//     send it); lz4 as one frame of independent blocks; zstd frames.
//     Attribute codecs 5 to 7 are refused with ErrUnsupportedCompression.
//     Header reads and CRC checks do not decompress.
//   - The codecs run on the caller's goroutine and start none; an encoding
//     depends only on its input.
//   - Control batches (transaction markers) are built by EncodeEndTxnMarker and
//     read back by Batch.EndTxnMarker; their layout is Kafka's: key = version
//     0 + type (0 abort, 1 commit), value = version 0 + coordinator epoch.
//
// The package is pure: no I/O, no clock, no randomness.
package record
