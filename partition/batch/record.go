package batch

import (
	"iter"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record is one record of a batch (Kafka's DefaultRecord). Its slices alias
// the batch bytes (uncompressed) or a decompression buffer (compressed): they
// are valid only until the callback that received the Record returns.
type Record struct {
	// OffsetDelta is the record's offset minus the batch's base offset.
	OffsetDelta int32
	// TimestampDelta is the record's delta from the batch's BaseTimestamp.
	TimestampDelta int64
	// Timestamp is what a consumer sees: BaseTimestamp + TimestampDelta
	// for CreateTime, the batch's MaxTimestamp for LogAppendTime (Kafka's
	// DefaultRecord.readFrom with logAppendTime set).
	Timestamp int64
	// Attributes is the record attribute byte, unused by Kafka so far.
	Attributes int8
	// Key and Value are nil for a null key or value (length -1).
	Key, Value []byte
	// NumHeaders is the number of record headers.
	NumHeaders int
	// headers holds the encoded headers, already checked by the scanner.
	headers []byte
}

// Headers yields each record header's key and value (nil for a null value).
// The key is UTF-8 by contract; like Kafka, nothing checks it.
func (r Record) Headers() iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		b := r.headers
		for range r.NumHeaders {
			// The scanner validated this encoding, so the reads
			// cannot fail; stop quietly if they ever do.
			k, n := readBytes(b)
			if n <= 0 {
				return
			}
			b = b[n:]
			v, n := readBytes(b)
			if n <= 0 {
				return
			}
			b = b[n:]
			if !yield(k, v) {
				return
			}
		}
	}
}

// Minimum encoded size of a record: the length varint plus a body of
// attributes, timestamp delta, offset delta, key length, value length and
// header count, one byte each.
const minRecordSize = 7

// scanner walks the records area of a batch (the bytes after the header, or
// their decompressed form) without allocating. Kafka's checks are those of
// DefaultRecord.readFrom and DefaultRecordBatch.RecordIterator; they all fail
// with INVALID_RECORD (Kafka's InvalidRecordException).
type scanner struct {
	data  []byte
	pos   int
	index int32 // index of the next record
	count int32 // NumRecords of the batch

	baseTimestamp int64
	logAppendTime int64 // the batch's MaxTimestamp when LogAppendTime
	appendTime    bool

	// strictOffsets requires OffsetDelta == index (Validate). Kafka rewrites
	// such batches instead; kbroker cannot rewrite, so it refuses them.
	strictOffsets bool
}

func newScanner(data []byte, h *Header, strictOffsets bool) scanner {
	return scanner{
		data:          data,
		count:         h.NumRecords,
		baseTimestamp: h.BaseTimestamp,
		logAppendTime: h.MaxTimestamp,
		appendTime:    h.TimestampType() == LogAppendTime,
		strictOffsets: strictOffsets,
	}
}

// more reports whether records remain to be read.
func (s *scanner) more() bool { return s.index < s.count }

