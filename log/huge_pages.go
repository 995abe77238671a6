package log

import (
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePageSize is the size of a PMD-mapped transparent huge page (2 MiB on
// x86-64 and on arm64 with 4 KiB pages), or 0 where the kernel has none or
// its administrator turned them off ("never").
var hugePageSize = sync.OnceValue(func() int64 {
	const dir = "/sys/kernel/mm/transparent_hugepage/"
	enabled, err := os.ReadFile(dir + "enabled")
	if err != nil || strings.Contains(string(enabled), "[never]") {
		return 0
	}
	b, err := os.ReadFile(dir + "hpage_pmd_size")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < pageSize || n&(n-1) != 0 {
		return 0
	}
	return n
})

// adviseHugePages lets the kernel map m with huge pages where its page
// cache holds huge folios (madvise MADV_HUGEPAGE), and reports whether it
// did. Only a mapping whose start is huge-page aligned can be mapped so
// (ext4 and tmpfs align mappings of 2 MiB and more). It is for files no
// one writes through the mapping: a store into a huge folio would mark
// all of it dirty, and writeback would then write 2 MiB for a few bytes.
// Unmap needs no change for it: dropping part of a file's huge page
// mapping drops all of it, and the next fault maps it whole again.
//
// The mapping is also advised MADV_RANDOM: a fault in it then reads one
// huge page and nothing ahead. Without it the filler's faults read ahead
// past the allocation (8 MiB where read_ahead_kb is 8,192), and left
// readahead marks that a fetch at the tail later met and paid for with a
// synchronous zero-fill of the next window: 20 ms stalls every 8 MiB. The
// filled pages still carry marks, which a pread or sendfile meeting them
// acts on, so fetches read the tail there through the mapping
// (ReadaheadMarked), where a fault ignores them.
func (m *MappedFile) adviseHugePages() bool {
	h := hugePageSize()
	if h == 0 || m.size < h || uintptr(unsafe.Pointer(&m.data[0]))%uintptr(h) != 0 {
		return false
	}
	if unix.Madvise(m.data, unix.MADV_HUGEPAGE) != nil || unix.Madvise(m.data, unix.MADV_RANDOM) != nil {
		return false
	}
	m.hugePage = h
	return true
}

// ReadaheadMarked reports whether the page cache of m at off may carry
// readahead marks that a pread or a sendfile there would act on, by
// zero-filling the next readahead window past the write position while
// the reader waits: off lies in the huge pages the filler filled, within
// markedTailBytes of the write position of a file still being written.
// Such a range is to be read through the mapping (SyscallBytes), where a
// fault ignores the marks (MADV_RANDOM). The readahead of a full file
// stops at its end, and marks further back than a readahead window from
// the first page not in the page cache set nothing off.
func (m *MappedFile) ReadaheadMarked(off int64) bool {
	first := m.filled.Load()
	if first == 0 || off < first-1 {
		return false
	}
	wrote := m.WrotePosition()
	return wrote < m.size && off > wrote-markedTailBytes
}

// markedTailBytes is how far behind the write position ReadaheadMarked
// reports marks: twice the largest readahead window met (read_ahead_kb is
// 128 KiB by default, 8 MiB on some virtual disks).
const markedTailBytes = 16 << 20

// pageCacheFiller fills the page cache of commit-log ranges the allocator
// has just allocated with huge folios, ahead of the pwritev appends that
// will write there. Appends that find the page cache filled copy into it
// and allocate nothing (a buffered write of a fresh range allocates and
// adds folios sized by the write, 16 KiB for a 16 KiB batch). And fetches
// that send the range from the mapping fault in, and unmap, 2 MiB per page
// table entry instead of 4 KiB. Filling is work ahead of need, done at the
// lowest priority. It keeps clear of the appender: a huge
// page being filled is locked, and an append into it would wait for it.
type pageCacheFiller struct {
	// window is the range of global log positions worth filling now
	// (fillWindow), and the write position it was taken at.
	window func() fillWindow
	// resumeAt is the write position at which the appender wakes a
	// filler that waits for it to come nearer (progress); math.MaxInt64
	// while none waits.
	resumeAt atomic.Int64

	// page is the huge page the low-priority thread fills next and
	// pageErr what filling it returned; populate (populatePage, bound
	// once) fills it. Only run's goroutine sets page, and it waits while
	// the thread runs: reusing them, filling allocates nothing per page
	// (a closure per page was the one allocation of a steady produce
	// load, TestProduceAllocations).
	page     []byte
	pageErr  error
	populate func()

	mu     sync.Mutex
	queue  []fillRange
	closed bool
	wake   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

// fillRange is a range of a held file waiting to be filled.
type fillRange struct {
	m      *MappedFile
	lo, hi int64
}

// fillWindow is where the filler may fill: the huge pages that start at
// or after from and end at or before to, global log positions, taken when
// the write position was wrote. from is math.MaxInt64 for nothing.
type fillWindow struct {
	wrote, from, to int64
}

func newPageCacheFiller(window func() fillWindow) *pageCacheFiller {
	f := &pageCacheFiller{window: window, wake: make(chan struct{}, 1), done: make(chan struct{})}
	f.populate = f.populatePage
	f.resumeAt.Store(math.MaxInt64)
	f.wg.Add(1)
	go f.run()
	return f
}

// add queues [lo, hi) of m, a file adviseHugePages accepted. It holds m
// until the range is done.
func (f *pageCacheFiller) add(m *MappedFile, lo, hi int64) {
	if m.hugePage == 0 || hi <= lo || !m.Hold() {
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		m.Release()
		return
	}
	f.queue = append(f.queue, fillRange{m: m, lo: lo, hi: hi})
	f.mu.Unlock()
	f.signal()
}

func (f *pageCacheFiller) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// progress wakes the filler if it waits for the appender to reach the
// global write position pos or beyond. The appender calls it after every
// append: one atomic load while nothing is due.
func (f *pageCacheFiller) progress(pos int64) {
	if pos >= f.resumeAt.Load() {
		f.resumeAt.Store(math.MaxInt64)
		f.signal()
	}
}

// run fills ranges in order until close. The system calls that fill run
// on the process's low-priority thread (onLowPriorityThread).
func (f *pageCacheFiller) run() {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		var r fillRange
		ok := len(f.queue) > 0
		if ok {
			r = f.queue[0]
			f.queue = f.queue[1:]
		}
		f.mu.Unlock()
		if !ok {
			select {
			case <-f.wake:
				continue
			case <-f.done:
				return
			}
		}
		f.fill(r)
		r.m.Release()
	}
}

// fill fills the whole huge pages of [lo, hi) as the window reaches them:
// a read of each populates the page cache (the mapping's MADV_HUGEPAGE
// makes the kernel read ahead in huge folios; unwritten extents and holes
// read as zeros without I/O), and the mapping is dropped again at once, so
// filling costs no resident memory. A huge page that reaches past hi is
// left for the next range, which starts in it.
func (f *pageCacheFiller) fill(r fillRange) {
	m, h := r.m, r.m.hugePage
	for c := r.lo &^ (h - 1); c+h <= r.hi; c += h {
		switch f.await(m.from+c, h) {
		case fillStop:
			return
		case fillSkip:
			continue // the appender is there, or nearly: it fills the page itself
		}
		f.page, f.pageErr = m.data[c:c+h], nil
		ran := onLowPriorityThread(f.done, f.populate)
		f.page = nil
		if !ran {
			return // closed while the thread was busy with other logs
		}
		if f.pageErr != nil {
			return // before Linux 5.14, or the range is gone: appends fill it
		}
		m.filled.CompareAndSwap(0, c+1) // ranges come in order: c is the first
	}
}

// populatePage reads f.page into the page cache and drops its mapping
// again at once; it runs on the low-priority thread.
func (f *pageCacheFiller) populatePage() {
	if f.pageErr = unix.Madvise(f.page, unix.MADV_POPULATE_READ); f.pageErr == nil {
		_ = unix.Madvise(f.page, unix.MADV_DONTNEED)
	}
}

// What await says about a huge page.
const (
	fillNow = iota
	fillSkip
	fillStop
)

// await waits until the huge page of h bytes at global position g lies
// in the window, and says whether to fill it now, to skip it (the window
// passed it) or to stop (the filler closed). A page further ahead than the
// window waits for the appender to come nearer: filled long before it is
// written, its memory would be taken for nothing if the writes stopped
// there (kbench's produce cases end so, and the allocation runs up to two
// files ahead of the write position).
func (f *pageCacheFiller) await(g, h int64) int {
	for {
		w := f.window()
		if g < w.from {
			return fillSkip
		}
		if g+h <= w.to {
			return fillNow
		}
		// Wake when the appender has moved the window over the page,
		// then look again: the window moves with the lead too.
		f.resumeAt.Store(w.wrote + g + h - w.to)
		if w := f.window(); g < w.from || g+h <= w.to {
			f.resumeAt.Store(math.MaxInt64)
			continue
		}
		select {
		case <-f.wake:
		case <-f.done:
			return fillStop
		}
	}
}

// close stops the filler and releases every file it still holds.
func (f *pageCacheFiller) close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	f.mu.Unlock()
	close(f.done)
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.queue {
		r.m.Release()
	}
	f.queue = nil
}
