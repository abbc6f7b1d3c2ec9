package record

// XXH32 is the LZ4 frame checksum, for tests that build frames by hand.
var XXH32 = xxh32
