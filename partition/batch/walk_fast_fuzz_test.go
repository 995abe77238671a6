package batch

import (
	"testing"
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