// next decodes the next record.
func (s *scanner) next() (Record, *Error) {
	i := int(s.index)
	rest := s.data[s.pos:]
	if len(rest) == 0 {
		return Record{}, newError(kerr.InvalidRecord, i, "batch declares %d records but its data ends after %d", s.count, i)
	}
	size, n := readVarint(rest)
	if n <= 0 {
		return Record{}, badVarint(i, "record length", n)
	}
	rest = rest[n:]
	if size < 0 || int(size) > len(rest) {
		return Record{}, newError(kerr.InvalidRecord, i, "record length %d but %d bytes remain", size, len(rest))
	}
	body := rest[:size]
	s.pos += n + int(size)
	s.index++

	var r Record
	p := 0
	if len(body) < 1 {
		return r, newError(kerr.InvalidRecord, i, "empty record")
	}
	r.Attributes = int8(body[0])
	p++

	tsDelta, n := readVarlong(body[p:])
	if n <= 0 {
		return r, badVarint(i, "timestamp delta", n)
	}
	p += n
	r.TimestampDelta = tsDelta
	if s.appendTime {
		r.Timestamp = s.logAppendTime
	} else {
		r.Timestamp = s.baseTimestamp + tsDelta // wraps like Java's long addition
	}

	offDelta, n := readVarint(body[p:])
	if n <= 0 {
		return r, badVarint(i, "offset delta", n)
	}
	p += n
	r.OffsetDelta = offDelta
	if s.strictOffsets && offDelta != int32(i) {
		return r, newError(kerr.InvalidRecord, i, "offset delta %d, want %d (inner offsets must be 0..n-1)", offDelta, i)
	}

	key, n := readBytes(body[p:])
	if n <= 0 {
		return r, badBytes(i, "key", n)
	}
	p += n
	r.Key = key

	value, n := readBytes(body[p:])
	if n <= 0 {
		return r, badBytes(i, "value", n)
	}
	p += n
	r.Value = value

	numHeaders, n := readVarint(body[p:])
	if n <= 0 {
		return r, badVarint(i, "header count", n)
	}
	p += n
	// Each header needs at least two bytes; this also bounds the loop.
	if numHeaders < 0 || int(numHeaders) > (len(body)-p)/2 {
		return r, newError(kerr.InvalidRecord, i, "header count %d with %d bytes left", numHeaders, len(body)-p)
	}
	hstart := p
	for h := range int(numHeaders) {
		klen, n := readVarint(body[p:])
		if n <= 0 {
			return r, badVarint(i, "header key length", n)
		}
		// Header keys are not nullable (Kafka's readHeaders).
		if klen < 0 || int(klen) > len(body)-p-n {
			return r, newError(kerr.InvalidRecord, i, "header %d key length %d with %d bytes left", h, klen, len(body)-p-n)
		}
		p += n + int(klen)
		_, n = readBytes(body[p:])
		if n <= 0 {
			return r, badBytes(i, "header value", n)
		}
		p += n
	}
	r.NumHeaders = int(numHeaders)
	r.headers = body[hstart:p]

	// Kafka: "Invalid record size: expected to read N bytes in record
	// payload, but instead read M".
	if p != len(body) {
		return r, newError(kerr.InvalidRecord, i, "record length %d but its fields take %d bytes", len(body), p)
	}
	return r, nil
}

// finish checks that no bytes follow the last record (Kafka's "Incorrect
// declared batch size, records still remaining in file").
func (s *scanner) finish() *Error {
	if s.pos != len(s.data) {
		return newError(kerr.InvalidRecord, -1, "%d bytes follow the last of %d records", len(s.data)-s.pos, s.count)
	}
	return nil
}

// Varint errors: n == 0 means the input ended, n < 0 that the varint was too
// long.
func badVarint(record int, field string, n int) *Error {
	if n == 0 {
		return newError(kerr.InvalidRecord, record, "%s: truncated varint", field)
	}
	return newError(kerr.InvalidRecord, record, "%s: varint too long", field)
}

func badBytes(record int, field string, n int) *Error {
	switch n {
	case 0:
		return newError(kerr.InvalidRecord, record, "%s: truncated", field)
	case errVarintTooLong:
		return newError(kerr.InvalidRecord, record, "%s: length varint too long", field)
	}
	return newError(kerr.InvalidRecord, record, "%s: invalid length", field)
}

const (
	errVarintTooLong = -1
	errBadLength     = -2
)

// readVarint decodes a zig-zag varint int32 as Kafka's ByteUtils.readVarint
// does: at most 5 bytes, and bits shifted past 32 are dropped, not refused.
// It returns the bytes used, 0 if b ends first, errVarintTooLong if a fifth
// byte still has the continuation bit.
func readVarint(b []byte) (int32, int) {
	var x uint32
	for i := range 5 {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), i + 1
		}
	}
	return 0, errVarintTooLong
}

// readVarlong decodes a zig-zag varint int64 as Kafka's ByteUtils.readVarlong
// does: at most 10 bytes.
func readVarlong(b []byte) (int64, int) {
	var x uint64
	for i := range 10 {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), i + 1
		}
	}
	return 0, errVarintTooLong
}

// readBytes decodes a varint length followed by that many bytes; length -1
// is null (nil). Kafka's Utils.readBytes reads any negative length as null;
// kbroker accepts only -1, the protocol's one encoding of null, so nothing
// it stores can trip a stricter consumer.
func readBytes(b []byte) ([]byte, int) {
	l, n := readVarint(b)
	if n <= 0 {
		return nil, n
	}
	if l == -1 {
		return nil, n
	}
	if l < -1 {
		return nil, errBadLength
	}
	if int(l) > len(b)-n {
		return nil, 0
	}
	return b[n : n+int(l) : n+int(l)], n + int(l)
}
