package consumequeue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kbroker/kbroker/log"
)

// TruncateFromOffset removes every entry whose BaseOffset is at or after
// offset. The removed entries are zeroed durably before the call returns,
// so they cannot come back after a crash.
func (q *Queue) TruncateFromOffset(offset int64) error {
	return q.truncate(byBase, offset, "offset")
}

// TruncateFromPos removes every entry whose End is after commit-log
// position pos: after the commit log's recovery cut its tail at pos, no
// entry may point past it. Entries' positions grow with their offsets (the
// partition lock spans the commit-log append and the queue append), so the
// removed entries are a suffix. Durable like TruncateFromOffset.
func (q *Queue) TruncateFromPos(pos int64) error {
	return q.truncate(byEnd, pos, "position")
}

func (q *Queue) truncate(k searchKey, v int64, what string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.changeableLocked(); err != nil {
		return fmt.Errorf("consumequeue: truncate %s from %s %d: %w", q.dir, what, v, err)
	}
	fs := *q.files.Load()
	h, _, err := locate(fs, k, v)
	if err != nil {
		return q.fail(fmt.Errorf("consumequeue: truncate %s from %s %d: %w", q.dir, what, v, err))
	}
	if !h.found {
		return nil
	}
	if sticky, err := q.cutLocked(fs, h.fi, h.slot); err != nil {
		err = fmt.Errorf("consumequeue: truncate %s from %s %d: %w", q.dir, what, v, err)
		if sticky {
			q.fail(err)
		}
		return err
	}
	return nil
}

// cutLocked removes the entries from fs[fi] slot on. Order matters for
// crash safety: the cut point is zeroed durably before any later file is
// removed (a cut at a file's first entry zeroes that entry, then removes
// the file), so a crash at any step leaves an invalid entry exactly at the
// cut and the next open ends the queue there. sticky reports an error
// after which the files can no longer be trusted to match the list.
func (q *Queue) cutLocked(fs []*file, fi, slot int) (sticky bool, err error) {
	// The new last entry, read before anything changes.
	var last Entry
	hasLast := false
	switch {
	case slot > 0:
		e, err := fs[fi].mustAt(slot - 1)
		if err != nil {
			return true, err
		}
		last, hasLast = e, true
	case fi > 0:
		e, err := fs[fi-1].mustAt(-1)
		if err != nil {
			return true, err
		}
		last, hasLast = e, true
	}

	cut := fs[fi]
	keep := fi
	if slot > 0 {
		keep = fi + 1
		// Flush what stays before lowering the positions: SetPosition moves
		// the flushed position too, and dirty entries below it would never
		// be flushed otherwise.
		q.flushMu.Lock()
		_, err := cut.mf.Flush(0)
		if err == nil {
			cut.mf.SetPosition(int64(slot) * EntrySize)
		}
		q.flushMu.Unlock()
		if err != nil {
			return true, fmt.Errorf("flush %s: %w", cut.mf.Path(), err)
		}
	}
	// Readers stop seeing the removed entries from here on; those still
	// reading them verify each entry they copy out.
	next := slices.Clone(fs[:keep])
	q.files.Store(&next)
	q.mu.last, q.mu.hasLast = last, hasLast

	if err := cut.mf.ZeroFrom(int64(slot) * EntrySize); err != nil {
		return true, fmt.Errorf("zero %s from entry %d: %w", cut.mf.Path(), slot, err)
	}
	var errs []error
	for i := len(fs) - 1; i >= keep; i-- {
		if err := fs[i].mf.Destroy(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", fs[i].mf.Path(), err))
		}
	}
	if keep < len(fs) {
		errs = append(errs, log.SyncDir(q.dir))
	}
	// Not sticky: the cut point is durably zeroed, so a file that failed
	// to go is cut off again by the next open.
	return false, errors.Join(errs...)
}

// DeleteBefore removes the oldest files all of whose entries have a
// NextOffset at or below offset (retention moved the log start offset past
// them), never the last file, and returns how many it removed. Files go
// oldest first, so a crash never leaves a hole in the queue. Readers that
// hold a removed file are waited for.
func (q *Queue) DeleteBefore(offset int64) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return 0, fmt.Errorf("consumequeue: delete %s before offset %d: %w", q.dir, offset, ErrClosed)
	}
	fs := *q.files.Load()
	if len(fs) < 2 {
		return 0, nil
	}
	h, _, err := locate(fs, byOffset, offset)
	if err != nil {
		return 0, q.fail(fmt.Errorf("consumequeue: delete %s before offset %d: %w", q.dir, offset, err))
	}
	n := len(fs) - 1
	if h.found {
		n = min(n, h.fi)
	}
	if n == 0 {
		return 0, nil
	}
	rest := slices.Clone(fs[n:])
	q.files.Store(&rest)
	for i, f := range fs[:n] {
		if err := f.mf.Destroy(context.Background()); err != nil {
			return i, fmt.Errorf("consumequeue: delete file %s before offset %d: %w", f.mf.Path(), offset, err)
		}
	}
	if err := log.SyncDir(q.dir); err != nil {
		return n, err
	}
	return n, nil
}
