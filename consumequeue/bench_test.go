package consumequeue

import (
	"testing"
)

func BenchmarkAppend(b *testing.B) {
	q := openQueue(b, b.TempDir(), 1<<16)
	var i int64
	b.ReportAllocs()
	b.SetBytes(EntrySize)
	for b.Loop() {
		if err := q.Append(i*1100, 1024, i*10, 9, 0, i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkFindRead(b *testing.B) {
	const n = 1 << 18
	q := openQueue(b, b.TempDir(), 1<<16)
	for i := range int64(n) {
		if err := q.Append(i*1100, 1024, i*10, 9, 0, i); err != nil {
			b.Fatal(err)
		}
	}
	hw := q.NextOffset()
	for _, bc := range []struct {
		name string
		span int64 // offsets are drawn from the last span offsets
	}{{"tail", 10 * 100}, {"random", 10 * n}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]Entry, 0, 16)
			x := uint64(1)
			b.ReportAllocs()
			for b.Loop() {
				x = x*6364136223846793005 + 1442695040888963407
				off := hw - 1 - int64(x>>33)%bc.span
				buf = q.Read(off, hw, 16, buf[:0])
				if len(buf) == 0 {
					b.Fatal("nothing read")
				}
			}
		})
	}
}
