package batch

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRecordsFirstTimestamp is the ListOffsets use: stop at the first record
// with a timestamp ≥ T.
func TestRecordsFirstTimestamp(t *testing.T) {
	t.Parallel()
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rs := testRecords(30, 40)
			for i := range rs {
				rs[i].TimestampDelta64 = int64(i * 10)
			}
			b := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: rs, baseTs: 5000})
			found, seen := int32(-1), 0
			err := Records(b, func(r Record) bool {
				seen++
				if r.Timestamp >= 5123 {
					found = r.OffsetDelta
					return false
				}
				return true
			})
			wantBatchErr(t, err, nil)
			if found != 13 || seen != 14 {
				t.Fatalf("got offset delta %d after %d records, want 13 after 14", found, seen)
			}
		})
	}
}

// TestRecordsControlBatch reads an end-transaction marker (Kafka's
// EndTransactionMarker: key version+type, value version+coordinator epoch).
func TestRecordsControlBatch(t *testing.T) {
	t.Parallel()
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), 1) // COMMIT
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), 12)
	b := buildBatch(t, spec{records: []kmsg.Record{{Key: key, Value: value}}, attrs: AttrControl | AttrTransactional, idem: true, pid: 5, epoch: 1, seq: -1})
	h, err := Verify(b)
	wantBatchErr(t, err, nil)
	if !h.IsControl() {
		t.Fatal("not a control batch")
	}
	n := 0
	err = Records(b, func(r Record) bool {
		n++
		if typ := binary.BigEndian.Uint16(r.Key[2:]); typ != 1 {
			t.Fatalf("control type %d, want 1 (COMMIT)", typ)
		}
		if epoch := binary.BigEndian.Uint32(r.Value[2:]); epoch != 12 {
			t.Fatalf("coordinator epoch %d, want 12", epoch)
		}
		return true
	})
	if err != nil || n != 1 {
		t.Fatalf("got %d records, %v", n, err)
	}
}

// TestRecordsCompacted accepts what compaction leaves: gaps in the deltas
// and fewer records than LastOffsetDelta+1.
func TestRecordsCompacted(t *testing.T) {
	t.Parallel()
	rs := testRecords(5, 5)
	kept := []kmsg.Record{rs[0], rs[2], rs[4]}
	b := buildBatch(t, spec{records: kept, edit: func(rb *kmsg.RecordBatch) { rb.LastOffsetDelta = 4 }})
	if _, err := Validate(b, ValidateOptions{}); err == nil {
		t.Fatal("Validate accepted a compacted batch from a producer")
	}
	_, err := Verify(b)
	wantBatchErr(t, err, nil)
	var deltas []int32
	err = Records(b, func(r Record) bool { deltas = append(deltas, r.OffsetDelta); return true })
	wantBatchErr(t, err, nil)
	if len(deltas) != 3 || deltas[0] != 0 || deltas[1] != 2 || deltas[2] != 4 {
		t.Fatalf("got deltas %v, want [0 2 4]", deltas)
	}
}

func TestRecordsTrailingPartialBatch(t *testing.T) {
	t.Parallel()
	b := buildBatch(t, spec{records: testRecords(3, 3)})
	b = append(b, b[:20]...) // the start of a next batch, as a fetch may end
	n := 0
	err := Records(b, func(Record) bool { n++; return true })
	if err != nil || n != 3 {
		t.Fatalf("got %d records, %v", n, err)
	}
}

func TestRecordsBad(t *testing.T) {
	t.Parallel()
	good := buildBatch(t, spec{records: testRecords(3, 3)})
	tests := []struct {
		name string
		b    []byte
		want *kerr.Error
	}{
		{"short", good[:30], kerr.CorruptMessage},
		{"truncated", good[:len(good)-2], kerr.CorruptMessage},
		{"magic 1", func() []byte { b := append([]byte(nil), good...); b[MagicOffset] = 1; return b }(), kerr.CorruptMessage},
		{"garbage records", batchWithRecordBytes(t, 2, []byte{0x7f, 0x7f, 0x7f}), kerr.InvalidRecord},
		{"unknown codec", buildBatch(t, spec{records: testRecords(1, 1), attrs: 6}), kerr.UnsupportedCompressionType},
		{"bad gzip", buildBatch(t, spec{codec: CodecGzip, records: testRecords(1, 1), edit: func(rb *kmsg.RecordBatch) { rb.Records = []byte{1, 2, 3} }}), kerr.InvalidRecord},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantBatchErr(t, Records(tc.b, func(Record) bool { return true }), tc.want)
		})
	}
}
