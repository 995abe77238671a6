package log

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// CommitLog is the shared, memory-mapped log that every partition's record
// batches are appended to (RocketMQ's CommitLog). It knows nothing about
// Kafka: an entry is an opaque fixed-size key and a payload.
//
// Appends are serialised by one put lock, held only to pick the position
// and copy the bytes; checksums are computed before it is taken. Readers
// take no lock. Flush and Commit are driven by the flush services.
type CommitLog struct {
	cfg       Config
	dir       string // Dir/commitlog
	headerLen int    // entryFixedSize + KeySize

	queue *MappedFileQueue
	alloc *AllocateMappedFileService
	pool  *TransientStorePool
	cp    *checkpointFile
	lock  *os.File

	// putMu is RocketMQ's putMessageLock: it orders appends and guards the
	// roll to a new file. Nothing under it calls out of the package.
	putMu sync.Mutex
	// closed is set under putMu by Close.
	closed atomic.Bool
	// writeErr holds the first flush, commit or append failure; once set,
	// every append fails with it.
	writeErr atomic.Pointer[error]
	// scratch holds an entry's header and key for pwriteEntry (under putMu).
	scratch [entryFixedSize + 1024]byte
	// runHeaders and runIovecs are AppendMany's headers and pwritev
	// buffers, kept for the next call (under putMu).
	runHeaders []byte
	runIovecs  []unix.Iovec
}

// AppendResult says where an entry was stored.
type AppendResult struct {
	Pos  int64 // global position of the entry's first header byte
	Size int32 // whole entry, header included
}

// End is the global position just past the entry: a writer that needs the
// entry durable waits until the flushed position reaches it.
func (r AppendResult) End() int64 { return r.Pos + int64(r.Size) }

// Open opens or creates the log in cfg.Dir and recovers it (see recover.go).
// Every valid entry at or after global position replayFrom is passed to
// visit, in order, so that the caller can rebuild its indexes; replayFrom
// should be a position the caller's indexes are known to cover, and visit
// may be nil. The returned report says what recovery found and cut.
func Open(cfg Config, replayFrom int64, visit func(Entry) error) (*CommitLog, RecoveryReport, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, RecoveryReport{}, err
	}
	dir := filepath.Join(cfg.Dir, "commitlog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, RecoveryReport{}, fmt.Errorf("log: create %s: %w", dir, err)
	}
	lock, err := lockDir(filepath.Join(cfg.Dir, "lock"))
	if err != nil {
		return nil, RecoveryReport{}, err
	}
	l := &CommitLog{
		cfg:       cfg,
		dir:       dir,
		headerLen: entryFixedSize + cfg.KeySize,
		queue:     newMappedFileQueue(dir, cfg.FileSize),
		lock:      lock,
	}
	report, err := l.open(replayFrom, visit)
	if err != nil {
		l.queue.close()
		if l.cp != nil {
			l.cp.close()
		}
		if l.pool != nil {
			l.pool.Close()
		}
		lock.Close()
		return nil, report, err
	}
	return l, report, nil
}

func (l *CommitLog) open(replayFrom int64, visit func(Entry) error) (RecoveryReport, error) {
	if err := l.queue.load(); err != nil {
		return RecoveryReport{}, err
	}
	if l.cfg.hugePages() {
		// Recovery's scan and later fetches read them through the
		// mapping; nothing writes through it.
		for _, m := range l.queue.Files() {
			m.adviseHugePages()
		}
	}
	cp, found, err := l.openCheckpoint()
	if err != nil {
		return RecoveryReport{}, err
	}
	abortPath := filepath.Join(l.cfg.Dir, "abort")
	_, statErr := os.Stat(abortPath)
	crashed := statErr == nil || !found
	report, err := l.recover(cp, found, crashed, replayFrom, visit)
	if err != nil {
		return report, err
	}
	// The recovered end is now durable: write it down before anything new
	// is appended, then mark this run as running.
	if err := l.cp.write(Checkpoint{Durable: report.End, End: report.End}, true); err != nil {
		return report, err
	}
	if err := createAbortMarker(l.cfg.Dir, abortPath); err != nil {
		return report, err
	}
	if l.cfg.PoolBuffers > 0 {
		l.pool, err = NewTransientStorePool(l.cfg.PoolBuffers, l.cfg.FileSize, l.cfg.PoolMlock)
		if err != nil {
			return report, err
		}
	}
	l.alloc = newAllocateMappedFileService(l.dir, &l.cfg, l.pool, l.queue)
	// Have the lead allocated before the first append needs it: in the
	// last file (whose allocation is not known after a load), or in a
	// first file.
	if l.queue.Last() != nil {
		l.alloc.needGrow(report.End)
	} else {
		l.alloc.prepareSized(alignDown(report.End, l.cfg.FileSize), l.alloc.lead.Load())
	}
	return report, nil
}

func (l *CommitLog) openCheckpoint() (Checkpoint, bool, error) {
	c, cp, found, err := openCheckpoint(filepath.Join(l.cfg.Dir, "checkpoint"))
	if err != nil {
		return Checkpoint{}, false, err
	}
	l.cp = c
	return cp, found, nil
}

