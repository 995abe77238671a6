package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestValidateCodecs(t *testing.T) {
	t.Parallel()
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			recs := testRecords(50, 200)
			b := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: recs, baseTs: 1_700_000_000_000})
			if c.xerial && !bytes.HasPrefix(b[RecordsOffset:], xerialMagic) {
				t.Fatal("xerial encoder did not write the xerial header")
			}
			for _, full := range []bool{false, true} {
				info, err := Validate(b, ValidateOptions{FullValidation: full})
				wantBatchErr(t, err, nil)
				if got, want := info.Compression(), c.codec; got != want {
					t.Fatalf("codec: got %v, want %v", got, want)
				}
				if info.NumRecords != 50 || info.LastOffsetDelta != 49 || info.Size() != len(b) {
					t.Fatalf("header: got %+v", info.Header)
				}
				wantWalked := c.codec == CodecNone || full
				if info.Walked != wantWalked {
					t.Fatalf("walked: got %v, want %v", info.Walked, wantWalked)
				}
				if info.Walked {
					if got, want := info.MaxRecordTimestamp, int64(1_700_000_000_000+49*3); got != want {
						t.Fatalf("max record timestamp: got %d, want %d", got, want)
					}
					if got := info.MaxTimestampOffsetDelta; got != 49 {
						t.Fatalf("max timestamp offset delta: got %d, want 49", got)
					}
				} else if info.MaxRecordTimestamp != info.MaxTimestamp || info.MaxTimestampOffsetDelta != info.LastOffsetDelta {
					t.Fatalf("unwalked stats: got %d/%d", info.MaxRecordTimestamp, info.MaxTimestampOffsetDelta)
				}
			}
			checkRecords(t, b, recs, 1_700_000_000_000)
		})
	}
}

// checkRecords compares what Records yields with the records encoded.
func checkRecords(t *testing.T, b []byte, want []kmsg.Record, baseTs int64) {
	t.Helper()
	i := 0
	err := Records(b, func(r Record) bool {
		w := want[i]
		if r.OffsetDelta != w.OffsetDelta || r.TimestampDelta != w.TimestampDelta64 || r.Timestamp != baseTs+w.TimestampDelta64 {
			t.Fatalf("record %d: got delta %d ts %d, want %d %d", i, r.OffsetDelta, r.Timestamp, w.OffsetDelta, baseTs+w.TimestampDelta64)
		}
		if !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || (r.Key == nil) != (w.Key == nil) {
			t.Fatalf("record %d: got key %q value %q, want %q %q", i, r.Key, r.Value, w.Key, w.Value)
		}
		if r.NumHeaders != len(w.Headers) {
			t.Fatalf("record %d: got %d headers, want %d", i, r.NumHeaders, len(w.Headers))
		}
		j := 0
		for k, v := range r.Headers() {
			if string(k) != w.Headers[j].Key || !bytes.Equal(v, w.Headers[j].Value) || (v == nil) != (w.Headers[j].Value == nil) {
				t.Fatalf("record %d header %d: got %q=%q, want %q=%q", i, j, k, v, w.Headers[j].Key, w.Headers[j].Value)
			}
			j++
		}
		i++
		return true
	})
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	if i != len(want) {
		t.Fatalf("Records yielded %d records, want %d", i, len(want))
	}
}

