package batch

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchWithKgo parses b the way a kgo consumer parses a fetch response:
// CRC check, decompression, offsets and timestamps.
func fetchWithKgo(t *testing.T, b []byte) []*kgo.Record {
	t.Helper()
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset = 1<<40, 1<<40
	rp.RecordBatches = b
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"}, &rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		t.Fatalf("kgo fetch: %v", fp.Err)
	}
	return fp.Records
}

func TestStampRoundTrip(t *testing.T) {
	t.Parallel()
	const (
		baseTs = 1_700_000_000_000
		lat    = 1_800_000_000_000
	)
	for _, c := range allCodecs {
		for _, appendTime := range []bool{false, true} {
			name := c.name + "/create-time"
			if appendTime {
				name = c.name + "/log-append-time"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				recs := testRecords(20, 50)
				b := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: recs, baseTs: baseTs, idem: true, pid: 9, epoch: 2, seq: 40})
				info, err := Validate(b, ValidateOptions{FullValidation: true})
				wantBatchErr(t, err, nil)
				crcBefore := info.CRC

				ts := int64(-1)
				if appendTime {
					ts = lat
				}
				if err := Stamp(b, 1_000_000, 17, ts); err != nil {
					t.Fatal(err)
				}
				if !ChecksumOK(b) {
					t.Fatal("CRC does not verify after Stamp")
				}
				h, err := Verify(b)
				wantBatchErr(t, err, nil)
				if h.BaseOffset != 1_000_000 || h.PartitionLeaderEpoch != 17 {
					t.Fatalf("got base offset %d epoch %d, want 1000000 17", h.BaseOffset, h.PartitionLeaderEpoch)
				}
				if h.BaseTimestamp != baseTs || h.ProducerID != 9 || h.BaseSequence != 40 || h.NumRecords != 20 {
					t.Fatalf("unrelated fields changed: %+v", h)
				}
				wantType, wantMax := CreateTime, info.MaxTimestamp
				if appendTime {
					wantType, wantMax = LogAppendTime, int64(lat)
				}
				if h.TimestampType() != wantType || h.MaxTimestamp != wantMax {
					t.Fatalf("got %v max %d, want %v max %d", h.TimestampType(), h.MaxTimestamp, wantType, wantMax)
				}
				if !appendTime && h.CRC != crcBefore {
					t.Fatal("CreateTime stamp changed the CRC; BaseOffset and epoch are outside it")
				}
				if h.Compression() != c.codec {
					t.Fatalf("codec: got %v, want %v", h.Compression(), c.codec)
				}

				// kmsg sees the stamped header.
				var rb kmsg.RecordBatch
				if err := rb.ReadFrom(b); err != nil {
					t.Fatal(err)
				}
				if rb.FirstOffset != 1_000_000 || rb.PartitionLeaderEpoch != 17 || (rb.Attributes&0x08 != 0) != appendTime || rb.MaxTimestamp != wantMax {
					t.Fatalf("kmsg: got %+v", rb)
				}

				// A kgo consumer reads offsets and timestamps as stamped.
				got := fetchWithKgo(t, b)
				if len(got) != 20 {
					t.Fatalf("kgo: got %d records, want 20", len(got))
				}
				for i, r := range got {
					wantTs := int64(baseTs) + recs[i].TimestampDelta64
					if appendTime {
						wantTs = lat
					}
					if r.Offset != 1_000_000+int64(i) || r.Timestamp.UnixMilli() != wantTs || r.LeaderEpoch != 17 {
						t.Fatalf("kgo record %d: offset %d ts %d epoch %d, want %d %d 17", i, r.Offset, r.Timestamp.UnixMilli(), r.LeaderEpoch, 1_000_000+i, wantTs)
					}
					if tt := r.Attrs.TimestampType(); (tt == 1) != appendTime {
						t.Fatalf("kgo record %d: timestamp type %d", i, tt)
					}
					if !bytes.Equal(r.Value, recs[i].Value) {
						t.Fatalf("kgo record %d: value differs", i)
					}
				}

				// Records reports the LogAppendTime to every record.
				n := 0
				err = Records(b, func(r Record) bool {
					if appendTime && r.Timestamp != lat {
						t.Fatalf("record %d: timestamp %d, want %d", n, r.Timestamp, int64(lat))
					}
					n++
					return true
				})
				if err != nil || n != 20 {
					t.Fatalf("Records: %d records, %v", n, err)
				}

				// With the leader's fields reset, the batch validates as
				// produced (CreateTime only: producers may not claim
				// LogAppendTime).
				if !appendTime {
					binary.BigEndian.PutUint64(b, 0)
					_, err = Validate(b, ValidateOptions{FullValidation: true})
					wantBatchErr(t, err, nil)
				}
			})
		}
	}
}

func TestStampIdempotentCRC(t *testing.T) {
	t.Parallel()
	b := buildBatch(t, spec{records: testRecords(3, 3)})
	if err := Stamp(b, 5, 1, 1234); err != nil {
		t.Fatal(err)
	}
	first := bytes.Clone(b)
	if err := Stamp(b, 5, 1, 1234); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, b) {
		t.Fatal("stamping twice changed the batch")
	}
}

func TestSetMaxTimestamp(t *testing.T) {
	t.Parallel()
	rs := testRecords(4, 3)
	b := buildBatch(t, spec{records: rs, baseTs: 1000, maxTs: 1}) // wrong MaxTimestamp from the producer
	info, err := Validate(b, ValidateOptions{})
	wantBatchErr(t, err, nil)
	crc := info.CRC
	if err := SetMaxTimestamp(b, info.MaxRecordTimestamp); err != nil {
		t.Fatal(err)
	}
	h, err := Verify(b)
	wantBatchErr(t, err, nil)
	if h.MaxTimestamp != 1009 || h.CRC == crc || h.TimestampType() != CreateTime {
		t.Fatalf("got max %d crc %08x (was %08x)", h.MaxTimestamp, h.CRC, crc)
	}
	// Unchanged value: no write, same CRC.
	before := bytes.Clone(b)
	if err := SetMaxTimestamp(b, 1009); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, b) {
		t.Fatal("SetMaxTimestamp rewrote an unchanged batch")
	}
}

func TestStampRefusesBadInput(t *testing.T) {
	t.Parallel()
	good := buildBatch(t, spec{records: testRecords(2, 2)})
	tests := []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"short", good[:HeaderSize-1]},
		{"truncated", good[:len(good)-1]},
		{"longer", append(bytes.Clone(good), 0)},
		{"magic 1", func() []byte { b := bytes.Clone(good); b[MagicOffset] = 1; return b }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			orig := bytes.Clone(tc.b)
			wantBatchErr(t, Stamp(tc.b, 1, 1, 1), kerr.CorruptMessage)
			wantBatchErr(t, SetMaxTimestamp(tc.b, 1), kerr.CorruptMessage)
			if !bytes.Equal(orig, tc.b) {
				t.Fatal("a refused Stamp wrote to the batch")
			}
		})
	}
}

func TestStampNoAllocs(t *testing.T) {
	b := buildBatch(t, spec{records: testRecords(10, 100)})
	allocs := testing.AllocsPerRun(100, func() {
		if err := Stamp(b, 7, 3, 99); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %.1f allocs/op, want 0", allocs)
	}
}
