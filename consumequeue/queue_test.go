package consumequeue

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kbroker/kbroker/log"
)

func TestAppendFindRead(t *testing.T) {
	for _, perFile := range []int{1, 4, 8} {
		t.Run(fmt.Sprintf("perFile=%d", perFile), func(t *testing.T) {
			dir := t.TempDir()
			q := openQueue(t, dir, perFile)
			bs := testBatches(30)
			appendBatches(t, q, bs...)
			want := wantEntries(bs)
			checkQueue(t, q, want)
			if got, w := fileNames(t, dir), wantFiles(want, perFile); !slices.Equal(got, w) {
				t.Fatalf("files %v, want %v (named by their first base offset)", got, w)
			}
			next := want[len(want)-1].NextOffset()
			for off := int64(-2); off <= next+2; off++ {
				got, ok := q.Find(off)
				w, wok := refFind(want, off)
				if got != w || ok != wok {
					t.Fatalf("Find(%d) = %v, %v; want %v, %v", off, got, ok, w, wok)
				}
				for _, end := range []int64{0, off, off + 1, off + 5, want[len(want)/2].BaseOffset, next, math.MaxInt64} {
					for _, n := range []int{0, 1, 3, 16, 100} {
						gotR := q.Read(off, end, n, nil)
						if wR := refRead(want, off, end, n); !slices.Equal(gotR, wR) {
							t.Fatalf("Read(%d, %d, %d) = %v, want %v", off, end, n, gotR, wR)
						}
					}
				}
			}
			// Read appends after what buf already holds.
			pre := []Entry{{BaseOffset: -7}}
			if got := q.Read(0, next, 2, pre); len(got) != 3 || got[0].BaseOffset != -7 || got[1] != want[0] || got[2] != want[1] {
				t.Fatalf("Read onto a non-empty buf = %v", got)
			}
		})
	}
}

