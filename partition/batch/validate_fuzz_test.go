package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// fuzzCodes are the only codes Validate may answer with.
var fuzzCodes = []*kerr.Error{
	kerr.CorruptMessage, kerr.InvalidRecord, kerr.MessageTooLarge,
	kerr.UnsupportedCompressionType, kerr.InvalidTimestamp,
}

// FuzzValidate feeds arbitrary Records fields to Validate. It must never
// panic, must answer with an *Error carrying one of the expected codes, must
// stay within its decompression bound, and any batch it accepts must:
//   - parse with kmsg to the same header;
//   - still verify after Stamp, with the stamped fields read back, for both
//     timestamp types, and validate again once the leader's fields are reset;
//   - when its records were walked, be read by a kgo consumer with the same
//     records and offsets.
//
// Seeds (testdata/fuzz/FuzzValidate) are real batches of every codec, written
// by TestWriteFuzzSeeds.
func FuzzValidate(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzValidate(t, data)
		// The fuzzer cannot forge a CRC-32C, so without help almost every
		// mutation stops at the CRC check. Also try the input with its
		// CRC made right, to reach the header, record and codec paths.
		if len(data) >= HeaderSize {
			end := int64(binary.BigEndian.Uint32(data[LengthOffset:])) + LogOverhead
			if end >= AttributesOffset && end <= int64(len(data)) {
				fixed := bytes.Clone(data)
				binary.BigEndian.PutUint32(fixed[CRCOffset:], crc32.Checksum(fixed[AttributesOffset:end], castagnoli))
				fuzzValidate(t, fixed)
			}
		}
	})
}

func fuzzValidate(t *testing.T, data []byte) {
	for _, opts := range []ValidateOptions{
		{},
		{FullValidation: true, MaxDecompressedBytes: 1 << 20, ProduceVersion: 9},
		{RequireKeys: true, CheckTimestamps: true, Now: 1_700_000_000_000, TimestampBeforeMaxMs: 1 << 40, TimestampAfterMaxMs: 1 << 40, MaxDecompressedBytes: 1 << 20},
	} {
		info, err := Validate(data, opts)
		if err != nil {
			var be *Error
			if !errors.As(err, &be) {
				t.Fatalf("error %T is not *batch.Error: %v", err, err)
			}
			known := false
			for _, c := range fuzzCodes {
				known = known || be.Code == c
			}
			if !known {
				t.Fatalf("unexpected code: %v", err)
			}
			continue
		}
		checkAccepted(t, data, info, opts)
	}
}