// TestValidateKgoProduced validates batches a real kgo producer sent, for
// every codec, idempotent (kgo's default) and not.
func TestValidateKgoProduced(t *testing.T) {
	t.Parallel()
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		want  Codec
	}{
		{"none", kgo.NoCompression(), CodecNone},
		{"gzip", kgo.GzipCompression(), CodecGzip},
		{"snappy", kgo.SnappyCompression(), CodecSnappy},
		{"lz4", kgo.Lz4Compression(), CodecLZ4},
		{"zstd", kgo.ZstdCompression(), CodecZstd},
	}
	modes := []struct {
		name   string
		idem   bool
		stream bool
	}{
		{"idempotent", true, false},
		{"plain", false, false},
		{"streaming", true, true}, // kgo.StreamingCompression: xerial snappy, flushed codec streams
	}
	for _, c := range codecs {
		for _, m := range modes {
			idem := m.idem
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				opts := []kgo.Opt{kgo.ProducerBatchCompression(c.codec)}
				if !idem {
					opts = append(opts, kgo.DisableIdempotentWrite())
				}
				want := 100
				if m.stream {
					// kgo merges a backlog of batches through a streaming
					// compressor once a produce response told it the
					// version: the first request goes out unmerged, the
					// small batches queued behind it are merged.
					opts = append(opts, kgo.StreamingCompression(), kgo.ProducerBatchMaxBytes(8<<10))
					want = 401
				}
				recs := kgoRecords(want, 300)
				batches := produceWithKgo(t, recs, opts...)
				if len(batches) == 0 {
					t.Fatal("kgo sent no batch")
				}
				total, xerialBatches := 0, 0
				for _, b := range batches {
					info, err := Validate(b, ValidateOptions{FullValidation: true, ProduceVersion: 12})
					wantBatchErr(t, err, nil)
					if got := info.Compression(); got != c.want {
						t.Fatalf("codec: got %v, want %v", got, c.want)
					}
					if info.HasProducerID() != idem {
						t.Fatalf("producer id %d, idempotent %v", info.ProducerID, idem)
					}
					if idem && info.BaseSequence != int32(total) {
						t.Fatalf("base sequence: got %d, want %d", info.BaseSequence, total)
					}
					if c.want == CodecSnappy && bytes.HasPrefix(b[RecordsOffset:], xerialMagic) {
						xerialBatches++
					}
					n := 0
					if err := Records(b, func(r Record) bool {
						if string(r.Key) != "key-"+strconv.Itoa(total+n) {
							t.Fatalf("record %d: key %q", total+n, r.Key)
						}
						n++
						return true
					}); err != nil {
						t.Fatal(err)
					}
					total += n
				}
				// One-shot kgo compression writes a raw snappy block,
				// streaming compression the xerial framing.
				if c.want == CodecSnappy && (xerialBatches > 0) != m.stream {
					t.Fatalf("got %d xerial-framed snappy batches of %d, streaming %v", xerialBatches, len(batches), m.stream)
				}
				if total != want {
					t.Fatalf("got %d records, want %d", total, want)
				}
			})
		}
	}
}

