package log

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestAppendAndIterate(t *testing.T) {
	forEachAppendMode(t, testAppendAndIterate)
}

func testAppendAndIterate(t *testing.T, mode AppendMode) {
	cfg := testConfig(t, 64<<10)
	cfg.Append = mode
	l, _ := openLog(t, cfg)
	var want []AppendResult
	for i := 0; i < 200; i++ {
		r, err := l.Append(key(i), payload(i, 100+i*37%3000))
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		want = append(want, r)
	}
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Pos != want[i].Pos || e.Size != want[i].Size {
			t.Fatalf("entry %d at %d size %d, want %d size %d", i, e.Pos, e.Size, want[i].Pos, want[i].Size)
		}
		if !bytes.Equal(e.Key, key(i)) || !bytes.Equal(e.Payload, payload(i, 100+i*37%3000)) {
			t.Fatalf("entry %d: content differs", i)
		}
		if e.PayloadPos() != e.Pos+int64(l.HeaderSize()) {
			t.Fatalf("entry %d: payload at %d, want %d", i, e.PayloadPos(), e.Pos+int64(l.HeaderSize()))
		}
	}
	if len(l.Files()) < 2 {
		t.Fatalf("expected several files, got %d", len(l.Files()))
	}
	// Entries never span files.
	for _, e := range got {
		if e.Pos/l.FileSize() != (e.End()-1)/l.FileSize() {
			t.Fatalf("entry at %d size %d spans two files", e.Pos, e.Size)
		}
	}
}

// TestRollCases covers an entry that exactly fills the file, one byte more
// (filler), and a tail too short for a filler.
func TestRollCases(t *testing.T) {
	forEachAppendMode(t, testRollCases)
}

func testRollCases(t *testing.T, mode AppendMode) {
	const fs = 4096
	hdr := int(entryFixedSize + 20)
	cases := []struct {
		name      string
		first     int // payload of the first entry
		second    int // payload of the second entry
		secondPos int64
		fileAfter int64 // wrote position of file 0 after both appends
	}{
		{"exact fill then roll", fs - hdr, 10, fs, fs},
		{"one byte more than fits: filler", fs - hdr - 100, 100 - hdr + 1 + hdr, fs, fs},
		{"fits exactly in the rest", fs - hdr - 100 - hdr, 100, fs - 100 - int64(hdr), fs},
		{"tail shorter than a filler", fs - hdr - 5, 10, fs, fs},
		{"tail exactly a filler", fs - hdr - 8, 10, fs, fs},
		{"both fit", 100, 100, int64(hdr + 100), int64(2 * (hdr + 100))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, fs)
			cfg.Append = mode
			l, _ := openLog(t, cfg)
			r1, err := l.Append(key(1), payload(1, tc.first))
			if err != nil {
				t.Fatal(err)
			}
			if r1.Pos != 0 {
				t.Fatalf("first at %d, want 0", r1.Pos)
			}
			r2, err := l.Append(key(2), payload(2, tc.second))
			if err != nil {
				t.Fatal(err)
			}
			if r2.Pos != tc.secondPos {
				t.Fatalf("second at %d, want %d", r2.Pos, tc.secondPos)
			}
			if got := l.Files()[0].WrotePosition(); got != tc.fileAfter {
				t.Fatalf("file 0 wrote %d, want %d", got, tc.fileAfter)
			}
			check := func(l *CommitLog) {
				t.Helper()
				got := readAll(t, l, 0)
				if len(got) != 2 || got[0].Pos != r1.Pos || got[1].Pos != r2.Pos {
					t.Fatalf("read back %+v", got)
				}
				if !bytes.Equal(got[1].Payload, payload(2, tc.second)) {
					t.Fatal("second payload differs")
				}
			}
			check(l)
			// The same after a clean reopen and after a crash (abort marker).
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, rep := openLog(t, cfg)
			if !rep.Clean || rep.End != r2.End() {
				t.Fatalf("clean reopen: %+v, want end %d", rep, r2.End())
			}
			check(l2)
			l2.Close()
			os.WriteFile(filepath.Join(cfg.Dir, "abort"), nil, 0o644)
			l3, rep := openLog(t, cfg)
			if rep.Clean || rep.End != r2.End() || rep.Cut {
				t.Fatalf("crash reopen: %+v, want end %d", rep, r2.End())
			}
			check(l3)
		})
	}
}

