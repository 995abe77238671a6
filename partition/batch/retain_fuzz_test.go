package batch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRetain feeds arbitrary bytes and keep patterns: Retain never panics,
// and what it writes is one valid batch with the kept count and the input's
// offsets.
func FuzzRetain(f *testing.F) {
	for _, c := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		f.Add(buildBatch(f, spec{codec: c, records: testRecords(4, 8), baseTs: 10}), uint64(0b0101), int64(-1))
	}
	f.Add(buildBatch(f, spec{records: []kmsg.Record{{Key: []byte("k")}}}), uint64(1), int64(77))
	f.Fuzz(func(t *testing.T, b []byte, pattern uint64, horizon int64) {
		var rt Retainer
		rt.MaxDecompressedBytes = 1 << 20
		defer rt.Close()
		i := 0
		out, kept, err := rt.Retain(nil, b, horizon, func(Record) bool {
			k := pattern&(1<<(i%64)) != 0
			i++
			return k
		})
		if err != nil {
			if len(out) != 0 {
				t.Fatalf("error %v with %d bytes written", err, len(out))
			}
			return
		}
		if kept == 0 {
			if len(out) != 0 {
				t.Fatalf("nothing kept but %d bytes written", len(out))
			}
			return
		}
		h, err := Verify(out)
		if err != nil {
			t.Fatalf("output does not verify: %v", err)
		}
		in, _ := ParseHeader(b)
		if int(h.NumRecords) != kept || h.BaseOffset != in.BaseOffset || h.LastOffsetDelta != in.LastOffsetDelta {
			t.Fatalf("output header %+v for %d kept of %+v", h, kept, in)
		}
		n := 0
		if err := Records(out, func(Record) bool { n++; return true }); err != nil || n != kept {
			t.Fatalf("output has %d readable records (%v), want %d", n, err, kept)
		}
	})
}
