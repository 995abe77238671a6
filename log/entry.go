package log

import (
	"encoding/binary"
	"hash/crc32"
)

// Entry framing constants. See doc.go for the diagram.
const (
	// EntryMagic marks a data entry ("KBE1").
	EntryMagic uint32 = 0x4b424531
	// BlankMagic marks the filler that closes a file when the next entry does
	// not fit in it ("KBBF", RocketMQ's BLANK_MAGIC_CODE).
	BlankMagic uint32 = 0x4b424246
	// entryFixedSize is total length + magic + CRC, before the key.
	entryFixedSize = 12
	// minBlank is the smallest filler: total length and magic. A file with
	// fewer bytes left than this simply ends (the tail stays zero).
	minBlank = 8
	// pageSize is the unit of the flush and commit thresholds (RocketMQ's
	// OS_PAGE_SIZE). It is 4 KiB on every platform we target.
	pageSize = 4096
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry is one stored entry. Key and Payload are views into the mapped file:
// they are valid only while the file is held (inside an Iterate callback, or
// between Hold and Release).
type Entry struct {
	Pos     int64  // global position of the entry's first header byte
	Size    int32  // whole entry, header included
	Key     []byte // the caller's fixed-size key
	Payload []byte // the caller's bytes, exactly as appended
}

// End is the global position just past the entry: what a writer waits on
// for durability and where the next entry starts.
func (e Entry) End() int64 { return e.Pos + int64(e.Size) }

// PayloadPos is the global position of the first payload byte.
func (e Entry) PayloadPos() int64 { return e.Pos + int64(e.Size) - int64(len(e.Payload)) }

// entryChecksum is the CRC-32C of key and payload; computing it needs no
// lock and no position, so Append does it before taking the put lock.
func entryChecksum(key, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, payload)
}

// putEntry writes a whole entry into dst, which is exactly its size.
func putEntry(dst []byte, crc uint32, key, payload []byte) {
	n := putHeader(dst, int64(len(dst)), crc, key)
	copy(dst[n:], payload)
}

// putHeader writes the header and key of an entry of size bytes into dst
// and returns how many bytes that took (where the payload goes).
func putHeader(dst []byte, size int64, crc uint32, key []byte) int {
	binary.BigEndian.PutUint32(dst[0:], uint32(size))
	binary.BigEndian.PutUint32(dst[4:], EntryMagic)
	binary.BigEndian.PutUint32(dst[8:], crc)
	return entryFixedSize + copy(dst[entryFixedSize:], key)
}

// putBlank writes the filler header into dst (len(dst) ≥ minBlank), whose
// length is everything left in the file.
func putBlank(dst []byte, left int) {
	binary.BigEndian.PutUint32(dst[0:], uint32(left))
	binary.BigEndian.PutUint32(dst[4:], BlankMagic)
}

// entryKind is what a scan found at a position.
type entryKind int

const (
	kindEntry   entryKind = iota // a valid entry
	kindBlank                    // a valid filler: continue in the next file
	kindEnd                      // too little room left for any entry: next file
	kindInvalid                  // zeros, garbage, a torn or mismatched entry
)

// reasonZeros is parseEntry's reason for the zeros after the last entry.
const reasonZeros = "no entry (zeros)"

// parseEntry decides what the bytes at the start of b hold. b is the rest of
// the file from the position. It never panics on any input.
func parseEntry(b []byte, keySize int) (kind entryKind, size int, reason string) {
	if len(b) < minBlank {
		return kindEnd, len(b), ""
	}
	total := binary.BigEndian.Uint32(b[0:])
	magic := binary.BigEndian.Uint32(b[4:])
	switch magic {
	case BlankMagic:
		if int64(total) != int64(len(b)) {
			return kindInvalid, 0, "filler length does not reach the end of the file"
		}
		return kindBlank, len(b), ""
	case EntryMagic:
	default:
		if total == 0 && magic == 0 {
			return kindInvalid, 0, reasonZeros
		}
		return kindInvalid, 0, "bad magic"
	}
	hdr := entryFixedSize + keySize
	if int64(total) < int64(hdr) || int64(total) > int64(len(b)) {
		return kindInvalid, 0, "entry length out of bounds"
	}
	want := binary.BigEndian.Uint32(b[8:])
	if got := crc32.Checksum(b[entryFixedSize:total], castagnoli); got != want {
		return kindInvalid, 0, "checksum mismatch"
	}
	return kindEntry, int(total), ""
}
