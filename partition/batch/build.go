package batch

import (
	"encoding/binary"
	"hash/crc32"
)

// KeyValue is one record that the broker writes itself (group offsets,
// transaction markers). A nil Value is a null value: a tombstone.
type KeyValue struct {
	Key, Value []byte
}

// BuildOptions are the batch-level fields of a batch the broker writes.
type BuildOptions struct {
	// Timestamp is the CreateTime of every record and the batch's base and
	// max timestamp.
	Timestamp int64
	// Attributes is AttrTransactional and AttrControl for markers, 0
	// otherwise; a built batch is never compressed.
	Attributes int16
	// ProducerID and ProducerEpoch are NoProducerID and NoProducerEpoch
	// for a batch without a producer.
	ProducerID    int64
	ProducerEpoch int16
}

// AppendBuild appends an uncompressed RecordBatch v2 holding records to dst
// and returns the extended slice. Base offset and leader epoch are left for
// Stamp (the partition's append sets them); the sequence is NoSequence.
// records must not be empty.
func AppendBuild(dst []byte, o BuildOptions, records []KeyValue) []byte {
	start := len(dst)
	var hdr [HeaderSize]byte
	dst = append(dst, hdr[:]...)
	for i, r := range records {
		dst = appendRecord(dst, int32(i), r)
	}
	b := dst[start:]
	be := binary.BigEndian
	be.PutUint32(b[LengthOffset:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[PartitionLeaderEpochOffset:], 0xffffffff)
	b[MagicOffset] = MagicV2
	be.PutUint16(b[AttributesOffset:], uint16(o.Attributes))
	be.PutUint32(b[LastOffsetDeltaOffset:], uint32(len(records)-1))
	be.PutUint64(b[BaseTimestampOffset:], uint64(o.Timestamp))
	be.PutUint64(b[MaxTimestampOffset:], uint64(o.Timestamp))
	be.PutUint64(b[ProducerIDOffset:], uint64(o.ProducerID))
	be.PutUint16(b[ProducerEpochOffset:], uint16(o.ProducerEpoch))
	be.PutUint32(b[BaseSequenceOffset:], 0xffffffff) // NoSequence
	be.PutUint32(b[NumRecordsOffset:], uint32(len(records)))
	be.PutUint32(b[CRCOffset:], crc32.Checksum(b[AttributesOffset:], castagnoli))
	return dst
}

// appendRecord appends one record with timestamp delta 0 and no headers.
func appendRecord(dst []byte, offsetDelta int32, r KeyValue) []byte {
	size := 1 + 1 + varintLen(int64(offsetDelta)) + bytesLen(r.Key) + bytesLen(r.Value) + 1
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, 0) // attributes
	dst = append(dst, 0) // timestamp delta 0 as a varlong
	dst = binary.AppendVarint(dst, int64(offsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	return append(dst, 0) // no headers
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func bytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func varintLen(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}
