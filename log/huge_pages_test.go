package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kbroker/kbroker/internal/testenv"
)

// hugeFileSize is the commit-log file size of the huge page tests: a few
// huge pages.
const hugeFileSize = 16 << 20

// skipWithoutHugePageCache skips the test where this kernel and the file
// system of dir keep no huge folios in the page cache of a file mapped for
// them (transparent huge pages off, or a file system without large
// folios, such as ext4 before Linux 6.16).
func skipWithoutHugePageCache(t *testing.T, dir string) {
	t.Helper()
	h := hugePageSize()
	if h == 0 {
		t.Skip("no transparent huge pages on this kernel")
	}
	m, err := createMappedFile(dir, 0, 2*h, 2*h, false, nil) // as the allocator creates them
	if err != nil {
		t.Fatal(err)
	}
	defer m.Destroy(t.Context())
	if !m.adviseHugePages() {
		t.Skip("the kernel did not align a file mapping to a huge page")
	}
	if err := unix.Madvise(m.data, unix.MADV_POPULATE_READ); err != nil {
		t.Skipf("madvise(MADV_POPULATE_READ): %v", err)
	}
	if _, pmd := smapsOf(t, m.data); pmd == 0 {
		t.Skip("this file system keeps no huge folios in the page cache")
	}
}

// smapsOf returns the resident and PMD-mapped bytes of the mapping that
// starts at b (Rss and FilePmdMapped in /proc/self/smaps).
func smapsOf(t *testing.T, b []byte) (rss, pmd int64) {
	t.Helper()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	sizes, err := testenv.MappingSizes(func(h []string) bool { return strings.HasPrefix(h[0], start) }, "Rss", "FilePmdMapped")
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no smaps: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sizes["Rss"], sizes["FilePmdMapped"]
}

// mappedPages counts the pages of b that are mapped in the process's page
// tables (the present bit of /proc/self/pagemap).
func mappedPages(t *testing.T, b []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer f.Close()
	n := len(b) / pageSize
	buf := make([]byte, 8*n)
	first := int64(uintptr(unsafe.Pointer(&b[0]))) / pageSize
	if _, err := f.ReadAt(buf, first*8); err != nil {
		t.Fatal(err)
	}
	mapped := 0
	for i := range n {
		if binary.LittleEndian.Uint64(buf[8*i:])>>63 == 1 {
			mapped++
		}
	}
	return mapped
}

