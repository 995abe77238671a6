package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/snappy/xerial"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// spec describes a batch for buildBatch. The zero value plus records is a
// plain uncompressed, non-idempotent batch as kgo would send it.
type spec struct {
	codec   Codec
	xerial  bool // snappy only: xerial framing instead of one raw block
	records []kmsg.Record
	baseTs  int64
	maxTs   int64 // 0: computed from the records
	pid     int64 // 0: NoProducerID; set noPID=false and pid for idempotent
	idem    bool
	epoch   int16
	seq     int32
	attrs   int16 // extra attribute bits (transactional, control, ...)
	// edit runs on the kmsg batch before encoding; Length and CRC are
	// computed after it unless keepLength/keepCRC.
	edit       func(*kmsg.RecordBatch)
	keepLength bool
	keepCRC    bool
}

// testRecords makes n records with keys, values of valueSize bytes and a
// header on every other record, with deltas 0..n-1.
func testRecords(n, valueSize int) []kmsg.Record {
	rs := make([]kmsg.Record, n)
	for i := range rs {
		rs[i] = kmsg.Record{
			TimestampDelta64: int64(i * 3),
			OffsetDelta:      int32(i),
			Key:              fmt.Appendf(nil, "key-%d", i),
			Value:            bytes.Repeat([]byte{byte('a' + i%26)}, valueSize),
		}
		if i%2 == 1 {
			rs[i].Headers = []kmsg.Header{{Key: "h", Value: []byte("v")}, {Key: "null", Value: nil}}
		}
	}
	return rs
}

// encodeRecords encodes records with kmsg, filling each record's Length.
func encodeRecords(rs []kmsg.Record) []byte {
	var out []byte
	for _, r := range rs {
		r.Length = 0
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // varint(0) is one byte
		out = r.AppendTo(out)
	}
	return out
}

// compressWith compresses raw the way kgo's default compressor does; for
// snappy with xerial it uses klauspost's xerial encoder, the framing of
// snappy-java's SnappyOutputStream (and of kgo's streaming producer).
func compressWith(t testing.TB, codec Codec, useXerial bool, raw []byte) []byte {
	t.Helper()
	if codec == CodecSnappy && useXerial {
		return xerial.Encode(nil, raw)
	}
	var kc kgo.CompressionCodec
	switch codec {
	case CodecNone:
		return raw
	case CodecGzip:
		kc = kgo.GzipCompression()
	case CodecSnappy:
		kc = kgo.SnappyCompression()
	case CodecLZ4:
		kc = kgo.Lz4Compression()
	case CodecZstd:
		kc = kgo.ZstdCompression()
	default:
		t.Fatalf("no compressor for %v", codec)
	}
	c, err := kgo.DefaultCompressor(kc)
	if err != nil {
		t.Fatal(err)
	}
	out, used := c.Compress(new(bytes.Buffer), raw)
	if int8(used) != int8(codec) {
		t.Fatalf("compressor used codec %d, want %d", used, codec)
	}
	return bytes.Clone(out)
}

// buildBatch encodes a batch with kmsg.RecordBatch and a CRC-32C over the
// bytes from Attributes on, as a producer does.
func buildBatch(t testing.TB, s spec) []byte {
	t.Helper()
	raw := encodeRecords(s.records)
	payload := compressWith(t, s.codec, s.xerial, raw)
	maxTs := s.maxTs
	if maxTs == 0 {
		maxTs = s.baseTs
		for _, r := range s.records {
			maxTs = max(maxTs, s.baseTs+r.TimestampDelta64)
		}
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(s.codec) | s.attrs,
		LastOffsetDelta:      int32(len(s.records) - 1),
		FirstTimestamp:       s.baseTs,
		MaxTimestamp:         maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(s.records)),
		Records:              payload,
	}
	if s.idem {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = s.pid, s.epoch, s.seq
	}
	rb.Length = int32(HeaderSize - LogOverhead + len(payload))
	if s.edit != nil {
		s.edit(&rb)
	}
	if !s.keepLength {
		rb.Length = int32(HeaderSize - LogOverhead + len(rb.Records))
	}
	b := rb.AppendTo(nil)
	if !s.keepCRC {
		fixCRC(b)
	}
	return b
}

// fixCRC recomputes the CRC of a whole batch after a test edited it.
func fixCRC(b []byte) {
	if len(b) < HeaderSize {
		return
	}
	binary.BigEndian.PutUint32(b[CRCOffset:], crc32.Checksum(b[AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)))
}

// batchWithRecordBytes wraps raw record bytes (uncompressed) in a header
// declaring n records, with a valid CRC: for hand-made broken records.
func batchWithRecordBytes(t testing.TB, n int32, raw []byte) []byte {
	t.Helper()
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      n - 1,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           n,
		Records:              raw,
		Length:               int32(HeaderSize - LogOverhead + len(raw)),
	}
	b := rb.AppendTo(nil)
	fixCRC(b)
	return b
}

// wantBatchErr fails unless err unwraps to code, and, when code is not
// nil, is a *batch.Error (what produce reports per record).
func wantBatchErr(t testing.TB, err error, code *kerr.Error) {
	t.Helper()
	testenv.WantErr(t, "batch", err, code)
	var be *Error
	if code != nil && !errors.As(err, &be) {
		t.Fatalf("got %T, want *batch.Error", err)
	}
}

var allCodecs = []struct {
	name   string
	codec  Codec
	xerial bool
}{
	{"none", CodecNone, false},
	{"gzip", CodecGzip, false},
	{"snappy-raw", CodecSnappy, false},
	{"snappy-xerial", CodecSnappy, true},
	{"lz4", CodecLZ4, false},
	{"zstd", CodecZstd, false},
}
