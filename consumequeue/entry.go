package consumequeue

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
)

// EntrySize is the size in bytes of one consume-queue entry; the layout is
// drawn in the package documentation. Pre-allocated files hold zeros and
// an all-zero entry never passes its checksum, so the first invalid entry
// marks the end of the data.
const EntrySize = 40

// Field offsets inside an entry.
const (
	offPos      = 0
	offBase     = 8
	offMaxTime  = 16
	offSize     = 24
	offDelta    = 28
	offAttrs    = 32
	offReserved = 34
	offCRC      = 36
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry is one decoded consume-queue entry: where one record batch lives
// in the commit log and which offsets and times it covers.
type Entry struct {
	Pos               int64 // commit-log position of the batch bytes
	BaseOffset        int64
	MaxTimestampSoFar int64 // running maximum of the batches' MaxTimestamp up to this one
	Size              int32 // batch length in bytes
	LastOffsetDelta   int32
	Attributes        int16 // the batch's attributes (compression, timestamp type, transactional, control)
}

// NextOffset is the offset after the batch's last record.
func (e Entry) NextOffset() int64 { return e.BaseOffset + int64(e.LastOffsetDelta) + 1 }

// LastOffset is the offset of the batch's last record.
func (e Entry) LastOffset() int64 { return e.BaseOffset + int64(e.LastOffsetDelta) }

// End is the commit-log position just past the batch bytes.
func (e Entry) End() int64 { return e.Pos + int64(e.Size) }

// encode writes e into b[:EntrySize] with its checksum.
func encode(b []byte, e Entry) {
	b = b[:EntrySize]
	be := binary.BigEndian
	be.PutUint64(b[offPos:], uint64(e.Pos))
	be.PutUint64(b[offBase:], uint64(e.BaseOffset))
	be.PutUint64(b[offMaxTime:], uint64(e.MaxTimestampSoFar))
	be.PutUint32(b[offSize:], uint32(e.Size))
	be.PutUint32(b[offDelta:], uint32(e.LastOffsetDelta))
	be.PutUint16(b[offAttrs:], uint16(e.Attributes))
	be.PutUint16(b[offReserved:], 0)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[:offCRC], castagnoli))
}

// decode decodes and verifies b[:EntrySize]. Readers verify every entry
// they hand out, so bytes that a concurrent truncation is zeroing, or that
// a torn write left behind, are never mistaken for a batch.
func decode(b []byte) (Entry, bool) {
	var e Entry
	ok := decodeInto(b, &e)
	return e, ok
}

// decodeInto is decode writing into *e, which spares the copies of
// returning the entry on the hot path of Read.
//
// b may be a file's mapping that a truncation is rewriting at this moment:
// checked in place and then decoded, its bytes could change between the
// checksum and the fields (a torn entry passed its checksum under -race).
// So the entry is copied out first, the checksum is taken over the
// mapping (taking it over the copy would move the copy to the heap), and
// the mapping must still hold the copy's bytes afterwards: a rewrite in
// between either changes them or gives a checksum that does not match.
func decodeInto(b []byte, e *Entry) bool {
	b = b[:EntrySize]
	var c [EntrySize]byte
	copy(c[:], b)
	if binary.BigEndian.Uint32(c[offCRC:]) != crc32.Checksum(b[:offCRC], castagnoli) || !bytes.Equal(b, c[:]) {
		return false
	}
	be := binary.BigEndian
	e.Pos = int64(be.Uint64(c[offPos:]))
	e.BaseOffset = int64(be.Uint64(c[offBase:]))
	e.MaxTimestampSoFar = int64(be.Uint64(c[offMaxTime:]))
	e.Size = int32(be.Uint32(c[offSize:]))
	e.LastOffsetDelta = int32(be.Uint32(c[offDelta:]))
	e.Attributes = int16(be.Uint16(c[offAttrs:]))
	return sane(e)
}

// sane reports whether e could have been written by Append; it keeps a
// garbage entry that happens to pass its checksum from breaking the
// ordering the searches rely on.
func sane(e *Entry) bool {
	return e.Pos >= 0 && e.Size > 0 && e.BaseOffset >= 0 && e.LastOffsetDelta >= 0 &&
		e.BaseOffset <= math.MaxInt64-int64(e.LastOffsetDelta)-1
}
