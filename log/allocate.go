package log

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WarmMode says how the allocator pre-faults a new file's pages so that
// appends do not pay for the first touch of each page.
type WarmMode int

const (
	// WarmFault takes a write fault on every 4 KiB page with an atomic add
	// of zero to its first word. Like a write it makes the kernel allocate
	// and map the page (ext4's large folios map many pages per fault), but
	// it leaves the contents alone, so a file is handed to the appender
	// while its warm-up still runs: a roll never waits for it. The default:
	// alone it costs what WarmPopulate does, but beside a running broker
	// it measured cheaper (docs/BENCHMARKS.md, "Warm-up of mapped
	// appends").
	WarmFault WarmMode = iota
	// WarmPopulate pre-faults the whole file with one
	// madvise(MADV_POPULATE_WRITE) per chunk (Linux 5.14+), also
	// content-preserving and handed out while warming.
	WarmPopulate
	// WarmTouch writes a zero into every 4 KiB page, as RocketMQ's
	// warmMappedFile does. It changes the bytes, so the file is handed out
	// only after the warm-up finished.
	WarmTouch
	// WarmNone leaves pages to be faulted in by the appends themselves.
	WarmNone
)

// ParseWarmMode reads a mode as String spells it.
func ParseWarmMode(s string) (WarmMode, error) {
	for w := WarmFault; w <= WarmNone; w++ {
		if w.String() == s {
			return w, nil
		}
	}
	return 0, fmt.Errorf("log: unknown warm-up mode %q (fault, populate, touch or none)", s)
}

// String names the mode as the configuration spells it.
func (w WarmMode) String() string {
	switch w {
	case WarmFault:
		return "fault"
	case WarmPopulate:
		return "populate"
	case WarmTouch:
		return "touch"
	case WarmNone:
		return "none"
	}
	return fmt.Sprintf("WarmMode(%d)", int(w))
}

// contentPreserving reports whether warm-up leaves the bytes alone, so
// that the file may be appended to while it warms.
func (w WarmMode) contentPreserving() bool {
	return w == WarmFault || w == WarmPopulate
}

// allocRequest is one file being prepared by the allocator.
type allocRequest struct {
	from    int64
	initial int64         // bytes to allocate at creation; under mu until built
	ready   chan struct{} // closed when file or err is set
	file    *MappedFile
	err     error
}