// TestValidateBad is the table of refused batches and Kafka's codes.
func TestValidateBad(t *testing.T) {
	t.Parallel()
	good := func(t *testing.T) []byte { return buildBatch(t, spec{records: testRecords(5, 20)}) }
	setLength := func(n int32) func(*kmsg.RecordBatch) {
		return func(rb *kmsg.RecordBatch) { rb.Length = n }
	}
	tests := []struct {
		name string
		make func(t *testing.T) []byte
		opts ValidateOptions
		want *kerr.Error
	}{
		{"empty", func(*testing.T) []byte { return nil }, ValidateOptions{}, kerr.InvalidRecord},
		{"11 bytes", func(t *testing.T) []byte { return good(t)[:11] }, ValidateOptions{}, kerr.InvalidRecord},
		{"truncated before magic", func(t *testing.T) []byte { return good(t)[:16] }, ValidateOptions{}, kerr.InvalidRecord},
		{"truncated in header", func(t *testing.T) []byte { return good(t)[:40] }, ValidateOptions{}, kerr.InvalidRecord},
		{"truncated after header", func(t *testing.T) []byte { return good(t)[:HeaderSize] }, ValidateOptions{}, kerr.InvalidRecord},
		{"truncated by one", func(t *testing.T) []byte { b := good(t); return b[:len(b)-1] }, ValidateOptions{}, kerr.InvalidRecord},
		{"length too big", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(5, 20), edit: func(rb *kmsg.RecordBatch) { rb.Length += 10 }, keepLength: true})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"length too small", func(t *testing.T) []byte {
			// The batch then ends early and the rest reads as a second batch.
			return buildBatch(t, spec{records: testRecords(5, 20), edit: func(rb *kmsg.RecordBatch) { rb.Length -= 10 }, keepLength: true})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"length below 14", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: setLength(13), keepLength: true})
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"length below header", func(t *testing.T) []byte {
			b := buildBatch(t, spec{records: testRecords(1, 1), edit: setLength(40), keepLength: true})
			return b[:LogOverhead+40]
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"negative length", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: setLength(-1), keepLength: true})
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"length max int32", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: setLength(math.MaxInt32), keepLength: true})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"bad crc", func(t *testing.T) []byte {
			b := good(t)
			b[len(b)-1] ^= 0xff
			return b
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"bad crc field", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(2, 2), edit: func(rb *kmsg.RecordBatch) { rb.CRC = 1234 }, keepCRC: true})
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"crc covers attributes", func(t *testing.T) []byte {
			b := good(t)
			b[AttributesOffset+1] ^= 0x01 // gzip bit, CRC not updated
			return b
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"magic 0", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.Magic = 0 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"magic 1", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.Magic = 1 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"magic 3", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.Magic = 3 }})
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"magic -1", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.Magic = -1 }})
		}, ValidateOptions{}, kerr.CorruptMessage},
		{"two batches", func(t *testing.T) []byte { return append(good(t), good(t)...) }, ValidateOptions{}, kerr.InvalidRecord},
		{"trailing partial batch", func(t *testing.T) []byte { return append(good(t), good(t)[:30]...) }, ValidateOptions{}, kerr.InvalidRecord},
		{"trailing byte", func(t *testing.T) []byte { return append(good(t), 0) }, ValidateOptions{}, kerr.InvalidRecord},
		{"base offset set", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.FirstOffset = 5 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"oversized", func(t *testing.T) []byte { return buildBatch(t, spec{records: testRecords(10, 200)}) },
			ValidateOptions{MaxMessageBytes: 1000}, kerr.MessageTooLarge},
		{"oversized default", func(t *testing.T) []byte { return buildBatch(t, spec{records: testRecords(2, 600_000)}) },
			ValidateOptions{}, kerr.MessageTooLarge},
		{"unknown codec 5", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), attrs: 5})
		}, ValidateOptions{}, kerr.UnsupportedCompressionType},
		{"unknown codec 7", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), attrs: 7})
		}, ValidateOptions{}, kerr.UnsupportedCompressionType},
		{"zstd on produce v6", func(t *testing.T) []byte {
			return buildBatch(t, spec{codec: CodecZstd, records: testRecords(3, 100)})
		}, ValidateOptions{ProduceVersion: 6}, kerr.UnsupportedCompressionType},
		{"count above delta", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(3, 1), edit: func(rb *kmsg.RecordBatch) { rb.NumRecords = 4 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"count below delta", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(3, 1), edit: func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = 5 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"count and delta agree but too many", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(3, 1), edit: func(rb *kmsg.RecordBatch) { rb.NumRecords, rb.LastOffsetDelta = 4, 3 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"count and delta agree but too few", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(3, 1), edit: func(rb *kmsg.RecordBatch) { rb.NumRecords, rb.LastOffsetDelta = 2, 1 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"zero records", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.NumRecords, rb.LastOffsetDelta, rb.Records = 0, -1, nil }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"negative delta", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = -5 }})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"huge count compressed", func(t *testing.T) []byte {
			return buildBatch(t, spec{codec: CodecGzip, records: testRecords(3, 100), edit: func(rb *kmsg.RecordBatch) {
				rb.NumRecords, rb.LastOffsetDelta = math.MaxInt32, math.MaxInt32-1
			}})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"control batch", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), attrs: AttrControl | AttrTransactional, idem: true, pid: 7, seq: 0})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"log append time from client", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), attrs: AttrTimestampType})
		}, ValidateOptions{}, kerr.InvalidTimestamp},
		{"producer id without sequence", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), idem: true, pid: 7, epoch: 0, seq: -1})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"transactional without producer id", func(t *testing.T) []byte {
			return buildBatch(t, spec{records: testRecords(1, 1), attrs: AttrTransactional})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"offset deltas out of order", func(t *testing.T) []byte {
			rs := testRecords(3, 5)
			rs[1].OffsetDelta, rs[2].OffsetDelta = 2, 1
			return buildBatch(t, spec{records: rs})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"offset deltas with gap", func(t *testing.T) []byte {
			rs := testRecords(3, 5)
			rs[2].OffsetDelta = 3
			return buildBatch(t, spec{records: rs})
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"offset deltas out of order compressed full", func(t *testing.T) []byte {
			rs := testRecords(3, 5)
			rs[0].OffsetDelta = 1
			return buildBatch(t, spec{codec: CodecLZ4, records: rs})
		}, ValidateOptions{FullValidation: true}, kerr.InvalidRecord},
		{"garbage inside batch", func(t *testing.T) []byte {
			raw := append(encodeRecords(testRecords(2, 5)), 0xde, 0xad)
			return batchWithRecordBytes(t, 2, raw)
		}, ValidateOptions{}, kerr.InvalidRecord},
		{"garbage inside compressed batch", func(t *testing.T) []byte {
			raw := append(encodeRecords(testRecords(2, 5)), 0xde, 0xad)
			return buildBatch(t, spec{codec: CodecZstd, records: testRecords(2, 5), edit: func(rb *kmsg.RecordBatch) {
				rb.Records = compressWith(t, CodecZstd, false, raw)
			}})
		}, ValidateOptions{FullValidation: true}, kerr.InvalidRecord},
		{"compressed garbage", func(t *testing.T) []byte {
			return buildBatch(t, spec{codec: CodecGzip, records: testRecords(2, 5), edit: func(rb *kmsg.RecordBatch) {
				rb.Records = []byte("definitely not gzip")
			}})
		}, ValidateOptions{FullValidation: true}, kerr.InvalidRecord},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tc.make(t)
			_, err := Validate(b, tc.opts)
			wantBatchErr(t, err, tc.want)
			t.Log(err)
		})
	}
}

