package log

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
)

// MappedFileQueue is the ordered list of a log's files, each named by the
// global offset of its first byte (RocketMQ's MappedFileQueue). Files are
// contiguous: each starts where the previous one ends.
//
// Readers take no lock: the list is an immutable slice behind an atomic
// pointer, replaced on every roll, truncation or deletion.
type MappedFileQueue struct {
	dir   string
	size  int64
	files atomic.Pointer[[]*MappedFile]

	// mu serialises changes to the list (roll, truncate, delete).
	mu sync.Mutex
	// flushMu serialises flushes; commitMu serialises commits.
	flushMu  sync.Mutex
	commitMu sync.Mutex

	flushedWhere   atomic.Int64 // global position below which all is durable
	committedWhere atomic.Int64 // global position below which all is in the page cache
}

func newMappedFileQueue(dir string, size int64) *MappedFileQueue {
	q := &MappedFileQueue{dir: dir, size: size}
	q.files.Store(&[]*MappedFile{})
	return q
}

// load maps every file in dir, in order of their names. Files must be
// exactly one file size apart; a gap or a larger file is refused. A file
// shorter than the file size (cut by a crash during allocation, or by hand)
// is extended with zeros and its found size remembered for recovery.
func (q *MappedFileQueue) load() error {
	ents, err := os.ReadDir(q.dir)
	if err != nil {
		return fmt.Errorf("read dir %s: %w", q.dir, err)
	}
	var froms []int64
	for _, e := range ents {
		if from, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() {
			froms = append(froms, from)
		}
	}
	sort.Slice(froms, func(i, j int) bool { return froms[i] < froms[j] })
	files := make([]*MappedFile, 0, len(froms))
	for i, from := range froms {
		path := q.dir + "/" + FileName(from)
		if from%q.size != 0 {
			closeAll(files)
			return fmt.Errorf("load %s: start offset is not a multiple of the file size %d", path, q.size)
		}
		if i > 0 && from != froms[i-1]+q.size {
			closeAll(files)
			return fmt.Errorf("load %s: gap after %s (files must be contiguous)", path, FileName(froms[i-1]))
		}
		st, err := os.Stat(path)
		if err != nil {
			closeAll(files)
			return fmt.Errorf("load %s: %w", path, err)
		}
		m, err := openMappedFile(path, from, q.size, true)
		if err != nil {
			closeAll(files)
			return err
		}
		// Until recovery decides where the data ends, a loaded file counts
		// as full (RocketMQ's doLoad does the same).
		m.setPositions(q.size)
		// A file found shorter than the file size was extended with zeros;
		// recovery decides whether what went missing had been durable.
		m.loadedSize = st.Size()
		files = append(files, m)
	}
	q.files.Store(&files)
	return nil
}

func closeAll(files []*MappedFile) {
	for _, m := range files {
		m.retire()
	}
}

// Files returns the current list. The slice must not be modified.
func (q *MappedFileQueue) Files() []*MappedFile { return *q.files.Load() }

// First is the oldest file, or nil.
func (q *MappedFileQueue) First() *MappedFile {
	fs := q.Files()
	if len(fs) == 0 {
		return nil
	}
	return fs[0]
}

// Last is the newest file, or nil.
func (q *MappedFileQueue) Last() *MappedFile {
	fs := q.Files()
	if len(fs) == 0 {
		return nil
	}
	return fs[len(fs)-1]
}

// Find returns the file containing global position pos, or nil.
func (q *MappedFileQueue) Find(pos int64) *MappedFile {
	fs := q.Files()
	if len(fs) == 0 || pos < fs[0].from {
		return nil
	}
	i := int((pos - fs[0].from) / q.size)
	if i >= len(fs) {
		return nil
	}
	return fs[i]
}

// MinOffset is the global position of the oldest stored byte.
func (q *MappedFileQueue) MinOffset() int64 {
	if f := q.First(); f != nil {
		return f.from
	}
	return 0
}

// WrotePosition is the global position just past the last appended byte.
func (q *MappedFileQueue) WrotePosition() int64 {
	if f := q.Last(); f != nil {
		return f.from + f.WrotePosition()
	}
	return 0
}

// ReadPosition is the global position up to which readers may read.
func (q *MappedFileQueue) ReadPosition() int64 {
	if f := q.Last(); f != nil {
		return f.from + f.ReadPosition()
	}
	return 0
}

// FlushedWhere is the global position below which every byte is durable.
func (q *MappedFileQueue) FlushedWhere() int64 { return q.flushedWhere.Load() }

// CommittedWhere is the global position below which every byte is in the
// files' page cache.
func (q *MappedFileQueue) CommittedWhere() int64 { return q.committedWhere.Load() }

