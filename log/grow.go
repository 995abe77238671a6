package log

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Allocation that follows the write rate.
//
// A commit-log file has its full size from the start (positions and file
// names depend on it), but only a prefix of it is backed by allocated disk
// blocks: MappedFile.allocated. The rest is a hole. The one rule that keeps
// a full disk from raising SIGBUS is unchanged: nothing is written, through
// the mapping, pwrite or a pool commit, at a position that is not allocated
// yet. The appender checks its entry against allocated (one atomic load)
// and, when the entry does not fit, allocates the missing pages itself, so
// ENOSPC is an ordinary, non-sticky error that leaves the log unchanged.
//
// So that a busy appender never gets there, the allocator keeps a lead of
// allocated bytes ahead of the write position (RocketMQ pre-allocates the
// next whole file for the same reason). The lead follows the write rate:
// it is what the log wrote in the last Config.AllocateHorizon at the rate
// measured between two extensions, at least Config.AllocateAhead and at most
// two files (maxLeadFiles). An idle broker therefore holds a few MiB of
// allocated log, a busy one up to two files ahead, and a next file is
// created only when the lead reaches past the end of the one before. It is
// then allocated whole (not only the part of the lead that falls into it),
// so that a file is never extended while the appender writes into it: both
// take the file's inode lock (growAhead). Only the first file of a run (new, or the last
// one loaded) is extended while in use: by the lead while the log is idle,
// and to its end at once when it gets busy.

// MetadataReserve is free disk space that data files (commit log, consume
// queues) never allocate: the small metadata files (checkpoints, the topic
// journal, coordinator snapshots) must still be writable when data has
// filled the disk, or retention, which checkpoints before it deletes,
// could never free it again. Data files take space in steps of a page to
// a MiB, so without it they fill a disk to the last block.
const MetadataReserve = 4 << 20

// checkFree refuses, with ENOSPC, an allocation of n bytes in f's
// filesystem that would leave less than MetadataReserve available. When
// the free space cannot be read, fallocate decides.
func checkFree(f *os.File, n int64) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return nil
	}
	if avail := int64(st.Bavail) * st.Bsize; avail < n+MetadataReserve {
		return fmt.Errorf("%d bytes free, %d kept for metadata: %w", avail, MetadataReserve, unix.ENOSPC)
	}
	return nil
}

// alignUp rounds n up to a multiple of a (a power of two).
func alignUp(n, a int64) int64 { return (n + a - 1) &^ (a - 1) }

// Allocated is how many bytes from the file's start are backed by disk
// blocks; the rest of a file allocated as it fills is a hole.
func (m *MappedFile) Allocated() int64 { return m.allocated.Load() }

// maxGrowStep caps the step by which ensureAllocated grows a file.
const maxGrowStep = 1 << 20

// ensureAllocated makes sure [0, end) of the file is backed by blocks,
// allocating now if it is not: at least up to end, and as much again as is
// allocated already, up to maxGrowStep more, so that a file filled by
// small appends (a consume queue) takes a logarithmic number of fallocate
// calls. The fast path is one atomic load.
func (m *MappedFile) ensureAllocated(end int64) error {
	a := m.allocated.Load()
	if end <= a {
		return nil
	}
	_, _, err := m.grow(max(end, a+min(max(a, pageSize), maxGrowStep)), nil)
	return err
}

// grow allocates blocks for [allocated, end) (end rounded up to a page and
// capped at the file size) and returns the range it added. before, when
// set, runs on that range after the blocks exist and before anyone may
// write there (warm-up that changes the bytes). A failure leaves allocated
// as it was.
//
// allocated need not be page-aligned (SetPosition and zeroFrom set it to
// where data ends), and a zero-filling grow writes from exactly there:
// below it is data.
func (m *MappedFile) grow(end int64, before func(lo, hi int64)) (lo, hi int64, err error) {
	end = min(alignUp(end, pageSize), m.size)
	m.growMu.Lock()
	defer m.growMu.Unlock()
	lo = m.allocated.Load()
	if end <= lo {
		return lo, lo, nil
	}
	if m.allocHook != nil {
		if err := m.allocHook(m.path, end-lo); err != nil {
			return lo, lo, fmt.Errorf("allocate %s [%d, %d): %w", m.path, lo, end, err)
		}
	}
	if err := checkFree(m.file, end-lo); err != nil {
		return lo, lo, fmt.Errorf("allocate %s [%d, %d): %w", m.path, lo, end, err)
	}
	// fallocate leaves unwritten extents, and on ext4 the first store
	// through the mapping into such a page takes a journal handle in the
	// fault (measured 10-14 ms on a busy disk, docs/BENCHMARKS.md); a
	// zero-filled page takes microseconds. Files filled by small appends
	// through the mapping (consume queues) therefore grow by writing
	// zeros, which reserves the blocks just as surely: a full disk fails
	// the write with ENOSPC.
	allocate := fallocateRange
	if m.zeroFill {
		allocate = writeZeros
	}
	if err := allocate(m.file, lo, end-lo); err != nil {
		return lo, lo, fmt.Errorf("allocate %s [%d, %d): %w", m.path, lo, end, err)
	}
	if before != nil {
		before(lo, end)
	}
	m.allocated.Store(end)
	return lo, end, nil
}

