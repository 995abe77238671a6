package consumequeue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"

	"github.com/kbroker/kbroker/log"
)

// Linux lseek whence values for hole detection (not in package syscall).
const (
	seekData = 3
	seekHole = 4
)

// zeroPage is compared against to find non-zero bytes quickly.
var zeroPage [4096]byte

// Open opens the queue in dir with files of entriesPerFile entries (≥ 1).
// A missing dir is an empty queue; the first file creates it. Existing files keep the size they
// have on disk, so changing entriesPerFile never invalidates a queue; new
// files get the new size.
//
// Every entry is verified. The first invalid one (zeros, a checksum
// mismatch, a base offset not above the previous entry's last offset, a
// running maximum that went down, a file whose first entry is not the one
// its name promises) ends the queue: the rest of that file is zeroed
// durably and every later file is removed, so stale entries past a torn
// tail can never come back after a later crash.
func Open(dir string, entriesPerFile int) (*Queue, error) {
	if entriesPerFile < 1 || entriesPerFile > maxEntriesPerFile {
		return nil, fmt.Errorf("consumequeue: open %s: %d entries per file, want 1 to %d", dir, entriesPerFile, maxEntriesPerFile)
	}
	q := &Queue{dir: dir, entriesPerFile: entriesPerFile}
	q.files.Store(&[]*file{})
	if err := q.load(); err != nil {
		return nil, err
	}
	return q, nil
}

// load maps and verifies the files of the queue, cutting a torn tail.
func (q *Queue) load() (err error) {
	ents, err := os.ReadDir(q.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no batch yet: the first file creates the directory
	}
	if err != nil {
		return fmt.Errorf("consumequeue: open %s: %w", q.dir, err)
	}
	var froms []int64
	for _, de := range ents {
		if from, ok := log.ParseFileName(de.Name()); ok && de.Type().IsRegular() {
			froms = append(froms, from)
		}
	}
	slices.Sort(froms)

	var files []*file
	defer func() {
		if err != nil {
			for _, f := range files {
				f.mf.Close()
			}
		}
	}()
	var last Entry
	hasLast := false
	var index int64
	for i, from := range froms {
		mf, slots, err := q.openFile(from)
		if err != nil {
			return err
		}
		sc, err := scan(mf, slots, from, last, hasLast)
		if err != nil {
			mf.Close()
			return fmt.Errorf("consumequeue: open file %s: %w", mf.Path(), err)
		}
		if sc.n > 0 {
			if sc.n < slots {
				// The queue ends inside this file. Make the end durable
				// before removing what follows, so that a crash in between
				// finds the same cut.
				if err := q.zeroTail(mf, sc.n, sc.dirty); err != nil {
					mf.Close()
					return err
				}
			}
			mf.SetPosition(int64(sc.n) * EntrySize)
			files = append(files, &file{mf: mf, first: sc.first, index: index, slots: slots})
			index += int64(sc.n)
			last, hasLast = sc.last, true
			if sc.n == slots {
				continue
			}
			mf = nil
		}
		if err := q.removeAfterCut(froms[i+1:], mf); err != nil {
			return err
		}
		break
	}
	q.files.Store(&files)
	q.mu.last, q.mu.hasLast = last, hasLast
	q.loadedUnsynced.Store(len(files) > 0)
	return nil
}

// openFile maps the existing file named from and returns its capacity.
func (q *Queue) openFile(from int64) (*log.MappedFile, int, error) {
	path := filepath.Join(q.dir, log.FileName(from))
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("consumequeue: open file %s: %w", path, err)
	}
	slots := q.fileSlots(st.Size())
	mf, err := log.OpenMappedFile(q.dir, from, int64(slots)*EntrySize)
	if err != nil {
		return nil, 0, fmt.Errorf("consumequeue: open file %s: %w", path, err)
	}
	return mf, slots, nil
}

// removeAfterCut removes, at open, the files named later (not mapped) and
// then invalid, the mapped file whose first entry is already invalid (nil
// when the cut is inside a kept file). Newest first, and the invalid file
// last: until it is gone, its invalid first entry ends the queue, so a
// crash part way leaves the next open to cut at the same point.
func (q *Queue) removeAfterCut(later []int64, invalid *log.MappedFile) error {
	for j := len(later) - 1; j >= 0; j-- {
		p := filepath.Join(q.dir, log.FileName(later[j]))
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			if invalid != nil {
				invalid.Close()
			}
			return fmt.Errorf("consumequeue: remove file %s past the end of the queue: %w", p, err)
		}
	}
	if invalid != nil {
		if err := invalid.Destroy(context.Background()); err != nil {
			return fmt.Errorf("consumequeue: remove file %s with no valid entry: %w", invalid.Path(), err)
		}
	}
	if len(later) > 0 || invalid != nil {
		return log.SyncDir(q.dir)
	}
	return nil
}

