package log

import (
	"bytes"
	"errors"
	"hash/crc32"
	"testing"
)

// TestAppendMany: runs of entries of every size, some larger than what is
// left of a file and some more than one pwritev takes, are appended in
// order and contiguously, never spanning files, with the results Append
// would give, and survive a reopen; mixed with single appends.
func TestAppendMany(t *testing.T) {
	forEachAppendMode(t, func(t *testing.T, mode AppendMode) {
		cfg := testConfig(t, 64<<10)
		cfg.Append = mode
		l, _ := openLog(t, cfg)
		sizeOf := func(i int) int { return 1 + i*37%3000 }
		var want []AppendResult
		i := 0
		for _, run := range []int{1, 7, 0, 600, 3, 40, 1, 90} {
			entries := make([]Pending, run)
			for j := range entries {
				entries[j] = Pending{Key: key(i + j), Payload: payload(i+j, sizeOf(i+j))}
			}
			n, err := l.AppendMany(entries)
			if err != nil || n != run {
				t.Fatalf("run of %d: appended %d, %v", run, n, err)
			}
			for _, e := range entries {
				want = append(want, e.Result)
			}
			i += run
			r, err := l.Append(key(i), payload(i, sizeOf(i)))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, r)
			i++
		}
		check := func(l *CommitLog) {
			t.Helper()
			got := readAll(t, l, 0)
			if len(got) != len(want) {
				t.Fatalf("got %d entries, want %d", len(got), len(want))
			}
			for k, e := range got {
				if e.Pos != want[k].Pos || e.Size != want[k].Size {
					t.Fatalf("entry %d at %d size %d, want %d size %d", k, e.Pos, e.Size, want[k].Pos, want[k].Size)
				}
				if !bytes.Equal(e.Key, key(k)) || !bytes.Equal(e.Payload, payload(k, sizeOf(k))) {
					t.Fatalf("entry %d: content differs", k)
				}
				if e.Pos/l.FileSize() != (e.End()-1)/l.FileSize() {
					t.Fatalf("entry at %d size %d spans two files", e.Pos, e.Size)
				}
			}
		}
		check(l)
		if l.WrotePosition() != want[len(want)-1].End() {
			t.Fatalf("wrote position %d, want %d", l.WrotePosition(), want[len(want)-1].End())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, _ := openLog(t, cfg)
		check(l2)
	})
}

// TestAppendManyRefusesBadEntries: a bad key or an entry larger than a
// file fails the whole call before anything is written.
func TestAppendManyRefusesBadEntries(t *testing.T) {
	l, _ := openLog(t, testConfig(t, 64<<10))
	for _, tc := range []struct {
		name string
		bad  Pending
		want error
	}{
		{"bad key", Pending{Key: []byte("short"), Payload: []byte("x")}, ErrBadKey},
		{"too large", Pending{Key: key(1), Payload: make([]byte, 64<<10)}, ErrEntryTooLarge},
	} {
		n, err := l.AppendMany([]Pending{{Key: key(0), Payload: []byte("ok")}, tc.bad})
		if n != 0 || !errors.Is(err, tc.want) {
			t.Fatalf("%s: appended %d, %v, want 0 and %v", tc.name, n, err, tc.want)
		}
	}
	if l.WrotePosition() != 0 {
		t.Fatalf("wrote position %d after refused calls", l.WrotePosition())
	}
}

// TestAppendManyAllocatesNothing: once its buffers have grown, a call
// allocates nothing.
func TestAppendManyAllocatesNothing(t *testing.T) {
	forEachAppendMode(t, func(t *testing.T, mode AppendMode) {
		cfg := testConfig(t, 64<<20)
		cfg.Append = mode
		l, _ := openLog(t, cfg)
		entries := make([]Pending, 64)
		for j := range entries {
			entries[j] = Pending{Key: key(j), Payload: payload(j, 100)}
		}
		if _, err := l.AppendMany(entries); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := l.AppendMany(entries); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("got %v allocations per call, want 0", allocs)
		}
	})
}

// TestAppendManyTailCRC: entries whose callers vouch for the CRC of their
// tail (as a record batch's own CRC covers it from byte 21 on) are stored
// with the checksum Append computes from all their bytes, above and below
// the size where the CRC is combined rather than recomputed, so that
// recovery after a crash accepts every one; a wrong tail CRC stores an
// entry that recovery cuts.
func TestAppendManyTailCRC(t *testing.T) {
	forEachAppendMode(t, func(t *testing.T, mode AppendMode) {
		cfg := testConfig(t, 1<<20)
		cfg.Append = mode
		l, _ := openLog(t, cfg)
		const from = 21
		sizes := []int{from, from + 1, 100, minCombineTail + from - 1, minCombineTail + from, 50_000, 200_000}
		entries := make([]Pending, len(sizes))
		for i, n := range sizes {
			p := payload(i, n)
			entries[i] = Pending{Key: key(i), Payload: p, TailFrom: from, TailCRC: crc32.Checksum(p[from:], castagnoli)}
		}
		if n, err := l.AppendMany(entries); err != nil || n != len(entries) {
			t.Fatalf("appended %d of %d: %v", n, len(entries), err)
		}
		for i, e := range entries {
			if got, want := e.crc, entryChecksum(key(i), payload(i, sizes[i])); got != want {
				t.Fatalf("entry %d of %d bytes: checksum %08x, want %08x", i, sizes[i], got, want)
			}
		}
		// A caller whose tail CRC is wrong: the stored checksum does not
		// match the bytes.
		bad := payload(99, 50_000)
		wrong := []Pending{{Key: key(99), Payload: bad, TailFrom: from, TailCRC: crc32.Checksum(bad[from:], castagnoli) ^ 1}}
		if _, err := l.AppendMany(wrong); err != nil {
			t.Fatal(err)
		}
		crash(l)
		l2, rep := openLog(t, cfg)
		if rep.Entries != len(entries) || !rep.Cut {
			t.Fatalf("recovery: %d entries (want %d), cut %v (%s); want the wrong one cut", rep.Entries, len(entries), rep.Cut, rep.CutReason)
		}
		got := readAll(t, l2, 0)
		if len(got) != len(entries) {
			t.Fatalf("%d entries after recovery, want %d", len(got), len(entries))
		}
		for i, e := range got {
			if !bytes.Equal(e.Payload, payload(i, sizes[i])) {
				t.Fatalf("entry %d: content differs", i)
			}
		}
	})
}
