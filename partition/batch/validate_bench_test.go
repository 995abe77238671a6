package batch

import (
	"bytes"
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
		// kbench's raw producer: ~1 MiB of 100 B values, null keys, no
		// headers, timestamp delta 0: per-record cost at its plainest.
		{"uncompressed-1MiB-100B", spec{records: rawRecords(9000, 100)}, ValidateOptions{}},
		// The same with ~1 KiB values.
		{"uncompressed-1MiB-1KiB", spec{records: rawRecords(1000, 1000)}, ValidateOptions{}},
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
			reportPerRecord(b, len(c.s.records))
		})
	}
}

// rawRecords makes n records of valueSize-byte values with null keys, no
// headers and timestamp delta 0, as kbench's raw producer sends them.
func rawRecords(n, valueSize int) []kmsg.Record {
	rs := benchRecords(n, valueSize)
	for i := range rs {
		rs[i].Key = nil
		rs[i].TimestampDelta64 = 0
	}
	return rs
}

// reportPerRecord adds the ns/record metric: the per-record cost that
// issue 18 is about, comparable across batch shapes.
func reportPerRecord(b *testing.B, records int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(records), "ns/record")
}

// BenchmarkWalk separates the record walks from the CRC: walkFast is what
// a valid batch costs beyond framing and CRC, walk the precise walk
// Validate falls back to.
func BenchmarkWalk(b *testing.B) {
	cases := []struct {
		name string
		rs   []kmsg.Record
	}{
		{"100B-nullkey", rawRecords(9000, 100)},
		{"1KiB-nullkey", rawRecords(1000, 1000)},
		{"100B-keyed-headers", testRecords(9000, 100)},
	}
	for _, c := range cases {
		batch := buildBatch(b, spec{records: c.rs})
		h, err := ParseHeader(batch)
		if err != nil {
			b.Fatal(err)
		}
		data := batch[RecordsOffset:]
		opts := ValidateOptions{}
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, _, ok := walkFast(data, &h, &opts); !ok {
					b.Fatal("fast walk refused a valid batch")
				}
			}
			reportPerRecord(b, len(c.rs))
		})
		b.Run(c.name+"/precise", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				info := Info{Header: h}
				if err := walk(data, &info, &opts); err != nil {
					b.Fatal(err)
				}
			}
			reportPerRecord(b, len(c.rs))
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

// BenchmarkValidateCold validates batches that are not in the CPU caches:
// 64 copies of a 1 MiB batch of 100 B records taken in turn, as the broker
// meets a request the kernel has just copied out of the socket while
// earlier ones went on to the commit log. Against the warm
// uncompressed-1MiB-100B case of BenchmarkValidate it shows what memory,
// not the walk's instructions, costs per record.
func BenchmarkValidateCold(b *testing.B) {
	rs := rawRecords(9000, 100)
	one := buildBatch(b, spec{records: rs})
	copies := make([][]byte, 64)
	for i := range copies {
		copies[i] = bytes.Clone(one)
	}
	b.SetBytes(int64(len(one)))
	i := 0
	for b.Loop() {
		if _, err := Validate(copies[i%len(copies)], ValidateOptions{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportPerRecord(b, len(rs))
}
