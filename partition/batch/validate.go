package batch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DefaultMaxMessageBytes is Kafka's default max.message.bytes, 1 MiB plus
// the 12-byte log overhead (LogConfig.DEFAULT_MAX_MESSAGE_BYTES).
const DefaultMaxMessageBytes = 1048588

// castagnoli is the CRC-32C table; crc32 uses the SSE4.2/ARMv8 instruction
// when the CPU has it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ValidateOptions are the topic's settings and request facts that Validate's
// rules depend on. The zero value validates like a default Kafka topic.
type ValidateOptions struct {
	// MaxMessageBytes is the topic's max.message.bytes: the largest
	// batch, LogOverhead included. 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int

	// ProduceVersion is the Produce request version. Versions 3–6 may not
	// carry zstd (Kafka's ProduceRequest.validateRecords). 0 skips the rule.
	ProduceVersion int16

	// FullValidation decompresses compressed batches and checks every
	// record as for uncompressed ones. Off, a compressed batch is trusted
	// to its CRC (see doc.go: Kafka always decompresses).
	FullValidation bool

	// MaxDecompressedBytes bounds what a compressed batch may expand to
	// when it is decompressed. 0 means max(DefaultMaxDecompressedBytes,
	// 16 × MaxMessageBytes), capped at 1 GiB.
	MaxDecompressedBytes int

	// DecompressBudget, when set, is what the whole Produce request may
	// still decompress, shared by its batches: each decompression is
	// bounded by it as well and lowers it by the output it produced,
	// refused output included. MaxDecompressedBytes bounds one batch, but
	// a request may hold many (one per partition): without a shared bound
	// a 2 MiB request of hundreds of few-KiB zstd bombs costs the broker
	// hundreds of bounded decompressions, minutes of one connection's CPU.
	// A batch past what is left is MESSAGE_TOO_LARGE. Nil is no bound.
	DecompressBudget *int64

	// Stop, when closed, makes a decompression of more than 1 MiB (one
	// that waits for or holds the slot of large decompressions) give up:
	// the batch is NOT_LEADER_OR_FOLLOWER, retriable, as a partition of a
	// broker that is shutting down answers. Nil never stops. The broker
	// closes it at Shutdown, so that bombs queued behind one another do
	// not hold the process.
	Stop <-chan struct{}

	// RequireKeys refuses records without a key, as Kafka does for topics
	// with cleanup.policy=compact (LogValidator.validateKey). It forces
	// decompression of compressed batches.
	RequireKeys bool

	// CheckTimestamps enables the CreateTime range rule of
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms
	// (LogValidator.validateTimestamp): a record timestamp t other than -1
	// must satisfy Now-t ≤ TimestampBeforeMaxMs and t-Now ≤
	// TimestampAfterMaxMs. Leave it off for LogAppendTime topics and for
	// Kafka's defaults (Long.MAX_VALUE, no limit). It forces decompression
	// of compressed batches.
	CheckTimestamps      bool
	Now                  int64 // milliseconds since the epoch
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
}

