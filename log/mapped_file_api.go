package log

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The functions below let other stores (the partitions' consume queues)
// use MappedFile for their own fixed-size files, as RocketMQ's ConsumeQueue
// uses its MappedFile. Such files have no pool buffer and no framing: the
// owner decides what the bytes mean.

// CreateMappedFile creates dir/FileName(from) of size bytes, allocates
// blocks for its first page only (by writing zeros: see grow), and maps
// it. The new name is not yet
// durable: the owner fsyncs dir (SyncDir) before it relies on the file
// surviving a crash, which lets it share one directory sync among many new
// files. The rest is allocated as the file fills: AppendBytes and
// Reserve allocate before anything is written (grow.go), in steps that
// double up to a MiB, so that a store into the mapping never meets an
// unbacked page on a full disk (SIGBUS). Its positions start at 0.
func CreateMappedFile(dir string, from, size int64) (*MappedFile, error) {
	m, err := createMappedFile(dir, from, size, 0, false, nil)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	m.sparse, m.zeroFill = true, true
	if err := m.ensureAllocated(pageSize); err != nil {
		m.unlink.Store(true)
		m.retire()
		return nil, fmt.Errorf("log: %w", err)
	}
	return m, nil
}

// OpenMappedFile maps the existing file dir/FileName(from), extending it to
// size (in length only) if it is shorter. All its positions start at size;
// the owner sets them with SetPosition once it knows where its data ends.
// What is allocated is not known after a load, so the first append
// allocates from the start again (fallocate leaves allocated blocks and
// their data alone).
func OpenMappedFile(dir string, from, size int64) (*MappedFile, error) {
	m, err := openMappedFile(filepath.Join(dir, FileName(from)), from, size, true)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	m.zeroFill = true
	m.setPositions(size)
	return m, nil
}

// ParseFileName returns the start offset a 20-digit file name encodes.
func ParseFileName(name string) (int64, bool) { return parseFileName(name) }

// AppendBytes copies b into the mapping at the wrote position and advances
// it; ErrOutOfRange if b does not fit. Blocks are allocated first where
// needed; a full disk then fails the append with an error wrapping ENOSPC,
// which changes nothing. Only one goroutine may append to a file at a
// time. Faults on the mapping become ErrFault.
func (m *MappedFile) AppendBytes(b []byte) (int64, error) {
	w := m.wrote.Load()
	if w+int64(len(b)) > m.size {
		return w, fmt.Errorf("%w: %d bytes at %d in %s of %d", ErrOutOfRange, len(b), w, m.path, m.size)
	}
	if err := m.ensureAllocated(w + int64(len(b))); err != nil {
		return w, err
	}
	if err := guardFault(func() { copy(m.data[w:], b) }); err != nil {
		return w, err
	}
	m.advanceWrote(int64(len(b)))
	return w, nil
}

// Reserve allocates blocks so that the next n bytes appended find them, or
// returns the error (wrapping ENOSPC on a full disk) without changing
// anything: an owner that must not fail after a point of no return
// reserves before it.
func (m *MappedFile) Reserve(n int64) error {
	return m.ensureAllocated(min(m.wrote.Load()+n, m.size))
}

// SetPosition sets the wrote, committed and flushed positions to n, after
// the owner found where its valid data ends (load and recovery). The bytes
// below n count as allocated: they hold data.
func (m *MappedFile) SetPosition(n int64) {
	m.setPositions(n)
	m.growMu.Lock()
	m.allocated.Store(max(m.allocated.Load(), n))
	m.growMu.Unlock()
}

// Flush msyncs the written bytes when at least leastPages pages are dirty
// (0: any byte) and returns the flushed position.
func (m *MappedFile) Flush(leastPages int) (int64, error) { return m.flush(leastPages) }

// ZeroFrom clears the file from off to its end, durably.
func (m *MappedFile) ZeroFrom(off int64) error { return m.zeroFrom(off) }

// Close drops the file's own reference; it is unmapped and closed when the
// last holder releases it.
func (m *MappedFile) Close() { m.retire() }

// Destroy removes the file from disk once no reader holds it, waiting until
// ctx ends; the caller must have stopped appending to it.
func (m *MappedFile) Destroy(ctx context.Context) error { return m.destroy(ctx) }

// View is how code outside this package reads a mapping: it holds the
// file, runs fn on the readable bytes [0, ReadPosition) with memory faults
// turned into ErrFault, and releases the file, all in one call. held is
// false, and fn does not run, when the file is already gone (retired and
// released by every holder); a reader then starts over on a fresh file
// list. fn must not keep b or any slice of it: the mapping may be unmapped
// once View returns. The bytes are those readable when View began; a
// concurrent owner may still rewrite them (a truncation zeroing a tail),
// so fn must verify what it decodes. View allocates nothing when fn does
// not escape.
func (m *MappedFile) View(fn func(b []byte)) (held bool, err error) {
	if !m.Hold() {
		return false, nil
	}
	defer m.Release()
	n := m.ReadPosition()
	return true, guardFault(func() { fn(m.data[:n:n]) })
}

// CopyTo copies len(dst) readable bytes at file offset off into dst; a
// fault on the mapping becomes ErrFault. The caller holds the file. The
// fetch path uses it for ranges too small to be worth a sendfile call.
func (m *MappedFile) CopyTo(dst []byte, off int64) error {
	src, err := m.readable(off, int64(len(dst)))
	if err != nil {
		return err
	}
	return guardFault(func() { copy(dst, src) })
}

// SyscallBytes returns the mapping's n readable bytes at file offset off
// for handing to a system call only (the fetch path's writev): the kernel
// turns a fault on them (a media error, a file cut underneath) into an
// error of that call, where touching them from Go would crash the process.
// The caller holds the file until the call has returned, never reads or
// writes the slice itself, and keeps no reference afterwards.
func (m *MappedFile) SyscallBytes(off, n int64) ([]byte, error) { return m.readable(off, n) }

// Unmap drops the process's page-table entries for the pages that
// [off, off+n) of the mapping touches (madvise MADV_DONTNEED). The pages
// stay in the page cache, dirty ones included (the mapping is shared), and
// the next access maps them again; they only stop counting in the
// broker's resident memory. The pages at either end are dropped whole: a
// range that shares a page with the next read would otherwise leave it
// mapped for good. An appender writing through the mapping at the tail
// then takes one more page fault, nothing else. The caller holds the file.
// A file warm-up mlocked (Config.Mlock) is left alone: its pages are meant
// to stay resident until it is full and flushed, and madvise refuses
// locked pages.
func (m *MappedFile) Unmap(off, n int64) error {
	if off < 0 || n < 0 || n > m.size-off {
		return fmt.Errorf("%w: unmap [%d, %d) of %s, size %d", ErrOutOfRange, off, off+n, m.path, m.size)
	}
	if n == 0 || m.locked.Load() {
		return nil
	}
	page := int64(unix.Getpagesize())
	lo := off / page * page
	hi := min((off+n+page-1)/page*page, m.size)
	if err := unix.Madvise(m.data[lo:hi], unix.MADV_DONTNEED); err != nil {
		return fmt.Errorf("madvise [%d, %d) of %s: %w", lo, hi, m.path, err)
	}
	return nil
}
