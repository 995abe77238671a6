package partition

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kbroker/kbroker/log"
)

// cqBatch is the input of one Append.
type cqBatch struct {
	pos   int64
	size  int32
	base  int64
	delta int32
	attrs int16
	ts    int64 // the batch's own MaxTimestamp
}

// cqTestBatches builds n batches with varying sizes, gaps between some
// batches' offsets, and timestamps that go up and down.
func cqTestBatches(n int) []cqBatch {
	out := make([]cqBatch, n)
	var pos, off int64 = 4096, 0
	for i := range out {
		b := cqBatch{
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

// cqWant is what the queue must hold after appending bs in order.
func cqWant(bs []cqBatch) []CQEntry {
	out := make([]CQEntry, len(bs))
	run := int64(math.MinInt64)
	for i, b := range bs {
		run = max(run, b.ts)
		out[i] = CQEntry{Pos: b.pos, BaseOffset: b.base, MaxTimestampSoFar: run, Size: b.size, LastOffsetDelta: b.delta, Attributes: b.attrs}
	}
	return out
}

// cqOpen opens the queue in dir and closes it at cleanup.
func cqOpen(t testing.TB, dir string, perFile int) *ConsumeQueue {
	t.Helper()
	q, err := OpenConsumeQueue(dir, perFile)
	if err != nil {
		t.Fatalf("OpenConsumeQueue(%s, %d): %v", dir, perFile, err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func cqAppend(t testing.TB, q *ConsumeQueue, bs ...cqBatch) {
	t.Helper()
	for _, b := range bs {
		if err := q.Append(b.pos, b.size, b.base, b.delta, b.attrs, b.ts); err != nil {
			t.Fatalf("Append(base %d): %v", b.base, err)
		}
	}
}

// cqAll reads every entry of q.
func cqAll(q *ConsumeQueue) []CQEntry {
	return q.Read(math.MinInt64, math.MaxInt64, math.MaxInt, nil)
}

// cqCheck verifies every reader of q against want.
func cqCheck(t *testing.T, q *ConsumeQueue, want []CQEntry) {
	t.Helper()
	if got := cqAll(q); !slices.Equal(got, want) {
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

// cqRefFind is Find by linear scan.
func cqRefFind(want []CQEntry, offset int64) (CQEntry, bool) {
	for _, e := range want {
		if e.NextOffset() > offset {
			return e, true
		}
	}
	return CQEntry{}, false
}

// cqRefRead is Read by linear scan.
func cqRefRead(want []CQEntry, offset, end int64, maxEntries int) []CQEntry {
	var out []CQEntry
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

// cqFileNames lists the queue's files as start offsets.
func cqFileNames(t *testing.T, dir string) []int64 {
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

// cqWantFiles is the file list for want with perFile entries per file.
func cqWantFiles(want []CQEntry, perFile int) []int64 {
	var out []int64
	for i := 0; i < len(want); i += perFile {
		out = append(out, want[i].BaseOffset)
	}
	return out
}

// cqZeroAfter fails unless the file holds only zeros from byte off on.
func cqZeroAfter(t *testing.T, path string, off int64) {
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

func TestConsumeQueueAppendFindRead(t *testing.T) {
	for _, perFile := range []int{1, 4, 8} {
		t.Run(fmt.Sprintf("perFile=%d", perFile), func(t *testing.T) {
			dir := t.TempDir()
			q := cqOpen(t, dir, perFile)
			bs := cqTestBatches(30)
			cqAppend(t, q, bs...)
			want := cqWant(bs)
			cqCheck(t, q, want)
			if got, w := cqFileNames(t, dir), cqWantFiles(want, perFile); !slices.Equal(got, w) {
				t.Fatalf("files %v, want %v (named by their first base offset)", got, w)
			}
			next := want[len(want)-1].NextOffset()
			for off := int64(-2); off <= next+2; off++ {
				got, ok := q.Find(off)
				w, wok := cqRefFind(want, off)
				if got != w || ok != wok {
					t.Fatalf("Find(%d) = %v, %v; want %v, %v", off, got, ok, w, wok)
				}
				for _, end := range []int64{0, off, off + 1, off + 5, want[len(want)/2].BaseOffset, next, math.MaxInt64} {
					for _, n := range []int{0, 1, 3, 16, 100} {
						gotR := q.Read(off, end, n, nil)
						if wR := cqRefRead(want, off, end, n); !slices.Equal(gotR, wR) {
							t.Fatalf("Read(%d, %d, %d) = %v, want %v", off, end, n, gotR, wR)
						}
					}
				}
			}
			// Read appends after what buf already holds.
			pre := []CQEntry{{BaseOffset: -7}}
			if got := q.Read(0, next, 2, pre); len(got) != 3 || got[0].BaseOffset != -7 || got[1] != want[0] || got[2] != want[1] {
				t.Fatalf("Read onto a non-empty buf = %v", got)
			}
		})
	}
}

// Files larger than the 8 KiB warm section take the other search paths.
func TestConsumeQueueLargeFiles(t *testing.T) {
	const perFile = 600
	q := cqOpen(t, t.TempDir(), perFile)
	bs := cqTestBatches(1500)
	cqAppend(t, q, bs...)
	want := cqWant(bs)
	cqCheck(t, q, want)
	next := want[len(want)-1].NextOffset()
	j := 0 // index of the first entry with NextOffset > off
	for off := int64(-1); off <= next; off++ {
		for j < len(want) && want[j].NextOffset() <= off {
			j++
		}
		got, ok := q.Find(off)
		if j == len(want) {
			if ok {
				t.Fatalf("Find(%d) = %v past the end", off, got)
			}
			continue
		}
		if !ok || got != want[j] {
			t.Fatalf("Find(%d) = %v, %v; want %v", off, got, ok, want[j])
		}
		if off%7 == 0 {
			end := off + 40
			if r, w := q.Read(off, end, 16, nil), cqRefRead(want[j:], off, end, 16); !slices.Equal(r, w) {
				t.Fatalf("Read(%d, %d, 16) = %v, want %v", off, end, r, w)
			}
		}
	}
	j = 0
	for ts := want[0].MaxTimestampSoFar - 1; ts <= want[len(want)-1].MaxTimestampSoFar+1; ts++ {
		for j < len(want) && want[j].MaxTimestampSoFar < ts {
			j++
		}
		got, ok := q.FindTimestamp(ts)
		if (j < len(want)) != ok || (ok && got != want[j]) {
			t.Fatalf("FindTimestamp(%d) = %v, %v; want entry %d", ts, got, ok, j)
		}
	}
	if err := q.TruncateFromPos(want[1100].End()); err != nil {
		t.Fatal(err)
	}
	if err := q.TruncateFromOffset(want[1000].BaseOffset + 1); err != nil {
		t.Fatal(err)
	}
	cqCheck(t, q, want[:1001])
}

// A memory fault on the mapping (SIGBUS: here the file is shrunk under the
// mapping, in production a media error) is an error, not a crash, and it
// is sticky.
func TestConsumeQueueFault(t *testing.T) {
	dir := t.TempDir()
	q := cqOpen(t, dir, 4096)
	bs := cqTestBatches(100)
	cqAppend(t, q, bs...)
	want := cqWant(bs)
	if err := os.Truncate(filepath.Join(dir, log.FileName(0)), 0); err != nil {
		t.Fatal(err)
	}
	if e, ok := q.Find(want[50].BaseOffset); ok {
		t.Fatalf("Find on a faulting file = %v", e)
	}
	if got := q.Read(want[50].BaseOffset, math.MaxInt64, 16, nil); len(got) != 0 {
		t.Fatalf("Read on a faulting file = %v", got)
	}
	if e, ok := q.Last(); ok {
		t.Fatalf("Last on a faulting file = %v", e)
	}
	if err := q.Append(1<<30, 100, 1<<30, 0, 0, 0); !errors.Is(err, log.ErrFault) {
		t.Fatalf("Append after a fault: %v, want log.ErrFault", err)
	}
	if err := q.Flush(); !errors.Is(err, log.ErrFault) {
		t.Fatalf("Flush after a fault: %v, want log.ErrFault", err)
	}
	if err := q.Close(); !errors.Is(err, log.ErrFault) {
		t.Fatalf("Close after a fault: %v, want log.ErrFault", err)
	}
}

func TestConsumeQueueEmpty(t *testing.T) {
	q := cqOpen(t, filepath.Join(t.TempDir(), "a", "b"), 4)
	cqCheck(t, q, nil)
	if e, ok := q.Find(0); ok {
		t.Fatalf("Find on an empty queue = %v", e)
	}
	if e, ok := q.FindTimestamp(0); ok {
		t.Fatalf("FindTimestamp on an empty queue = %v", e)
	}
	if n, err := q.DeleteBefore(100); n != 0 || err != nil {
		t.Fatalf("DeleteBefore on an empty queue = %d, %v", n, err)
	}
	if err := q.TruncateFromOffset(0); err != nil {
		t.Fatal(err)
	}
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	// The first entry may start anywhere: the first file is named by it.
	cqAppend(t, q, cqBatch{pos: 10, size: 70, base: 1234, delta: 9, ts: 5})
	if e, ok := q.Find(0); !ok || e.BaseOffset != 1234 {
		t.Fatalf("Find(0) = %v, %v; want the entry at 1234", e, ok)
	}
}

func TestConsumeQueueAllocs(t *testing.T) {
	q := cqOpen(t, t.TempDir(), 8)
	bs := cqTestBatches(100)
	cqAppend(t, q, bs...)
	want := cqWant(bs)
	buf := make([]CQEntry, 0, 16)
	offsets := []int64{0, want[40].BaseOffset + 1, want[93].BaseOffset, want[99].NextOffset() - 1}
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		off := offsets[i%len(offsets)]
		i++
		if _, ok := q.Find(off); !ok {
			t.Fatalf("Find(%d) found nothing", off)
		}
		buf = q.Read(off, want[99].NextOffset(), 16, buf[:0])
		if len(buf) == 0 {
			t.Fatalf("Read(%d) read nothing", off)
		}
		q.FindTimestamp(want[50].MaxTimestampSoFar)
		q.Last()
		q.Len()
	})
	if allocs != 0 {
		t.Fatalf("Find+Read+FindTimestamp+Last allocate %.1f times, want 0", allocs)
	}

	// Appends allocate only when they create a file.
	q2 := cqOpen(t, t.TempDir(), 1024)
	cqAppend(t, q2, cqBatch{pos: 0, size: 100, base: 0, ts: 1})
	next := int64(1)
	allocs = testing.AllocsPerRun(200, func() {
		if err := q2.Append(next*100, 100, next, 0, 0, next); err != nil {
			t.Fatal(err)
		}
		next++
	})
	if allocs != 0 {
		t.Fatalf("Append allocates %.1f times, want 0", allocs)
	}
}

func TestConsumeQueueFindTimestamp(t *testing.T) {
	tss := []int64{5, 3, 9, 7, 9, 12, 1, 15, -1, 20, 20, 18, 25}
	var bs []cqBatch
	for i, ts := range tss {
		bs = append(bs, cqBatch{pos: int64(i) * 100, size: 90, base: int64(i) * 10, delta: 4, ts: ts})
	}
	q := cqOpen(t, t.TempDir(), 4)
	cqAppend(t, q, bs...)
	want := cqWant(bs)
	cqCheck(t, q, want)
	wantRun := []int64{5, 5, 9, 9, 9, 12, 12, 15, 15, 20, 20, 20, 25}
	for i, e := range cqAll(q) {
		if e.MaxTimestampSoFar != wantRun[i] {
			t.Fatalf("entry %d: MaxTimestampSoFar = %d, want %d", i, e.MaxTimestampSoFar, wantRun[i])
		}
	}
	for ts := int64(-3); ts <= 27; ts++ {
		got, ok := q.FindTimestamp(ts)
		var w CQEntry
		wok := false
		for _, e := range want {
			if e.MaxTimestampSoFar >= ts {
				w, wok = e, true
				break
			}
		}
		if got != w || ok != wok {
			t.Fatalf("FindTimestamp(%d) = %v, %v; want %v, %v", ts, got, ok, w, wok)
		}
	}
}

func TestConsumeQueueReopen(t *testing.T) {
	dir := t.TempDir()
	q := cqOpen(t, dir, 4)
	bs := cqTestBatches(21)
	cqAppend(t, q, bs...)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Append(1<<40, 100, 1<<40, 0, 0, 0); !errors.Is(err, ErrConsumeQueueClosed) {
		t.Fatalf("Append after Close: %v, want ErrConsumeQueueClosed", err)
	}
	if _, ok := q.Find(0); ok {
		t.Fatal("Find after Close found an entry")
	}

	q = cqOpen(t, dir, 4)
	want := cqWant(bs)
	cqCheck(t, q, want)

	// The running maximum continues from the last entry, and so does the
	// order check.
	last := want[len(want)-1]
	if err := q.Append(last.End(), 80, last.LastOffset(), 0, 0, 0); !errors.Is(err, ErrConsumeQueueOrder) {
		t.Fatalf("Append at the last offset after reopen: %v, want ErrConsumeQueueOrder", err)
	}
	low := cqBatch{pos: last.End(), size: 80, base: last.NextOffset(), delta: 2, ts: math.MinInt64 + 1}
	cqAppend(t, q, low)
	bs = append(bs, low)
	want = cqWant(bs)
	if e, _ := q.Last(); e.MaxTimestampSoFar != last.MaxTimestampSoFar {
		t.Fatalf("running max after reopen = %d, want %d", e.MaxTimestampSoFar, last.MaxTimestampSoFar)
	}
	cqCheck(t, q, want)
	q.Close()

	// Another file size: existing files keep theirs, new ones get the new.
	q = cqOpen(t, dir, 8)
	cqCheck(t, q, want)
	more := cqTestBatches(60)[len(bs):]
	for i := range more {
		more[i].base += 1000
		more[i].pos += 100000
	}
	cqAppend(t, q, more...)
	bs = append(bs, more...)
	want = cqWant(bs)
	cqCheck(t, q, want)
	q.Close()
	q = cqOpen(t, dir, 2)
	cqCheck(t, q, want)
	wantFiles := append(cqWantFiles(want[:24], 4), cqWantFiles(want[24:], 8)...)
	if got := cqFileNames(t, dir); !slices.Equal(got, wantFiles) {
		t.Fatalf("files %v, want %v", got, wantFiles)
	}
}

func TestConsumeQueueTornTail(t *testing.T) {
	const perFile = 8
	bs := cqTestBatches(22) // files of 8, 8 and 6 entries
	all := cqWant(bs)
	path := func(dir string, file int) string {
		return filepath.Join(dir, log.FileName(all[file*perFile].BaseOffset))
	}
	flip := func(t *testing.T, p string, off int64) {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b [1]byte
		if _, err := f.ReadAt(b[:], off); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x10
		if _, err := f.WriteAt(b[:], off); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		keep   int // entries that survive
		cutAt  int // the file holding the cut (its bytes from the cut on must be zero)
	}{
		{"truncate mid-entry", func(t *testing.T, dir string) {
			if err := os.Truncate(path(dir, 2), 3*CQEntrySize+13); err != nil {
				t.Fatal(err)
			}
		}, 19, 2},
		{"truncate at an entry boundary", func(t *testing.T, dir string) {
			if err := os.Truncate(path(dir, 2), 3*CQEntrySize); err != nil {
				t.Fatal(err)
			}
		}, 19, -1},
		{"truncate to nothing", func(t *testing.T, dir string) {
			if err := os.Truncate(path(dir, 2), 0); err != nil {
				t.Fatal(err)
			}
		}, 16, -1},
		{"flip a byte in the last entry", func(t *testing.T, dir string) {
			flip(t, path(dir, 2), 5*CQEntrySize+20)
		}, 21, 2},
		{"flip the checksum of a middle entry", func(t *testing.T, dir string) {
			flip(t, path(dir, 2), 2*CQEntrySize+38)
		}, 18, 2},
		{"zeros before valid entries", func(t *testing.T, dir string) {
			f, err := os.OpenFile(path(dir, 2), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, CQEntrySize), 1*CQEntrySize); err != nil {
				t.Fatal(err)
			}
		}, 17, 2},
		{"corrupt first entry of a middle file", func(t *testing.T, dir string) {
			flip(t, path(dir, 1), 9)
		}, 8, -1},
		{"corrupt a middle file", func(t *testing.T, dir string) {
			flip(t, path(dir, 1), 4*CQEntrySize+1)
		}, 12, 1},
		{"out of order entry", func(t *testing.T, dir string) {
			// A valid entry whose offset goes back (e.g. left over from an
			// earlier life of the queue) ends it too.
			var b [CQEntrySize]byte
			e := all[3]
			cqEncode(b[:], e)
			f, err := os.OpenFile(path(dir, 2), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(b[:], 4*CQEntrySize); err != nil {
				t.Fatal(err)
			}
		}, 20, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := cqOpen(t, dir, perFile)
			cqAppend(t, q, bs...)
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			want := all[:tc.keep]
			// Twice: the cut is stable.
			for range 2 {
				q = cqOpen(t, dir, perFile)
				cqCheck(t, q, want)
				if got, w := cqFileNames(t, dir), cqWantFiles(want, perFile); !slices.Equal(got, w) {
					t.Fatalf("files %v, want %v", got, w)
				}
				if tc.cutAt >= 0 {
					cqZeroAfter(t, path(dir, tc.cutAt), int64(tc.keep-tc.cutAt*perFile)*CQEntrySize)
				}
				q.Close()
			}
			// Appending after the cut works and survives a reopen; the
			// entries cut off never come back.
			q = cqOpen(t, dir, perFile)
			last := want[len(want)-1]
			nb := cqBatch{pos: last.End() + 7, size: 99, base: last.NextOffset() + 1, delta: 3, ts: 1}
			cqAppend(t, q, nb)
			want = append(slices.Clone(want), CQEntry{Pos: nb.pos, BaseOffset: nb.base, MaxTimestampSoFar: last.MaxTimestampSoFar, Size: nb.size, LastOffsetDelta: nb.delta})
			q.Close()
			q = cqOpen(t, dir, perFile)
			cqCheck(t, q, want)
		})
	}
}

func TestConsumeQueueOutOfOrder(t *testing.T) {
	q := cqOpen(t, t.TempDir(), 4)
	cqAppend(t, q, cqBatch{pos: 0, size: 100, base: 10, delta: 4, ts: 1})
	for _, base := range []int64{0, 10, 14} {
		if err := q.Append(200, 100, base, 0, 0, 2); !errors.Is(err, ErrConsumeQueueOrder) {
			t.Fatalf("Append(base %d) after last offset 14: %v, want ErrConsumeQueueOrder", base, err)
		}
	}
	bad := []cqBatch{
		{pos: -1, size: 100, base: 20},
		{pos: 200, size: 0, base: 20},
		{pos: 200, size: -5, base: 20},
		{pos: 200, size: 100, base: 20, delta: -1},
		{pos: 200, size: 100, base: math.MaxInt64, delta: 0},
	}
	for _, b := range bad {
		err := q.Append(b.pos, b.size, b.base, b.delta, 0, 0)
		if err == nil || errors.Is(err, ErrConsumeQueueOrder) {
			t.Fatalf("Append(%+v) = %v, want an invalid-entry error", b, err)
		}
	}
	if q.Len() != 1 {
		t.Fatalf("Len = %d after rejected appends, want 1", q.Len())
	}
	cqAppend(t, q, cqBatch{pos: 200, size: 100, base: 15, ts: 0})
	if q.Len() != 2 || q.NextOffset() != 16 {
		t.Fatalf("Len, NextOffset = %d, %d; want 2, 16", q.Len(), q.NextOffset())
	}
}

func TestConsumeQueueTruncate(t *testing.T) {
	const perFile = 4
	bs := cqTestBatches(30)
	all := cqWant(bs)
	cases := []struct {
		name  string
		cut   func(q *ConsumeQueue) error
		keep  int
		zeros int // file holding the cut, -1 when the cut is at a file start
	}{
		{"offset mid-file", func(q *ConsumeQueue) error { return q.TruncateFromOffset(all[10].BaseOffset) }, 10, 2},
		{"offset inside a batch", func(q *ConsumeQueue) error { return q.TruncateFromOffset(all[13].BaseOffset + 1) }, 14, 3},
		{"offset in a gap", func(q *ConsumeQueue) error { return q.TruncateFromOffset(all[9].NextOffset()) }, 10, 2},
		{"offset at a file start", func(q *ConsumeQueue) error { return q.TruncateFromOffset(all[8].BaseOffset) }, 8, -1},
		{"offset before the first", func(q *ConsumeQueue) error { return q.TruncateFromOffset(-5) }, 0, -1},
		{"offset past the end", func(q *ConsumeQueue) error { return q.TruncateFromOffset(all[29].NextOffset()) }, 30, -1},
		{"position at an end", func(q *ConsumeQueue) error { return q.TruncateFromPos(all[12].End()) }, 13, 3},
		{"position inside a batch", func(q *ConsumeQueue) error { return q.TruncateFromPos(all[12].End() - 1) }, 12, -1},
		{"position 0", func(q *ConsumeQueue) error { return q.TruncateFromPos(0) }, 0, -1},
		{"position past the end", func(q *ConsumeQueue) error { return q.TruncateFromPos(1 << 50) }, 30, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := cqOpen(t, dir, perFile)
			cqAppend(t, q, bs...)
			if err := tc.cut(q); err != nil {
				t.Fatal(err)
			}
			want := all[:tc.keep]
			cqCheck(t, q, want)
			if got, w := cqFileNames(t, dir), cqWantFiles(want, perFile); !slices.Equal(got, w) {
				t.Fatalf("files %v, want %v", got, w)
			}
			if tc.zeros >= 0 {
				cqZeroAfter(t, filepath.Join(dir, log.FileName(all[tc.zeros*perFile].BaseOffset)), int64(tc.keep-tc.zeros*perFile)*CQEntrySize)
			}
			// Append again: the order check and the running maximum follow
			// the kept entries, not the removed ones.
			var prev CQEntry
			nb := cqBatch{pos: 1, size: 50, base: 3, delta: 1, ts: math.MinInt64 + 1}
			if len(want) > 0 {
				prev = want[len(want)-1]
				nb.pos, nb.base = prev.End(), prev.NextOffset()
			}
			cqAppend(t, q, nb)
			ne := CQEntry{Pos: nb.pos, BaseOffset: nb.base, MaxTimestampSoFar: nb.ts, Size: nb.size, LastOffsetDelta: nb.delta}
			if len(want) > 0 {
				ne.MaxTimestampSoFar = prev.MaxTimestampSoFar
			}
			want = append(slices.Clone(want), ne)
			cqCheck(t, q, want)
			q.Close()
			q = cqOpen(t, dir, perFile)
			cqCheck(t, q, want)
		})
	}
}

func TestConsumeQueueDeleteBefore(t *testing.T) {
	dir := t.TempDir()
	q := cqOpen(t, dir, 4)
	bs := cqTestBatches(30) // 8 files, the last with 2 entries
	cqAppend(t, q, bs...)
	all := cqWant(bs)

	// Entries 0-9 are all below: files 0 and 1 go, file 2 holds 10 and 11.
	n, err := q.DeleteBefore(all[9].NextOffset())
	if err != nil || n != 2 {
		t.Fatalf("DeleteBefore = %d, %v; want 2", n, err)
	}
	want := all[8:]
	cqCheck(t, q, want)
	if e, ok := q.Find(0); !ok || e != all[8] {
		t.Fatalf("Find(0) after DeleteBefore = %v, %v; want the new first entry %v", e, ok, all[8])
	}
	if n, err := q.DeleteBefore(all[8].BaseOffset); n != 0 || err != nil {
		t.Fatalf("DeleteBefore(first offset) = %d, %v; want 0", n, err)
	}

	// Never the last file, however far the offset.
	n, err = q.DeleteBefore(math.MaxInt64)
	if err != nil || n != 5 {
		t.Fatalf("DeleteBefore(max) = %d, %v; want 5", n, err)
	}
	want = all[28:]
	cqCheck(t, q, want)
	if n, err := q.DeleteBefore(math.MaxInt64); n != 0 || err != nil {
		t.Fatalf("DeleteBefore with one file = %d, %v; want 0", n, err)
	}
	if got, w := cqFileNames(t, dir), []int64{all[28].BaseOffset}; !slices.Equal(got, w) {
		t.Fatalf("files %v, want %v", got, w)
	}
	if e, ok := q.FindTimestamp(math.MinInt64); !ok || e != all[28] {
		t.Fatalf("FindTimestamp(min) = %v, %v; want %v", e, ok, all[28])
	}
	q.Close()
	q = cqOpen(t, dir, 4)
	cqCheck(t, q, want)
}

func TestConsumeQueueDestroy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic", "0")
	q := cqOpen(t, dir, 4)
	cqAppend(t, q, cqTestBatches(9)...)
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat after Destroy: %v, want not exist", err)
	}
	if q.Len() != 0 {
		t.Fatalf("Len after Destroy = %d", q.Len())
	}
	if err := q.Append(0, 1, 1000, 0, 0, 0); !errors.Is(err, ErrConsumeQueueClosed) {
		t.Fatalf("Append after Destroy: %v", err)
	}
	// Again, after the topic's directory went too.
	if err := os.RemoveAll(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	if err := q.Destroy(); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
}

// cqModel gives entry i of the concurrency tests. gen distinguishes
// entries rewritten after a truncation.
func cqModel(i, gen int64) CQEntry {
	return CQEntry{Pos: i*1000 + gen, BaseOffset: 3 * i, MaxTimestampSoFar: i * 10, Size: 500, LastOffsetDelta: 1}
}

// cqModelCheck verifies that e is entry i of some generation.
func cqModelCheck(e CQEntry) error {
	i := e.BaseOffset / 3
	w := cqModel(i, e.Pos-i*1000)
	if e.BaseOffset%3 != 0 || e != w || e.Pos-i*1000 < 0 || e.Pos-i*1000 >= 1000 {
		return fmt.Errorf("entry %v is not a model entry", e)
	}
	return nil
}

func TestConsumeQueueConcurrentReaders(t *testing.T) {
	const n = 3000
	q := cqOpen(t, t.TempDir(), 64)
	var next atomic.Int64 // offsets below are appended
	var floor atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 8)

	reader := func(seed int64) {
		defer wg.Done()
		buf := make([]CQEntry, 0, 16)
		x := uint64(seed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			hi := next.Load()
			if hi == 0 {
				continue
			}
			x = x*6364136223846793005 + 1442695040888963407
			off := int64(x>>33) % hi
			e, ok := q.Find(off)
			fl := floor.Load()
			if !ok {
				errc <- fmt.Errorf("Find(%d) found nothing with %d appended", off, hi)
				return
			}
			if err := cqModelCheck(e); err != nil {
				errc <- err
				return
			}
			if e.NextOffset() <= off || (off >= fl && e.BaseOffset > off && !(off%3 == 2 && e.BaseOffset == off+1)) {
				errc <- fmt.Errorf("Find(%d) = %v (floor %d)", off, e, fl)
				return
			}
			buf = q.Read(off, hi, 16, buf[:0])
			if len(buf) == 0 || len(buf) > 16 {
				errc <- fmt.Errorf("Read(%d, %d) returned %d entries", off, hi, len(buf))
				return
			}
			for j, r := range buf {
				if err := cqModelCheck(r); err != nil {
					errc <- err
					return
				}
				if r.BaseOffset >= hi || (j > 0 && r.BaseOffset != buf[j-1].BaseOffset+3) {
					errc <- fmt.Errorf("Read(%d, %d): entry %d is %v", off, hi, j, r)
					return
				}
			}
			if e, ok := q.FindTimestamp(off); ok {
				if err := cqModelCheck(e); err != nil {
					errc <- err
					return
				}
			}
			if l, ok := q.Last(); !ok || l.NextOffset() < hi {
				errc <- fmt.Errorf("Last = %v, %v with %d appended", l, ok, hi)
				return
			}
			_ = q.Len()
		}
	}
	for i := range 3 {
		wg.Add(1)
		go reader(int64(i + 1))
	}
	// Retention and the flusher run beside the appender, as in the broker.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := q.Flush(); err != nil {
				errc <- err
				return
			}
			f := next.Load() / 4
			floor.Store(f)
			if _, err := q.DeleteBefore(f); err != nil {
				errc <- err
				return
			}
		}
	}()

	for i := range int64(n) {
		e := cqModel(i, 0)
		if err := q.Append(e.Pos, e.Size, e.BaseOffset, e.LastOffsetDelta, 0, e.MaxTimestampSoFar); err != nil {
			t.Fatal(err)
		}
		next.Store(e.NextOffset())
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// Readers racing truncations see old or new entries, never garbage.
func TestConsumeQueueConcurrentTruncate(t *testing.T) {
	const n = 200
	q := cqOpen(t, t.TempDir(), 16)
	for i := range int64(n) {
		e := cqModel(i, 0)
		if err := q.Append(e.Pos, e.Size, e.BaseOffset, e.LastOffsetDelta, 0, e.MaxTimestampSoFar); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]CQEntry, 0, 32)
			off := int64(r * 7)
			for {
				select {
				case <-stop:
					return
				default:
				}
				off = (off + 37) % (3 * n)
				if e, ok := q.Find(off); ok {
					if err := cqModelCheck(e); err != nil {
						errc <- err
						return
					}
				}
				buf = q.Read(off, math.MaxInt64, 32, buf[:0])
				for _, e := range buf {
					if err := cqModelCheck(e); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	for gen := int64(1); gen <= 20; gen++ {
		cut := (gen * 53) % n
		if err := q.TruncateFromOffset(3 * cut); err != nil {
			t.Fatal(err)
		}
		for i := cut; i < n; i++ {
			e := cqModel(i, gen)
			if err := q.Append(e.Pos, e.Size, e.BaseOffset, e.LastOffsetDelta, 0, e.MaxTimestampSoFar); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if q.Len() != n {
		t.Fatalf("Len = %d, want %d", q.Len(), n)
	}
}

func BenchmarkConsumeQueueAppend(b *testing.B) {
	q := cqOpen(b, b.TempDir(), 1<<16)
	var i int64
	b.ReportAllocs()
	b.SetBytes(CQEntrySize)
	for b.Loop() {
		if err := q.Append(i*1100, 1024, i*10, 9, 0, i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkConsumeQueueFindRead(b *testing.B) {
	const n = 1 << 18
	q := cqOpen(b, b.TempDir(), 1<<16)
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
			buf := make([]CQEntry, 0, 16)
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