// AllocateMappedFileService allocates the log's disk ahead of the appender
// in the background (RocketMQ's AllocateMappedFileService): it extends the
// allocated part of the file being written and creates the next file
// before the appender needs it, by a lead that follows the write rate
// (grow.go), so that a roll finds its file already created, allocated and
// warmed and a busy appender never waits for the disk, while an idle log
// holds only a few MiB.
type AllocateMappedFileService struct {
	dir   string
	size  int64
	cfg   *Config
	pool  *TransientStorePool
	queue *MappedFileQueue // the log's files: the last one is being written

	// lead is the allocation wanted ahead of the write position; frontier
	// is the global position up to which allocation has been arranged.
	// The worker writes both; the appender reads them in needGrow.
	lead     atomic.Int64
	frontier atomic.Int64
	// growDue is set by needGrow and cleared by the worker.
	growDue atomic.Bool
	// rate is the worker's measure of the write rate.
	rate leadState
	// filler fills the page cache of what is allocated with huge folios;
	// nil unless Config.hugePages. appends counts the appender's writes
	// (needGrow), and smallAppends is set by adapt while they average
	// less than minFilledAppend, and until it first measured them: then
	// nothing is filled.
	filler       *pageCacheFiller
	appends      atomic.Int64
	smallAppends atomic.Bool

	mu struct {
		sync.Mutex
		pending map[int64]*allocRequest // by start offset
		queue   []*allocRequest         // FIFO of requests to build
		closed  bool
	}
	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

func newAllocateMappedFileService(dir string, cfg *Config, pool *TransientStorePool, queue *MappedFileQueue) *AllocateMappedFileService {
	s := &AllocateMappedFileService{
		dir:   dir,
		size:  cfg.FileSize,
		cfg:   cfg,
		pool:  pool,
		queue: queue,
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	s.lead.Store(min(cfg.AllocateAhead, cfg.FileSize))
	if cfg.hugePages() {
		s.filler = newPageCacheFiller(s.fillWindow)
		// Nothing is filled until appends are measured large: a log of
		// small ones never gets huge folios (see fillWindow).
		s.smallAppends.Store(true)
	}
	s.mu.pending = make(map[int64]*allocRequest)
	s.wg.Add(1)
	go s.run()
	return s
}

// get returns the file that starts at from, built by the background worker
// if it was queued before, else built now and allocated whole.
// A failed allocation (for example ENOSPC) is returned and forgotten, so the
// next call tries again.
func (s *AllocateMappedFileService) get(from int64) (*MappedFile, error) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	req := s.mu.pending[from]
	if req != nil {
		select {
		case <-req.ready:
			if req.err != nil {
				// A background build that failed (the disk was full
				// then): try again now rather than report a stale error.
				req = nil
			}
		default:
		}
	}
	if req == nil {
		// Whole, as growAhead allocates a next file: extending a file
		// in use would contend with the appender for its inode lock.
		req = &allocRequest{from: from, initial: s.size, ready: make(chan struct{})}
		s.mu.pending[from] = req
		s.mu.queue = append(s.mu.queue, req)
	}
	s.mu.Unlock()
	s.signal()

	<-req.ready
	s.mu.Lock()
	if s.mu.pending[from] == req {
		delete(s.mu.pending, from)
	}
	s.mu.Unlock()
	return req.file, req.err
}

// prepareSized arranges for the file at from to exist with at least n
// bytes allocated, without waiting: a file already built is extended (the
// caller is the worker, or no worker runs yet), one still queued is built
// larger, and otherwise one is queued.
func (s *AllocateMappedFileService) prepareSized(from, n int64) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return
	}
	r := s.mu.pending[from]
	if r != nil {
		select {
		case <-r.ready:
			if r.err == nil {
				s.mu.Unlock()
				if r.file.Hold() {
					_ = s.growFile(r.file, n)
					r.file.Release()
				}
				return
			}
			// A failed background build: forget it so it is tried again.
		default:
			r.initial = max(r.initial, n)
			s.mu.Unlock()
			return
		}
	}
	req := &allocRequest{from: from, initial: n, ready: make(chan struct{})}
	s.mu.pending[from] = req
	s.mu.queue = append(s.mu.queue, req)
	s.mu.Unlock()
	s.signal()
}

func (s *AllocateMappedFileService) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *AllocateMappedFileService) run() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		var req *allocRequest
		var initial int64
		if len(s.mu.queue) > 0 {
			req = s.mu.queue[0]
			s.mu.queue = s.mu.queue[1:]
			initial = req.initial
		}
		s.mu.Unlock()
		if req == nil && s.growDue.Swap(false) {
			s.growAhead()
			continue
		}
		if req == nil {
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			}
		}
		s.build(req, initial)
	}
}

// build creates and maps one file, allocates its first initial bytes and
// warms them.
func (s *AllocateMappedFileService) build(req *allocRequest, initial int64) {
	m, err := createMappedFile(s.dir, req.from, s.size, initial, true, s.cfg.AllocateHook)
	if err != nil {
		req.err = err
		close(req.ready)
		return
	}
	if s.pool != nil {
		m.pool = s.pool
		m.writeBuf = s.pool.borrowBuffer()
	}
	s.adviseHugePages(m)
	if s.cfg.Warm.contentPreserving() && m.writeBuf == nil {
		// Content-preserving, so publish first and warm while in use; hold
		// the file so it cannot be unmapped under the warm-up.
		m.Hold()
		req.file = m
		close(req.ready)
		warmLowPriority(m, s.cfg, 0, m.Allocated(), s.done)
		m.Release()
		return
	}
	if s.cfg.Warm == WarmTouch && m.writeBuf == nil {
		warmLowPriority(m, s.cfg, 0, m.Allocated(), s.done)
	}
	req.file = m
	close(req.ready)
	s.fillPageCache(m, 0, m.Allocated())
}

