package consumequeue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kbroker/kbroker/log"
)

// Append adds the entry of a new batch stored at commit-log position pos
// with size bytes; batchMaxTimestamp is the batch's own MaxTimestamp, from
// which the queue keeps the running maximum (continuing from the last
// entry after a reopen). baseOffset must be above the previous entry's last
// offset (ErrOrder otherwise). A full file rolls to a new one
// named by baseOffset. Append allocates nothing unless it creates a file.
//
// The entry becomes visible to readers only after all its bytes are in the
// mapping. It is durable after the next Flush.
func (q *Queue) Append(pos int64, size int32, baseOffset int64, lastOffsetDelta int32, attributes int16, batchMaxTimestamp int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.changeableLocked(); err != nil {
		return fmt.Errorf("consumequeue: append offset %d to %s: %w", baseOffset, q.dir, err)
	}
	e := Entry{
		Pos:               pos,
		BaseOffset:        baseOffset,
		MaxTimestampSoFar: batchMaxTimestamp,
		Size:              size,
		LastOffsetDelta:   lastOffsetDelta,
		Attributes:        attributes,
	}
	if !sane(&e) {
		return fmt.Errorf("consumequeue: append to %s: invalid entry (position %d, size %d, base offset %d, last offset delta %d)",
			q.dir, pos, size, baseOffset, lastOffsetDelta)
	}
	if q.mu.hasLast {
		if baseOffset <= q.mu.last.LastOffset() {
			return fmt.Errorf("consumequeue: append offset %d to %s after last offset %d: %w",
				baseOffset, q.dir, q.mu.last.LastOffset(), ErrOrder)
		}
		e.MaxTimestampSoFar = max(e.MaxTimestampSoFar, q.mu.last.MaxTimestampSoFar)
	}
	encode(q.mu.scratch[:], e)
	fs := *q.files.Load()
	if n := len(fs); n > 0 && !fs[n-1].mf.IsFull() {
		// Files are allocated as they fill; a full disk here is not a
		// broken file (Reserve normally took this step already).
		if err := fs[n-1].mf.Reserve(EntrySize); err != nil {
			return fmt.Errorf("consumequeue: append offset %d to %s: %w", baseOffset, fs[n-1].mf.Path(), err)
		}
		if _, err := fs[n-1].mf.AppendBytes(q.mu.scratch[:]); err != nil {
			return q.fail(fmt.Errorf("consumequeue: append offset %d to %s: %w", baseOffset, fs[n-1].mf.Path(), err))
		}
	} else if err := q.rollLocked(fs, e); err != nil {
		return err
	}
	q.mu.last, q.mu.hasLast = e, true
	return nil
}

