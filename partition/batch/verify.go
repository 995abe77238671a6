package batch

import (
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Verify checks a batch as stored rather than as produced: b must be exactly
// one intact v2 batch (framing and CRC), with a sane count and, when
// uncompressed, well-formed records. Unlike Validate it accepts what the
// leader itself writes or Stamp leaves behind (any BaseOffset, control
// batches, LogAppendTime) and what compaction leaves behind (fewer records
// than LastOffsetDelta+1, gaps in the offset deltas); it trusts compressed
// records to the CRC and never decompresses. It does not allocate on success.
//
// Uses: asserting that a stamped batch is still valid, checking bytes read
// back from the log in tests and tools.
func Verify(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Header{}, err
	}
	if h.Magic != MagicV2 {
		return Header{}, newError(kerr.CorruptMessage, -1, "magic %d", h.Magic)
	}
	if h.Length < HeaderSize-LogOverhead || int64(h.Length)+LogOverhead != int64(len(b)) {
		return Header{}, newError(kerr.CorruptMessage, -1, "batch length %d with %d bytes", h.Length, len(b))
	}
	if crc := crc32.Checksum(b[AttributesOffset:], castagnoli); crc != h.CRC {
		return Header{}, newError(kerr.CorruptMessage, -1, "crc mismatch: got %08x, want %08x", h.CRC, crc)
	}
	if c := h.Compression(); c > CodecZstd {
		return Header{}, newError(kerr.UnsupportedCompressionType, -1, "unknown compression codec %d", int8(c))
	}
	// A v2 batch emptied by compaction keeps its last offset delta
	// (STORAGE-REFERENCE.md §2.2), so only count ≤ delta+1 holds.
	if h.NumRecords < 0 || h.LastOffsetDelta < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
		return Header{}, newError(kerr.InvalidRecord, -1, "%d records with last offset delta %d", h.NumRecords, h.LastOffsetDelta)
	}
	if h.Compression() != CodecNone {
		return h, nil
	}
	data := b[RecordsOffset:]
	s := newScanner(data, &h, false)
	for s.more() {
		if _, err := s.next(); err != nil {
			return Header{}, err
		}
	}
	if err := s.finish(); err != nil {
		return Header{}, err
	}
	return h, nil
}