func checkAccepted(t *testing.T, data []byte, info Info, opts ValidateOptions) {
	t.Helper()
	if info.Size() != len(data) {
		t.Fatalf("accepted %d bytes as a batch of %d", len(data), info.Size())
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(data); err != nil {
		t.Fatalf("kmsg cannot parse an accepted batch: %v", err)
	}
	if rb.NumRecords != info.NumRecords || rb.LastOffsetDelta != info.LastOffsetDelta || rb.Attributes != info.Attributes || uint32(rb.CRC) != info.CRC {
		t.Fatalf("kmsg header %+v differs from %+v", rb, info.Header)
	}

	// Records agrees with the walk. A compressed batch trusted to its CRC
	// may hold anything; Records just must not panic on it.
	var recs [][2][]byte
	n := int32(0)
	err := (&Reader{MaxDecompressedBytes: max(opts.MaxDecompressedBytes, 1<<20)}).Records(data, func(r Record) bool {
		if info.Walked && r.OffsetDelta != n {
			t.Fatalf("Records: delta %d at %d", r.OffsetDelta, n)
		}
		recs = append(recs, [2][]byte{bytes.Clone(r.Key), bytes.Clone(r.Value)})
		n++
		return true
	})
	if info.Walked {
		if err != nil || n != info.NumRecords {
			t.Fatalf("Records after a walk: %d records, %v", n, err)
		}
	}

	b := bytes.Clone(data)
	if err := Stamp(b, 1<<40, 9, -1); err != nil {
		t.Fatalf("Stamp: %v", err)
	}
	h, err := Verify(b)
	if err != nil {
		t.Fatalf("Verify after CreateTime Stamp: %v", err)
	}
	if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 9 || h.CRC != info.CRC || h.MaxTimestamp != info.MaxTimestamp {
		t.Fatalf("CreateTime stamp read back %+v", h)
	}
	if info.Walked && err == nil {
		kgoCheck(t, b, recs, 1<<40)
	}
	binary.BigEndian.PutUint64(b, 0)
	if _, err := Validate(b, opts); err != nil {
		t.Fatalf("re-Validate after Stamp with the base offset reset: %v", err)
	}
	if err := SetMaxTimestamp(b, info.MaxRecordTimestamp); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(b, opts); err != nil {
		t.Fatalf("re-Validate after SetMaxTimestamp: %v", err)
	}

	b = bytes.Clone(data)
	if err := Stamp(b, 7, -1, 1_234_567); err != nil {
		t.Fatalf("Stamp: %v", err)
	}
	h, err = Verify(b)
	if err != nil {
		t.Fatalf("Verify after LogAppendTime Stamp: %v", err)
	}
	if h.TimestampType() != LogAppendTime || h.MaxTimestamp != 1_234_567 || h.BaseTimestamp != info.BaseTimestamp || h.BaseOffset != 7 {
		t.Fatalf("LogAppendTime stamp read back %+v", h)
	}
}

// kgoCheck reads b as a kgo consumer does and compares it with recs.
func kgoCheck(t *testing.T, b []byte, recs [][2][]byte, base int64) {
	t.Helper()
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset = 1<<62, 1<<62
	rp.RecordBatches = b
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: 0}, &rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		t.Fatalf("kgo refuses an accepted batch: %v", fp.Err)
	}
	if len(fp.Records) != len(recs) {
		t.Fatalf("kgo read %d records, Records %d", len(fp.Records), len(recs))
	}
	for i, r := range fp.Records {
		if r.Offset != base+int64(i) || !bytes.Equal(r.Key, recs[i][0]) || !bytes.Equal(r.Value, recs[i][1]) ||
			(r.Key == nil) != (recs[i][0] == nil) || (r.Value == nil) != (recs[i][1] == nil) {
			t.Fatalf("kgo record %d differs: offset %d key %q value %q", i, r.Offset, r.Key, r.Value)
		}
	}
}

// TestWriteFuzzSeeds rewrites testdata/fuzz/FuzzValidate from batches built
// by the test encoders. Run with KBROKER_WRITE_FUZZ_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if !testenv.Flag(t, "KBROKER_WRITE_FUZZ_SEEDS") {
		t.Skip("set KBROKER_WRITE_FUZZ_SEEDS=1 to rewrite the seed corpus")
	}
	seeds := map[string][]byte{}
	for _, c := range allCodecs {
		seeds[c.name] = buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: testRecords(4, 24), baseTs: 1_700_000_000_000})
	}
	seeds["idempotent"] = buildBatch(t, spec{records: testRecords(2, 8), idem: true, pid: 12, epoch: 1, seq: 2147483646})
	seeds["transactional-zstd"] = buildBatch(t, spec{codec: CodecZstd, records: testRecords(3, 8), idem: true, pid: 3, seq: 0, attrs: AttrTransactional})
	seeds["null-key-value"] = buildBatch(t, spec{records: []kmsg.Record{{}, {OffsetDelta: 1, Key: []byte{}, Value: nil, Headers: []kmsg.Header{{Key: "", Value: nil}}}}})
	bad := buildBatch(t, spec{records: testRecords(2, 4)})
	bad[len(bad)-1] ^= 1
	seeds["bad-crc"] = bad
	seeds["two-batches"] = append(buildBatch(t, spec{records: testRecords(1, 1)}), buildBatch(t, spec{records: testRecords(1, 1)})...)
	seeds["control"] = buildBatch(t, spec{records: testRecords(1, 4), idem: true, pid: 1, seq: 0, attrs: AttrControl | AttrTransactional})
	dir := filepath.Join("testdata", "fuzz", "FuzzValidate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