// TestValidateRecordStructure feeds hand-made broken records.
func TestValidateRecordStructure(t *testing.T) {
	t.Parallel()
	// rec builds one record body from its fields; length is prepended.
	rec := func(body ...[]byte) []byte {
		var b []byte
		for _, p := range body {
			b = append(b, p...)
		}
		return append(binary.AppendVarint(nil, int64(len(b))), b...)
	}
	v := func(n int64) []byte { return binary.AppendVarint(nil, n) }
	okBody := [][]byte{{0}, v(0), v(0), v(1), []byte("k"), v(1), []byte("v"), v(0)}
	tests := []struct {
		name  string
		n     int32
		raw   []byte
		want  *kerr.Error
		index int
	}{
		{"valid", 1, rec(okBody...), nil, 0},
		{"null key and value", 1, rec([]byte{0}, v(0), v(0), v(-1), v(-1), v(0)), nil, 0},
		{"empty key and value", 1, rec([]byte{0}, v(0), v(0), v(0), v(0), v(0)), nil, 0},
		{"key length -2", 1, rec([]byte{0}, v(0), v(0), v(-2), v(0), v(0)), kerr.InvalidRecord, 0},
		{"key past record", 1, rec([]byte{0}, v(0), v(0), v(50), v(0), v(0)), kerr.InvalidRecord, 0},
		{"value past record", 1, rec([]byte{0}, v(0), v(0), v(0), v(9), []byte("x"), v(0)), kerr.InvalidRecord, 0},
		{"record length past batch", 1, append(v(100), okBody[0]...), kerr.InvalidRecord, 0},
		{"negative record length", 1, v(-3), kerr.InvalidRecord, 0},
		{"empty record", 1, v(0), kerr.InvalidRecord, 0},
		{"record longer than fields", 1, rec(append(okBody, []byte{0, 0})...), kerr.InvalidRecord, 0},
		{"varint too long", 1, rec([]byte{0}, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, v(0), v(0), v(0), v(0)), kerr.InvalidRecord, 0},
		{"offset delta varint 6 bytes", 1, rec([]byte{0}, v(0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, v(0), v(0), v(0)), kerr.InvalidRecord, 0},
		{"truncated varint", 1, rec([]byte{0}, v(0), []byte{0x80}), kerr.InvalidRecord, 0},
		{"negative header count", 1, rec([]byte{0}, v(0), v(0), v(0), v(0), v(-1)), kerr.InvalidRecord, 0},
		{"header count too big", 1, rec([]byte{0}, v(0), v(0), v(0), v(0), v(1000)), kerr.InvalidRecord, 0},
		{"null header key", 1, rec([]byte{0}, v(0), v(0), v(0), v(0), v(1), v(-1), v(0)), kerr.InvalidRecord, 0},
		{"header with null value", 1, rec([]byte{0}, v(0), v(0), v(0), v(0), v(1), v(1), []byte("h"), v(-1)), nil, 0},
		{"header value past record", 1, rec([]byte{0}, v(0), v(0), v(0), v(0), v(1), v(1), []byte("h"), v(5)), kerr.InvalidRecord, 0},
		{"fewer records than count", 2, rec(okBody...), kerr.InvalidRecord, 1},
		{"more records than count", 1, append(rec(okBody...), rec([]byte{0}, v(0), v(1), v(0), v(0), v(0))...), kerr.InvalidRecord, -1},
		{"second record bad delta", 2, append(rec(okBody...), rec([]byte{0}, v(0), v(7), v(0), v(0), v(0))...), kerr.InvalidRecord, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := batchWithRecordBytes(t, tc.n, tc.raw)
			_, err := Validate(b, ValidateOptions{})
			wantBatchErr(t, err, tc.want)
			if tc.want != nil {
				var be *Error
				errors.As(err, &be)
				if be.Record != tc.index {
					t.Fatalf("record index: got %d, want %d (%v)", be.Record, tc.index, err)
				}
			}
		})
	}
}

func TestValidateProducerFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    spec
		want *kerr.Error
	}{
		{"idempotent", spec{idem: true, pid: 1, epoch: 0, seq: 0}, nil},
		{"idempotent high sequence", spec{idem: true, pid: 1, epoch: 3, seq: math.MaxInt32}, nil},
		{"transactional", spec{idem: true, pid: 1, epoch: 0, seq: 5, attrs: AttrTransactional}, nil},
		{"pid without sequence", spec{idem: true, pid: 1, seq: -1}, kerr.InvalidRecord},
		{"pid -2 is no producer", spec{idem: true, pid: -2, seq: -1}, nil},
		{"transactional without pid", spec{attrs: AttrTransactional}, kerr.InvalidRecord},
		{"control", spec{idem: true, pid: 1, seq: 0, attrs: AttrControl | AttrTransactional}, kerr.InvalidRecord},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.s.records = testRecords(3, 10)
			_, err := Validate(buildBatch(t, tc.s), ValidateOptions{})
			wantBatchErr(t, err, tc.want)
		})
	}
}

func TestValidateRecordRules(t *testing.T) {
	t.Parallel()
	const now = 1_700_000_000_000
	noKey := testRecords(4, 10)
	noKey[2].Key = nil
	oldTs := testRecords(4, 10)
	oldTs[3].TimestampDelta64 = -10_000
	both := testRecords(4, 10)
	both[0].Key = nil
	both[3].TimestampDelta64 = -10_000
	tsCheck := ValidateOptions{CheckTimestamps: true, Now: now, TimestampBeforeMaxMs: 1000, TimestampAfterMaxMs: 1000}
	tests := []struct {
		name  string
		s     spec
		opts  ValidateOptions
		want  *kerr.Error
		index int
	}{
		{"keys present", spec{records: testRecords(4, 10)}, ValidateOptions{RequireKeys: true}, nil, 0},
		{"null key allowed", spec{records: noKey}, ValidateOptions{}, nil, 0},
		{"null key compacted", spec{records: noKey}, ValidateOptions{RequireKeys: true}, kerr.InvalidRecord, 2},
		{"null key compacted compressed", spec{codec: CodecSnappy, records: noKey}, ValidateOptions{RequireKeys: true}, kerr.InvalidRecord, 2},
		{"timestamps in range", spec{baseTs: now, records: testRecords(4, 10)}, tsCheck, nil, 0},
		{"timestamp too old", spec{baseTs: now, records: oldTs}, tsCheck, kerr.InvalidTimestamp, 3},
		{"timestamp too old compressed", spec{codec: CodecGzip, baseTs: now, records: oldTs}, tsCheck, kerr.InvalidTimestamp, 3},
		{"timestamp too new", spec{baseTs: now + 5000, records: testRecords(4, 10)}, tsCheck, kerr.InvalidTimestamp, 0},
		{"timestamp unchecked", spec{baseTs: now + 5000, records: testRecords(4, 10)}, ValidateOptions{}, nil, 0},
		// Kafka: any timestamp fault makes the batch INVALID_TIMESTAMP.
		{"timestamp beats key", spec{baseTs: now, records: both}, ValidateOptions{RequireKeys: true, CheckTimestamps: true, Now: now, TimestampBeforeMaxMs: 1000, TimestampAfterMaxMs: 1000}, kerr.InvalidTimestamp, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Validate(buildBatch(t, tc.s), tc.opts)
			wantBatchErr(t, err, tc.want)
			if tc.want != nil {
				var be *Error
				errors.As(err, &be)
				if be.Record != tc.index {
					t.Fatalf("record index: got %d, want %d (%v)", be.Record, tc.index, err)
				}
			}
		})
	}
}

