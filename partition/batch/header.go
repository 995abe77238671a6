package batch

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Byte offsets of the RecordBatch v2 header fields, as in Kafka's
// DefaultRecordBatch (BASE_OFFSET_OFFSET ... RECORDS_OFFSET). All fields are
// big-endian.
const (
	BaseOffsetOffset           = 0  // int64, written by the leader (Stamp)
	LengthOffset               = 8  // int32, bytes after this field
	PartitionLeaderEpochOffset = 12 // int32, written by the leader (Stamp)
	MagicOffset                = 16 // int8, 2
	CRCOffset                  = 17 // uint32, CRC-32C of bytes AttributesOffset..end
	AttributesOffset           = 21 // int16, see the Attr* masks
	LastOffsetDeltaOffset      = 23 // int32
	BaseTimestampOffset        = 27 // int64
	MaxTimestampOffset         = 35 // int64
	ProducerIDOffset           = 43 // int64
	ProducerEpochOffset        = 51 // int16
	BaseSequenceOffset         = 53 // int32
	NumRecordsOffset           = 57 // int32
	RecordsOffset              = 61 // first record, or the compressed blob

	// HeaderSize is the size of the batch header (Kafka's
	// RECORD_BATCH_OVERHEAD): a batch is at least this long.
	HeaderSize = RecordsOffset

	// LogOverhead is the size of BaseOffset and Length (Kafka's
	// Records.LOG_OVERHEAD): a batch occupies LogOverhead + Length bytes.
	LogOverhead = 12

	// MagicV2 is the only batch format this package reads (Kafka's
	// RecordBatch.MAGIC_VALUE_V2).
	MagicV2 = 2
)

// Attribute bits of the int16 at AttributesOffset (Kafka's DefaultRecordBatch
// *_MASK constants). Bits 7–15 are unused.
const (
	AttrCompressionMask = 0x07 // Codec
	AttrTimestampType   = 0x08 // set: LogAppendTime, clear: CreateTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	AttrDeleteHorizon   = 0x40 // BaseTimestamp holds the compaction delete horizon (KIP-534)
)

// Sentinel values of the producer fields and timestamps (Kafka's
// RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP).
const (
	NoProducerID    = -1
	NoProducerEpoch = -1
	NoSequence      = -1
	NoTimestamp     = -1
)

// Codec is the compression codec of a batch, the low three attribute bits
// (Kafka's CompressionType ids).
type Codec int8

// Codecs Kafka defines. Ids 5–7 are unassigned and refused by Validate.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String returns Kafka's name of the codec (CompressionType.name).
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// TimestampType says what a batch's timestamps mean (Kafka's TimestampType).
type TimestampType int8

const (
	// CreateTime: record timestamps are BaseTimestamp + each record's
	// delta, as the producer set them.
	CreateTime TimestampType = 0
	// LogAppendTime: every record's timestamp is the batch's MaxTimestamp,
	// the broker's clock when the leader appended it.
	LogAppendTime TimestampType = 1
)

// String returns Kafka's name of the timestamp type.
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Header is the decoded 61-byte header of a RecordBatch v2 (Kafka's
// DefaultRecordBatch). Field names follow STORAGE-REFERENCE.md §2.2.
type Header struct {
	BaseOffset           int64
	Length               int32 // bytes after the Length field: the batch is LogOverhead+Length bytes
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ParseHeader decodes the header at the start of b. It only checks that b
// holds HeaderSize bytes: the magic, Length, CRC and every other rule are
// Validate's job. It does not allocate on success.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, newError(kerr.CorruptMessage, -1, "header needs %d bytes, have %d", HeaderSize, len(b))
	}
	_ = b[HeaderSize-1] // one bounds check for all reads below
	return Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[BaseOffsetOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[LengthOffset:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[PartitionLeaderEpochOffset:])),
		Magic:                int8(b[MagicOffset]),
		CRC:                  binary.BigEndian.Uint32(b[CRCOffset:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[AttributesOffset:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[LastOffsetDeltaOffset:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[BaseTimestampOffset:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[MaxTimestampOffset:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[ProducerIDOffset:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[ProducerEpochOffset:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[BaseSequenceOffset:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[NumRecordsOffset:])),
	}, nil
}

// Size is the number of bytes the batch occupies: LogOverhead + Length.
// Only meaningful for a header Validate accepted (Length ≥ 49).
func (h Header) Size() int { return LogOverhead + int(h.Length) }

// Compression returns the codec from the attributes.
func (h Header) Compression() Codec { return Codec(h.Attributes & AttrCompressionMask) }

// TimestampType returns CreateTime or LogAppendTime from the attributes.
func (h Header) TimestampType() TimestampType {
	if h.Attributes&AttrTimestampType != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports the transactional attribute bit.
func (h Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports the control attribute bit: the batch holds transaction
// markers (Kafka's ControlRecordType), written only by the leader.
func (h Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// HasDeleteHorizon reports the delete-horizon attribute bit (KIP-534): the
// log cleaner stores the tombstone deletion horizon in BaseTimestamp.
func (h Header) HasDeleteHorizon() bool { return h.Attributes&AttrDeleteHorizon != 0 }

// HasProducerID reports whether the batch carries a producer id (idempotent
// or transactional), Kafka's RecordBatch.hasProducerId: ProducerID > -1.
func (h Header) HasProducerID() bool { return h.ProducerID > NoProducerID }

// NextOffset returns the offset after the batch's last record when the batch
// starts at base: base + LastOffsetDelta + 1 (Kafka's nextOffset).
func (h Header) NextOffset(base int64) int64 { return base + int64(h.LastOffsetDelta) + 1 }

// LastSequence returns the sequence number of the batch's last record:
// BaseSequence + LastOffsetDelta, wrapping from math.MaxInt32 to 0 as Kafka's
// DefaultRecordBatch.incrementSequence does. It returns NoSequence for a batch
// without one.
func (h Header) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IncrementSequence adds increment to a producer sequence number, wrapping
// past math.MaxInt32 to 0 like Kafka's DefaultRecordBatch.incrementSequence
// (so MaxInt32 + 1 is 0). Both arguments are expected to be ≥ 0.
func IncrementSequence(sequence, increment int32) int32 {
	if sequence > math.MaxInt32-increment {
		return increment - (math.MaxInt32 - sequence) - 1
	}
	return sequence + increment
}