// adviseHugePages maps a new file for huge pages when the log's files
// are filled ahead (Config.hugePages, which rules out the pool, so no file
// has a pool buffer then).
func (s *AllocateMappedFileService) adviseHugePages(m *MappedFile) {
	if s.filler != nil {
		m.adviseHugePages()
	}
}

// fillWindow keeps the filler between a sixteenth and half of the lead
// ahead of the appender.
//
// The near end keeps it clear of the appender: at 1 GB/s, with the lead
// at two 128 MiB files, it is 16 MiB, 16 ms of appends, and filling a
// huge page takes well under a millisecond (5 ms where the hypervisor
// must first back the memory). A quarter of the lead left the first
// 64 MiB of every burst to the appender when the lead grew with the rate:
// 68 of the 123 MiB a burst wrote were in small folios (mapped 4 KiB at a
// time by every fetch), 20 now.
//
// The far end bounds what is filled and never written when the appends
// stop to half the lead. With the whole allocation filled (up to two
// files ahead), 768-1,009 MiB of the commit log were in the page cache
// after kbench's 512 MB produce cases wrote 600-700 MiB, and zeroing
// memory the hypervisor had to back first was most of the broker's CPU
// (docs/BENCHMARKS.md, "The filler's window").
//
// The window is at least two huge pages wide, so an idle log, with its
// 4 MiB lead, has what it allocated filled from 256 KiB ahead. While the
// appends are small it stops the filler.
func (s *AllocateMappedFileService) fillWindow() fillWindow {
	if s.smallAppends.Load() {
		return fillWindow{from: math.MaxInt64, to: math.MaxInt64}
	}
	wrote, lead := s.queue.WrotePosition(), s.lead.Load()
	return fillWindow{wrote: wrote, from: wrote + lead/16, to: wrote + lead/2 + 2*hugePageSize()}
}

// minFilledAppend is the least average write for which the page cache is
// filled ahead. ext4 walks every 4 KiB block of a folio on each buffered
// write into it, so a write into a 2 MiB folio costs about 3 µs more than
// one into a folio of its own size: 1 KiB writes cost 3.0 CPU-s/GB against
// 1.2, 4 KiB writes 0.85 against 0.60-0.75, and 16 KiB writes 0.32 against
// 0.70, where the saved allocation outweighs the walk (docs/BENCHMARKS.md,
// "Huge pages for the commit log").
const minFilledAppend = 8 << 10

// fillPageCache queues [lo, hi) of m, just allocated, for the filler.
func (s *AllocateMappedFileService) fillPageCache(m *MappedFile, lo, hi int64) {
	if s.filler != nil {
		s.filler.add(m, lo, hi)
	}
}

// warmLowPriority warms [lo, hi) of m as warmRange does, on the
// low-priority thread, one chunk at a time, and waits for it. Warm-up is
// work ahead of need: on a busy machine it should give the CPU to the
// connections whose requests wait instead of taking time slices from them
// (when it falls behind, appends fault the pages in themselves, as
// without warm-up). The thread runs only the touching of a chunk, and
// stop is checked here between chunks (the thread may touch none of a
// caller's channels).
func warmLowPriority(m *MappedFile, cfg *Config, lo, hi int64, stop <-chan struct{}) {
	warmChunks(m, cfg, lo, hi, stop, func(off, end int64) error {
		var err error
		if !onLowPriorityThread(stop, func() { err = guardFault(func() { err = warmChunk(m, cfg, off, end) }) }) {
			return ErrClosed
		}
		return err
	})
}

