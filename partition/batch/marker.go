package batch

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Control record types of transaction markers, the int16 after the version
// in a control record's key (Kafka's ControlRecordType: ABORT 0, COMMIT 1;
// the KRaft types 2 and up never appear in a data partition).
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// Sizes of an end-transaction marker's record key (version int16, type
// int16) and value (version int16, coordinator epoch int32): Kafka's
// ControlRecordType.CURRENT_CONTROL_RECORD_KEY_SIZE and
// EndTransactionMarker.CURRENT_END_TXN_MARKER_VALUE_SIZE.
const (
	EndTxnMarkerKeySize   = 4
	EndTxnMarkerValueSize = 6
)

// EndTxnMarker is the content of an end-transaction marker: the single
// control record of a control batch that the partition leader appends when
// the transaction coordinator ends a transaction (Kafka's
// EndTransactionMarker). Producer id and epoch are the batch's.
type EndTxnMarker struct {
	// Commit is true for a COMMIT marker, false for an ABORT marker.
	Commit bool
	// CoordinatorEpoch fences markers from an older transaction
	// coordinator (TRANSACTION_COORDINATOR_FENCED).
	CoordinatorEpoch int32
}

// AppendEndTxnMarker appends to dst a control batch holding one
// end-transaction marker, as Kafka's MemoryRecords.withEndTransactionMarker
// builds it: attributes transactional and control, the producer's id and
// epoch, base sequence NoSequence, one record with timestamp delta 0 whose
// key is [version 0][type] and value [version 0][coordinator epoch].
// Base offset and leader epoch are left for Stamp.
func AppendEndTxnMarker(dst []byte, timestamp, producerID int64, producerEpoch int16, m EndTxnMarker) []byte {
	var key [EndTxnMarkerKeySize]byte
	var value [EndTxnMarkerValueSize]byte
	typ := ControlAbort
	if m.Commit {
		typ = ControlCommit
	}
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	records := [1]KeyValue{{Key: key[:], Value: value[:]}}
	return AppendBuild(dst, BuildOptions{
		Timestamp:     timestamp,
		Attributes:    AttrTransactional | AttrControl,
		ProducerID:    producerID,
		ProducerEpoch: producerEpoch,
	}, records[:])
}

// ParseEndTxnMarker decodes the end-transaction marker of the control batch
// at the start of b, as Kafka's EndTransactionMarker.deserialize reads the
// first record of a control batch: the key must be version 0 with type
// ABORT or COMMIT, the value at least 6 bytes with a non-negative version
// (a newer value version is read as version 0, as Kafka does). A batch that
// is not a control batch, has no record, or breaks those rules is an *Error
// unwrapping to kerr.CorruptMessage (framing) or kerr.InvalidRecord. It does
// not verify the CRC (the caller reads stored batches whose entry checksum
// it checked) and does not allocate on success.
func ParseEndTxnMarker(b []byte) (EndTxnMarker, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return EndTxnMarker{}, err
	}
	if h.Magic != MagicV2 {
		return EndTxnMarker{}, newError(kerr.CorruptMessage, -1, "magic %d", h.Magic)
	}
	if h.Length < HeaderSize-LogOverhead || int64(h.Length) > int64(len(b)-LogOverhead) {
		return EndTxnMarker{}, newError(kerr.CorruptMessage, -1, "batch length %d with %d bytes", h.Length, len(b))
	}
	if !h.IsControl() {
		return EndTxnMarker{}, newError(kerr.InvalidRecord, -1, "not a control batch (attributes %#x)", h.Attributes)
	}
	if h.Compression() != CodecNone {
		// Kafka writes markers uncompressed; a compressed control batch
		// is not one this broker wrote.
		return EndTxnMarker{}, newError(kerr.InvalidRecord, -1, "compressed control batch (%v)", h.Compression())
	}
	if h.NumRecords <= 0 {
		return EndTxnMarker{}, newError(kerr.InvalidRecord, -1, "control batch without records")
	}
	s := newScanner(b[RecordsOffset:h.Size()], &h, false)
	r, rerr := s.next()
	if rerr != nil {
		return EndTxnMarker{}, rerr
	}
	if len(r.Key) < EndTxnMarkerKeySize {
		return EndTxnMarker{}, newError(kerr.InvalidRecord, 0, "control record key of %d bytes", len(r.Key))
	}
	if v := int16(binary.BigEndian.Uint16(r.Key)); v != 0 {
		return EndTxnMarker{}, newError(kerr.InvalidRecord, 0, "control record key version %d", v)
	}
	var m EndTxnMarker
	switch typ := int16(binary.BigEndian.Uint16(r.Key[2:])); typ {
	case ControlAbort:
	case ControlCommit:
		m.Commit = true
	default:
		return EndTxnMarker{}, newError(kerr.InvalidRecord, 0, "control record type %d is not a transaction marker", typ)
	}
	if len(r.Value) < EndTxnMarkerValueSize {
		return EndTxnMarker{}, newError(kerr.InvalidRecord, 0, "end transaction marker value of %d bytes", len(r.Value))
	}
	if v := int16(binary.BigEndian.Uint16(r.Value)); v < 0 {
		return EndTxnMarker{}, newError(kerr.InvalidRecord, 0, "end transaction marker version %d", v)
	}
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	return m, nil
}