// leadState is the allocator's measure of the write rate; only the worker
// goroutine touches it.
type leadState struct {
	at      time.Time // when the lead was last adapted
	pos     int64     // global write position then
	appends int64     // appends counted by then
}

// maxLeadFiles caps the lead, in files. One file ahead was not enough: at
// 2.4 GB/s a 128 MiB file lasts 53 ms, and the build of the next one took
// up to 61 ms when ext4 had to read a block bitmap from a disk busy with
// writeback, so the roll (and every produce behind it) waited for it
// (docs/BENCHMARKS.md, "Rolls that waited for the next file", session
// 18). Two files ahead give a build a whole file's time more.
const maxLeadFiles = 2

// adapt sets the lead from the rate written since the last call: the bytes
// the log writes in cfg.AllocateHorizon at that rate, rounded up to a MiB,
// between cfg.AllocateAhead and maxLeadFiles files.
func (s *AllocateMappedFileService) adapt(now time.Time, pos int64) int64 {
	lead := s.lead.Load()
	appends := s.appends.Load()
	if st := &s.rate; !st.at.IsZero() {
		dt, wrote := now.Sub(st.at), pos-st.pos
		if dt > 0 && wrote >= 0 {
			want := int64(float64(wrote) * float64(s.cfg.AllocateHorizon) / float64(dt))
			lead = min(max(alignUp(want, 1<<20), s.cfg.AllocateAhead), maxLeadFiles*s.size)
			s.lead.Store(lead)
		}
		if n := appends - st.appends; n > 0 && wrote >= 0 {
			s.smallAppends.Store(wrote/n < minFilledAppend)
		}
	}
	s.rate = leadState{at: now, pos: pos, appends: appends}
	return lead
}

// needGrow tells the worker when the allocation arranged ahead of global
// write position pos fell below half of the lead wanted. It costs two
// atomic loads (and, when the page cache is filled ahead, the count of
// appends and the filler's progress check) when nothing is due and never
// blocks: the appender calls it after every append.
func (s *AllocateMappedFileService) needGrow(pos int64) {
	if s.filler != nil {
		s.appends.Add(1)
		s.filler.progress(pos)
	}
	if s.frontier.Load()-pos >= s.lead.Load()/2 {
		return
	}
	if s.growDue.CompareAndSwap(false, true) {
		s.signal()
	}
}

// growAhead extends the allocation to the lead past the write position of
// the last file, into the next file if the lead reaches past its end. It
// runs in the worker goroutine.
func (s *AllocateMappedFileService) growAhead() {
	last := s.queue.Last()
	if last == nil || !last.Hold() {
		return
	}
	defer last.Release()
	pos := last.from + last.WrotePosition()
	lead := s.adapt(time.Now(), pos)
	target := pos + lead
	// A file in use is extended only while the log is idle (the lead is
	// AllocateAhead); once it is busy, the rest of the file is allocated
	// at once, so the appender meets the allocator's inode lock once per
	// run rather than every half lead (only the first file of a run is
	// ever in use with a part allocated, see below).
	end := target - last.from
	if lead > s.cfg.AllocateAhead {
		end = s.size
	}
	// Errors are left to the appender: when it reaches the unallocated
	// pages it allocates them itself and reports a full disk to its
	// caller.
	_ = s.growFile(last, end)
	for next := last.from + s.size; target > next; next += s.size {
		// The next file gets all its blocks now, before it becomes the
		// file being appended to, not the part of the lead that falls
		// into it. fallocate holds the file's inode lock, which every
		// pwrite of the appender needs too, and while it holds it ext4
		// may read a block bitmap from a disk busy with the flusher's
		// writeback: extending the file being appended to stalled every
		// produce for 20-40 ms (docs/BENCHMARKS.md, "Produce stalls ...
		// session 17"). Allocated whole while nobody writes to it, the
		// file is never extended again once in use, at the cost of up
		// to one file allocated ahead of a slow writer near a file's end.
		s.prepareSized(next, s.size)
	}
	// Even after a failure: the appender allocates for itself what is
	// missing, so retrying on every append would only repeat the error.
	s.frontier.Store(target)
}

// growFile extends m's allocation to end, warming the new pages as
// Config.Warm says when appends go through the mapping.
func (s *AllocateMappedFileService) growFile(m *MappedFile, end int64) error {
	var before func(lo, hi int64)
	if s.warms(m) && !s.cfg.Warm.contentPreserving() {
		// Touching writes zeros: do it before the range is published.
		before = func(lo, hi int64) { _ = guardFault(func() { warmRange(m, s.cfg, lo, hi, s.done) }) }
	}
	lo, hi, err := m.grow(end, before)
	if err != nil {
		return err
	}
	s.fillPageCache(m, lo, hi)
	if hi > lo && s.warms(m) && s.cfg.Warm.contentPreserving() {
		warmLowPriority(m, s.cfg, lo, hi, s.done)
	}
	return nil
}

// warms reports whether new pages of m are pre-faulted: only when appends
// go through the mapping (no pool buffer) and a warm mode is set.
func (s *AllocateMappedFileService) warms(m *MappedFile) bool {
	return s.cfg.Warm != WarmNone && m.writeBuf == nil
}