// add appends a file at the end of the list; it must start where the last
// one ends.
func (q *MappedFileQueue) add(m *MappedFile) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	old := q.Files()
	if n := len(old); n > 0 && old[n-1].from+q.size != m.from {
		return fmt.Errorf("log: add %s after %s: not contiguous", m.path, old[n-1].path)
	}
	files := make([]*MappedFile, len(old), len(old)+1)
	copy(files, old)
	files = append(files, m)
	q.files.Store(&files)
	return nil
}

// flush makes pending bytes durable, file by file from the one holding
// flushedWhere, when at least leastPages pages are dirty in total, a full
// file is pending, or leastPages is 0 and anything is pending. It returns
// the new flushedWhere.
func (q *MappedFileQueue) flush(leastPages int) (int64, error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	where := q.flushedWhere.Load()
	fs := q.Files()
	if len(fs) == 0 {
		return where, nil
	}
	last := fs[len(fs)-1]
	if leastPages > 0 {
		pending := last.from + last.ReadPosition()
		if f := q.Find(where); f == last || f == nil {
			if pagesBetween(where, pending) < int64(leastPages) {
				return where, nil
			}
		}
	}
	for _, m := range fs {
		if m.from+m.size <= where {
			continue
		}
		// fs is a snapshot: retention may have deleted m since, and its
		// mapping is gone once the last holder lets go. Its bytes are
		// gone with it, so there is nothing left of it to make durable.
		// (An msync of the unmapped range failed with ENOMEM, and the
		// failure stuck: the log refused every later write.)
		if !m.Hold() {
			where = m.from + m.size
			q.flushedWhere.Store(where)
			continue
		}
		// Within the loop the threshold was already judged for the whole
		// range: flush everything that is committed.
		flushed, err := m.flush(0)
		m.Release()
		if err != nil {
			return q.flushedWhere.Load(), err
		}
		where = m.from + flushed
		q.flushedWhere.Store(where)
		if flushed < m.size {
			break
		}
	}
	return where, nil
}

// commit moves pool-buffered bytes into the files; see MappedFile.commit.
// It returns the new committedWhere.
func (q *MappedFileQueue) commit(leastPages int) (int64, error) {
	q.commitMu.Lock()
	defer q.commitMu.Unlock()
	where := q.committedWhere.Load()
	for _, m := range q.Files() {
		if m.from+m.size <= where {
			continue
		}
		least := leastPages
		if m != q.Last() {
			least = 0 // a full file is always committed whole
		}
		c, err := m.commit(least)
		if err != nil {
			return where, err
		}
		where = m.from + c
		q.committedWhere.Store(where)
		if c < m.size {
			break
		}
	}
	return where, nil
}

// truncateAfter cuts the log at global position pos (recovery): files
// that start after pos are removed and every position is set to pos. With
// zero, the rest of the file holding pos is cleared durably (after a crash
// it may hold a torn tail); after a clean stop nothing was written past pos
// and the files past it are only the allocator's spares.
func (q *MappedFileQueue) truncateAfter(pos int64, zero bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	old := q.Files()
	keep := make([]*MappedFile, 0, len(old))
	for _, m := range old {
		switch {
		case m.from+m.size <= pos:
			keep = append(keep, m)
		case m.from <= pos:
			if zero {
				if err := m.zeroFrom(pos - m.from); err != nil {
					return err
				}
			}
			m.setPositions(pos - m.from)
			keep = append(keep, m)
		default:
			m.unlink.Store(true)
			m.retire()
		}
	}
	if len(keep) < len(old) {
		if err := SyncDir(q.dir); err != nil {
			return err
		}
	}
	q.files.Store(&keep)
	q.flushedWhere.Store(pos)
	q.committedWhere.Store(pos)
	return nil
}

// deleteBefore removes files, oldest first, that end at or before global
// position pos, never the last file. A file that a reader holds is waited
// for until ctx ends; deletion stops at the first file that cannot go, so
// the files that remain are always contiguous. It returns how many files
// were removed.
func (q *MappedFileQueue) deleteBefore(ctx context.Context, pos int64) (int, error) {
	n := 0
	for {
		q.mu.Lock()
		fs := q.Files()
		if len(fs) < 2 || fs[0].from+q.size > pos {
			q.mu.Unlock()
			return n, nil
		}
		victim := fs[0]
		rest := append([]*MappedFile(nil), fs[1:]...)
		// Remove it from the list first so no new reader finds it, then
		// wait for the readers that hold it.
		q.files.Store(&rest)
		q.mu.Unlock()
		if err := victim.destroy(ctx); err != nil {
			// Put it back: it is still the oldest file and still intact.
			q.mu.Lock()
			cur := q.Files()
			back := make([]*MappedFile, 0, len(cur)+1)
			back = append(back, victim)
			back = append(back, cur...)
			q.files.Store(&back)
			q.mu.Unlock()
			return n, err
		}
		n++
		if err := SyncDir(q.dir); err != nil {
			return n, err
		}
	}
}

// close retires every file; each closes once its last reader releases it.
func (q *MappedFileQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	closeAll(q.Files())
	q.files.Store(&[]*MappedFile{})
}