// TestValidateMaxTimestampStats checks Info's record statistics against
// Kafka's rule: the first record with the largest timestamp wins.
func TestValidateMaxTimestampStats(t *testing.T) {
	t.Parallel()
	rs := testRecords(5, 3)
	for i, d := range []int64{5, 9, 2, 9, 1} {
		rs[i].TimestampDelta64 = d
	}
	b := buildBatch(t, spec{records: rs, baseTs: 100, maxTs: 50}) // the producer's MaxTimestamp is wrong
	info, err := Validate(b, ValidateOptions{})
	wantBatchErr(t, err, nil)
	if info.MaxRecordTimestamp != 109 || info.MaxTimestampOffsetDelta != 1 || info.MaxTimestamp != 50 {
		t.Fatalf("got max %d at %d (header %d), want 109 at 1 (header 50)", info.MaxRecordTimestamp, info.MaxTimestampOffsetDelta, info.MaxTimestamp)
	}

	// All timestamps -1 (NoTimestamp): Kafka's max stays -1, offset -1.
	rs = testRecords(2, 3)
	rs[0].TimestampDelta64, rs[1].TimestampDelta64 = 0, 0
	b = buildBatch(t, spec{records: rs, baseTs: -1, maxTs: -1})
	info, err = Validate(b, ValidateOptions{})
	wantBatchErr(t, err, nil)
	if info.MaxRecordTimestamp != NoTimestamp || info.MaxTimestampOffsetDelta != -1 {
		t.Fatalf("got max %d at %d, want -1 at -1", info.MaxRecordTimestamp, info.MaxTimestampOffsetDelta)
	}
}