// inPageCache returns one byte per page of b, 0 where the page is not in
// the page cache (mincore).
func inPageCache(t *testing.T, b []byte) []byte {
	t.Helper()
	vec := make([]byte, len(b)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	return vec
}

// awaitResident waits until every page of b is in the page cache.
func awaitResident(t *testing.T, b []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		vec := inPageCache(t, b)
		if !bytes.Contains(vec, []byte{0}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pages still not in the page cache", bytes.Count(vec, []byte{0}), len(vec))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// preparedFile waits for the file at from that the allocator prepares
// ahead of the appends, and returns it without taking it.
func preparedFile(t *testing.T, l *CommitLog, from int64) *MappedFile {
	t.Helper()
	l.alloc.mu.Lock()
	req := l.alloc.mu.pending[from]
	l.alloc.mu.Unlock()
	if req == nil {
		t.Fatalf("no file at %d being prepared", from)
	}
	<-req.ready
	if req.err != nil {
		t.Fatal(req.err)
	}
	return req.file
}

// hugePagedLog opens a log of pwrite appends mapped for huge pages, with
// edit (if any) applied to its config, and returns it and its first file
// as the allocator prepared it. It skips where the page cache keeps no
// huge folios.
func hugePagedLog(t *testing.T, edit func(*Config)) (*CommitLog, *MappedFile) {
	t.Helper()
	cfg := testConfig(t, hugeFileSize)
	skipWithoutHugePageCache(t, t.TempDir())
	cfg.Append, cfg.HugePages = AppendPwrite, true
	if edit != nil {
		edit(&cfg)
	}
	l, _ := openLog(t, cfg)
	return l, preparedFile(t, l, 0)
}

// TestHugePagesFilledAhead: with pwrite appends, the allocator fills a new
// file's page cache ahead of the appends, the appends write into it, and
// a read of what they wrote through the mapping (as a fetch's writev
// does) is mapped in huge pages, again after an Unmap. Where the page
// cache were filled by the appends themselves, in folios the size of each
// pwrite, nothing would be PMD-mapped.
func TestHugePagesFilledAhead(t *testing.T) {
	const ahead = hugeFileSize // the first file allocated (and filled) whole
	l, m := hugePagedLog(t, func(c *Config) {
		c.AllocateAhead = ahead
		c.AllocateHorizon = time.Nanosecond // the lead stays at AllocateAhead
	})
	if m.hugePage == 0 {
		t.Fatal("the commit-log file is not mapped for huge pages")
	}
	h := m.hugePage
	// The filler skipped the file: nothing fills before the appends are
	// measured large. Queue it again as if they had been.
	l.alloc.smallAppends.Store(false)
	l.alloc.filler.add(m, 0, m.size)
	// The filler fills the huge pages of its window, a sixteenth to half
	// of the lead ahead of the appender, as the appender moves.
	awaitWindow := func() {
		t.Helper()
		w := l.alloc.fillWindow()
		if lo, hi := alignUp(w.from, h), min(w.to&^(h-1), m.size); lo < hi {
			awaitResident(t, m.data[lo:hi])
		}
	}
	awaitWindow()
	from := alignUp(ahead/16, h) // the first page filled
	if !m.ReadaheadMarked(from) || m.ReadaheadMarked(from-1) {
		t.Errorf("ReadaheadMarked at the first filled page %v, just before it %v; want true, false",
			m.ReadaheadMarked(from), m.ReadaheadMarked(from-1))
	}

	var results []AppendResult
	for i := 0; l.ReadPosition() < hugeFileSize-h; i++ {
		r, err := l.Append(key(i), payload(i, 16000)) // the size of a small batch
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		if i%64 == 63 { // every MiB, less than the window is wide
			awaitWindow()
		}
	}
	// Read what was written through the mapping, as writev does.
	out, err := os.Create(t.TempDir() + "/copy")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	b, err := m.SyscallBytes(0, l.ReadPosition())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Write(int(out.Fd()), b); err != nil || n != len(b) {
		t.Fatalf("write from the mapping: %d, %v", n, err)
	}
	filled := hugeFileSize - h - from // written, in huge pages filled ahead
	if _, pmd := smapsOf(t, m.data); pmd < filled {
		t.Fatalf("%d bytes mapped in huge pages after reading, want at least %d", pmd, filled)
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		e, held, err := l.ReadEntry(r.Pos)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Payload, payload(i, 16000)) || !bytes.Equal(got[e.PayloadPos():e.PayloadPos()+16000], e.Payload) {
			t.Fatalf("entry %d differs", i)
		}
		held.Release()
	}

	// A fetch's spans are unmapped once sent (broker/mapped_spans.go): a
	// huge page is dropped whole, and the next read maps it whole again.
	page := b[from : from+h]
	if err := m.Unmap(from+100, 10); err != nil {
		t.Fatal(err)
	}
	if n := mappedPages(t, page); n != 0 {
		t.Errorf("%d pages of the huge page still mapped after unmapping 10 bytes of it, want 0", n)
	}
	if n, err := unix.Write(int(out.Fd()), page); err != nil || n != int(h) {
		t.Fatalf("write from the mapping: %d, %v", n, err)
	}
	if _, pmd := smapsOf(t, m.data); pmd < filled {
		t.Fatalf("%d bytes mapped in huge pages after unmapping and reading again, want at least %d", pmd, filled)
	}
}

// TestHugePagesNotForSmallAppends: nothing is filled until the appends are
// measured, appends that average under minFilledAppend stop the filler,
// larger ones start it again.
func TestHugePagesNotForSmallAppends(t *testing.T) {
	cfg := testConfig(t, hugeFileSize)
	cfg.Append, cfg.HugePages = AppendPwrite, true
	cfg.AllocateAhead = 1 << 20 // grown, and the appends measured, every 512 KiB
	l, _ := openLog(t, cfg)
	appendUntil := func(size int, end int64) {
		t.Helper()
		for i := 0; l.ReadPosition() < end; i++ {
			if _, err := l.Append(key(i), payload(i, size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The allocator measures the appends when it grows the allocation, in
	// its own goroutine: wait for it.
	await := func(what string, ok func(from int64) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(l.alloc.fillWindow().from) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the filler may fill from %d", what, l.alloc.fillWindow().from)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if from := l.alloc.fillWindow().from; from != math.MaxInt64 {
		t.Fatalf("the filler may fill from %d before any append was measured", from)
	}
	appendUntil(1000, 8<<20)
	await("after 1 KB appends", func(from int64) bool { return from == math.MaxInt64 })
	appendUntil(64<<10, 3*hugeFileSize)
	await("after 64 KiB appends", func(from int64) bool { return from < math.MaxInt64 })
}

// TestHugePagesOnlyForPwrite: files written through their mappings (mapped
// appends, pool buffers), and logs not configured for it (the default),
// keep small pages.
func TestHugePagesOnlyForPwrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"mapped", func(c *Config) { c.Append, c.HugePages = AppendMapped, true }},
		{"pool", func(c *Config) { c.Append, c.PoolBuffers, c.HugePages = AppendPwrite, 1, true }},
		{"off", func(c *Config) { c.Append = AppendPwrite }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, hugeFileSize)
			tc.cfg(&cfg)
			l, _ := openLog(t, cfg)
			if _, err := l.Append(key(1), payload(1, 100)); err != nil {
				t.Fatal(err)
			}
			if h := l.Files()[0].hugePage; h != 0 {
				t.Errorf("file mapped for huge pages (%d)", h)
			}
		})
	}
}

// TestHugePagesAppendsRaceFiller: appends that overtake the filler, and a
// filler that fills ranges the appends reach while it works, lose no byte,
// across rolls, after a reopen too.
func TestHugePagesAppendsRaceFiller(t *testing.T) {
	cfg := testConfig(t, hugeFileSize)
	cfg.Append, cfg.HugePages = AppendPwrite, true
	cfg.AllocateAhead = 1 << 20 // grown in steps while the appends run
	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var results []AppendResult
	for i := 0; l.ReadPosition() < 3*hugeFileSize; i++ {
		r, err := l.Append(key(i), payload(i, 1000+i*7919%30000))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	check := func(l *CommitLog) {
		t.Helper()
		got := readAll(t, l, 0)
		if len(got) != len(results) {
			t.Fatalf("%d entries, want %d", len(got), len(results))
		}
		for i, e := range got {
			if e.Pos != results[i].Pos || !bytes.Equal(e.Key, key(i)) || !bytes.Equal(e.Payload, payload(i, 1000+i*7919%30000)) {
				t.Fatalf("entry %d differs", i)
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = openLog(t, cfg)
	check(l)
}

// TestHugePagesFillReadsNothingAhead: filling a range puts huge folios in
// the page cache there and nowhere past it. A fault in a mapping advised
// MADV_HUGEPAGE alone reads a second huge page ahead, and readahead marks
// make later faults read further (a whole read_ahead_kb window): memory
// zeroed past what was allocated, and marks a reader at the tail then
// acts on. MADV_RANDOM (adviseHugePages) stops both.
func TestHugePagesFillReadsNothingAhead(t *testing.T) {
	_, m := hugePagedLog(t, nil)
	h := m.hugePage
	// The log's own filler fills nothing yet (no append was measured);
	// this one fills the given range, synchronously.
	f := &pageCacheFiller{window: everywhere, done: make(chan struct{})}
	f.populate = f.populatePage
	lo, hi := 2*h, 4*h
	f.fill(fillRange{m: m, lo: lo, hi: hi})
	vec := inPageCache(t, m.data)
	if n := bytes.Count(vec[lo/pageSize:hi/pageSize], []byte{0}); n > 0 {
		t.Errorf("%d KiB of the filled range not in the page cache", n*pageSize>>10)
	}
	if n := len(vec[hi/pageSize:]) - bytes.Count(vec[hi/pageSize:], []byte{0}); n > 0 {
		t.Errorf("%d KiB past the filled range in the page cache, want none", n*pageSize>>10)
	}
}

// TestHugePagesCloseWhileThreadBusy: a log closes without waiting for the
// shared low-priority thread, busy with another log's filling (here held
// by the test): its filler gives up the huge page it was about to fill.
func TestHugePagesCloseWhileThreadBusy(t *testing.T) {
	_, m := hugePagedLog(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	go onLowPriorityThread(nil, func() { close(started); <-release })
	<-started
	defer close(release)
	f := newPageCacheFiller(everywhere)
	f.add(m, 0, m.size)
	time.Sleep(100 * time.Millisecond) // let it wait for the thread (it passes either way)
	closed := make(chan struct{})
	go func() { f.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close waited for the low-priority thread")
	}
	if got := inPageCache(t, m.data); bytes.Count(got, []byte{0}) != len(got) {
		t.Errorf("%d pages filled while the thread was held", len(got)-bytes.Count(got, []byte{0}))
	}
}

// everywhere is a filler window that takes every huge page.
func everywhere() fillWindow { return fillWindow{to: math.MaxInt64} }

// TestHugePagesFillOnlyNearTheAppends: the filler fills the huge pages in
// its window and waits there until the appender moves the window on,
// instead of filling all the allocator allocated ahead, up to two files,
// which a log whose appends stop never writes.
func TestHugePagesFillOnlyNearTheAppends(t *testing.T) {
	_, m := hugePagedLog(t, nil)
	h := m.hugePage
	var wrote atomic.Int64
	window := func() fillWindow {
		w := wrote.Load()
		return fillWindow{wrote: w, from: w, to: w + 2*h}
	}
	f := newPageCacheFiller(window)
	defer f.close()
	f.add(m, 0, m.size)
	filled := func(lo, hi int64) int { // pages of [lo, hi) in the page cache
		vec := inPageCache(t, m.data[lo:hi])
		return len(vec) - bytes.Count(vec, []byte{0})
	}

	awaitResident(t, m.data[:2*h])
	time.Sleep(100 * time.Millisecond) // time to fill on, were it not waiting
	if n := filled(2*h, m.size); n > 0 {
		t.Fatalf("%d KiB filled past the window", n*pageSize>>10)
	}
	// The appender moves on by three huge pages: the page it passed is
	// left to it, the next two are filled.
	wrote.Store(3 * h)
	f.progress(3 * h)
	awaitResident(t, m.data[3*h:5*h])
	time.Sleep(100 * time.Millisecond)
	if n := filled(2*h, 3*h); n > 0 {
		t.Errorf("%d KiB filled behind the window", n*pageSize>>10)
	}
	if n := filled(5*h, m.size); n > 0 {
		t.Errorf("%d KiB filled past the window", n*pageSize>>10)
	}
}
