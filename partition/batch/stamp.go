package batch

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Stamp writes the leader's fields into the batch b in place, as Kafka's
// LogValidator does for an in-place append (assignOffsetsNonCompressed and
// the in-place branch of validateMessagesAndAssignOffsetsCompressed):
//
//   - BaseOffset = baseOffset (DefaultRecordBatch.setLastOffset writes the
//     base offset as lastOffset - lastOffsetDelta);
//   - PartitionLeaderEpoch = leaderEpoch (setPartitionLeaderEpoch).
//
// Both lie outside the CRC, so the CRC is left alone. When logAppendTime ≥ 0
// the topic uses LogAppendTime: like setMaxTimestamp(LOG_APPEND_TIME, now),
// Stamp sets the timestamp-type attribute bit and MaxTimestamp and recomputes
// the CRC. BaseTimestamp and the record deltas stay as the producer wrote
// them: consumers of a LogAppendTime batch take every record's timestamp from
// MaxTimestamp. Unlike Kafka, which rebuilds the attributes from the fields it
// knows, Stamp keeps the unused attribute bits.
//
// For CreateTime (logAppendTime < 0) MaxTimestamp is left as is; see
// SetMaxTimestamp. b must be one batch accepted by Validate, exactly
// Info.Size() bytes; Stamp does not allocate.
func Stamp(b []byte, baseOffset int64, leaderEpoch int32, logAppendTime int64) error {
	if err := checkStampable(b); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(b[BaseOffsetOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[PartitionLeaderEpochOffset:], uint32(leaderEpoch))
	if logAppendTime >= 0 {
		setMaxTimestamp(b, LogAppendTime, logAppendTime)
	}
	return nil
}

// SetMaxTimestamp writes maxTimestamp into a CreateTime batch's header and
// recomputes the CRC if it changed. Kafka corrects a producer's wrong
// MaxTimestamp with the maximum of the record timestamps it walked
// (setMaxTimestamp(CREATE_TIME, maxBatchTimestamp) in LogValidator); the
// partition does the same with Info.MaxRecordTimestamp when Info.Walked.
// It does not allocate.
func SetMaxTimestamp(b []byte, maxTimestamp int64) error {
	if err := checkStampable(b); err != nil {
		return err
	}
	setMaxTimestamp(b, CreateTime, maxTimestamp)
	return nil
}

// setMaxTimestamp mirrors DefaultRecordBatch.setMaxTimestamp: nothing to do
// when neither the type nor the timestamp changes, so the CRC is recomputed
// only when a covered byte moved.
func setMaxTimestamp(b []byte, tt TimestampType, ts int64) {
	attrs := binary.BigEndian.Uint16(b[AttributesOffset:])
	newAttrs := attrs &^ AttrTimestampType
	if tt == LogAppendTime {
		newAttrs |= AttrTimestampType
	}
	if attrs == newAttrs && int64(binary.BigEndian.Uint64(b[MaxTimestampOffset:])) == ts {
		return
	}
	binary.BigEndian.PutUint16(b[AttributesOffset:], newAttrs)
	binary.BigEndian.PutUint64(b[MaxTimestampOffset:], uint64(ts))
	binary.BigEndian.PutUint32(b[CRCOffset:], crc32.Checksum(b[AttributesOffset:], castagnoli))
}

// checkStampable guards the writes: b must be one whole v2 batch. Validate
// guarantees this, so a failure here is the caller's bug, but it comes back
// as an error rather than a panic or a write past the batch.
func checkStampable(b []byte) error {
	if len(b) < HeaderSize {
		return newError(kerr.CorruptMessage, -1, "stamp: %d bytes, header needs %d", len(b), HeaderSize)
	}
	if m := int8(b[MagicOffset]); m != MagicV2 {
		return newError(kerr.CorruptMessage, -1, "stamp: magic %d", m)
	}
	if n := int32(binary.BigEndian.Uint32(b[LengthOffset:])); int64(n)+LogOverhead != int64(len(b)) {
		return newError(kerr.CorruptMessage, -1, "stamp: batch length %d does not match %d bytes", n, len(b))
	}
	return nil
}

// ChecksumOK reports whether b's stored CRC matches its contents. b must be
// one whole batch (LogOverhead + Length bytes, at least HeaderSize).
func ChecksumOK(b []byte) bool {
	if len(b) < HeaderSize {
		return false
	}
	return binary.BigEndian.Uint32(b[CRCOffset:]) == crc32.Checksum(b[AttributesOffset:], castagnoli)
}
