// Package batch is the codec for Kafka RecordBatch v2 (magic 2) as the
// partition leader sees it on produce. It is pure: no I/O, no locks, no
// storage imports, and it never panics on client bytes, so it can be fuzzed
// (FuzzValidate).
//
// The produce path is
//
//	info, err := batch.Validate(records, opts) // refuse with the Kafka code err unwraps to
//	...                                        // producer-state checks, offset assignment
//	batch.Stamp(records, base, leaderEpoch, -1 or now)
//	if createTime && info.Walked && info.MaxRecordTimestamp != info.MaxTimestamp {
//		batch.SetMaxTimestamp(records, info.MaxRecordTimestamp) // as Kafka corrects it
//	}
//
// ParseHeader decodes a header without judging it, Verify checks a stored
// (stamped or compacted) batch, and Reader/Records walk the records of a
// stored batch for ListOffsets by timestamp and for transaction markers.
// Retainer rewrites a stored batch for the log cleaner, keeping the records
// it is told to by Kafka's rules for compacted batches (FuzzRetain).
//
// Validate, Verify and Stamp do not allocate for uncompressed batches;
// decompression (FullValidation, Records on compressed batches) uses pooled
// buffers and codec state. Everything here is safe for concurrent use on
// distinct byte slices.
//
// # Batch layout
//
// Big-endian, as Kafka's DefaultRecordBatch (STORAGE-REFERENCE.md §2.2):
//
//	0            8        12            16    17       21      23
//	+------------+--------+-------------+-----+--------+-------+
//	| BaseOffset | Length | Partition   |Magic|  CRC   | Attr- |
//	|   int64    | int32  | LeaderEpoch |  =2 | uint32 | ibutes|
//	|  (leader)  |        | (leader)    |     |        | int16 |
//	+------------+--------+-------------+-----+--------+-------+
//	                                                   ^ CRC-32C covers byte 21 to the end
//	23          27             35             43            51      53       57       61
//	+-----------+--------------+--------------+-------------+-------+--------+--------+-----------
//	| LastOffset| BaseTimestamp| MaxTimestamp | ProducerID  |Produc-| Base   | Num    | Records...
//	| Delta     |    int64     |    int64     |   int64     |erEpoch|Sequence| Records| (one blob if
//	|  int32    |              | (leader for  |             | int16 | int32  | int32  | compressed)
//	|           |              |LogAppendTime)|             |       |        |        |
//	+-----------+--------------+--------------+-------------+-------+--------+--------+-----------
//
// Length counts the bytes after it, so a batch is 12 + Length bytes. The CRC
// does not cover BaseOffset, Length, PartitionLeaderEpoch or Magic: the leader
// stamps offsets and epoch without recomputing it; only LogAppendTime
// (attributes and MaxTimestamp) needs a new CRC.
//
// Attributes: bits 0–2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3
// timestamp type (1 = LogAppendTime), bit 4 transactional, bit 5 control, bit
// 6 delete horizon (KIP-534).
//
// Each record (Kafka's DefaultRecord, STORAGE-REFERENCE.md §2.3), varints
// zig-zag encoded:
//
//	length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//	keyLen varint (-1 null) | key | valueLen varint (-1 null) | value |
//	headerCount varint | { keyLen varint (not null) | key | valueLen varint (-1 null) | value } ...
//
// # Rules and error codes
//
// Validate applies Kafka's rules in Kafka's order and returns the code Kafka
// returns (verified in apache/kafka trunk 4.0.0-SNAPSHOT, commit 1eb76443, the
// snapshot STORAGE-REFERENCE.md cites, in
// clients/.../record/ByteBufferLogInputStream.java,
// clients/.../requests/ProduceRequest.java validateRecords,
// core/.../log/UnifiedLog.scala analyzeAndValidateRecords,
// storage/.../log/LogValidator.java validateBatch/validateRecord,
// clients/.../record/DefaultRecord.java readFrom and
// clients/.../protocol/Errors.java):
//
//	fewer than 12 bytes, or a batch longer than the bytes   INVALID_RECORD (no batch)
//	Length < 14, or magic outside 0..2                      CORRUPT_MESSAGE
//	magic 0 or 1                                            INVALID_RECORD (*)
//	Length < 49 (shorter than the header)                   CORRUPT_MESSAGE
//	zstd on produce v3–v6                                   UNSUPPORTED_COMPRESSION_TYPE
//	bytes after the batch (a second batch)                  INVALID_RECORD
//	BaseOffset ≠ 0                                          INVALID_RECORD
//	12 + Length > max.message.bytes                         MESSAGE_TOO_LARGE
//	CRC-32C mismatch                                        CORRUPT_MESSAGE
//	codec 5–7                                               UNSUPPORTED_COMPRESSION_TYPE (†)
//	LastOffsetDelta+1 ≤ 0, NumRecords ≤ 0, or unequal       INVALID_RECORD
//	compressed and NumRecords × 7 > decompression bound     INVALID_RECORD (†)
//	control batch                                           INVALID_RECORD
//	ProducerID ≥ 0 with BaseSequence < 0                    INVALID_RECORD
//	transactional without ProducerID                        INVALID_RECORD (†)
//	LogAppendTime bit set by the producer                   INVALID_TIMESTAMP (†)
//	record structure: bad varint, lengths past the record,
//	  negative header count or key length, record length
//	  ≠ its fields, fewer records than NumRecords, bytes
//	  after the last record                                 INVALID_RECORD
//	offset delta ≠ record index                             INVALID_RECORD (†)
//	null key on a compacted topic (RequireKeys)             INVALID_RECORD
//	timestamp outside before/after.max.ms (CheckTimestamps) INVALID_TIMESTAMP
//	compressed data that does not decode                    INVALID_RECORD (†)
//	compressed data past the decompression bound            MESSAGE_TOO_LARGE (†)
//
// (*) Not UNSUPPORTED_FOR_MESSAGE_FORMAT: Kafka's
// ProduceRequest.validateRecords throws InvalidRecordException for a non-v2
// batch on produce v3+, so the broker answers INVALID_RECORD. Kafka keeps
// UNSUPPORTED_FOR_MESSAGE_FORMAT for idempotent or transactional writes to a
// topic whose message format is below v2 (LogValidator.validateBatch), which
// cannot happen here.
//
// # Differences from Kafka (†)
//
//   - Compressed batches are trusted to their CRC: Validate checks the header
//     and the CRC, not the records, unless ValidateOptions.FullValidation (or a
//     per-record rule: RequireKeys, CheckTimestamps) asks it to decompress.
//     Kafka always decompresses to validate; that costs CPU on every produce,
//     so here it is a setting. The cheap bound NumRecords × 7 ≤ the
//     decompression bound still applies.
//   - Decompression is bounded (DefaultMaxDecompressedBytes, or 16 ×
//     max.message.bytes, capped at 1 GiB): a bigger expansion is
//     MESSAGE_TOO_LARGE. Kafka streams records and has no bound. Only one
//     decompression at a time, broker-wide, may produce more than 1 MiB;
//     the others wait for it, so decompression bombs sent on many
//     connections cost one bound of memory, not one per connection. The
//     batches of one Produce request share a budget too
//     (ValidateOptions.DecompressBudget; partition.Batch gives it 64 times
//     their compressed size, at least DefaultMaxDecompressedBytes): a batch
//     past what is left is MESSAGE_TOO_LARGE, so a request of many small
//     bombs costs one budget of work, not one bound per batch.
//     A gzip stream whose trailer, or an lz4 or zstd frame whose header,
//     declares more than the bound is refused before anything is decoded
//     (a declared size within it sizes the output buffer), and a
//     decompression past 1 MiB gives up when ValidateOptions.Stop closes
//     (the broker's Shutdown), NOT_LEADER_OR_FOLLOWER.
//   - Inner offset deltas must be 0..n-1, compressed or not. Kafka ignores them
//     in uncompressed batches and rebuilds compressed ones that break the rule
//     (KAFKA-9669); kbroker stores batches byte for byte and cannot rebuild.
//   - Only -1 encodes a null key or value; Kafka reads any negative length as
//     null.
//   - Any byte after the batch is refused; Kafka drops a trailing partial batch.
//   - A LogAppendTime bit from a producer is always refused; Kafka refuses it
//     only on LogAppendTime topics and on CreateTime topics quietly rewrites
//     the batch to CreateTime.
//   - An unknown codec, or data a codec cannot decode, gets a specific code;
//     Kafka fails with an unchecked exception (UNKNOWN_SERVER_ERROR).
//   - Transactional batches without a producer id are refused; Kafka appends
//     them and leaves them out of producer state.
//   - Producer epoch and sequence against earlier batches (OUT_OF_ORDER_SEQUENCE,
//     duplicates, INVALID_PRODUCER_EPOCH) and transactional.id authorization
//     are the partition's and the handler's work, not this package's.
//
// # Codecs
//
// gzip (RFC 1952, concatenated members allowed as by Java's GZIPInputStream),
// snappy (the xerial framing of snappy-java's SnappyOutputStream, which the
// Java producer and kgo's streaming producer write, or one raw snappy block,
// which kgo's one-shot compressor writes; snappy-java's SnappyInputStream reads
// both), lz4 (the LZ4 frame format, Kafka's Lz4BlockInputStream) and zstd
// (frames, possibly several). Snappy blocks are decoded strictly, refusing the
// s2 extensions Java cannot read.
package batch
