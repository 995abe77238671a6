package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// allocatedBytes is what du counts for the files in dir: their allocated
// blocks.
func allocatedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		n += st.Blocks * 512
	}
	return n
}

// An idle log holds the lead, not whole files: one small entry in a log
// of 128 MiB files leaves a few MiB allocated, before and after a restart.
func TestIdleLogAllocatesTheLeadOnly(t *testing.T) {
	forEachAppendMode(t, func(t *testing.T, mode AppendMode) {
		cfg := testConfig(t, 128<<20)
		cfg.Append = mode
		cfg.AllocateAhead = 2 << 20
		l, _, err := Open(cfg, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(key(1), payload(1, 100)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(cfg.Dir, "commitlog")
		// The lead, plus the pages of the first extension the worker may
		// have made after the append.
		if got, limit := allocatedBytes(t, dir), int64(4<<20); got > limit {
			t.Fatalf("allocated %d bytes after one entry, want at most %d", got, limit)
		}
		l2, _ := openLog(t, cfg)
		got := readAll(t, l2, 0)
		if len(got) != 1 {
			t.Fatalf("got %d entries after restart, want 1", len(got))
		}
		if got := allocatedBytes(t, dir); got > 4<<20 {
			t.Fatalf("allocated %d bytes after restart, want at most %d", got, 4<<20)
		}
	})
}

// Every file after the first is allocated whole before it becomes the file
// being appended to, so the allocator never extends a file in use:
// fallocate takes the inode lock that each of the appender's pwrites needs,
// and held it for 20-40 ms while ext4 read a block bitmap (BENCHMARKS.md,
// session 17). The first file still holds only the lead.
func TestFilesInUseAreAllocatedWhole(t *testing.T) {
	forEachAppendMode(t, func(t *testing.T, mode AppendMode) {
		const size = 1 << 20
		cfg := testConfig(t, size)
		cfg.Append = mode
		cfg.AllocateAhead = 64 << 10
		l, _ := openLog(t, cfg)
		if got := l.queue.Last(); got != nil {
			t.Fatalf("a new log has file %s before the first append", got.Path())
		}
		if _, err := l.Append(key(1), payload(1, 100)); err != nil {
			t.Fatal(err)
		}
		if got := l.queue.Last().Allocated(); got >= size {
			t.Fatalf("first file: %d bytes allocated after one entry, want less than the file's %d", got, size)
		}
		for files := 1; files < 4; {
			if _, err := l.Append(key(1), payload(2, 10<<10)); err != nil {
				t.Fatal(err)
			}
			if n := len(l.Files()); n != files {
				files = n
				if got := l.queue.Last().Allocated(); got != size {
					t.Fatalf("file %d: %d bytes allocated when it became the last, want all %d", n, got, size)
				}
			}
		}
	})
}

// workerWithoutGoroutine is an allocator's state without its goroutine,
// so that a test runs growAhead itself: files of size bytes with a lead
// of 64 KiB while idle and a horizon of 1 s, and a first file in use with
// allocated bytes allocated.
func workerWithoutGoroutine(t *testing.T, size, allocated int64) (*AllocateMappedFileService, *MappedFile) {
	t.Helper()
	dir := t.TempDir()
	cfg := DefaultConfig(dir)
	cfg.FileSize = size
	cfg.AllocateAhead = 64 << 10
	cfg.AllocateHorizon = time.Second
	cfg.withDefaults()
	q := newMappedFileQueue(dir, size)
	t.Cleanup(q.close)
	m, err := createMappedFile(dir, 0, size, allocated, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.add(m); err != nil {
		t.Fatal(err)
	}
	s := &AllocateMappedFileService{dir: dir, size: size, cfg: &cfg, queue: q, done: make(chan struct{})}
	s.lead.Store(cfg.AllocateAhead)
	s.mu.pending = make(map[int64]*allocRequest)
	t.Cleanup(func() {
		for _, r := range s.mu.pending {
			if r.file != nil {
				r.file.retire()
			}
		}
	})
	return s, m
}

// The first file of a run is extended by the lead while the log is idle,
// and once it is busy the rest of it is allocated at once, so that the
// appender does not meet the allocator's fallocate every half lead.
func TestBusyLogAllocatesTheFirstFileWhole(t *testing.T) {
	const size = 4 << 20
	s, m := workerWithoutGoroutine(t, size, pageSize)
	cfg := s.cfg
	s.growAhead() // the first call only records the position: idle
	if got, want := m.Allocated(), cfg.AllocateAhead; got != want {
		t.Fatalf("idle: %d bytes allocated, want the lead's %d", got, want)
	}
	// 200 KiB in the last second: a lead of 1 MiB (whole MiBs), which
	// used to extend the file to 1.2 MiB.
	s.rate.at = s.rate.at.Add(-time.Second)
	m.setPositions(200 << 10)
	s.growAhead()
	if lead := s.lead.Load(); lead != 1<<20 {
		t.Fatalf("lead %d after 200 KiB in a second, want 1 MiB", lead)
	}
	if got := m.Allocated(); got != size {
		t.Fatalf("busy: %d bytes allocated, want the whole file's %d", got, size)
	}
}

// The appender never writes past the allocated prefix: on a full disk an
// append that does not fit in it fails with ENOSPC inside the file, leaves
// the log unchanged and not broken, and succeeds once space is back.
func TestAppendPastAllocationOnFullDisk(t *testing.T) {
	forEachAppendMode(t, func(t *testing.T, mode AppendMode) {
		cfg := testConfig(t, 1<<20)
		cfg.Append = mode
		cfg.AllocateAhead = 64 << 10
		var full atomic.Bool
		cfg.AllocateHook = func(string, int64) error {
			if full.Load() {
				return syscall.ENOSPC
			}
			return nil
		}
		l, _ := openLog(t, cfg)
		if _, err := l.Append(key(0), payload(0, 1000)); err != nil {
			t.Fatal(err)
		}
		full.Store(true)
		var err error
		n := 1
		for ; n < 2000 && err == nil; n++ {
			_, err = l.Append(key(n), payload(n, 1000))
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("got %v after %d appends, want ENOSPC", err, n)
		}
		if l.Err() != nil {
			t.Fatalf("ENOSPC became sticky: %v", l.Err())
		}
		for _, m := range l.Files() {
			if m.WrotePosition() > m.Allocated() {
				t.Fatalf("%s: wrote %d past the allocated %d", m.Path(), m.WrotePosition(), m.Allocated())
			}
		}
		accepted := len(readAll(t, l, 0))
		if accepted != n-1 {
			t.Fatalf("got %d entries, want the %d accepted", accepted, n-1)
		}
		full.Store(false)
		if _, err := l.Append(key(n), payload(n, 1000)); err != nil {
			t.Fatalf("append after space returned: %v", err)
		}
		if got := len(readAll(t, l, 0)); got != accepted+1 {
			t.Fatalf("got %d entries, want %d", got, accepted+1)
		}
	})
}

// Every byte written is allocated, across rolls and a restart after a
// crash, whose recovery gives the zeroed tail's blocks back.
func TestWrittenBytesAreAllocated(t *testing.T) {
	cfg := testConfig(t, 256<<10)
	cfg.AllocateAhead = 16 << 10
	l, _, err := Open(cfg, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		if _, err := l.Append(key(i), payload(i, 1500)); err != nil {
			t.Fatal(err)
		}
		if m := l.queue.Last(); m.WrotePosition() > m.Allocated() {
			t.Fatalf("append %d: wrote %d past the allocated %d", i, m.WrotePosition(), m.Allocated())
		}
	}
	// Allocate the rest of the last file, as a lead of a file would, so
	// that recovery has a tail to give back.
	if _, _, err := l.queue.Last().grow(cfg.FileSize, nil); err != nil {
		t.Fatal(err)
	}
	crash(l)
	l2, _ := openLog(t, cfg)
	if got := len(readAll(t, l2, 0)); got != 600 {
		t.Fatalf("got %d entries after the crash, want 600", got)
	}
	last := l2.queue.Last()
	var st syscall.Stat_t
	if err := syscall.Stat(last.Path(), &st); err != nil {
		t.Fatal(err)
	}
	// Recovery punched out the tail past the data: what stays allocated is
	// the data and the lead the worker may have added since, not the file.
	if blocks := st.Blocks * 512; blocks > alignUp(last.WrotePosition(), pageSize)+cfg.AllocateAhead+pageSize {
		t.Fatalf("%d bytes allocated in the last file after recovery, data ends at %d", blocks, last.WrotePosition())
	}
	for i := 600; i < 700; i++ {
		if _, err := l2.Append(key(i), payload(i, 1500)); err != nil {
			t.Fatal(err)
		}
		if m := l2.queue.Last(); m.WrotePosition() > m.Allocated() {
			t.Fatalf("append %d after restart: wrote %d past the allocated %d", i, m.WrotePosition(), m.Allocated())
		}
	}
}

// The lead follows the write rate: an idle log keeps AllocateAhead, a log
// written at a high rate a horizon of writes, at most one file.
// A log written faster than a file a second prepares the two next files,
// so that a build slowed by the disk (a block bitmap read) has a whole
// file's time more before the roll needs it; a lead of less than a file
// prepares only the next one.
func TestBusyLogPreparesTwoFilesAhead(t *testing.T) {
	const size = 4 << 20
	s, m := workerWithoutGoroutine(t, size, size)
	queued := func() []int64 {
		var out []int64
		for _, r := range s.mu.queue {
			out = append(out, r.from)
		}
		return out
	}
	s.growAhead()
	// 1 MiB in the last second: a lead of 1 MiB, inside the file.
	s.rate.at = s.rate.at.Add(-time.Second)
	m.setPositions(1 << 20)
	s.growAhead()
	if got := queued(); len(got) != 0 {
		t.Fatalf("a lead inside the file queued files %v", got)
	}
	// 20 MiB in the last second (written, as far as the rate goes): a
	// lead of two files from 2 MiB in, the next two files.
	s.rate.at = s.rate.at.Add(-time.Second)
	s.rate.pos -= 19 << 20
	m.setPositions(2 << 20)
	s.growAhead()
	if lead := s.lead.Load(); lead != 2*size {
		t.Fatalf("lead %d after 20 MiB in a second, want two files (%d)", lead, 2*size)
	}
	if got := queued(); len(got) != 2 || got[0] != size || got[1] != 2*size {
		t.Fatalf("queued files %v, want the two next ones at %d and %d", got, size, 2*size)
	}
	for _, r := range s.mu.queue {
		if r.initial != size {
			t.Fatalf("file at %d queued with %d bytes to allocate, want all %d", r.from, r.initial, size)
		}
	}
}

func TestLeadFollowsRate(t *testing.T) {
	cfg := DefaultConfig(t.TempDir())
	cfg.FileSize = 128 << 20
	cfg.withDefaults()
	s := &AllocateMappedFileService{size: cfg.FileSize, cfg: &cfg}
	s.lead.Store(cfg.AllocateAhead)
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name    string
		after   time.Duration
		written int64
		want    int64
	}{
		{"first call only records", 0, 0, cfg.AllocateAhead},
		{"idle", time.Minute, 4096, cfg.AllocateAhead},
		{"50 MB/s", time.Second, 50 << 20, 50 << 20},
		{"10 MB in 10 ms: capped at two files", 10 * time.Millisecond, 10 << 20, maxLeadFiles * cfg.FileSize},
		{"back to idle", time.Hour, 1 << 20, cfg.AllocateAhead},
	}
	now, pos := t0, int64(0)
	for _, tc := range tests {
		now, pos = now.Add(tc.after), pos+tc.written
		if got := s.adapt(now, pos); got != tc.want {
			t.Fatalf("%s: lead %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A file of the MappedFile API (a consume queue's) grows by zero-filling
// as it is appended to, never writes past what is allocated, and after a
// reopen at a position inside a page, growing again leaves every byte of
// data below the position intact.
func TestAppendBytesGrowsAndKeepsData(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 20
	m, err := CreateMappedFile(dir, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 40)
	var want []byte
	appendN := func(m *MappedFile, n int) {
		t.Helper()
		for range n {
			for j := range rec {
				rec[j] = byte(len(want) + j + 1)
			}
			if _, err := m.AppendBytes(rec); err != nil {
				t.Fatal(err)
			}
			want = append(want, rec...)
			if m.WrotePosition() > m.Allocated() {
				t.Fatalf("wrote %d past the allocated %d", m.WrotePosition(), m.Allocated())
			}
		}
	}
	if got := m.Allocated(); got != pageSize {
		t.Fatalf("a new file allocates %d bytes, want one page", got)
	}
	appendN(m, 250) // 10,000 bytes: into the third page
	if got := allocatedBytes(t, dir); got > 4*pageSize {
		t.Fatalf("%d bytes allocated for %d bytes of data", got, len(want))
	}
	if _, err := m.Flush(0); err != nil {
		t.Fatal(err)
	}
	m.Close()

	m2, err := OpenMappedFile(dir, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	m2.SetPosition(int64(len(want)))
	appendN(m2, 500) // past the allocation made before the reopen
	got := make([]byte, len(want))
	if err := m2.CopyTo(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("data differs from byte %d after a reopen and growth", i)
	}
}