// Files larger than the 8 KiB warm section take the other search paths.
func TestLargeFiles(t *testing.T) {
	const perFile = 600
	q := openQueue(t, t.TempDir(), perFile)
	bs := testBatches(1500)
	appendBatches(t, q, bs...)
	want := wantEntries(bs)
	checkQueue(t, q, want)
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
			if r, w := q.Read(off, end, 16, nil), refRead(want[j:], off, end, 16); !slices.Equal(r, w) {
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
	checkQueue(t, q, want[:1001])
}

// A memory fault on the mapping (SIGBUS: here the file is shrunk under the
// mapping, in production a media error) is an error, not a crash, and it
// is sticky.
func TestFault(t *testing.T) {
	dir := t.TempDir()
	q := openQueue(t, dir, 4096)
	bs := testBatches(100)
	appendBatches(t, q, bs...)
	want := wantEntries(bs)
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

func TestEmpty(t *testing.T) {
	q := openQueue(t, filepath.Join(t.TempDir(), "a", "b"), 4)
	checkQueue(t, q, nil)
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
	appendBatches(t, q, testBatch{pos: 10, size: 70, base: 1234, delta: 9, ts: 5})
	if e, ok := q.Find(0); !ok || e.BaseOffset != 1234 {
		t.Fatalf("Find(0) = %v, %v; want the entry at 1234", e, ok)
	}
}

func TestAllocs(t *testing.T) {
	q := openQueue(t, t.TempDir(), 8)
	bs := testBatches(100)
	appendBatches(t, q, bs...)
	want := wantEntries(bs)
	buf := make([]Entry, 0, 16)
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
	q2 := openQueue(t, t.TempDir(), 1024)
	appendBatches(t, q2, testBatch{pos: 0, size: 100, base: 0, ts: 1})
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

func TestFindTimestamp(t *testing.T) {
	tss := []int64{5, 3, 9, 7, 9, 12, 1, 15, -1, 20, 20, 18, 25}
	var bs []testBatch
	for i, ts := range tss {
		bs = append(bs, testBatch{pos: int64(i) * 100, size: 90, base: int64(i) * 10, delta: 4, ts: ts})
	}
	q := openQueue(t, t.TempDir(), 4)
	appendBatches(t, q, bs...)
	want := wantEntries(bs)
	checkQueue(t, q, want)
	wantRun := []int64{5, 5, 9, 9, 9, 12, 12, 15, 15, 20, 20, 20, 25}
	for i, e := range readAll(q) {
		if e.MaxTimestampSoFar != wantRun[i] {
			t.Fatalf("entry %d: MaxTimestampSoFar = %d, want %d", i, e.MaxTimestampSoFar, wantRun[i])
		}
	}
	for ts := int64(-3); ts <= 27; ts++ {
		got, ok := q.FindTimestamp(ts)
		var w Entry
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

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	q := openQueue(t, dir, 4)
	bs := testBatches(21)
	appendBatches(t, q, bs...)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Append(1<<40, 100, 1<<40, 0, 0, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if _, ok := q.Find(0); ok {
		t.Fatal("Find after Close found an entry")
	}

	q = openQueue(t, dir, 4)
	want := wantEntries(bs)
	checkQueue(t, q, want)

	// The running maximum continues from the last entry, and so does the
	// order check.
	last := want[len(want)-1]
	if err := q.Append(last.End(), 80, last.LastOffset(), 0, 0, 0); !errors.Is(err, ErrOrder) {
		t.Fatalf("Append at the last offset after reopen: %v, want ErrOrder", err)
	}
	low := testBatch{pos: last.End(), size: 80, base: last.NextOffset(), delta: 2, ts: math.MinInt64 + 1}
	appendBatches(t, q, low)
	bs = append(bs, low)
	want = wantEntries(bs)
	if e, _ := q.Last(); e.MaxTimestampSoFar != last.MaxTimestampSoFar {
		t.Fatalf("running max after reopen = %d, want %d", e.MaxTimestampSoFar, last.MaxTimestampSoFar)
	}
	checkQueue(t, q, want)
	q.Close()

	// Another file size: existing files keep theirs, new ones get the new.
	q = openQueue(t, dir, 8)
	checkQueue(t, q, want)
	more := testBatches(60)[len(bs):]
	for i := range more {
		more[i].base += 1000
		more[i].pos += 100000
	}
	appendBatches(t, q, more...)
	bs = append(bs, more...)
	want = wantEntries(bs)
	checkQueue(t, q, want)
	q.Close()
	q = openQueue(t, dir, 2)
	checkQueue(t, q, want)
	wantFiles := append(wantFiles(want[:24], 4), wantFiles(want[24:], 8)...)
	if got := fileNames(t, dir); !slices.Equal(got, wantFiles) {
		t.Fatalf("files %v, want %v", got, wantFiles)
	}
}

func TestTornTail(t *testing.T) {
	const perFile = 8
	bs := testBatches(22) // files of 8, 8 and 6 entries
	all := wantEntries(bs)
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
			if err := os.Truncate(path(dir, 2), 3*EntrySize+13); err != nil {
				t.Fatal(err)
			}
		}, 19, 2},
		{"truncate at an entry boundary", func(t *testing.T, dir string) {
			if err := os.Truncate(path(dir, 2), 3*EntrySize); err != nil {
				t.Fatal(err)
			}
		}, 19, -1},
		{"truncate to nothing", func(t *testing.T, dir string) {
			if err := os.Truncate(path(dir, 2), 0); err != nil {
				t.Fatal(err)
			}
		}, 16, -1},
		{"flip a byte in the last entry", func(t *testing.T, dir string) {
			flip(t, path(dir, 2), 5*EntrySize+20)
		}, 21, 2},
		{"flip the checksum of a middle entry", func(t *testing.T, dir string) {
			flip(t, path(dir, 2), 2*EntrySize+38)
		}, 18, 2},
		{"zeros before valid entries", func(t *testing.T, dir string) {
			f, err := os.OpenFile(path(dir, 2), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, EntrySize), 1*EntrySize); err != nil {
				t.Fatal(err)
			}
		}, 17, 2},
		{"corrupt first entry of a middle file", func(t *testing.T, dir string) {
			flip(t, path(dir, 1), 9)
		}, 8, -1},
		{"corrupt a middle file", func(t *testing.T, dir string) {
			flip(t, path(dir, 1), 4*EntrySize+1)
		}, 12, 1},
		{"out of order entry", func(t *testing.T, dir string) {
			// A valid entry whose offset goes back (e.g. left over from an
			// earlier life of the queue) ends it too.
			var b [EntrySize]byte
			e := all[3]
			encode(b[:], e)
			f, err := os.OpenFile(path(dir, 2), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(b[:], 4*EntrySize); err != nil {
				t.Fatal(err)
			}
		}, 20, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := openQueue(t, dir, perFile)
			appendBatches(t, q, bs...)
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			want := all[:tc.keep]
			// Twice: the cut is stable.
			for range 2 {
				q = openQueue(t, dir, perFile)
				checkQueue(t, q, want)
				if got, w := fileNames(t, dir), wantFiles(want, perFile); !slices.Equal(got, w) {
					t.Fatalf("files %v, want %v", got, w)
				}
				if tc.cutAt >= 0 {
					zerosAfter(t, path(dir, tc.cutAt), int64(tc.keep-tc.cutAt*perFile)*EntrySize)
				}
				q.Close()
			}
			// Appending after the cut works and survives a reopen; the
			// entries cut off never come back.
			q = openQueue(t, dir, perFile)
			last := want[len(want)-1]
			nb := testBatch{pos: last.End() + 7, size: 99, base: last.NextOffset() + 1, delta: 3, ts: 1}
			appendBatches(t, q, nb)
			want = append(slices.Clone(want), Entry{Pos: nb.pos, BaseOffset: nb.base, MaxTimestampSoFar: last.MaxTimestampSoFar, Size: nb.size, LastOffsetDelta: nb.delta})
			q.Close()
			q = openQueue(t, dir, perFile)
			checkQueue(t, q, want)
		})
	}
}

func TestOutOfOrder(t *testing.T) {
	q := openQueue(t, t.TempDir(), 4)
	appendBatches(t, q, testBatch{pos: 0, size: 100, base: 10, delta: 4, ts: 1})
	for _, base := range []int64{0, 10, 14} {
		if err := q.Append(200, 100, base, 0, 0, 2); !errors.Is(err, ErrOrder) {
			t.Fatalf("Append(base %d) after last offset 14: %v, want ErrOrder", base, err)
		}
	}
	bad := []testBatch{
		{pos: -1, size: 100, base: 20},
		{pos: 200, size: 0, base: 20},
		{pos: 200, size: -5, base: 20},
		{pos: 200, size: 100, base: 20, delta: -1},
		{pos: 200, size: 100, base: math.MaxInt64, delta: 0},
	}
	for _, b := range bad {
		err := q.Append(b.pos, b.size, b.base, b.delta, 0, 0)
		if err == nil || errors.Is(err, ErrOrder) {
			t.Fatalf("Append(%+v) = %v, want an invalid-entry error", b, err)
		}
	}
	if q.Len() != 1 {
		t.Fatalf("Len = %d after rejected appends, want 1", q.Len())
	}
	appendBatches(t, q, testBatch{pos: 200, size: 100, base: 15, ts: 0})
	if q.Len() != 2 || q.NextOffset() != 16 {
		t.Fatalf("Len, NextOffset = %d, %d; want 2, 16", q.Len(), q.NextOffset())
	}
}

func TestTruncate(t *testing.T) {
	const perFile = 4
	bs := testBatches(30)
	all := wantEntries(bs)
	cases := []struct {
		name  string
		cut   func(q *Queue) error
		keep  int
		zeros int // file holding the cut, -1 when the cut is at a file start
	}{
		{"offset mid-file", func(q *Queue) error { return q.TruncateFromOffset(all[10].BaseOffset) }, 10, 2},
		{"offset inside a batch", func(q *Queue) error { return q.TruncateFromOffset(all[13].BaseOffset + 1) }, 14, 3},
		{"offset in a gap", func(q *Queue) error { return q.TruncateFromOffset(all[9].NextOffset()) }, 10, 2},
		{"offset at a file start", func(q *Queue) error { return q.TruncateFromOffset(all[8].BaseOffset) }, 8, -1},
		{"offset before the first", func(q *Queue) error { return q.TruncateFromOffset(-5) }, 0, -1},
		{"offset past the end", func(q *Queue) error { return q.TruncateFromOffset(all[29].NextOffset()) }, 30, -1},
		{"position at an end", func(q *Queue) error { return q.TruncateFromPos(all[12].End()) }, 13, 3},
		{"position inside a batch", func(q *Queue) error { return q.TruncateFromPos(all[12].End() - 1) }, 12, -1},
		{"position 0", func(q *Queue) error { return q.TruncateFromPos(0) }, 0, -1},
		{"position past the end", func(q *Queue) error { return q.TruncateFromPos(1 << 50) }, 30, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := openQueue(t, dir, perFile)
			appendBatches(t, q, bs...)
			if err := tc.cut(q); err != nil {
				t.Fatal(err)
			}
			want := all[:tc.keep]
			checkQueue(t, q, want)
			if got, w := fileNames(t, dir), wantFiles(want, perFile); !slices.Equal(got, w) {
				t.Fatalf("files %v, want %v", got, w)
			}
			if tc.zeros >= 0 {
				zerosAfter(t, filepath.Join(dir, log.FileName(all[tc.zeros*perFile].BaseOffset)), int64(tc.keep-tc.zeros*perFile)*EntrySize)
			}
			// Append again: the order check and the running maximum follow
			// the kept entries, not the removed ones.
			var prev Entry
			nb := testBatch{pos: 1, size: 50, base: 3, delta: 1, ts: math.MinInt64 + 1}
			if len(want) > 0 {
				prev = want[len(want)-1]
				nb.pos, nb.base = prev.End(), prev.NextOffset()
			}
			appendBatches(t, q, nb)
			ne := Entry{Pos: nb.pos, BaseOffset: nb.base, MaxTimestampSoFar: nb.ts, Size: nb.size, LastOffsetDelta: nb.delta}
			if len(want) > 0 {
				ne.MaxTimestampSoFar = prev.MaxTimestampSoFar
			}
			want = append(slices.Clone(want), ne)
			checkQueue(t, q, want)
			q.Close()
			q = openQueue(t, dir, perFile)
			checkQueue(t, q, want)
		})
	}
}

