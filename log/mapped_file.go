package log

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// fileNameDigits is the width of a file name: the start offset printed as a
// zero-padded decimal, as RocketMQ names commit-log files.
const fileNameDigits = 20

// FileName returns the name of the file that starts at global offset from.
func FileName(from int64) string {
	s := strconv.FormatInt(from, 10)
	if len(s) >= fileNameDigits {
		return s
	}
	return "00000000000000000000"[:fileNameDigits-len(s)] + s
}

// parseFileName returns the start offset a file name encodes.
func parseFileName(name string) (int64, bool) {
	if len(name) != fileNameDigits {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil
}

// MappedFile is one fixed-size segment file of the log, mapped read-write
// into memory (RocketMQ's DefaultMappedFile).
//
// Appends write into the mapping, or, when the file has borrowed a buffer
// from the TransientStorePool, into that buffer, from which Commit copies
// them into the file with pwrite. Three positions, all relative to the
// file's first byte, describe its state:
//
//	wrote      bytes appended (into the mapping or the pool buffer)
//	committed  bytes in the file's page cache (equals wrote without a pool)
//	flushed    bytes known to be on disk
//
// and flushed ≤ committed ≤ wrote always. Readers see committed bytes only.
//
// A MappedFile is reference counted (RocketMQ's ReferenceResource): readers
// Hold it before touching the mapping or the descriptor and Release it
// after; the mapping is unmapped and the file closed only when the last
// reference is gone, so a send in progress never loses its file.
type MappedFile struct {
	path string
	from int64 // global offset of the file's first byte
	size int64

	file *os.File
	data []byte // the mapping, len(data) == size

	// pool and writeBuf are set when the file borrowed a pool buffer, by
	// the allocator before the file is shared. commit clears writeBuf
	// (under commitMu) once the file is full and committed, so the
	// appender reads it only while the file is not yet full.
	pool     *TransientStorePool
	writeBuf []byte

	wrote     atomic.Int64 // written by the appender under CommitLog's put lock
	committed atomic.Int64 // written by commit (pool mode) or with wrote
	flushed   atomic.Int64 // written by flush under the queue's flush lock

	// commitMu serialises commit and the return of the pool buffer.
	commitMu sync.Mutex

	// refs counts the file's own reference (1 while it is in service) plus
	// one per holder. Once it reaches 0 it never rises again and the file is
	// unmapped and closed.
	refs atomic.Int64
	// retired is set once the file's own reference has been dropped.
	retired atomic.Bool
	// idle receives a token when a release leaves only the file's own
	// reference, so that a waiting Destroy can retry.
	idle chan struct{}
	// closed is closed after the mapping and descriptor are released.
	closed   chan struct{}
	closeErr error
	// unlink is set when the file must be removed from disk at close.
	unlink atomic.Bool
	// locked is set when the mapping was mlocked by warm-up.
	locked atomic.Bool
	// loadedSize is the file's size on disk when it was loaded (before any
	// extension); only recovery reads it.
	loadedSize int64

	// allocated is how many bytes from the file's start are backed by
	// allocated blocks (see grow.go); nothing is ever written at or past
	// it. It equals size for a file allocated whole. It only grows, under
	// growMu, except when zeroFrom gives the tail back.
	allocated atomic.Int64
	// growMu serialises fallocate calls on the file.
	growMu sync.Mutex
	// allocHook is Config.AllocateHook, run before each allocation.
	allocHook func(path string, size int64) error
	// sparse is set when the file is allocated as it fills: past
	// allocated it may be a hole.
	sparse bool
	// zeroFill makes grow write zeros instead of calling fallocate (files
	// filled through the mapping by small appends, see grow).
	zeroFill bool
	// hugePage is the huge page size when the mapping may hold huge pages
	// (adviseHugePages), else 0. Set before the file is shared.
	hugePage int64
	// filled is one past the offset of the first huge page the filler
	// filled (pageCacheFiller.fill), 0 while it filled none.
	filled atomic.Int64
}

// fallocateRange allocates disk blocks for [off, off+n) of f, leaving any
// data already there alone.
func fallocateRange(f *os.File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := unix.Fallocate(int(f.Fd()), 0, off, n)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EOPNOTSUPP {
			// Filesystems without fallocate: writing zeros is the only way to
			// have every block backed. Slow, but correct; callers only ask
			// for ranges that hold no data yet.
			return writeZeros(f, off, n)
		}
		return err
	}
}