// Reserve makes sure that appending an entry with baseOffset will not need
// to create a file: when that Append would start a new file, the file is
// created now (named baseOffset, unlisted until the Append writes its first
// entry). The partition reserves before it appends a batch to the commit
// log, so that a full disk refuses the batch before it is in the commit log
// rather than after, when the batch would be in the log but missing from
// the queue. A failure is not sticky.
func (q *Queue) Reserve(baseOffset int64) error {
	// Most calls find the entry's block in the last file already
	// allocated (files grow a page or more at a time, 102 entries a
	// page): they are answered without the lock, which the Append that
	// follows takes anyway. The appender, the only caller, is the only
	// one that moves the write position, and allocation only grows, so
	// the answer cannot go stale before that Append; a sticky failure
	// still refuses the batch here.
	if fs := *q.files.Load(); len(fs) > 0 && q.failure() == nil {
		mf := fs[len(fs)-1].mf
		if mf.WrotePosition()+EntrySize <= mf.Allocated() {
			return nil
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.changeableLocked(); err != nil {
		return fmt.Errorf("consumequeue: reserve offset %d in %s: %w", baseOffset, q.dir, err)
	}
	fs := *q.files.Load()
	if n := len(fs); n > 0 && !fs[n-1].mf.IsFull() {
		// The entry goes into the last file: make sure its block is
		// allocated (files grow as they fill).
		if err := fs[n-1].mf.Reserve(EntrySize); err != nil {
			return fmt.Errorf("consumequeue: %s: reserve offset %d: %w", q.dir, baseOffset, err)
		}
		return nil
	}
	if q.mu.spare != nil {
		if q.mu.spareFrom == baseOffset {
			return nil
		}
		if err := q.dropSpareLocked(); err != nil {
			return err
		}
	}
	mf, err := q.createFileLocked(baseOffset)
	if err != nil {
		return fmt.Errorf("consumequeue: %s: new file for offset %d: %w", q.dir, baseOffset, err)
	}
	q.mu.spare, q.mu.spareFrom = mf, baseOffset
	return nil
}

// createFileLocked creates the file named from, and the queue's directory
// first if this is its first file: a partition that never received a
// batch has no directory, which keeps empty partitions cheap to create
// (no directory fsync) and to store.
//
// Neither the directory nor the file name is synced here: the next Flush
// does it (dirsUnsynced), before any checkpoint relies on the file, so the
// first batch of a new partition does not wait for two directory fsyncs.
// Entries past the checkpoint are rebuilt from the commit log after a
// crash anyway.
func (q *Queue) createFileLocked(from int64) (*log.MappedFile, error) {
	if _, err := os.Stat(q.dir); err != nil {
		// Which names are new decides which directories the next Flush
		// syncs: the topic directory's only for its first partition.
		level := syncParent
		if _, err := os.Stat(filepath.Dir(q.dir)); err != nil {
			level = syncGrandparent
		}
		if err := os.MkdirAll(q.dir, 0o755); err != nil {
			return nil, fmt.Errorf("consumequeue: create dir %s: %w", q.dir, err)
		}
		q.dirsUnsynced.Store(level)
	}
	mf, err := log.CreateMappedFile(q.dir, from, int64(q.entriesPerFile)*EntrySize)
	if err != nil {
		return nil, err
	}
	q.dirsUnsynced.CompareAndSwap(syncNone, syncDir)
	return mf, nil
}

// dropSpareLocked removes the reserved file, which no reader knows of.
func (q *Queue) dropSpareLocked() error {
	mf := q.mu.spare
	if mf == nil {
		return nil
	}
	q.mu.spare = nil
	if err := mf.Destroy(context.Background()); err != nil {
		return fmt.Errorf("consumequeue: remove reserved file %s: %w", mf.Path(), err)
	}
	return nil
}

// rollLocked creates the file that starts with e (already encoded in the
// scratch buffer), or takes the one Reserve made for it, writes e, and only
// then publishes the file, so readers never see an empty file.
func (q *Queue) rollLocked(fs []*file, e Entry) error {
	mf := q.mu.spare
	if mf != nil && q.mu.spareFrom == e.BaseOffset {
		q.mu.spare = nil
	} else {
		if err := q.dropSpareLocked(); err != nil {
			return err
		}
		var err error
		mf, err = q.createFileLocked(e.BaseOffset)
		if err != nil {
			// Not sticky: a full disk at allocation is retried by the
			// next append, as for the commit log.
			return fmt.Errorf("consumequeue: %s: new file for offset %d: %w", q.dir, e.BaseOffset, err)
		}
	}
	if _, err := mf.AppendBytes(q.mu.scratch[:]); err != nil {
		derr := mf.Destroy(context.Background())
		return q.fail(fmt.Errorf("consumequeue: append offset %d to %s: %w", e.BaseOffset, mf.Path(), errors.Join(err, derr)))
	}
	f := &file{mf: mf, first: e, slots: q.entriesPerFile}
	if n := len(fs); n > 0 {
		f.index = fs[n-1].index + int64(fs[n-1].count())
	}
	next := make([]*file, len(fs)+1)
	copy(next, fs)
	next[len(fs)] = f
	q.files.Store(&next)
	return nil
}
