package consumequeue

import (
	"math"
	"os"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/log"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }

// testBatch is the input of one Append.
type testBatch struct {
	pos   int64
	size  int32
	base  int64
	delta int32
	attrs int16
	ts    int64 // the batch's own MaxTimestamp
}

// testBatches builds n batches with varying sizes, gaps between some
// batches' offsets, and timestamps that go up and down.
func testBatches(n int) []testBatch {
	out := make([]testBatch, n)
	var pos, off int64 = 4096, 0
	for i := range out {
		b := testBatch{
			pos:   pos,
			size:  int32(61 + 13*(i%5)),
			base:  off,
			delta: int32(i % 3),
			attrs: int16(i % 4),
			ts:    1000 + int64(i*37%11)*10 - int64(i%4)*25,
		}
		out[i] = b
		pos = b.pos + int64(b.size) + 32 // a store header between batches
		off = b.base + int64(b.delta) + 1
		if i%5 == 4 {
			off += 2 // a gap, as compaction or aborted markers could leave
		}
	}
	return out
}

// wantEntries is what the queue must hold after appending bs in order.
func wantEntries(bs []testBatch) []Entry {
	out := make([]Entry, len(bs))
	run := int64(math.MinInt64)
	for i, b := range bs {
		run = max(run, b.ts)
		out[i] = Entry{Pos: b.pos, BaseOffset: b.base, MaxTimestampSoFar: run, Size: b.size, LastOffsetDelta: b.delta, Attributes: b.attrs}
	}
	return out
}

// openQueue opens the queue in dir and closes it at cleanup.
func openQueue(t testing.TB, dir string, perFile int) *Queue {
	t.Helper()
	q, err := Open(dir, perFile)
	if err != nil {
		t.Fatalf("Open(%s, %d): %v", dir, perFile, err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func appendBatches(t testing.TB, q *Queue, bs ...testBatch) {
	t.Helper()
	for _, b := range bs {
		if err := q.Append(b.pos, b.size, b.base, b.delta, b.attrs, b.ts); err != nil {
			t.Fatalf("Append(base %d): %v", b.base, err)
		}
	}
}

// readAll reads every entry of q.
func readAll(q *Queue) []Entry {
	return q.Read(math.MinInt64, math.MaxInt64, math.MaxInt, nil)
}

// checkQueue verifies every reader of q against want.
func checkQueue(t *testing.T, q *Queue, want []Entry) {
	t.Helper()
	if got := readAll(q); !slices.Equal(got, want) {
		t.Fatalf("entries:\ngot  %v\nwant %v", got, want)
	}
	if got := q.Len(); got != len(want) {
		t.Fatalf("Len = %d, want %d", got, len(want))
	}
	last, ok := q.Last()
	if len(want) == 0 {
		if ok {
			t.Fatalf("Last of an empty queue = %v", last)
		}
		return
	}
	if !ok || last != want[len(want)-1] {
		t.Fatalf("Last = %v, %v; want %v", last, ok, want[len(want)-1])
	}
	if got := q.FirstOffset(); got != want[0].BaseOffset {
		t.Fatalf("FirstOffset = %d, want %d", got, want[0].BaseOffset)
	}
	if got := q.NextOffset(); got != last.NextOffset() {
		t.Fatalf("NextOffset = %d, want %d", got, last.NextOffset())
	}
}

// refFind is Find by linear scan.
func refFind(want []Entry, offset int64) (Entry, bool) {
	for _, e := range want {
		if e.NextOffset() > offset {
			return e, true
		}
	}
	return Entry{}, false
}

// refRead is Read by linear scan.
func refRead(want []Entry, offset, end int64, maxEntries int) []Entry {
	var out []Entry
	for _, e := range want {
		if len(out) == maxEntries || e.BaseOffset >= end {
			break
		}
		if e.NextOffset() > offset {
			out = append(out, e)
		}
	}
	return out
}

// fileNames lists the queue's files as start offsets.
func fileNames(t *testing.T, dir string) []int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range ents {
		from, ok := log.ParseFileName(e.Name())
		if !ok {
			t.Fatalf("unexpected file %s in %s", e.Name(), dir)
		}
		out = append(out, from)
	}
	return out
}

// wantFiles is the file list for want with perFile entries per file.
func wantFiles(want []Entry, perFile int) []int64 {
	var out []int64
	for i := 0; i < len(want); i += perFile {
		out = append(out, want[i].BaseOffset)
	}
	return out
}

// zerosAfter fails unless the file holds only zeros from byte off on.
func zerosAfter(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := off; i < int64(len(b)); i++ {
		if b[i] != 0 {
			t.Fatalf("%s: byte %d is %#x after the cut at %d, want 0", path, i, b[i], off)
		}
	}
}