func alignDown(pos, size int64) int64 { return pos - pos%size }

// Append stores one entry and returns where. key must be KeySize bytes.
// The entry is in the page cache (or, in pool mode, the pool buffer) when
// Append returns; durability is the flush services' business.
//
// Append allocates nothing. A full disk when a new file is needed is
// returned as an error (wrapping syscall.ENOSPC) and leaves the log as it
// was, so a later Append retries; a failed write into the mapping is sticky.
func (l *CommitLog) Append(key, payload []byte) (AppendResult, error) {
	if len(key) != l.cfg.KeySize {
		return AppendResult{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadKey, len(key), l.cfg.KeySize)
	}
	size := int64(l.headerLen) + int64(len(payload))
	if size > l.cfg.FileSize {
		return AppendResult{}, fmt.Errorf("%w: entry of %d bytes, file size %d", ErrEntryTooLarge, size, l.cfg.FileSize)
	}
	if e := l.writeErr.Load(); e != nil {
		return AppendResult{}, *e
	}
	crc := entryChecksum(key, payload)

	l.putMu.Lock()
	res, err := l.appendLocked(crc, key, payload, size)
	l.putMu.Unlock()
	return res, err
}

func (l *CommitLog) appendLocked(crc uint32, key, payload []byte, size int64) (AppendResult, error) {
	if l.closed.Load() {
		return AppendResult{}, ErrClosed
	}
	m := l.queue.Last()
	if m == nil || m.IsFull() {
		next, err := l.nextFileLocked(m)
		if err != nil {
			return AppendResult{}, err
		}
		m = next
	}
	w := m.wrote.Load()
	if left := m.size - w; size > left {
		// Allocate for the filler and get the next file before touching
		// this one, so a failed allocation leaves the log unchanged.
		if left >= minBlank {
			if err := m.ensureAllocated(w + minBlank); err != nil {
				return AppendResult{}, err
			}
		}
		next, err := l.nextFileLocked(m)
		if err != nil {
			return AppendResult{}, err
		}
		if left >= minBlank {
			var err error
			if l.pwrites(m) {
				var blank [minBlank]byte
				putBlank(blank[:], int(left))
				err = pwriteFull(m, w, blank[:], nil)
			} else {
				err = guardFault(func() { putBlank(m.target()[w:], int(left)) })
			}
			if err != nil {
				return AppendResult{}, l.stick("append", err)
			}
		}
		m.advanceWrote(left)
		m, w = next, 0
	}
	// Never write where no block is allocated: on a full disk that would
	// be SIGBUS through the mapping (grow.go). Failing here leaves the log
	// unchanged (after a roll, the closed file and the empty new one are
	// as consistent as before), so ENOSPC is not sticky.
	if err := m.ensureAllocated(w + size); err != nil {
		return AppendResult{}, err
	}
	if l.pwrites(m) {
		if err := l.pwriteEntry(m, w, crc, key, payload, size); err != nil {
			return AppendResult{}, l.stick("append", err)
		}
	} else if err := guardFault(func() { putEntry(m.target()[w:w+size], crc, key, payload) }); err != nil {
		return AppendResult{}, l.stick("append", err)
	}
	m.advanceWrote(size)
	l.alloc.needGrow(m.from + w + size)
	return AppendResult{Pos: m.from + w, Size: int32(size)}, nil
}

// nextFileLocked makes the file after m (or the first one) the last file.
func (l *CommitLog) nextFileLocked(m *MappedFile) (*MappedFile, error) {
	from := int64(0)
	if m != nil {
		from = m.from + m.size
	}
	next, err := l.alloc.get(from)
	if err != nil {
		return nil, err
	}
	if err := l.queue.add(next); err != nil {
		next.retire()
		return nil, err
	}
	return next, nil
}

// stick records a write failure so that every later append fails with it.
func (l *CommitLog) stick(op string, err error) error {
	var we *WriteError
	if !errors.As(err, &we) {
		err = &WriteError{Op: op, Err: err}
	}
	l.writeErr.CompareAndSwap(nil, &err)
	return *l.writeErr.Load()
}