func (o *ValidateOptions) maxMessageBytes() int {
	if o.MaxMessageBytes > 0 {
		return o.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

func (o *ValidateOptions) maxDecompressedBytes() int {
	if o.MaxDecompressedBytes > 0 {
		return o.MaxDecompressedBytes
	}
	return defaultDecompressBound(o.maxMessageBytes())
}

func defaultDecompressBound(maxMessageBytes int) int {
	n := int64(maxMessageBytes) * 16
	return int(min(max(n, DefaultMaxDecompressedBytes), maxDecompressedCap))
}

// Info is what Validate reports about a batch it accepted.
type Info struct {
	Header

	// Walked reports that the records were decoded and checked: always for
	// uncompressed batches, for compressed ones only when decompressed.
	Walked bool

	// MaxRecordTimestamp is the largest record timestamp, starting from
	// NoTimestamp, as Kafka's LogValidator computes maxBatchTimestamp. When
	// it differs from Header.MaxTimestamp on a CreateTime topic, Kafka
	// rewrites the header (setMaxTimestamp); call SetMaxTimestamp to do
	// the same. Without a walk it is Header.MaxTimestamp.
	MaxRecordTimestamp int64

	// MaxTimestampOffsetDelta is the offset delta of the first record
	// carrying MaxRecordTimestamp (Kafka's offsetOfMaxTimestamp, used by
	// ListOffsets MAX_TIMESTAMP, KIP-734), or -1 if no record has a
	// timestamp above NoTimestamp. Without a walk it is LastOffsetDelta,
	// like Kafka's shallow analyzeAndValidateRecords.
	MaxTimestampOffsetDelta int32
}

// Validate checks records, the Records field of one partition of a Produce
// request (v3+), as the partition leader must before appending it: exactly
// one RecordBatch v2, intact, within the size limit, with a consistent header
// and, where walked, well-formed records. The rules and the Kafka error code
// each returns are listed in doc.go. Errors are *Error values unwrapping to a
// kerr code.
//
// On success records is exactly one batch, Info.Size() bytes long. Validate
// does not modify records and, for uncompressed batches, does not allocate.
func Validate(records []byte, opts ValidateOptions) (Info, error) {
	h, err := checkFraming(records, &opts)
	if err != nil {
		return Info{}, err
	}
	if err := checkHeader(&h); err != nil {
		return Info{}, err
	}

	info := Info{Header: h, MaxRecordTimestamp: h.MaxTimestamp, MaxTimestampOffsetDelta: h.LastOffsetDelta}
	codec := h.Compression()
	data := records[RecordsOffset:h.Size()]
	limit := opts.maxDecompressedBytes()

	if codec != CodecNone {
		// Sanity bound that needs no decompression: every record takes
		// at least minRecordSize bytes once decompressed.
		if int64(h.NumRecords)*minRecordSize > int64(limit) {
			return Info{}, newError(kerr.InvalidRecord, -1, "%d records cannot fit in %d decompressed bytes", h.NumRecords, limit)
		}
		if !opts.FullValidation && !opts.RequireKeys && !opts.CheckTimestamps {
			return info, nil
		}
		budgeted := false
		if opts.DecompressBudget != nil && *opts.DecompressBudget < int64(limit) {
			limit, budgeted = int(max(*opts.DecompressBudget, 0)), true
			if int64(h.NumRecords)*minRecordSize > int64(limit) {
				return Info{}, newError(kerr.MessageTooLarge, -1, "%v batch: %d bytes left of the request's decompression budget", codec, limit)
			}
		}
		d := getDecompressor()
		defer putDecompressor(d)
		out, err := d.decompress(codec, data, limit, opts.Stop)
		if opts.DecompressBudget != nil {
			// The byte past the bound that readAll reads is not charged.
			*opts.DecompressBudget = max(*opts.DecompressBudget-int64(d.spent), 0)
		}
		if errors.Is(err, errTooLarge) {
			if budgeted {
				return Info{}, newError(kerr.MessageTooLarge, -1, "%v batch decompresses to more than the %d bytes left of the request's decompression budget", codec, limit)
			}
			return Info{}, newError(kerr.MessageTooLarge, -1, "%v batch decompresses to more than %d bytes", codec, limit)
		}
		if errors.Is(err, errStopped) {
			return Info{}, newError(kerr.NotLeaderForPartition, -1, "%v batch: %v", codec, err)
		}
		if err != nil {
			// Kafka surfaces a codec failure as an unexpected
			// KafkaException (UNKNOWN_SERVER_ERROR). The CRC matched, so
			// the producer sent these bytes on purpose: a retry cannot
			// help, hence the non-retriable INVALID_RECORD.
			return Info{}, newError(kerr.InvalidRecord, -1, "cannot decompress %v: %v", codec, err)
		}
		data = out
	}

	if maxTs, maxDelta, ok := walkFast(data, &info.Header, &opts); ok {
		info.Walked = true
		info.MaxRecordTimestamp = maxTs
		info.MaxTimestampOffsetDelta = maxDelta
		return info, nil
	}
	// Something is wrong with the records: the slow walk finds the fault
	// Kafka reports first, with its code and record index.
	if err := walk(data, &info, &opts); err != nil {
		return Info{}, err
	}
	return info, nil
}

// checkFraming applies the rules that locate the one batch in records, in
// Kafka's order: ByteBufferLogInputStream.nextBatchSize/nextBatch,
// ProduceRequest.validateRecords, then UnifiedLog.analyzeAndValidateRecords
// (base offset, size, CRC).
func checkFraming(records []byte, opts *ValidateOptions) (Header, error) {
	// Fewer bytes than a batch's BaseOffset and Length: Kafka's stream
	// yields no batch, and validateRecords says "must have at least one
	// record batch" (InvalidRecordException).
	if len(records) < LogOverhead {
		return Header{}, newError(kerr.InvalidRecord, -1, "no record batch: %d bytes", len(records))
	}
	length := int32(binary.BigEndian.Uint32(records[LengthOffset:]))
	// nextBatchSize: "Record size is less than the minimum record
	// overhead" (14, LegacyRecord.RECORD_OVERHEAD_V0), CorruptRecordException.
	if length < 14 {
		return Header{}, newError(kerr.CorruptMessage, -1, "batch length %d is below the minimum of 14", length)
	}
	if len(records) <= MagicOffset {
		return Header{}, newError(kerr.InvalidRecord, -1, "no complete record batch: %d bytes", len(records))
	}
	// nextBatchSize: "Invalid magic found in record", CorruptRecordException.
	magic := int8(records[MagicOffset])
	if magic < 0 || magic > MagicV2 {
		return Header{}, newError(kerr.CorruptMessage, -1, "invalid magic %d", magic)
	}
	// nextBatch returns null for a batch longer than the bytes left, so
	// Kafka again finds no batch at all.
	if int64(length) > int64(len(records)-LogOverhead) {
		return Header{}, newError(kerr.InvalidRecord, -1, "no complete record batch: length %d but %d bytes follow it", length, len(records)-LogOverhead)
	}
	// validateRecords: "Produce requests with version N are only allowed
	// to contain record batches with magic version 2". It throws
	// InvalidRecordException, so Kafka (3.x, 4.0 trunk) answers
	// INVALID_RECORD, not UNSUPPORTED_FOR_MESSAGE_FORMAT (that one is for
	// transactional or idempotent batches on a message format below v2).
	if magic != MagicV2 {
		return Header{}, newError(kerr.InvalidRecord, -1, "magic %d: produce v3+ allows only magic 2", magic)
	}
	// DefaultRecordBatch.isValid requires sizeInBytes ≥
	// RECORD_BATCH_OVERHEAD; Kafka reports the failure as
	// CorruptRecordException.
	if length < HeaderSize-LogOverhead {
		return Header{}, newError(kerr.CorruptMessage, -1, "batch length %d is shorter than the %d-byte header", length, HeaderSize-LogOverhead)
	}
	h, err := ParseHeader(records)
	if err != nil {
		return Header{}, err
	}
	// validateRecords: zstd needs produce v7+ (KIP-110),
	// UnsupportedCompressionTypeException.
	if h.Compression() == CodecZstd && opts.ProduceVersion > 0 && opts.ProduceVersion < 7 {
		return Header{}, newError(kerr.UnsupportedCompressionType, -1, "zstd needs produce v7+, request is v%d", opts.ProduceVersion)
	}
	// validateRecords: "only allowed to contain exactly one record batch
	// per partition", InvalidRecordException. Kafka silently drops a
	// trailing partial batch; kbroker refuses any trailing byte so that
	// what it stores is exactly what it validated.
	if extra := len(records) - h.Size(); extra > 0 {
		return Header{}, newError(kerr.InvalidRecord, -1, "%d bytes follow the batch: one batch per partition", extra)
	}
	// analyzeAndValidateRecords: client v2 batches must have BaseOffset 0.
	if h.BaseOffset != 0 {
		return Header{}, logError(kerr.InvalidRecord, "base offset %d, want 0", h.BaseOffset)
	}
	// analyzeAndValidateRecords: RecordTooLargeException.
	if limit := opts.maxMessageBytes(); h.Size() > limit {
		return Header{}, newError(kerr.MessageTooLarge, -1, "batch of %d bytes exceeds max.message.bytes %d", h.Size(), limit)
	}
	// analyzeAndValidateRecords: "Record is corrupt (stored crc = ...)",
	// CorruptRecordException.
	if crc := crc32.Checksum(records[AttributesOffset:h.Size()], castagnoli); crc != h.CRC {
		return Header{}, newError(kerr.CorruptMessage, -1, "crc mismatch: got %08x, want %08x", h.CRC, crc)
	}
	return h, nil
}

// checkHeader applies the header rules of LogValidator.validateBatch for
// client appends, then kbroker's own.
func checkHeader(h *Header) error {
	// Codecs 5–7: Kafka's CompressionType.forId throws
	// IllegalArgumentException, which reaches the client as
	// UNKNOWN_SERVER_ERROR. UNSUPPORTED_COMPRESSION_TYPE says what is wrong.
	if c := h.Compression(); c > CodecZstd {
		return newError(kerr.UnsupportedCompressionType, -1, "unknown compression codec %d", int8(c))
	}
	// validateBatch (KAFKA-6554): the offset range and the count agree.
	if int64(h.LastOffsetDelta)+1 <= 0 {
		return logError(kerr.InvalidRecord, "invalid offset range: last offset delta %d", h.LastOffsetDelta)
	}
	if h.NumRecords <= 0 {
		return logError(kerr.InvalidRecord, "invalid record count %d", h.NumRecords)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return logError(kerr.InvalidRecord, "last offset delta %d does not match %d records", h.LastOffsetDelta, h.NumRecords)
	}
	// validateBatch: "Clients are not allowed to write control records".
	if h.IsControl() {
		return logError(kerr.InvalidRecord, "clients may not write control batches")
	}
	// validateBatch: a producer id needs a sequence.
	if h.HasProducerID() && h.BaseSequence < 0 {
		return logError(kerr.InvalidRecord, "producer id %d with base sequence %d", h.ProducerID, h.BaseSequence)
	}
	// kbroker's rule: Kafka accepts a transactional batch without a
	// producer id and then leaves it out of producer state, so no marker
	// ever completes it. Refuse it instead.
	if h.IsTransactional() && !h.HasProducerID() {
		return logError(kerr.InvalidRecord, "transactional batch without a producer id")
	}
	// LogValidator.validateTimestamp: "Producer should not set timestamp
	// type to LogAppendTime", INVALID_TIMESTAMP. Kafka applies it per
	// record on LogAppendTime topics and on CreateTime topics silently
	// turns the batch into CreateTime; kbroker refuses it everywhere.
	if h.TimestampType() == LogAppendTime {
		return logError(kerr.InvalidTimestamp, "producers may not set the LogAppendTime timestamp type")
	}
	return nil
}

// walk checks every record of data (the uncompressed records area) and fills
// in info's record statistics. Structural faults stop the walk at once, as
// Kafka's iterator throws; key and timestamp faults are collected the way
// LogValidator.processRecordErrors does, so that any timestamp fault makes
// the answer INVALID_TIMESTAMP.
func walk(data []byte, info *Info, opts *ValidateOptions) error {
	s := newScanner(data, &info.Header, true)
	maxTs, maxDelta := int64(NoTimestamp), int32(-1)
	var keyErr, tsErr *Error
	for s.more() {
		r, err := s.next()
		if err != nil {
			return err
		}
		if r.Timestamp > maxTs {
			maxTs, maxDelta = r.Timestamp, r.OffsetDelta
		}
		if opts.RequireKeys && r.Key == nil {
			if keyErr == nil {
				keyErr = newError(kerr.InvalidRecord, int(r.OffsetDelta), "compacted topic cannot accept a record without key")
			}
			continue // Kafka reports only the key fault of such a record
		}
		if opts.CheckTimestamps && r.Timestamp != NoTimestamp && tsErr == nil {
			// Java's long arithmetic wraps, and so does Go's.
			if d := opts.Now - r.Timestamp; d > opts.TimestampBeforeMaxMs || -d > opts.TimestampAfterMaxMs {
				tsErr = newError(kerr.InvalidTimestamp, int(r.OffsetDelta), "timestamp %d is out of range [%d, %d]",
					r.Timestamp, opts.Now-opts.TimestampBeforeMaxMs, opts.Now+opts.TimestampAfterMaxMs)
			}
		}
	}
	if err := s.finish(); err != nil {
		return err
	}
	if tsErr != nil {
		return tsErr
	}
	if keyErr != nil {
		return keyErr
	}
	info.Walked = true
	info.MaxRecordTimestamp = maxTs
	info.MaxTimestampOffsetDelta = maxDelta
	return nil
}