func TestDeleteBefore(t *testing.T) {
	dir := t.TempDir()
	q := openQueue(t, dir, 4)
	bs := testBatches(30) // 8 files, the last with 2 entries
	appendBatches(t, q, bs...)
	all := wantEntries(bs)

	// Entries 0-9 are all below: files 0 and 1 go, file 2 holds 10 and 11.
	n, err := q.DeleteBefore(all[9].NextOffset())
	if err != nil || n != 2 {
		t.Fatalf("DeleteBefore = %d, %v; want 2", n, err)
	}
	want := all[8:]
	checkQueue(t, q, want)
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
	checkQueue(t, q, want)
	if n, err := q.DeleteBefore(math.MaxInt64); n != 0 || err != nil {
		t.Fatalf("DeleteBefore with one file = %d, %v; want 0", n, err)
	}
	if got, w := fileNames(t, dir), []int64{all[28].BaseOffset}; !slices.Equal(got, w) {
		t.Fatalf("files %v, want %v", got, w)
	}
	if e, ok := q.FindTimestamp(math.MinInt64); !ok || e != all[28] {
		t.Fatalf("FindTimestamp(min) = %v, %v; want %v", e, ok, all[28])
	}
	q.Close()
	q = openQueue(t, dir, 4)
	checkQueue(t, q, want)
}