func TestEntryTooLargeAndBadKey(t *testing.T) {
	l, _ := openLog(t, testConfig(t, 4096))
	if _, err := l.Append(key(1), make([]byte, 4096)); !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("got %v, want ErrEntryTooLarge", err)
	}
	if _, err := l.Append([]byte("short"), nil); !errors.Is(err, ErrBadKey) {
		t.Fatalf("got %v, want ErrBadKey", err)
	}
	if _, err := l.Append(key(1), make([]byte, 4096-32)); err != nil {
		t.Fatalf("largest entry: %v", err)
	}
}

func TestConcurrentAppendsAreOrderedAndIntact(t *testing.T) {
	forEachAppendMode(t, testConcurrentAppends)
}

func testConcurrentAppends(t *testing.T, mode AppendMode) {
	cfg := testConfig(t, 256<<10)
	cfg.Append = mode
	l, _ := openLog(t, cfg)
	const writers, per = 8, 300
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				n := w*per + i
				if _, err := l.Append(key(n), payload(n, 50+n%700)); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}(w)
	}
	// Concurrent readers while appending.
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Add(1)
	go func() {
		defer rg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = l.Iterate(0, func(e Entry) error { return nil })
		}
	}()
	wg.Wait()
	close(stop)
	rg.Wait()
	got := readAll(t, l, 0)
	if len(got) != writers*per {
		t.Fatalf("got %d entries, want %d", len(got), writers*per)
	}
	seen := map[uint64]bool{}
	for _, e := range got {
		n := int(beUint64(e.Key[12:]))
		if seen[uint64(n)] {
			t.Fatalf("entry %d twice", n)
		}
		seen[uint64(n)] = true
		if !bytes.Equal(e.Payload, payload(n, 50+n%700)) {
			t.Fatalf("entry %d corrupted", n)
		}
	}
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}

func TestFlushMovesDurablePosition(t *testing.T) {
	cfg := testConfig(t, 64<<10)
	l, _ := openLog(t, cfg)
	r, _ := l.Append(key(1), payload(1, 1000))
	if l.FlushedPosition() >= r.End() {
		t.Fatalf("flushed %d before any flush", l.FlushedPosition())
	}
	// Below the page threshold nothing is flushed.
	if f, err := l.Flush(4); err != nil || f != 0 {
		t.Fatalf("Flush(4) = %d, %v; want 0", f, err)
	}
	f, err := l.Flush(0)
	if err != nil || f != r.End() {
		t.Fatalf("Flush(0) = %d, %v; want %d", f, err, r.End())
	}
	// The checkpoint now records it.
	_, cp, found, err := openCheckpoint(filepath.Join(cfg.Dir, "checkpoint"))
	if err != nil || !found || cp.Durable != r.End() {
		t.Fatalf("checkpoint %+v found=%v err=%v; want durable %d", cp, found, err, r.End())
	}
	// Across a roll, Flush(0) covers both files.
	var last AppendResult
	for i := 0; i < 100; i++ {
		last, _ = l.Append(key(i), payload(i, 2000))
	}
	if f, err := l.Flush(0); err != nil || f != last.End() {
		t.Fatalf("Flush(0) = %d, %v; want %d", f, err, last.End())
	}
}

