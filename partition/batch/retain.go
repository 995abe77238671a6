package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Retainer rewrites stored batches for the log cleaner, keeping some of
// their records, by the rules of Kafka's MemoryRecords.filterTo and
// buildRetainedRecordsInto (COMPACTION-REFERENCE.md §1.7):
//
//   - nothing removed and no delete horizon to stamp: the original bytes,
//     unchanged;
//   - some removed: base offset, last offset delta (so the next offset and
//     the producer's last sequence survive), producer id, epoch, base
//     sequence, leader epoch and the transactional and control bits are
//     kept; the kept records keep their offset deltas (gaps inside the
//     batch) and absolute timestamps, re-based on the new base timestamp;
//     count, length and CRC-32C are recomputed, and the records are
//     compressed again with the batch's codec;
//   - the base timestamp is the first kept record's timestamp, or the
//     delete horizon when one is stamped (attribute bit 0x40, KIP-534);
//     the max timestamp is the kept records' largest for CreateTime and
//     the original for LogAppendTime.
//
// A Retainer reuses its buffers and codecs; it is not safe for concurrent
// use (one per cleaner goroutine). The zero value is ready to use.
type Retainer struct {
	// MaxDecompressedBytes bounds what a compressed batch may expand to;
	// 0 means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int

	recs []byte       // the kept records, uncompressed
	out  bytes.Buffer // compressed records
	gz   *gzip.Writer
	lz   *lz4.Writer
	zs   *zstd.Encoder
}

// NoHorizon asks Retain not to stamp a delete horizon.
const NoHorizon = -1

// Retain appends to dst the batch b with only the records keep approves
// and returns the extended slice and how many records were kept. b must
// hold one whole batch (as stored: CRC and structure are checked). keep is
// called once per record, in order; its Record is valid only during the
// call.
//
// horizon ≥ 0 stamps that delete horizon (KIP-534: after it, the batch's
// tombstones and an emptied transaction's marker may go) unless the batch
// has one already; NoHorizon keeps a batch's existing horizon. When no
// record is kept, nothing is appended: whether an empty batch header must
// stay is the caller's decision (kbroker keeps producer state in its
// snapshots, so it never needs one).
func (rt *Retainer) Retain(dst, b []byte, horizon int64, keep func(r Record) bool) ([]byte, int, error) {
	h, err := Verify(b)
	if err != nil {
		return dst, 0, err
	}
	b = b[:h.Size()]
	if h.HasDeleteHorizon() {
		horizon = h.BaseTimestamp // a stamped horizon is never moved
	}
	stamp := horizon >= 0 && !h.HasDeleteHorizon()

	data := b[RecordsOffset:]
	codec := h.Compression()
	if codec != CodecNone {
		limit := rt.MaxDecompressedBytes
		if limit <= 0 {
			limit = DefaultMaxDecompressedBytes
		}
		d := getDecompressor()
		defer putDecompressor(d)
		if data, err = d.decompress(codec, data, limit, nil); err != nil {
			return dst, 0, newError(kerr.CorruptMessage, -1, "cannot decompress %v: %v", codec, err)
		}
	}

	newBase := horizon
	maxTs := int64(NoTimestamp)
	kept := 0
	rt.recs = rt.recs[:0]
	s := newScanner(data, &h, false)
	for s.more() {
		r, serr := s.next()
		if serr != nil {
			return dst, 0, serr
		}
		if !keep(r) {
			continue
		}
		if kept == 0 && newBase < 0 {
			newBase = r.Timestamp
		}
		kept++
		maxTs = max(maxTs, r.Timestamp)
		rt.recs = appendRetainedRecord(rt.recs, &r, r.Timestamp-newBase)
	}
	if serr := s.finish(); serr != nil {
		return dst, 0, serr
	}
	if kept == 0 {
		return dst, 0, nil
	}
	if kept == int(h.NumRecords) && !stamp {
		return append(dst, b...), kept, nil
	}

	records := rt.recs
	if codec != CodecNone {
		if records, err = rt.compress(codec, rt.recs); err != nil {
			return dst, 0, fmt.Errorf("batch: recompress %v: %w", codec, err)
		}
	}
	start := len(dst)
	dst = append(dst, b[:RecordsOffset]...)
	dst = append(dst, records...)
	out := dst[start:]
	be := binary.BigEndian
	be.PutUint32(out[LengthOffset:], uint32(len(out)-LogOverhead))
	attrs := h.Attributes
	if stamp {
		attrs |= AttrDeleteHorizon
	}
	be.PutUint16(out[AttributesOffset:], uint16(attrs))
	be.PutUint64(out[BaseTimestampOffset:], uint64(newBase))
	if h.TimestampType() == CreateTime {
		be.PutUint64(out[MaxTimestampOffset:], uint64(maxTs))
	}
	be.PutUint32(out[NumRecordsOffset:], uint32(kept))
	be.PutUint32(out[CRCOffset:], crc32.Checksum(out[AttributesOffset:], castagnoli))
	return dst, kept, nil
}