// Err returns the sticky write error, or nil while the log is healthy.
func (l *CommitLog) Err() error {
	if e := l.writeErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Flush makes appended bytes durable when at least leastPages 4 KiB pages
// are dirty (0: any byte), and returns the flushed position. After a flush
// that moved, the checkpoint records the new durable position. A failure is
// sticky. It implements flush.Store.
func (l *CommitLog) Flush(leastPages int) (int64, error) {
	if e := l.writeErr.Load(); e != nil {
		return l.queue.FlushedWhere(), *e
	}
	before := l.queue.FlushedWhere()
	flushed, err := l.queue.flush(leastPages)
	if err != nil {
		return flushed, l.stick("flush", err)
	}
	if flushed != before {
		if err := l.cp.write(Checkpoint{Durable: flushed}, false); err != nil {
			return flushed, err
		}
	}
	return flushed, nil
}

// Commit copies pool-buffered bytes into the files when at least leastPages
// pages are pending (0: any byte), and returns the position up to which
// readers may read. Without a pool it only reports that position. A failure
// is sticky. It implements flush.Store.
func (l *CommitLog) Commit(leastPages int) (int64, error) {
	if l.pool == nil {
		return l.queue.ReadPosition(), nil
	}
	if e := l.writeErr.Load(); e != nil {
		return l.queue.CommittedWhere(), *e
	}
	c, err := l.queue.commit(leastPages)
	if err != nil {
		return c, l.stick("commit", err)
	}
	return c, nil
}

// FlushedPosition is the global position below which every byte is durable.
func (l *CommitLog) FlushedPosition() int64 { return l.queue.FlushedWhere() }

// ReadPosition is the global position up to which readers may read: the
// end of the appended data, or in pool mode of the committed data.
func (l *CommitLog) ReadPosition() int64 { return l.queue.ReadPosition() }

// WrotePosition is the global position just past the last appended entry.
func (l *CommitLog) WrotePosition() int64 { return l.queue.WrotePosition() }

// MinOffset is the global position of the oldest stored byte.
func (l *CommitLog) MinOffset() int64 { return l.queue.MinOffset() }

// FileSize is the size of every file of the log.
func (l *CommitLog) FileSize() int64 { return l.cfg.FileSize }

// HeaderSize is the size of an entry's header, key included: the payload
// of an entry at position p starts at p + HeaderSize().
func (l *CommitLog) HeaderSize() int { return l.headerLen }

// Files lists the log's files, oldest first. The slice must not be changed.
func (l *CommitLog) Files() []*MappedFile { return l.queue.Files() }

// Hold finds the file holding global position pos and takes a reference on
// it; the caller must Release it. Use it to pin the files behind a fetch
// response until its ranges are sent.
func (l *CommitLog) Hold(pos int64) (*MappedFile, error) {
	for {
		m := l.queue.Find(pos)
		if m == nil || pos >= m.from+m.ReadPosition() {
			return nil, fmt.Errorf("%w: position %d (log holds [%d, %d))", ErrOutOfRange, pos, l.MinOffset(), l.ReadPosition())
		}
		if m.Hold() {
			return m, nil
		}
		// Deleted between Find and Hold: look again (it will be gone).
	}
}

// CopyAt copies len(dst) readable bytes at global position pos into dst.
// The range must lie in one file. Faults on the mapping become ErrFault.
func (l *CommitLog) CopyAt(dst []byte, pos int64) error {
	m, err := l.Hold(pos)
	if err != nil {
		return err
	}
	defer m.Release()
	src, err := m.readable(pos-m.from, int64(len(dst)))
	if err != nil {
		return err
	}
	return guardFault(func() { copy(dst, src) })
}

// DeleteBefore removes whole files that end at or before global position
// pos, oldest first, never the newest file (retention). A file that a reader
// still holds is waited for until ctx ends, and deletion stops there, so the
// remaining files stay contiguous. It returns the number of files removed.
func (l *CommitLog) DeleteBefore(ctx context.Context, pos int64) (int, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	return l.queue.deleteBefore(ctx, pos)
}

// Close stops the log. Unless a write failed, it commits and flushes
// everything, writes a checkpoint of the exact end, and removes the abort
// marker, so that the next Open needs no recovery scan. Files that readers
// still hold are closed when they release them.
func (l *CommitLog) Close() error {
	l.putMu.Lock()
	if l.closed.Swap(true) {
		l.putMu.Unlock()
		return ErrClosed
	}
	l.putMu.Unlock()
	l.alloc.close()

	var errs []error
	if l.Err() == nil {
		if _, err := l.Commit(0); err != nil {
			errs = append(errs, err)
		}
		if _, err := l.Flush(0); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && l.Err() == nil {
		end := l.queue.WrotePosition()
		if err := l.cp.write(Checkpoint{Durable: end, End: end}, true); err != nil {
			errs = append(errs, err)
		} else if err := removeAbortMarker(l.cfg.Dir, filepath.Join(l.cfg.Dir, "abort")); err != nil {
			errs = append(errs, err)
		}
	} else if err := l.Err(); err != nil {
		// Leave the abort marker: the next start must verify the tail.
		errs = append(errs, err)
	}
	l.queue.close()
	if l.pool != nil {
		l.pool.Close()
	}
	if err := l.cp.close(); err != nil {
		errs = append(errs, err)
	}
	if err := l.lock.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Abandon releases the log the way a killed process would: no final flush,
// no checkpoint of the end, and the abort marker stays, so the next Open
// runs crash recovery. What was written stays in the page cache, as it does
// when a process dies. It exists for crash tests of the layers above.
func (l *CommitLog) Abandon() {
	l.putMu.Lock()
	if l.closed.Swap(true) {
		l.putMu.Unlock()
		return
	}
	l.putMu.Unlock()
	l.alloc.close()
	l.queue.close()
	if l.pool != nil {
		l.pool.Close()
	}
	l.cp.close()
	l.lock.Close()
}