// TestDecompressionBomb checks that a small batch expanding past the bound
// is refused before it takes the memory, for every codec.
func TestDecompressionBomb(t *testing.T) {
	t.Parallel()
	bomb := []kmsg.Record{{Key: []byte("k"), Value: make([]byte, 8<<20)}}
	for _, c := range allCodecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: bomb})
			if len(b) > DefaultMaxMessageBytes {
				t.Fatalf("bomb is %d bytes, not small", len(b))
			}
			// Trusted to its CRC: accepted without decompressing.
			_, err := Validate(b, ValidateOptions{})
			wantBatchErr(t, err, nil)
			// Bounded: refused.
			_, err = Validate(b, ValidateOptions{FullValidation: true, MaxDecompressedBytes: 1 << 20})
			wantBatchErr(t, err, kerr.MessageTooLarge)
			// Within the default bound: accepted.
			_, err = Validate(b, ValidateOptions{FullValidation: true})
			wantBatchErr(t, err, nil)
			var rd Reader
			rd.MaxDecompressedBytes = 1 << 20
			wantBatchErr(t, rd.Records(b, func(Record) bool { return true }), kerr.MessageTooLarge)
		})
	}
}

// TestSnappyClaimedLength checks that a raw snappy block claiming a huge
// decoded length is refused from its header, before allocation.
func TestSnappyClaimedLength(t *testing.T) {
	payload := binary.AppendUvarint(nil, 1<<31)
	payload = append(payload, 0x00) // not a valid block either
	b := buildBatch(t, spec{codec: CodecSnappy, records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.Records = payload }})
	allocs := testing.AllocsPerRun(10, func() {
		_, err := Validate(b, ValidateOptions{FullValidation: true})
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("got %v, want MESSAGE_TOO_LARGE", err)
		}
	})
	if allocs > 10 {
		t.Fatalf("got %.0f allocations, want a handful", allocs)
	}
}

func TestValidateNoAllocs(t *testing.T) {
	b := buildBatch(t, spec{records: testRecords(100, 100), idem: true, pid: 3, seq: 0})
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Validate(b, ValidateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %.1f allocs/op for an uncompressed batch, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := Verify(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Verify: got %.1f allocs/op, want 0", allocs)
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	err := newError(kerr.InvalidRecord, 3, "offset delta %d, want %d", 4, 3)
	if got, want := err.Error(), "batch: INVALID_RECORD: record 3: offset delta 4, want 3"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	err = newError(kerr.CorruptMessage, -1, "crc mismatch")
	if got, want := err.Error(), "batch: CORRUPT_MESSAGE: crc mismatch"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != kerr.CorruptMessage {
		t.Fatalf("errors.As: got %v", ke)
	}
}

// TestDecompressBudget checks that the batches of one request share the
// request's decompression budget: each is bounded by what is left, the
// output of every decompression is charged (that of a refused one too),
// and once it is spent every compressed batch that must be decompressed
// is MESSAGE_TOO_LARGE, so many bombs in one request cost one budget, not
// one bound each.
func TestDecompressBudget(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	bomb := []kmsg.Record{{Key: []byte("k"), Value: make([]byte, size)}}
	for _, c := range allCodecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: bomb})
			budget := int64(3*size + size/2)
			opts := ValidateOptions{FullValidation: true, DecompressBudget: &budget}
			for i := range 3 {
				before := budget
				_, err := Validate(b, opts)
				wantBatchErr(t, err, nil)
				if spent := before - budget; spent < size {
					t.Fatalf("batch %d: %d bytes charged, want at least %d", i, spent, size)
				}
			}
			// What is left is less than the batch: refused, and no more
			// than what was left is charged.
			left := budget
			_, err := Validate(b, opts)
			wantBatchErr(t, err, kerr.MessageTooLarge)
			if budget < 0 || budget > left {
				t.Fatalf("budget %d after a refused batch, want within [0, %d]", budget, left)
			}
			// Spent: refused however small the batch.
			budget = 0
			small := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: testRecords(2, 10)})
			_, err = Validate(small, opts)
			wantBatchErr(t, err, kerr.MessageTooLarge)
			// Uncompressed batches cost no budget.
			_, err = Validate(buildBatch(t, spec{records: testRecords(2, 10)}), opts)
			wantBatchErr(t, err, nil)
			// Without a budget the per-batch bound alone applies.
			_, err = Validate(b, ValidateOptions{FullValidation: true})
			wantBatchErr(t, err, nil)
		})
	}
}