func TestAllocationFailureIsNotSticky(t *testing.T) {
	cfg := testConfig(t, 4096)
	var mu sync.Mutex
	full := false
	cfg.AllocateHook = func(path string, size int64) error {
		mu.Lock()
		defer mu.Unlock()
		if full {
			return syscall.ENOSPC
		}
		return nil
	}
	l, _ := openLog(t, cfg)
	if _, err := l.Append(key(1), payload(1, 3000)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	full = true
	mu.Unlock()
	// Let the background allocator fail on the next file too.
	var err error
	for i := 0; i < 3; i++ {
		_, err = l.Append(key(2), payload(2, 3000))
		if err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		// The next file may have been allocated before the disk "filled";
		// then the one after must fail.
		t.Fatalf("got %v, want ENOSPC", err)
	}
	if l.Err() != nil {
		t.Fatalf("ENOSPC became sticky: %v", l.Err())
	}
	mu.Lock()
	full = false
	mu.Unlock()
	r, err := l.Append(key(3), payload(3, 3000))
	if err != nil {
		t.Fatalf("append after space returned: %v", err)
	}
	got := readAll(t, l, 0)
	if got[len(got)-1].Pos != r.Pos {
		t.Fatal("last entry missing")
	}
}

func TestFlushFailureIsSticky(t *testing.T) {
	l, _ := openLog(t, testConfig(t, 64<<10))
	if _, err := l.Append(key(1), payload(1, 100)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	l.stick("flush", boom)
	if _, err := l.Append(key(2), payload(2, 100)); !errors.Is(err, boom) {
		t.Fatalf("append after failed flush: %v, want %v", err, boom)
	}
	if _, err := l.Flush(0); !errors.Is(err, boom) {
		t.Fatalf("flush after failed flush: %v", err)
	}
	var we *WriteError
	if !errors.As(l.Err(), &we) || we.Op != "flush" {
		t.Fatalf("Err() = %v, want a flush WriteError", l.Err())
	}
	if err := l.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close = %v, want the sticky error", err)
	}
	// The abort marker stays so the next start verifies the tail.
	if _, err := os.Stat(filepath.Join(l.cfg.Dir, "abort")); err != nil {
		t.Fatalf("abort marker removed after a failed run: %v", err)
	}
}

func TestHoldBlocksDeletion(t *testing.T) {
	l, _ := openLog(t, testConfig(t, 4096))
	for i := 0; i < 10; i++ {
		if _, err := l.Append(key(i), payload(i, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	first := l.Files()[0]
	m, err := l.Hold(0)
	if err != nil || m != first {
		t.Fatalf("Hold(0) = %v, %v", m, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	n, err := l.DeleteBefore(ctx, 3*4096)
	cancel()
	if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DeleteBefore while held = %d, %v", n, err)
	}
	if _, err := os.Stat(first.Path()); err != nil {
		t.Fatalf("held file removed: %v", err)
	}
	if l.Files()[0] != first {
		t.Fatal("held file left the list")
	}
	// The bytes are still readable while held.
	if b, err := m.readable(0, 8); err != nil || len(b) != 8 {
		t.Fatalf("read held file: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.DeleteBefore(context.Background(), 3*4096)
		done <- err
	}()
	m.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l.MinOffset() != 3*4096 {
		t.Fatalf("min offset %d, want %d", l.MinOffset(), 3*4096)
	}
	if _, err := os.Stat(first.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted file still there: %v", err)
	}
	if _, err := l.Hold(0); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Hold of deleted range: %v", err)
	}
	// Entries after the cut still read, and survive a reopen.
	cfg := l.cfg
	before := readAll(t, l, 3*4096)
	l.Close()
	l2, _ := openLog(t, cfg)
	after := readAll(t, l2, 3*4096)
	if len(after) != len(before) || len(after) == 0 {
		t.Fatalf("after reopen %d entries, want %d", len(after), len(before))
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	cfg := testConfig(t, 4096)
	openLog(t, cfg)
	if _, _, err := Open(cfg, 0, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func TestPoolMode(t *testing.T) {
	cfg := testConfig(t, 16<<10)
	cfg.PoolBuffers = 2
	l, _ := openLog(t, cfg)
	var last AppendResult
	for i := 0; i < 20; i++ {
		r, err := l.Append(key(i), payload(i, 1500))
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	// Not visible until committed.
	if l.ReadPosition() >= last.End() {
		t.Fatalf("read position %d covers uncommitted data (end %d)", l.ReadPosition(), last.End())
	}
	c, err := l.Commit(0)
	if err != nil || c != last.End() {
		t.Fatalf("Commit(0) = %d, %v; want %d", c, err, last.End())
	}
	if got := readAll(t, l, 0); len(got) != 20 {
		t.Fatalf("read %d entries after commit, want 20", len(got))
	}
	if f, err := l.Flush(0); err != nil || f != last.End() {
		t.Fatalf("Flush(0) = %d, %v", f, err)
	}
	// Buffers of full, committed files went back to the pool (the allocator
	// may have lent them again already, so look at the files).
	for _, m := range l.Files()[:len(l.Files())-1] {
		m.commitMu.Lock()
		held := m.writeBuf != nil
		m.commitMu.Unlock()
		if held {
			t.Fatalf("full, committed file %s still holds a pool buffer", m.Path())
		}
	}
	l.Close()
	l2, rep := openLog(t, cfg)
	if !rep.Clean || len(readAll(t, l2, 0)) != 20 {
		t.Fatalf("reopen after pool mode: %+v", rep)
	}
}

// TestPoolCommitWhileFilling: the commit service commits a pool-mode file
// while the appender fills it (with an entry or the filler that closes
// it). Committing a full file returns its pool buffer and clears the
// file's writeBuf, which the appender must no longer read once its bytes
// are published: under -race this test caught advanceWrote reading
// writeBuf after the atomic add that let the commit see the file full.
func TestPoolCommitWhileFilling(t *testing.T) {
	cfg := testConfig(t, 16<<10)
	cfg.PoolBuffers = 3
	l, _ := openLog(t, cfg)
	done := make(chan struct{})
	committed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				committed <- nil
				return
			default:
			}
			if _, err := l.Commit(0); err != nil {
				committed <- err
				return
			}
		}
	}()
	var last AppendResult
	for i := 0; i < 400; i++ {
		r, err := l.Append(key(i), payload(i, 700+i%5*300))
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	close(done)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if c, err := l.Commit(0); err != nil || c != last.End() {
		t.Fatalf("Commit(0) = %d, %v; want %d", c, err, last.End())
	}
	if got := readAll(t, l, 0); len(got) != 400 {
		t.Fatalf("read %d entries, want 400", len(got))
	}
}

func TestWarmModes(t *testing.T) {
	for _, w := range []WarmMode{WarmFault, WarmPopulate, WarmTouch, WarmNone} {
		t.Run(w.String(), func(t *testing.T) {
			cfg := testConfig(t, 64<<10)
			cfg.Warm = w
			cfg.WarmFlushPages = 4
			cfg.SyncFlush = true
			l, _ := openLog(t, cfg)
			for i := 0; i < 100; i++ {
				if _, err := l.Append(key(i), payload(i, 3000)); err != nil {
					t.Fatal(err)
				}
			}
			checkEntries(t, readAll(t, l, 0), 100, 3000)
		})
	}
}

// TestWarmWhileAppending: the content-preserving modes hand a file to the
// appender while they still warm it, so appends land in pages the warm-up
// has yet to reach (and, with one page per chunk and small entries, in the
// very page it is faulting); every byte must survive.
func TestWarmWhileAppending(t *testing.T) {
	for _, w := range []WarmMode{WarmFault, WarmPopulate} {
		t.Run(w.String(), func(t *testing.T) {
			cfg := testConfig(t, 8<<20)
			cfg.Warm = w
			cfg.WarmFlushPages = 1
			l, _ := openLog(t, cfg)
			const n, size = 20000, 900
			for i := 0; i < n; i++ {
				if _, err := l.Append(key(i), payload(i, size)); err != nil {
					t.Fatal(err)
				}
			}
			checkEntries(t, readAll(t, l, 0), n, size)
		})
	}
}

// checkEntries checks that got holds entries 0..n-1 as key and payload
// (of size bytes) built them.
func checkEntries(t *testing.T, got []Entry, n, size int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("read %d entries, want %d", len(got), n)
	}
	for i, e := range got {
		if !bytes.Equal(e.Key, key(i)) || !bytes.Equal(e.Payload, payload(i, size)) {
			t.Fatalf("entry %d: key or payload changed", i)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{},
		{Dir: "x", FileSize: 1000},
		{Dir: "x", FileSize: 4096, KeySize: -1},
		{Dir: "x", FileSize: 4096, PoolBuffers: 1, SyncFlush: true},
		{Dir: "x", FileSize: 4096, Warm: 9},
	}
	for i, c := range bad {
		c.withDefaults()
		if c.Validate() == nil {
			t.Errorf("config %d accepted: %+v", i, c)
		}
	}
	good := DefaultConfig("x")
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}
