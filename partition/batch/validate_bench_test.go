package batch

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchRecords makes n records of valueSize-byte values (short keys, no
// headers), the shape of a typical keyed produce. Values are text drawn from
// a small vocabulary, so they compress about as well as JSON does; runs of
// one byte would make zstd and snappy look slow (byte-wise overlapping
// copies) and everything else look fast.
func benchRecords(n, valueSize int) []kmsg.Record {
	words := []string{"order", "user", "id", "amount", "currency", "EUR", "status", "shipped", "\"", ":", ",", "{", "}", "2024-05-01T10:00:00Z"}
	rng := rand.New(rand.NewPCG(1, 2))
	rs := testRecords(n, 0)
	for i := range rs {
		rs[i].Headers = nil
		v := make([]byte, 0, valueSize+32)
		for len(v) < valueSize {
			v = append(v, words[rng.IntN(len(words))]...)
			v = strconv.AppendInt(v, int64(rng.IntN(10000)), 10)
		}
		rs[i].Value = v[:valueSize]
	}
	return rs
}

func BenchmarkValidate(b *testing.B) {
	cases := []struct {
		name string
		s    spec
		opts ValidateOptions
	}{
		// 16 records of ~1 KiB: a 16 KiB batch.
		{"uncompressed-16KiB", spec{records: benchRecords(16, 1000), idem: true, pid: 1, seq: 0}, ValidateOptions{}},
		// 100 small records: the per-record walk dominates.
		{"uncompressed-100records", spec{records: benchRecords(100, 100), idem: true, pid: 1, seq: 0}, ValidateOptions{}},
		{"zstd-16KiB-trusted", spec{codec: CodecZstd, records: benchRecords(16, 1000)}, ValidateOptions{}},
		{"zstd-16KiB-full", spec{codec: CodecZstd, records: benchRecords(16, 1000)}, ValidateOptions{FullValidation: true}},
		{"lz4-16KiB-full", spec{codec: CodecLZ4, records: benchRecords(16, 1000)}, ValidateOptions{FullValidation: true}},
		{"snappy-16KiB-full", spec{codec: CodecSnappy, records: benchRecords(16, 1000)}, ValidateOptions{FullValidation: true}},
		{"gzip-16KiB-full", spec{codec: CodecGzip, records: benchRecords(16, 1000)}, ValidateOptions{FullValidation: true}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			batch := buildBatch(b, c.s)
			if _, err := Validate(batch, c.opts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				if _, err := Validate(batch, c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStamp(b *testing.B) {
	batch := buildBatch(b, spec{records: benchRecords(16, 1000)})
	for _, lat := range []struct {
		name string
		ts   int64
	}{{"create-time", -1}, {"log-append-time", 1_700_000_000_000}} {
		b.Run(lat.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(batch)))
			i := int64(0)
			for b.Loop() {
				i++
				// A new timestamp each time so LogAppendTime recomputes the CRC.
				ts := lat.ts
				if ts >= 0 {
					ts += i
				}
				if err := Stamp(batch, i, 3, ts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