// fileSlots is the capacity of an existing file of the given size: its own
// size when that is a whole number of entries (so a queue written with
// another entriesPerFile still opens), else the configured size (a file cut
// mid-entry, or left empty by a crash during its creation, is extended and
// its torn entry fails its checksum).
func (q *Queue) fileSlots(size int64) int {
	if size > 0 && size%EntrySize == 0 && size/EntrySize <= maxEntriesPerFile {
		return int(size / EntrySize)
	}
	return max(q.entriesPerFile, int(min((size+EntrySize-1)/EntrySize, maxEntriesPerFile)))
}

// scanResult is what scan found in one file.
type scanResult struct {
	n     int   // valid entries at the start of the file
	first Entry // entry 0, when n > 0
	last  Entry // entry n-1, when n > 0
	// dirty is set when the entry at n is known not to be all zeros (a
	// checksum mismatch, or a valid entry out of order).
	dirty bool
}

// scan verifies the entries of a freshly opened file (whose positions
// are still at its size): each must pass its checksum, start after the
// previous entry's last offset and keep the running maximum, and the first
// must carry the base offset the file is named by.
func scan(mf *log.MappedFile, slots int, from int64, prev Entry, hasPrev bool) (r scanResult, err error) {
	held, err := mf.View(func(data []byte) {
		for ; r.n < slots && (r.n+1)*EntrySize <= len(data); r.n++ {
			b := data[r.n*EntrySize : (r.n+1)*EntrySize]
			e, ok := decode(b)
			if ok && hasPrev {
				ok = e.BaseOffset > prev.LastOffset() && e.MaxTimestampSoFar >= prev.MaxTimestampSoFar
			}
			if ok && r.n == 0 {
				ok = e.BaseOffset == from
			}
			if !ok {
				r.dirty = [EntrySize]byte(b) != [EntrySize]byte{}
				return
			}
			if r.n == 0 {
				r.first = e
			}
			r.last, prev, hasPrev = e, e, true
		}
	})
	if err == nil && !held {
		err = log.ErrClosed // the file is ours alone until load lists it
	}
	return r, err
}

// zeroTail zeroes mf durably from entry n on, unless it is known to hold
// only zeros there already. Checking first spares every clean start an
// fallocate and an fdatasync per queue.
func (q *Queue) zeroTail(mf *log.MappedFile, n int, dirty bool) error {
	off := int64(n) * EntrySize
	if !dirty {
		nz, err := nonZeroFrom(mf, off)
		if err != nil {
			return fmt.Errorf("consumequeue: check file %s from entry %d: %w", mf.Path(), n, err)
		}
		if !nz {
			return nil
		}
	}
	if err := mf.ZeroFrom(off); err != nil {
		return fmt.Errorf("consumequeue: cut file %s at entry %d: %w", mf.Path(), n, err)
	}
	return nil
}

// nonZeroFrom reports whether mf (opened, positions at its size) has a
// non-zero byte at or after off. It reads only the ranges the filesystem
// reports as data (lseek SEEK_DATA/SEEK_HOLE): the never-written part of a
// fallocated file is a hole for that purpose and reads as zeros by
// definition, so a mostly empty 10 MiB file is checked without reading (and
// caching) 10 MiB of zeros. Where hole detection is unavailable, every
// byte is read.
func nonZeroFrom(mf *log.MappedFile, off int64) (found bool, err error) {
	held, err := mf.View(func(data []byte) {
		size := int64(len(data))
		fd := mf.Fd()
		for off < size {
			start, end := off, size
			if runtime.GOOS == "linux" {
				d, err := syscall.Seek(fd, off, seekData)
				if errors.Is(err, syscall.ENXIO) {
					return // only a hole remains
				}
				if err == nil && d >= off {
					start = min(d, size)
					if h, err := syscall.Seek(fd, start, seekHole); err == nil && h > start {
						end = min(h, size)
					}
				}
			}
			for p := start; p < end; p += int64(len(zeroPage)) {
				chunk := data[p:min(p+int64(len(zeroPage)), end)]
				if string(chunk) != string(zeroPage[:len(chunk)]) {
					found = true
					return
				}
			}
			off = end
		}
	})
	if err == nil && !held {
		err = log.ErrClosed // the file is ours alone until load lists it
	}
	return found, err
}
