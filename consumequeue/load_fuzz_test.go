package consumequeue

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kbroker/kbroker/log"
)

// FuzzOpen writes arbitrary bytes as the queue's files (a, named 0, and b,
// named second when not empty) and opens the queue. Garbage is never an
// error and never a panic: Open keeps a valid prefix (ordered entries, a
// running maximum that never goes down, each file starting with the entry
// its name promises), the cut is durable (a second Open finds the same
// entries), and the queue takes appends after it.
func FuzzOpen(f *testing.F) {
	entries := func(es ...Entry) []byte {
		var out []byte
		for _, e := range es {
			var b [EntrySize]byte
			encode(b[:], e)
			out = append(out, b[:]...)
		}
		return out
	}
	valid := []Entry{
		{Pos: 0, BaseOffset: 0, MaxTimestampSoFar: 10, Size: 70, LastOffsetDelta: 2},
		{Pos: 100, BaseOffset: 3, MaxTimestampSoFar: 12, Size: 80},
		{Pos: 200, BaseOffset: 6, MaxTimestampSoFar: 12, Size: 90, LastOffsetDelta: 4, Attributes: 16},
		{Pos: 300, BaseOffset: 11, MaxTimestampSoFar: 30, Size: 60},
		{Pos: 400, BaseOffset: 12, MaxTimestampSoFar: 31, Size: 60},
	}
	f.Add(entries(valid[:4]...), entries(valid[4]), uint16(12))
	f.Add(entries(valid[:2]...), []byte(nil), uint16(0))
	f.Add(append(entries(valid[:3]...), 1, 2, 3), entries(valid[4]), uint16(12))
	f.Add(entries(valid[1], valid[0]), []byte(nil), uint16(0))
	f.Add(entries(valid[:4]...), entries(valid[4]), uint16(13)) // misnamed second file
	f.Add(make([]byte, 3*EntrySize), entries(valid[4]), uint16(12))
	f.Add([]byte{0xff}, []byte{0xff}, uint16(1))
	f.Fuzz(func(t *testing.T, a, b []byte, second uint16) {
		if len(a) > 64*EntrySize || len(b) > 64*EntrySize {
			return // bigger files test nothing more, only slower
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, log.FileName(0)), a, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && second > 0 {
			if err := os.WriteFile(filepath.Join(dir, log.FileName(int64(second))), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		q, err := Open(dir, 4)
		if err != nil {
			t.Fatalf("Open of garbage: %v, want a cut, not an error", err)
		}
		got := readAll(q)
		if len(got) != q.Len() {
			t.Fatalf("Read gave %d entries, Len %d", len(got), q.Len())
		}
		for i, e := range got {
			if !sane(&e) {
				t.Fatalf("entry %d is not sane: %+v", i, e)
			}
			if i == 0 && e.BaseOffset != 0 {
				t.Fatalf("first entry %+v in the file named 0", e)
			}
			if i > 0 && (e.BaseOffset <= got[i-1].LastOffset() || e.MaxTimestampSoFar < got[i-1].MaxTimestampSoFar) {
				t.Fatalf("entry %d %+v out of order after %+v", i, e, got[i-1])
			}
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}

		q, err = Open(dir, 4)
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		defer q.Close()
		if again := readAll(q); !slices.Equal(again, got) {
			t.Fatalf("second Open found %v, first %v: the cut was not durable", again, got)
		}
		next := Entry{Pos: 1 << 40, BaseOffset: 1 << 20, MaxTimestampSoFar: math.MinInt64, Size: 1}
		if n := len(got); n > 0 {
			if got[n-1].NextOffset() >= math.MaxInt64-1 {
				return // no offset is left to append
			}
			next.BaseOffset = max(next.BaseOffset, got[n-1].NextOffset())
		}
		if err := q.Append(next.Pos, next.Size, next.BaseOffset, 0, 0, next.MaxTimestampSoFar); err != nil {
			t.Fatalf("Append after the cut: %v", err)
		}
		if l, ok := q.Last(); !ok || l.BaseOffset != next.BaseOffset {
			t.Fatalf("Last after Append = %+v, %v", l, ok)
		}
	})
}