// zeros is a block of zeros that writeZeros writes from; nothing writes
// into it.
var zeros [64 << 10]byte

// writeZeros fills [off, off+n) of f with zeros through pwrite.
func writeZeros(f *os.File, off, n int64) error {
	for n > 0 {
		chunk := min(int64(len(zeros)), n)
		if _, err := f.WriteAt(zeros[:chunk], off); err != nil {
			return err
		}
		off += chunk
		n -= chunk
	}
	return nil
}

// createMappedFile creates the file for global offset from in dir, sized
// size, allocates blocks for its first initial bytes (fallocate, never a
// sparse write: a store into an unbacked page of a full disk is SIGBUS, not
// an error), makes the new name durable with an fsync of the directory, and
// maps it (without syncDir the caller makes the name durable before it
// relies on it). With initial < size the rest stays a hole that grow allocates
// ahead of the appends (grow.go); initial == size allocates it whole.
func createMappedFile(dir string, from, size, initial int64, syncDir bool, hook func(path string, size int64) error) (*MappedFile, error) {
	path := filepath.Join(dir, FileName(from))
	initial = min(max(alignUp(initial, pageSize), 0), size)
	if hook != nil {
		if err := hook(path, initial); err != nil {
			return nil, fmt.Errorf("allocate %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if initial > 0 {
		// The metadata reserve holds for a new file's blocks as for
		// grow's: a commit-log file is created with all of them.
		if err := checkFree(f, initial); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("allocate %s: %w", path, err)
		}
	}
	if initial < size {
		// The size first, then the blocks: a hole reads as zeros, which is
		// what recovery expects past the data.
		if err := f.Truncate(size); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("size %s: %w", path, err)
		}
	}
	if err := fallocateRange(f, 0, initial); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("allocate %s: %w", path, err)
	}
	if syncDir {
		if err := SyncDir(dir); err != nil {
			f.Close()
			os.Remove(path)
			return nil, err
		}
	}
	m, err := mapFile(f, path, from, size)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	m.allocated.Store(initial)
	m.allocHook = hook
	m.sparse = initial < size
	return m, nil
}