// warmRange pre-faults the pages of [lo, hi) of the file, which must be
// allocated, in chunks of WarmFlushPages pages, flushing each chunk in sync
// mode (so the zero pages do not all reach the disk at once behind the
// first group commit), then optionally mlocks them. It stops early when
// stop closes. Errors are ignored: warm-up is only an optimisation, and
// appends fault pages in on their own.
func warmRange(m *MappedFile, cfg *Config, lo, hi int64, stop <-chan struct{}) {
	warmChunks(m, cfg, lo, hi, stop, func(off, end int64) error { return warmChunk(m, cfg, off, end) })
}

// warmChunks runs warm on each chunk of WarmFlushPages pages of [lo, hi),
// until stop closes or warm fails, then mlocks the range if cfg.Mlock
// asks for it.
func warmChunks(m *MappedFile, cfg *Config, lo, hi int64, stop <-chan struct{}, warm func(off, end int64) error) {
	chunk := int64(cfg.WarmFlushPages) * pageSize
	for off := lo; off < hi; off += chunk {
		select {
		case <-stop:
			return
		default:
		}
		if warm(off, min(off+chunk, hi)) != nil {
			return
		}
	}
	if cfg.Mlock && hi > lo {
		if unix.Mlock(m.data[lo:hi]) == nil {
			m.locked.Store(true)
		}
	}
}

// warmChunk pre-faults the pages of [off, end) as cfg.Warm says and, in
// sync mode, flushes them.
func warmChunk(m *MappedFile, cfg *Config, off, end int64) error {
	switch cfg.Warm {
	case WarmFault:
		for p := off; p < end; p += pageSize {
			// An atomic read-modify-write: the appender may be
			// writing into this page at the same moment, and a
			// plain store could undo its bytes.
			atomic.AddUint32((*uint32)(unsafe.Pointer(&m.data[p])), 0)
		}
	case WarmPopulate:
		if err := unix.Madvise(m.data[off:end], unix.MADV_POPULATE_WRITE); err != nil {
			return err
		}
	case WarmTouch:
		for p := off; p < end; p += pageSize {
			m.data[p] = 0
		}
	}
	if cfg.SyncFlush {
		_ = unix.Msync(m.data[off:end], unix.MS_SYNC)
	}
	return nil
}

// close stops the worker and closes every file it built that nobody took.
func (s *AllocateMappedFileService) close() {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return
	}
	s.mu.closed = true
	s.mu.Unlock()
	close(s.done)
	s.wg.Wait()
	if s.filler != nil {
		s.filler.close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for from, req := range s.mu.pending {
		select {
		case <-req.ready:
			if req.file != nil {
				req.file.retire()
			}
		default:
			req.err = ErrClosed
			close(req.ready)
		}
		delete(s.mu.pending, from)
	}
	s.mu.queue = nil
}

// prebuild builds and fully warms the file at from now, in the caller's
// goroutine, and keeps it ready for get. Benchmarks use it to measure
// appends into files the allocator has already prepared.
func (s *AllocateMappedFileService) prebuild(from int64) error {
	s.mu.Lock()
	if _, ok := s.mu.pending[from]; ok {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	m, err := createMappedFile(s.dir, from, s.size, s.size, true, s.cfg.AllocateHook)
	if err != nil {
		return err
	}
	if s.pool != nil {
		m.pool = s.pool
		m.writeBuf = s.pool.borrowBuffer()
	}
	if m.writeBuf == nil && s.cfg.Warm != WarmNone {
		_ = guardFault(func() { warmRange(m, s.cfg, 0, m.size, s.done) })
	}
	s.adviseHugePages(m)
	s.fillPageCache(m, 0, m.size)
	req := &allocRequest{from: from, ready: make(chan struct{}), file: m}
	close(req.ready)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.pending[from]; ok {
		m.unlink.Store(true)
		m.retire()
		return nil
	}
	s.mu.pending[from] = req
	return nil
}