// appendRetainedRecord encodes r again with a new timestamp delta; every
// other field is as it was (Kafka's DefaultRecord.writeTo).
func appendRetainedRecord(dst []byte, r *Record, tsDelta int64) []byte {
	size := 1 + varintLen(tsDelta) + varintLen(int64(r.OffsetDelta)) + bytesLen(r.Key) + bytesLen(r.Value) +
		varintLen(int64(r.NumHeaders)) + len(r.headers)
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(r.NumHeaders))
	return append(dst, r.headers...)
}

// xerialBlockSize is snappy-java's default block size, which Kafka's
// SnappyOutputStream uses.
const xerialBlockSize = 32 << 10

// compress encodes records with codec the way Kafka's producers do, so that
// every client reads the result: gzip; snappy in snappy-java's xerial
// framing; lz4 in the LZ4 frame format with 64 KiB blocks (Kafka's
// KafkaLZ4BlockOutputStream); zstd frames.
func (rt *Retainer) compress(codec Codec, records []byte) ([]byte, error) {
	rt.out.Reset()
	switch codec {
	case CodecGzip:
		if rt.gz == nil {
			rt.gz = gzip.NewWriter(&rt.out)
		} else {
			rt.gz.Reset(&rt.out)
		}
		if _, err := rt.gz.Write(records); err != nil {
			return nil, err
		}
		if err := rt.gz.Close(); err != nil {
			return nil, err
		}
	case CodecSnappy:
		var hdr [xerialHeaderSize]byte
		copy(hdr[:], xerialMagic)
		binary.BigEndian.PutUint32(hdr[8:], 1)  // version
		binary.BigEndian.PutUint32(hdr[12:], 1) // minimum compatible version
		rt.out.Write(hdr[:])
		for len(records) > 0 {
			n := min(len(records), xerialBlockSize)
			block := snappy.Encode(nil, records[:n])
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(block)))
			rt.out.Write(l[:])
			rt.out.Write(block)
			records = records[n:]
		}
	case CodecLZ4:
		if rt.lz == nil {
			rt.lz = lz4.NewWriter(&rt.out)
			if err := rt.lz.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
				return nil, err
			}
		} else {
			rt.lz.Reset(&rt.out)
		}
		if _, err := rt.lz.Write(records); err != nil {
			return nil, err
		}
		if err := rt.lz.Close(); err != nil {
			return nil, err
		}
	case CodecZstd:
		if rt.zs == nil {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return nil, err
			}
			rt.zs = enc
		}
		return rt.zs.EncodeAll(records, rt.out.Bytes()[:0]), nil
	default:
		return nil, errors.New("batch: unknown codec")
	}
	return rt.out.Bytes(), nil
}

// Close releases the zstd encoder's goroutines and memory.
func (rt *Retainer) Close() {
	if rt.zs != nil {
		_ = rt.zs.Close()
		rt.zs = nil
	}
}
