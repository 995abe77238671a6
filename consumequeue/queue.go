package consumequeue

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/kbroker/kbroker/log"
)

// maxEntriesPerFile bounds a file to 2 GiB, far above any useful size,
// so that sizes and slot arithmetic never overflow.
const maxEntriesPerFile = math.MaxInt32 / EntrySize

// readRetries bounds how often a reader starts over when a file of its
// snapshot was removed under it (retention or truncation raced with it).
const readRetries = 8

// file is one file of the queue. Everything but the mapped file's
// positions is immutable once the file is in a published list.
type file struct {
	mf *log.MappedFile
	// first is the file's first entry, which is also its name. It never
	// changes while the file is listed (a cut at the first entry removes
	// the file), so file-level searches need not touch the mapping.
	first Entry
	// index is the queue index of the first entry, counted from the first
	// entry the queue had when it was opened; only differences matter.
	index int64
	// slots is the file's capacity in entries.
	slots int
}

// count is the number of entries readers may read. It is the read
// position, not the wrote position: MappedFile advances wrote first and the
// read (committed) position right after, and View shows readers the
// latter. Both move only after an entry is completely copied in, so no
// reader sees half an entry.
func (f *file) count() int { return int(f.mf.ReadPosition() / EntrySize) }

// Queue is the consume queue of one Kafka partition: the index of its
// record batches in the shared commit log, a dense sequence of
// EntrySize-byte entries in strictly increasing offset order, stored in
// fixed-size memory-mapped files of one directory. The file holding an
// offset is found by a binary search over the sorted file list (each file
// is named by the base offset of its first entry), and the entry by a
// binary search inside that file; a timestamp is found the same way over
// the running maximum each entry stores. The package documentation gives
// the on-disk format, the invariants and the concurrency rules.
type Queue struct {
	dir            string
	entriesPerFile int

	// files is the current list, oldest first; every file but the last is
	// full, and no listed file is empty.
	files atomic.Pointer[[]*file]

	// failed holds the first failed write, flush or fault. After it every
	// change and flush fails with it: the mapping or the page cache can no
	// longer be trusted to match the disk (log.WriteError).
	failed atomic.Pointer[stickyError]

	// mu serialises the changes to the queue.
	mu struct {
		sync.Mutex
		last    Entry // the last entry (its offsets and running max)
		hasLast bool
		closed  bool
		scratch [EntrySize]byte // encode buffer, so Append allocates nothing
		// spare is the next file, created by Reserve before it is needed
		// and named spareFrom; not listed until an Append writes its first
		// entry.
		spare     *log.MappedFile
		spareFrom int64
	}

	// flushMu serialises MappedFile.Flush and the position resets of a
	// truncation (which must not lose track of dirty bytes). Lock order:
	// mu → flushMu.
	flushMu sync.Mutex
	// loadedUnsynced is set while the entries found at open have not been
	// synced by this process. Open counts them as flushed (SetPosition),
	// but after a crash of the process, not of the machine, they may
	// still be dirty pages of the previous run; the first Flush fsyncs
	// every file, so that Flush always means durable.
	loadedUnsynced atomic.Bool
	// dirsUnsynced says which directory entries created since the last
	// Flush are not durable yet: syncNone, syncDir (a file name in dir),
	// syncParent (dir's own name too) or syncGrandparent (and the topic
	// directory's name, when MkdirAll made it).
	dirsUnsynced atomic.Int32
}

// Values of Queue.dirsUnsynced, each including the ones before.
const (
	syncNone int32 = iota
	syncDir
	syncParent
	syncGrandparent
)

// syncDirs makes the names created since the last Flush durable.
func (q *Queue) syncDirs() error {
	what := q.dirsUnsynced.Swap(syncNone)
	d := q.dir
	for level := syncDir; level <= what; level++ {
		if err := log.SyncDir(d); err != nil {
			q.dirsUnsynced.CompareAndSwap(syncNone, what) // try again next time
			return err
		}
		d = filepath.Dir(d)
	}
	return nil
}

// Len is the number of entries.
func (q *Queue) Len() int {
	fs := *q.files.Load()
	if len(fs) == 0 {
		return 0
	}
	last := fs[len(fs)-1]
	return int(last.index-fs[0].index) + last.count()
}

// FirstOffset is the base offset of the first entry (valid when Len > 0).
func (q *Queue) FirstOffset() int64 {
	fs := *q.files.Load()
	if len(fs) == 0 {
		return 0
	}
	return fs[0].first.BaseOffset
}

// NextOffset is the offset after the last entry's last offset (valid when
// Len > 0).
func (q *Queue) NextOffset() int64 {
	if e, ok := q.Last(); ok {
		return e.NextOffset()
	}
	return 0
}

// Flush makes every entry durable: an msync of the dirty range of each
// file, and after an open, once, an fsync of every file (see
// loadedUnsynced). A failure is sticky.
func (q *Queue) Flush() error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	if err := q.failure(); err != nil {
		return err
	}
	if err := q.syncDirs(); err != nil {
		return fmt.Errorf("consumequeue: flush %s: %w", q.dir, err)
	}
	syncAll := q.loadedUnsynced.Load()
	for _, f := range *q.files.Load() {
		if !syncAll && f.mf.FlushedPosition() >= f.mf.WrotePosition() {
			continue
		}
		if !f.mf.Hold() {
			continue // removed meanwhile
		}
		_, err := f.mf.Flush(0)
		if err == nil && syncAll {
			err = f.mf.File().Sync()
		}
		f.mf.Release()
		if err != nil {
			return q.fail(fmt.Errorf("consumequeue: flush file %s: %w", f.mf.Path(), err))
		}
	}
	if syncAll {
		q.loadedUnsynced.Store(false)
	}
	return nil
}

// Close flushes the queue and releases its files (each is unmapped once
// the last reader lets go of it). Later changes fail with
// ErrClosed; readers find an empty queue.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return nil
	}
	err := q.Flush()
	q.mu.closed = true
	q.releaseLocked()
	return err
}

// Destroy closes the queue without flushing and removes its directory
// (the topic was deleted).
func (q *Queue) Destroy() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.closed = true
	q.releaseLocked()
	if err := os.RemoveAll(q.dir); err != nil {
		return fmt.Errorf("consumequeue: remove %s: %w", q.dir, err)
	}
	// The parent may be gone already (the topic's directory removed after
	// an earlier Destroy); then there is no name left to make durable.
	if err := log.SyncDir(filepath.Dir(q.dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (q *Queue) releaseLocked() {
	_ = q.dropSpareLocked() // empty: the next open would remove it anyway
	fs := *q.files.Load()
	q.files.Store(&[]*file{})
	for _, f := range fs {
		f.mf.Close()
	}
}