// openMappedFile maps an existing file. A file shorter than size (cut by a
// crash during allocation, or by a test) is extended back to size: with
// sparse, only in length (grow allocates blocks before anything is written
// there, and the file counts nothing as allocated); else with every block.
func openMappedFile(path string, from, size int64, sparse bool) (*MappedFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Size() > size {
		f.Close()
		return nil, fmt.Errorf("open %s: size %d is larger than the configured file size %d", path, st.Size(), size)
	}
	if st.Size() < size {
		extend := func() error { return fallocateRange(f, st.Size(), size-st.Size()) }
		if sparse {
			extend = func() error { return f.Truncate(size) }
		}
		if err := extend(); err != nil {
			f.Close()
			return nil, fmt.Errorf("extend %s: %w", path, err)
		}
	}
	m, err := mapFile(f, path, from, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	if !sparse {
		m.allocated.Store(size)
	}
	m.sparse = sparse
	return m, nil
}

func mapFile(f *os.File, path string, from, size int64) (*MappedFile, error) {
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	m := &MappedFile{
		path:   path,
		from:   from,
		size:   size,
		file:   f,
		data:   data,
		idle:   make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
	m.refs.Store(1)
	return m, nil
}

// Path is the file's path.
func (m *MappedFile) Path() string { return m.path }

// From is the global offset of the file's first byte (its name).
func (m *MappedFile) From() int64 { return m.from }

// Size is the fixed size of the file.
func (m *MappedFile) Size() int64 { return m.size }

// Fd is the file descriptor, for sendfile(2) at explicit offsets. It is
// valid only while the file is held.
func (m *MappedFile) Fd() int { return int(m.file.Fd()) }

// File is the open file, for pread-based fallbacks. Valid while held.
func (m *MappedFile) File() *os.File { return m.file }

// WrotePosition is the number of bytes appended to the file.
func (m *MappedFile) WrotePosition() int64 { return m.wrote.Load() }

// CommittedPosition is the number of bytes in the file's page cache.
func (m *MappedFile) CommittedPosition() int64 { return m.committed.Load() }

// FlushedPosition is the number of bytes known to be on disk.
func (m *MappedFile) FlushedPosition() int64 { return m.flushed.Load() }

// ReadPosition is how far readers may read: the committed position (which
// equals the wrote position when no pool buffer is in use).
func (m *MappedFile) ReadPosition() int64 { return m.committed.Load() }

// IsFull reports whether nothing more can be appended to the file.
func (m *MappedFile) IsFull() bool { return m.wrote.Load() == m.size }

// readable returns the mapping's n readable bytes at file offset off. The
// slice is valid only while the file is held, and touching it may fault on
// a media error, so it never leaves this package: other packages read
// through View, CopyTo and CommitLog.CopyAt, which guard the access.
func (m *MappedFile) readable(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off+n > m.ReadPosition() {
		return nil, fmt.Errorf("%w: [%d, %d) of %s, readable %d", ErrOutOfRange, off, off+n, m.path, m.ReadPosition())
	}
	return m.data[off : off+n : off+n], nil
}

// target is where appends go: the pool buffer if one is borrowed, else the
// mapping. Only the appender calls it, under the put lock.
func (m *MappedFile) target() []byte {
	if m.writeBuf != nil {
		return m.writeBuf
	}
	return m.data
}

// advanceWrote publishes n appended bytes. Without a pool buffer they are
// already in the page cache, so committed moves too.
//
// writeBuf is read before the add: once the add has filled the file, the
// commit service may commit it whole and clear writeBuf (returning the
// buffer to the pool) under commitMu, which the appender does not take.
func (m *MappedFile) advanceWrote(n int64) {
	pooled := m.writeBuf != nil
	w := m.wrote.Add(n)
	if !pooled {
		m.committed.Store(w)
	}
}

// Hold takes a reference. It fails once the file has been retired and all
// references are gone, so a reader can never touch an unmapped file.
func (m *MappedFile) Hold() bool {
	for {
		r := m.refs.Load()
		if r <= 0 {
			return false
		}
		if m.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// Release drops a reference taken by Hold.
func (m *MappedFile) Release() {
	r := m.refs.Add(-1)
	switch {
	case r == 0:
		m.cleanup()
	case r == 1:
		select {
		case m.idle <- struct{}{}:
		default:
		}
	case r < 0:
		panic("log: MappedFile released more often than held")
	}
}

// retire drops the file's own reference. The file closes when the last
// holder releases it.
func (m *MappedFile) retire() {
	if m.retired.CompareAndSwap(false, true) {
		m.Release()
	}
}

// tryDestroy retires and removes the file if no reader holds it. It reports
// whether it did.
func (m *MappedFile) tryDestroy() bool {
	if m.retired.Load() {
		return false
	}
	m.unlink.Store(true)
	if !m.refs.CompareAndSwap(1, 0) {
		m.unlink.Store(false)
		return false
	}
	m.retired.Store(true)
	m.cleanup()
	return true
}

// destroy removes the file, waiting until no reader holds it or ctx ends.
func (m *MappedFile) destroy(ctx context.Context) error {
	for !m.tryDestroy() {
		if m.retired.Load() {
			return fmt.Errorf("destroy %s: already retired", m.path)
		}
		select {
		case <-m.idle:
		case <-ctx.Done():
			return fmt.Errorf("destroy %s: readers still hold it: %w", m.path, ctx.Err())
		}
	}
	<-m.closed
	return m.closeErr
}

// cleanup unmaps and closes the file (and removes it if asked); it runs
// exactly once, when the reference count reaches zero.
func (m *MappedFile) cleanup() {
	var errs []error
	if m.locked.Load() {
		_ = unix.Munlock(m.data)
	}
	m.returnPoolBuffer()
	if err := unix.Munmap(m.data); err != nil {
		errs = append(errs, fmt.Errorf("munmap %s: %w", m.path, err))
	}
	if err := m.file.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w", m.path, err))
	}
	if m.unlink.Load() {
		if err := os.Remove(m.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", m.path, err))
		}
	}
	m.closeErr = errors.Join(errs...)
	close(m.closed)
}

// returnPoolBuffer gives the borrowed buffer back to the pool.
func (m *MappedFile) returnPoolBuffer() {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	if m.writeBuf != nil && m.pool != nil {
		m.pool.returnBuffer(m.writeBuf)
	}
	m.writeBuf = nil
}

// pagesBetween counts 4 KiB pages touched between two positions, the unit
// of RocketMQ's isAbleToFlush / isAbleToCommit.
func pagesBetween(lo, hi int64) int64 { return hi/pageSize - lo/pageSize }

// commit copies appended bytes from the pool buffer into the file with
// pwrite when at least leastPages pages are pending (or the file is full,
// or leastPages is 0 and any byte is pending). Without a pool buffer it only
// reports the committed position. It returns the committed position.
func (m *MappedFile) commit(leastPages int) (int64, error) {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	if m.writeBuf == nil {
		return m.committed.Load(), nil
	}
	c, w := m.committed.Load(), m.wrote.Load()
	if w == c || (leastPages > 0 && w < m.size && pagesBetween(c, w) < int64(leastPages)) {
		return c, nil
	}
	// pwrite rather than a copy into the mapping: it cannot fault, and it
	// is what RocketMQ's commit0 does through its FileChannel.
	if _, err := m.file.WriteAt(m.writeBuf[c:w], c); err != nil {
		return c, &WriteError{Op: "commit", Err: fmt.Errorf("pwrite %s at %d: %w", m.path, c, err)}
	}
	m.committed.Store(w)
	if w == m.size {
		// Fully committed: the buffer's bytes are all in the file now.
		m.pool.returnBuffer(m.writeBuf)
		m.writeBuf = nil
	}
	return w, nil
}

// flush makes committed bytes durable with msync(MS_SYNC) over the dirty
// range (msync on a shared file mapping syncs the file's page cache for that
// range, including bytes that commit wrote with pwrite). The caller
// serialises flushes. It returns the flushed position.
func (m *MappedFile) flush(leastPages int) (int64, error) {
	f, c := m.flushed.Load(), m.committed.Load()
	if c == f || (leastPages > 0 && c < m.size && pagesBetween(f, c) < int64(leastPages)) {
		return f, nil
	}
	start := f &^ (pageSize - 1)
	if err := unix.Msync(m.data[start:c], unix.MS_SYNC); err != nil {
		return f, &WriteError{Op: "flush", Err: fmt.Errorf("msync %s [%d, %d): %w", m.path, start, c, err)}
	}
	m.flushed.Store(c)
	if c == m.size && m.locked.CompareAndSwap(true, false) {
		// A full, durable file no longer needs to stay in RAM for appends.
		_ = unix.Munlock(m.data)
	}
	return c, nil
}

// setPositions resets all three positions to n (load and recovery).
func (m *MappedFile) setPositions(n int64) {
	m.wrote.Store(n)
	m.committed.Store(n)
	m.flushed.Store(n)
}

// zeroFrom clears [off, size) of the file and makes that durable, so that
// stale bytes after a recovery cut can never be read back as entries after a
// later crash. A file allocated as it fills (sparse) gets its tail punched
// out, which gives the blocks back, and grow allocates them again before
// anything is written there. A file allocated whole keeps its blocks: it
// tries FALLOC_FL_ZERO_RANGE, then punching a hole and re-allocating it,
// then plain writes.
func (m *MappedFile) zeroFrom(off int64) error {
	n := m.size - off
	if n <= 0 {
		return nil
	}
	fd := int(m.file.Fd())
	var err error
	if m.sparse {
		m.growMu.Lock()
		err = unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
		if err == nil {
			// Blocks wholly inside the range are gone. Count from off
			// itself, never below: a zero-filling grow writes from there,
			// and below off is data.
			m.allocated.Store(min(m.allocated.Load(), off))
		}
		m.growMu.Unlock()
	} else {
		err = unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE|unix.FALLOC_FL_KEEP_SIZE, off, n)
		if err != nil {
			err = unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
			if err == nil {
				err = unix.Fallocate(fd, 0, off, n)
			}
		}
	}
	if err != nil {
		if err := writeZeros(m.file, off, n); err != nil {
			return fmt.Errorf("zero %s from %d: %w", m.path, off, err)
		}
	}
	if err := unix.Fdatasync(fd); err != nil {
		return fmt.Errorf("fdatasync %s: %w", m.path, err)
	}
	return nil
}

// SyncDir fsyncs a directory so that a new, renamed or removed name in it
// is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