func TestDestroy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic", "0")
	q := openQueue(t, dir, 4)
	appendBatches(t, q, testBatches(9)...)
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat after Destroy: %v, want not exist", err)
	}
	if q.Len() != 0 {
		t.Fatalf("Len after Destroy = %d", q.Len())
	}
	if err := q.Append(0, 1, 1000, 0, 0, 0); !errors.Is(err, ErrClosed) {
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

// TestReserve: Reserve creates the next file only when the
// next Append would start one, without listing it; that Append takes it;
// a reservation for another base offset is replaced; Close removes an
// unused one, and the queue reopens as it was.
func TestReserve(t *testing.T) {
	dir := t.TempDir()
	q := openQueue(t, dir, 2)
	bs := testBatches(5)
	appendBatches(t, q, bs[0])
	if err := q.Reserve(bs[1].base); err != nil {
		t.Fatal(err)
	}
	if got := fileNames(t, dir); !slices.Equal(got, []int64{bs[0].base}) {
		t.Fatalf("files %v after a Reserve with room left: want only the first", got)
	}
	appendBatches(t, q, bs[1])

	// The file is full: Reserve creates the next one, unlisted.
	if err := q.Reserve(bs[2].base); err != nil {
		t.Fatal(err)
	}
	if got := fileNames(t, dir); !slices.Equal(got, []int64{bs[0].base, bs[2].base}) {
		t.Fatalf("files %v after Reserve(%d)", got, bs[2].base)
	}
	checkQueue(t, q, wantEntries(bs[:2]))
	if err := q.Reserve(bs[2].base); err != nil { // again: nothing new
		t.Fatal(err)
	}
	appendBatches(t, q, bs[2])
	checkQueue(t, q, wantEntries(bs[:3]))

	// A reservation for another offset is dropped when the Append that
	// comes is a different one.
	appendBatches(t, q, bs[3])
	if err := q.Reserve(bs[4].base + 100); err != nil {
		t.Fatal(err)
	}
	appendBatches(t, q, bs[4])
	if got := fileNames(t, dir); !slices.Equal(got, []int64{bs[0].base, bs[2].base, bs[4].base}) {
		t.Fatalf("files %v: the stale reservation must be gone", got)
	}
	checkQueue(t, q, wantEntries(bs))

	// Close removes an unused reservation.
	next := bs[4].base + int64(bs[4].delta) + 1
	appendBatches(t, q, testBatch{pos: 1 << 20, size: 61, base: next, ts: 5000})
	if err := q.Reserve(next + 1); err != nil {
		t.Fatal(err)
	}
	want := readAll(q)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileNames(t, dir); slices.Contains(got, next+1) {
		t.Fatalf("files %v: Close left the reserved file %d", got, next+1)
	}
	q2 := openQueue(t, dir, 2)
	checkQueue(t, q2, want)
}
