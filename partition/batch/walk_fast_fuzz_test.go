package batch

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzWalkFast holds Validate's fast record walk to the slow one it stands
// in for: over any records area and options, walkFast accepts exactly what
// walk accepts, with the same record statistics. (Validate falls back to
// walk when walkFast refuses, so a fast walk that refused a valid batch
// would only cost time; one that accepted an invalid batch would store it.)
func FuzzWalkFast(f *testing.F) {
	// Timestamp deltas of one, two and three bytes, negative ones too.
	wideTs := testRecords(4, 70)
	for i, d := range []int64{-1, 8191, -8192, 1 << 40} {
		wideTs[i].TimestampDelta64 = d
	}
	for _, s := range []spec{
		{records: benchRecords(3, 20)},
		{records: testRecords(5, 0)},
		{records: testRecords(70, 0)},
		// Two-byte record and value lengths and, past 63, offset deltas:
		// kbench's raw records, the shape walkFast is tuned for.
		{records: rawRecords(80, 100)},
		// Headers after two-byte value lengths.
		{records: testRecords(3, 200)},
		{records: wideTs},
	} {
		b := buildBatch(f, s)
		f.Add(b[RecordsOffset:], int32(len(s.records)), int64(1_700_000_000_000), int64(1_700_000_000_100), false, false, false)
	}
	f.Add([]byte{0x0c, 0, 0, 0, 1, 0, 0}, int32(1), int64(5), int64(5), true, true, true)
	// Non-minimal varints (Kafka reads them): a two-byte record length
	// 11, a two-byte timestamp delta 0, a five-byte key length -1.
	f.Add([]byte{0x96, 0x00, 0, 0x80, 0x00, 0, 0x81, 0x80, 0x80, 0x80, 0x00, 1, 0}, int32(1), int64(5), int64(5), false, false, false)
	f.Fuzz(func(t *testing.T, data []byte, count int32, baseTs, maxTs int64, appendTime, requireKeys, checkTs bool) {
		h := Header{NumRecords: count, LastOffsetDelta: count - 1, BaseTimestamp: baseTs, MaxTimestamp: maxTs}
		if appendTime {
			h.Attributes |= AttrTimestampType
		}
		opts := ValidateOptions{RequireKeys: requireKeys}
		if checkTs {
			opts.CheckTimestamps = true
			opts.Now = baseTs + 1000
			opts.TimestampBeforeMaxMs = 5000
			opts.TimestampAfterMaxMs = 100
		}
		fastTs, fastDelta, ok := walkFast(data, &h, &opts)
		info := Info{Header: h}
		err := walk(data, &info, &opts)
		if ok != (err == nil) {
			t.Fatalf("fast walk ok=%v, slow walk err=%v", ok, err)
		}
		if ok && (fastTs != info.MaxRecordTimestamp || fastDelta != info.MaxTimestampOffsetDelta) {
			t.Fatalf("fast walk max timestamp %d at %d, slow %d at %d", fastTs, fastDelta, info.MaxRecordTimestamp, info.MaxTimestampOffsetDelta)
		}
	})
}

// TestWalkFastLargeBatches runs FuzzWalkFast's comparison over batches too
// large for a fuzz corpus: thousands of records, so offset deltas of three
// bytes (from 8,192) and timestamp deltas of three, and one-byte damage at
// random places. Either walk may accept or refuse a damaged batch; they
// must agree.
func TestWalkFastLargeBatches(t *testing.T) {
	shapes := map[string][]kmsg.Record{
		"raw-100B":       rawRecords(9000, 100),
		"keyed-headers":  testRecords(9000, 30),
		"raw-1KiB-short": rawRecords(300, 1000),
	}
	rng := rand.New(rand.NewPCG(18, 1))
	for name, rs := range shapes {
		b := buildBatch(t, spec{records: rs, baseTs: 1_700_000_000_000})
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		clean := b[RecordsOffset:]
		optsList := []ValidateOptions{
			{},
			{RequireKeys: true},
			{CheckTimestamps: true, Now: 1_700_000_010_000, TimestampBeforeMaxMs: 20_000, TimestampAfterMaxMs: 20_000},
		}
		// Where each record starts: most damage goes to the framing
		// (lengths, deltas), where a value byte would change nothing.
		var starts []int
		for sc := newScanner(clean, &h, true); sc.more(); {
			starts = append(starts, sc.pos)
			if _, err := sc.next(); err != nil {
				t.Fatal(err)
			}
		}
		for trial := range 60 {
			data := bytes.Clone(clean)
			switch { // trial 0: the intact batch
			case trial > 0 && trial%4 == 0:
				data[rng.IntN(len(data))] = byte(rng.Uint32())
			case trial > 0:
				at := starts[rng.IntN(len(starts))] + rng.IntN(8)
				data[min(at, len(data)-1)] = byte(rng.Uint32())
			}
			for _, opts := range optsList {
				fastTs, fastDelta, ok := walkFast(data, &h, &opts)
				info := Info{Header: h}
				err := walk(data, &info, &opts)
				if ok != (err == nil) {
					t.Fatalf("%s trial %d %+v: fast walk ok=%v, slow walk err=%v", name, trial, opts, ok, err)
				}
				if ok && (fastTs != info.MaxRecordTimestamp || fastDelta != info.MaxTimestampOffsetDelta) {
					t.Fatalf("%s trial %d: fast walk max timestamp %d at %d, slow %d at %d", name, trial, fastTs, fastDelta, info.MaxRecordTimestamp, info.MaxTimestampOffsetDelta)
				}
				if trial == 0 && !opts.RequireKeys && !ok {
					t.Fatalf("%s: the intact batch was refused: %v", name, err)
				}
			}
		}
	}
}
