package batch

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Reader iterates over the records of stored batches: ListOffsets looks for
// the first record with a timestamp ≥ T (Kafka's
// FileRecords.searchForTimestamp) and transactions read the markers of control
// batches. The zero value is ready to use and safe for concurrent use.
type Reader struct {
	// MaxDecompressedBytes bounds what a compressed batch may expand to.
	// 0 means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int
}

// Records calls fn for each record of the batch b, in order, until fn returns
// false. Uncompressed records are slices of b; a compressed batch is
// decompressed into a pooled buffer, so a Record's slices must not be kept
// after fn returns.
//
// b must hold one batch, as written to the log (a trailing partial batch,
// like the tail of a fetch, is ignored). Records does not verify the CRC and
// does not require offset deltas to be 0..n-1 (a compacted batch has gaps);
// it checks the record structure as Kafka's iterator does and returns an
// *Error unwrapping to kerr.CorruptMessage (broken framing) or
// kerr.InvalidRecord (broken records).
func (rd *Reader) Records(b []byte, fn func(r Record) bool) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Magic != MagicV2 {
		return newError(kerr.CorruptMessage, -1, "magic %d", h.Magic)
	}
	if h.Length < HeaderSize-LogOverhead || int64(h.Length) > int64(len(b)-LogOverhead) {
		return newError(kerr.CorruptMessage, -1, "batch length %d with %d bytes", h.Length, len(b))
	}
	if h.NumRecords < 0 {
		return newError(kerr.InvalidRecord, -1, "invalid record count %d", h.NumRecords)
	}
	data := b[RecordsOffset:h.Size()]
	if codec := h.Compression(); codec != CodecNone {
		if codec > CodecZstd {
			return newError(kerr.UnsupportedCompressionType, -1, "unknown compression codec %d", int8(codec))
		}
		limit := rd.MaxDecompressedBytes
		if limit <= 0 {
			limit = DefaultMaxDecompressedBytes
		}
		d := getDecompressor()
		defer putDecompressor(d)
		out, err := d.decompress(codec, data, limit, nil)
		if errors.Is(err, errTooLarge) {
			return newError(kerr.MessageTooLarge, -1, "%v batch decompresses to more than %d bytes", codec, limit)
		}
		if err != nil {
			return newError(kerr.InvalidRecord, -1, "cannot decompress %v: %v", codec, err)
		}
		data = out
	}
	s := newScanner(data, &h, false)
	for s.more() {
		r, err := s.next()
		if err != nil {
			return err
		}
		if !fn(r) {
			return nil
		}
	}
	if err := s.finish(); err != nil {
		return err
	}
	return nil
}

// Records calls fn for each record of the batch b with a zero Reader; see
// Reader.Records.
func Records(b []byte, fn func(r Record) bool) error {
	var rd Reader
	return rd.Records(b, fn)
}
