package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/kbroker/kbroker/log"
)

// CQEntrySize is the size in bytes of one consume-queue entry
// (STORAGE-REFERENCE.md §3.3):
//
//	0        8            16                 24     28               32     34       36      40
//	+--------+------------+------------------+------+----------------+------+--------+-------+
//	| pos    | baseOffset | maxTimestampSoFar| size | lastOffsetDelta| attrs| rsvd   | crc32c|
//	| i64 BE | i64 BE     | i64 BE           | i32  | i32            | i16  | i16 (0)| u32   |
//	+--------+------------+------------------+------+----------------+------+--------+-------+
//	                              CRC-32C of bytes [0, 36)
//
// Pre-allocated files hold zeros and an all-zero entry never passes its
// checksum, so the first invalid entry marks the end of the data.
const CQEntrySize = 40

// Field offsets inside an entry.
const (
	cqOffPos      = 0
	cqOffBase     = 8
	cqOffMaxTime  = 16
	cqOffSize     = 24
	cqOffDelta    = 28
	cqOffAttrs    = 32
	cqOffReserved = 34
	cqOffCRC      = 36
)

// cqWarmEntries is how many entries at the end of a file make up its warm
// section: 8 KiB, as Kafka's index lookup (§2.5). Most fetches come from
// consumers near the end of the queue, so a search that probes the warm
// section first touches only its two pages.
const cqWarmEntries = 8192 / CQEntrySize

// cqMaxEntriesPerFile bounds a file to 2 GiB, far above any useful size,
// so that sizes and slot arithmetic never overflow.
const cqMaxEntriesPerFile = math.MaxInt32 / CQEntrySize

// cqReadRetries bounds how often a reader starts over when a file of its
// snapshot was removed under it (retention or truncation raced with it).
const cqReadRetries = 8

// Linux lseek whence values for hole detection (not in package syscall).
const (
	cqSeekData = 3
	cqSeekHole = 4
)

var cqCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// cqZeroPage is compared against to find non-zero bytes quickly.
var cqZeroPage [4096]byte

// Errors of the consume queue. They are wrapped with the queue's directory
// and the offending offset.
var (
	// ErrConsumeQueueOrder is returned by Append when a batch does not
	// start after the last entry's last offset: entries are strictly
	// ordered by offset, which binary search relies on.
	ErrConsumeQueueOrder = errors.New("partition: consume queue entry out of order")
	// ErrConsumeQueueClosed is returned by changes to a closed queue.
	ErrConsumeQueueClosed = errors.New("partition: consume queue closed")
)

// CQEntry is one decoded consume-queue entry: where one record batch lives
// in the commit log and which offsets and times it covers.
type CQEntry struct {
	Pos               int64 // commit-log position of the batch bytes
	BaseOffset        int64
	MaxTimestampSoFar int64 // running maximum of the batches' MaxTimestamp up to this one
	Size              int32 // batch length in bytes
	LastOffsetDelta   int32
	Attributes        int16 // the batch's attributes (compression, timestamp type, transactional, control)
}

// NextOffset is the offset after the batch's last record.
func (e CQEntry) NextOffset() int64 { return e.BaseOffset + int64(e.LastOffsetDelta) + 1 }

// LastOffset is the offset of the batch's last record.
func (e CQEntry) LastOffset() int64 { return e.BaseOffset + int64(e.LastOffsetDelta) }

// End is the commit-log position just past the batch bytes.
func (e CQEntry) End() int64 { return e.Pos + int64(e.Size) }

// cqEncode writes e into b[:CQEntrySize] with its checksum.
func cqEncode(b []byte, e CQEntry) {
	b = b[:CQEntrySize]
	be := binary.BigEndian
	be.PutUint64(b[cqOffPos:], uint64(e.Pos))
	be.PutUint64(b[cqOffBase:], uint64(e.BaseOffset))
	be.PutUint64(b[cqOffMaxTime:], uint64(e.MaxTimestampSoFar))
	be.PutUint32(b[cqOffSize:], uint32(e.Size))
	be.PutUint32(b[cqOffDelta:], uint32(e.LastOffsetDelta))
	be.PutUint16(b[cqOffAttrs:], uint16(e.Attributes))
	be.PutUint16(b[cqOffReserved:], 0)
	be.PutUint32(b[cqOffCRC:], crc32.Checksum(b[:cqOffCRC], cqCastagnoli))
}

// cqDecode decodes and verifies b[:CQEntrySize]. Readers verify every entry
// they hand out, so bytes that a concurrent truncation is zeroing, or that
// a torn write left behind, are never mistaken for a batch.
func cqDecode(b []byte) (CQEntry, bool) {
	var e CQEntry
	ok := cqDecodeInto(b, &e)
	return e, ok
}

// cqDecodeInto is cqDecode writing into *e, which spares the copies of
// returning the entry on the hot path of Read.
//
// b may be a file's mapping that a truncation is rewriting at this moment:
// checked in place and then decoded, its bytes could change between the
// checksum and the fields (a torn entry passed its checksum under -race).
// So the entry is copied out first, the checksum is taken over the
// mapping (taking it over the copy would move the copy to the heap), and
// the mapping must still hold the copy's bytes afterwards: a rewrite in
// between either changes them or gives a checksum that does not match.
func cqDecodeInto(b []byte, e *CQEntry) bool {
	b = b[:CQEntrySize]
	var c [CQEntrySize]byte
	copy(c[:], b)
	if binary.BigEndian.Uint32(c[cqOffCRC:]) != crc32.Checksum(b[:cqOffCRC], cqCastagnoli) || !bytes.Equal(b, c[:]) {
		return false
	}
	be := binary.BigEndian
	e.Pos = int64(be.Uint64(c[cqOffPos:]))
	e.BaseOffset = int64(be.Uint64(c[cqOffBase:]))
	e.MaxTimestampSoFar = int64(be.Uint64(c[cqOffMaxTime:]))
	e.Size = int32(be.Uint32(c[cqOffSize:]))
	e.LastOffsetDelta = int32(be.Uint32(c[cqOffDelta:]))
	e.Attributes = int16(be.Uint16(c[cqOffAttrs:]))
	return cqSane(e)
}

// cqSane reports whether e could have been written by Append; it keeps a
// garbage entry that happens to pass its checksum from breaking the
// ordering the searches rely on.
func cqSane(e *CQEntry) bool {
	return e.Pos >= 0 && e.Size > 0 && e.BaseOffset >= 0 && e.LastOffsetDelta >= 0 &&
		e.BaseOffset <= math.MaxInt64-int64(e.LastOffsetDelta)-1
}

// cqKey selects the monotone predicate a search looks for: every search
// finds the first entry for which it holds.
type cqKey uint8

const (
	cqByOffset cqKey = iota // NextOffset() > v: the batch holding offset v, or the next one
	cqByBase                // BaseOffset >= v
	cqByTime                // MaxTimestampSoFar >= v
	cqByEnd                 // End() > v (positions grow with offsets)
)

// match evaluates the predicate on the raw entry b, reading only the
// fields it needs.
func (k cqKey) match(b []byte, v int64) bool {
	b = b[:CQEntrySize]
	be := binary.BigEndian
	switch k {
	case cqByOffset:
		return int64(be.Uint64(b[cqOffBase:]))+int64(int32(be.Uint32(b[cqOffDelta:]))) >= v
	case cqByBase:
		return int64(be.Uint64(b[cqOffBase:])) >= v
	case cqByTime:
		return int64(be.Uint64(b[cqOffMaxTime:])) >= v
	default:
		return int64(be.Uint64(b[cqOffPos:]))+int64(int32(be.Uint32(b[cqOffSize:]))) > v
	}
}

// matchEntry evaluates the predicate on a decoded entry.
func (k cqKey) matchEntry(e *CQEntry, v int64) bool {
	switch k {
	case cqByOffset:
		return e.LastOffset() >= v
	case cqByBase:
		return e.BaseOffset >= v
	case cqByTime:
		return e.MaxTimestampSoFar >= v
	default:
		return e.End() > v
	}
}

// cqFile is one file of the queue. Everything but the mapped file's
// positions is immutable once the file is in a published list.
type cqFile struct {
	mf *log.MappedFile
	// first is the file's first entry, which is also its name. It never
	// changes while the file is listed (a cut at the first entry removes
	// the file), so file-level searches need not touch the mapping.
	first CQEntry
	// index is the queue index of the first entry, counted from the first
	// entry the queue had when it was opened; only differences matter.
	index int64
	// slots is the file's capacity in entries.
	slots int
}

// count is the number of entries readers may read. It is the read
// position, not the wrote position: MappedFile advances wrote first and the
// read (committed) position right after, and Bytes checks against the
// latter. Both move only after an entry is completely copied in, so no
// reader sees half an entry.
func (f *cqFile) count() int { return int(f.mf.ReadPosition() / CQEntrySize) }

// ConsumeQueue is the index of one Kafka partition into the shared commit
// log (RocketMQ's ConsumeQueue, but one entry per record batch as in its
// BatchConsumeQueue): a dense sequence of CQEntrySize-byte entries in
// strictly increasing offset order, stored in fixed-size memory-mapped
// files of one directory. Each file is named (log.FileName) by the base
// offset of its first entry, so the file holding an offset is found by a
// binary search over the sorted file list, and the entry by a binary search
// inside that file; a timestamp is found the same way over the running
// maximum each entry stores.
//
// Concurrency: one goroutine at a time changes the queue (Append,
// Truncate*, DeleteBefore; the partition lock normally orders them, and an
// internal mutex makes them safe regardless). Readers (Find, Read,
// FindTimestamp, Last, Len, ...) take no lock: the file list is an
// immutable slice behind an atomic pointer, replaced on roll, truncation
// and deletion; a file's entry count comes from its atomic read position,
// advanced only after an entry is fully copied; readers Hold a file while they copy
// entries out of it, so deletion waits for them; and every entry handed
// out is checksum-verified, so a reader racing a truncation sees either an
// entry that was valid or the end of the queue, never garbage.
type ConsumeQueue struct {
	dir            string
	entriesPerFile int

	// files is the current list, oldest first; every file but the last is
	// full, and no listed file is empty.
	files atomic.Pointer[[]*cqFile]

	// failed holds the first failed write, flush or fault. After it every
	// change and flush fails with it: the mapping or the page cache can no
	// longer be trusted to match the disk (log.WriteError).
	failed atomic.Pointer[cqFailure]

	// mu serialises the changes to the queue.
	mu struct {
		sync.Mutex
		last    CQEntry // the last entry (its offsets and running max)
		hasLast bool
		closed  bool
		scratch [CQEntrySize]byte // encode buffer, so Append allocates nothing
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
}

type cqFailure struct{ err error }

// OpenConsumeQueue opens the queue in dir, creating dir if needed, with
// files of entriesPerFile entries (≥ 1). Existing files keep the size they
// have on disk, so changing entriesPerFile never invalidates a queue; new
// files get the new size.
//
// Every entry is verified. The first invalid one (zeros, a checksum
// mismatch, a base offset not above the previous entry's last offset, a
// running maximum that went down, a file whose first entry is not the one
// its name promises) ends the queue: the rest of that file is zeroed
// durably and every later file is removed, so stale entries past a torn
// tail can never come back after a later crash.
func OpenConsumeQueue(dir string, entriesPerFile int) (*ConsumeQueue, error) {
	if entriesPerFile < 1 || entriesPerFile > cqMaxEntriesPerFile {
		return nil, fmt.Errorf("partition: open consume queue %s: %d entries per file, want 1 to %d", dir, entriesPerFile, cqMaxEntriesPerFile)
	}
	if err := cqMkdir(dir); err != nil {
		return nil, err
	}
	q := &ConsumeQueue{dir: dir, entriesPerFile: entriesPerFile}
	q.files.Store(&[]*cqFile{})
	if err := q.load(); err != nil {
		return nil, err
	}
	return q, nil
}

// cqMkdir creates dir if it is missing and makes its name durable.
func cqMkdir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("partition: create consume queue dir %s: %w", dir, err)
	}
	return log.SyncDir(filepath.Dir(dir))
}

// load maps and verifies the files of the queue, cutting a torn tail.
func (q *ConsumeQueue) load() (err error) {
	ents, err := os.ReadDir(q.dir)
	if err != nil {
		return fmt.Errorf("partition: open consume queue %s: %w", q.dir, err)
	}
	var froms []int64
	for _, de := range ents {
		if from, ok := log.ParseFileName(de.Name()); ok && de.Type().IsRegular() {
			froms = append(froms, from)
		}
	}
	slices.Sort(froms)

	var files []*cqFile
	defer func() {
		if err != nil {
			for _, f := range files {
				f.mf.Close()
			}
		}
	}()
	var last CQEntry
	hasLast := false
	var index int64
	for i, from := range froms {
		mf, slots, err := q.openFile(from)
		if err != nil {
			return err
		}
		sc, err := cqScan(mf, slots, from, last, hasLast)
		if err != nil {
			mf.Close()
			return fmt.Errorf("partition: open consume queue file %s: %w", mf.Path(), err)
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
			mf.SetPosition(int64(sc.n) * CQEntrySize)
			files = append(files, &cqFile{mf: mf, first: sc.first, index: index, slots: slots})
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
func (q *ConsumeQueue) openFile(from int64) (*log.MappedFile, int, error) {
	path := filepath.Join(q.dir, log.FileName(from))
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("partition: open consume queue file %s: %w", path, err)
	}
	slots := q.fileSlots(st.Size())
	mf, err := log.OpenMappedFile(q.dir, from, int64(slots)*CQEntrySize)
	if err != nil {
		return nil, 0, fmt.Errorf("partition: open consume queue file %s: %w", path, err)
	}
	return mf, slots, nil
}

// removeAfterCut removes, at open, the files named later (not mapped) and
// then invalid, the mapped file whose first entry is already invalid (nil
// when the cut is inside a kept file). Newest first, and the invalid file
// last: until it is gone, its invalid first entry ends the queue, so a
// crash part way leaves the next open to cut at the same point.
func (q *ConsumeQueue) removeAfterCut(later []int64, invalid *log.MappedFile) error {
	for j := len(later) - 1; j >= 0; j-- {
		p := filepath.Join(q.dir, log.FileName(later[j]))
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			if invalid != nil {
				invalid.Close()
			}
			return fmt.Errorf("partition: remove consume queue file %s past the end of the queue: %w", p, err)
		}
	}
	if invalid != nil {
		if err := invalid.Destroy(context.Background()); err != nil {
			return fmt.Errorf("partition: remove consume queue file %s with no valid entry: %w", invalid.Path(), err)
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
func (q *ConsumeQueue) fileSlots(size int64) int {
	if size > 0 && size%CQEntrySize == 0 && size/CQEntrySize <= cqMaxEntriesPerFile {
		return int(size / CQEntrySize)
	}
	return max(q.entriesPerFile, int(min((size+CQEntrySize-1)/CQEntrySize, cqMaxEntriesPerFile)))
}

// cqScanResult is what cqScan found in one file.
type cqScanResult struct {
	n     int     // valid entries at the start of the file
	first CQEntry // entry 0, when n > 0
	last  CQEntry // entry n-1, when n > 0
	// dirty is set when the entry at n is known not to be all zeros (a
	// checksum mismatch, or a valid entry out of order).
	dirty bool
}

// cqScan verifies the entries of a freshly opened file (whose positions
// are still at its size): each must pass its checksum, start after the
// previous entry's last offset and keep the running maximum, and the first
// must carry the base offset the file is named by.
func cqScan(mf *log.MappedFile, slots int, from int64, prev CQEntry, hasPrev bool) (r cqScanResult, err error) {
	defer cqRecoverFault(debug.SetPanicOnFault(true), &err)
	data, err := mf.Bytes(0, int64(slots)*CQEntrySize)
	if err != nil {
		return r, err
	}
	for ; r.n < slots; r.n++ {
		b := data[r.n*CQEntrySize : (r.n+1)*CQEntrySize]
		e, ok := cqDecode(b)
		if ok && hasPrev {
			ok = e.BaseOffset > prev.LastOffset() && e.MaxTimestampSoFar >= prev.MaxTimestampSoFar
		}
		if ok && r.n == 0 {
			ok = e.BaseOffset == from
		}
		if !ok {
			r.dirty = [CQEntrySize]byte(b) != [CQEntrySize]byte{}
			return r, nil
		}
		if r.n == 0 {
			r.first = e
		}
		r.last, prev, hasPrev = e, e, true
	}
	return r, nil
}

// zeroTail zeroes mf durably from entry n on, unless it is known to hold
// only zeros there already. Checking first spares every clean start an
// fallocate and an fdatasync per queue.
func (q *ConsumeQueue) zeroTail(mf *log.MappedFile, n int, dirty bool) error {
	off := int64(n) * CQEntrySize
	if !dirty {
		nz, err := cqNonZeroFrom(mf, off)
		if err != nil {
			return fmt.Errorf("partition: check consume queue file %s from entry %d: %w", mf.Path(), n, err)
		}
		if !nz {
			return nil
		}
	}
	if err := mf.ZeroFrom(off); err != nil {
		return fmt.Errorf("partition: cut consume queue file %s at entry %d: %w", mf.Path(), n, err)
	}
	return nil
}

// cqNonZeroFrom reports whether mf (opened, positions at its size) has a
// non-zero byte at or after off. It reads only the ranges the filesystem
// reports as data (lseek SEEK_DATA/SEEK_HOLE): the never-written part of a
// fallocated file is a hole for that purpose and reads as zeros by
// definition, so a mostly empty 10 MiB file is checked without reading (and
// caching) 10 MiB of zeros. Where hole detection is unavailable, every
// byte is read.
func cqNonZeroFrom(mf *log.MappedFile, off int64) (found bool, err error) {
	defer cqRecoverFault(debug.SetPanicOnFault(true), &err)
	size := mf.Size()
	data, err := mf.Bytes(0, size)
	if err != nil {
		return false, err
	}
	fd := mf.Fd()
	for off < size {
		start, end := off, size
		if runtime.GOOS == "linux" {
			d, err := syscall.Seek(fd, off, cqSeekData)
			if errors.Is(err, syscall.ENXIO) {
				return false, nil // only a hole remains
			}
			if err == nil && d >= off {
				start = min(d, size)
				if h, err := syscall.Seek(fd, start, cqSeekHole); err == nil && h > start {
					end = min(h, size)
				}
			}
		}
		for p := start; p < end; p += int64(len(cqZeroPage)) {
			chunk := data[p:min(p+int64(len(cqZeroPage)), end)]
			if string(chunk) != string(cqZeroPage[:len(chunk)]) {
				return true, nil
			}
		}
		off = end
	}
	return false, nil
}

// Append adds the entry of a new batch stored at commit-log position pos
// with size bytes; batchMaxTimestamp is the batch's own MaxTimestamp, from
// which the queue keeps the running maximum (continuing from the last
// entry after a reopen). baseOffset must be above the previous entry's last
// offset (ErrConsumeQueueOrder otherwise). A full file rolls to a new one
// named by baseOffset. Append allocates nothing unless it creates a file.
//
// The entry becomes visible to readers only after all its bytes are in the
// mapping. It is durable after the next Flush.
func (q *ConsumeQueue) Append(pos int64, size int32, baseOffset int64, lastOffsetDelta int32, attributes int16, batchMaxTimestamp int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return fmt.Errorf("partition: append offset %d to consume queue %s: %w", baseOffset, q.dir, ErrConsumeQueueClosed)
	}
	if err := q.failure(); err != nil {
		return err
	}
	e := CQEntry{
		Pos:               pos,
		BaseOffset:        baseOffset,
		MaxTimestampSoFar: batchMaxTimestamp,
		Size:              size,
		LastOffsetDelta:   lastOffsetDelta,
		Attributes:        attributes,
	}
	if !cqSane(&e) {
		return fmt.Errorf("partition: append to consume queue %s: invalid entry (position %d, size %d, base offset %d, last offset delta %d)",
			q.dir, pos, size, baseOffset, lastOffsetDelta)
	}
	if q.mu.hasLast {
		if baseOffset <= q.mu.last.LastOffset() {
			return fmt.Errorf("partition: append offset %d to consume queue %s after last offset %d: %w",
				baseOffset, q.dir, q.mu.last.LastOffset(), ErrConsumeQueueOrder)
		}
		e.MaxTimestampSoFar = max(e.MaxTimestampSoFar, q.mu.last.MaxTimestampSoFar)
	}
	cqEncode(q.mu.scratch[:], e)
	fs := *q.files.Load()
	if n := len(fs); n > 0 && !fs[n-1].mf.IsFull() {
		if _, err := fs[n-1].mf.AppendBytes(q.mu.scratch[:]); err != nil {
			return q.fail(fmt.Errorf("partition: append offset %d to %s: %w", baseOffset, fs[n-1].mf.Path(), err))
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
func (q *ConsumeQueue) Reserve(baseOffset int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return fmt.Errorf("partition: reserve offset %d in consume queue %s: %w", baseOffset, q.dir, ErrConsumeQueueClosed)
	}
	if err := q.failure(); err != nil {
		return err
	}
	fs := *q.files.Load()
	if n := len(fs); n > 0 && !fs[n-1].mf.IsFull() {
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
	mf, err := log.CreateMappedFile(q.dir, baseOffset, int64(q.entriesPerFile)*CQEntrySize)
	if err != nil {
		return fmt.Errorf("partition: consume queue %s: new file for offset %d: %w", q.dir, baseOffset, err)
	}
	q.mu.spare, q.mu.spareFrom = mf, baseOffset
	return nil
}

// dropSpareLocked removes the reserved file, which no reader knows of.
func (q *ConsumeQueue) dropSpareLocked() error {
	mf := q.mu.spare
	if mf == nil {
		return nil
	}
	q.mu.spare = nil
	if err := mf.Destroy(context.Background()); err != nil {
		return fmt.Errorf("partition: remove reserved consume queue file %s: %w", mf.Path(), err)
	}
	return nil
}

// rollLocked creates the file that starts with e (already encoded in the
// scratch buffer), or takes the one Reserve made for it, writes e, and only
// then publishes the file, so readers never see an empty file.
func (q *ConsumeQueue) rollLocked(fs []*cqFile, e CQEntry) error {
	mf := q.mu.spare
	if mf != nil && q.mu.spareFrom == e.BaseOffset {
		q.mu.spare = nil
	} else {
		if err := q.dropSpareLocked(); err != nil {
			return err
		}
		var err error
		mf, err = log.CreateMappedFile(q.dir, e.BaseOffset, int64(q.entriesPerFile)*CQEntrySize)
		if err != nil {
			// Not sticky: a full disk at allocation is retried by the
			// next append, as for the commit log.
			return fmt.Errorf("partition: consume queue %s: new file for offset %d: %w", q.dir, e.BaseOffset, err)
		}
	}
	if _, err := mf.AppendBytes(q.mu.scratch[:]); err != nil {
		derr := mf.Destroy(context.Background())
		return q.fail(fmt.Errorf("partition: append offset %d to %s: %w", e.BaseOffset, mf.Path(), errors.Join(err, derr)))
	}
	f := &cqFile{mf: mf, first: e, slots: q.entriesPerFile}
	if n := len(fs); n > 0 {
		f.index = fs[n-1].index + int64(fs[n-1].count())
	}
	next := make([]*cqFile, len(fs)+1)
	copy(next, fs)
	next[len(fs)] = f
	q.files.Store(&next)
	return nil
}

// Len is the number of entries.
func (q *ConsumeQueue) Len() int {
	fs := *q.files.Load()
	if len(fs) == 0 {
		return 0
	}
	last := fs[len(fs)-1]
	return int(last.index-fs[0].index) + last.count()
}

// FirstOffset is the base offset of the first entry (valid when Len > 0).
func (q *ConsumeQueue) FirstOffset() int64 {
	fs := *q.files.Load()
	if len(fs) == 0 {
		return 0
	}
	return fs[0].first.BaseOffset
}

// NextOffset is the offset after the last entry's last offset (valid when
// Len > 0).
func (q *ConsumeQueue) NextOffset() int64 {
	if e, ok := q.Last(); ok {
		return e.NextOffset()
	}
	return 0
}

// Last returns the last entry.
func (q *ConsumeQueue) Last() (CQEntry, bool) {
	for range cqReadRetries {
		fs := *q.files.Load()
		if len(fs) == 0 {
			return CQEntry{}, false
		}
		f := fs[len(fs)-1]
		e, ok, held, err := f.at(-1)
		if err != nil {
			q.fail(fmt.Errorf("partition: read consume queue file %s: %w", f.mf.Path(), err))
			return CQEntry{}, false
		}
		if held {
			return e, ok
		}
	}
	return CQEntry{}, false
}

// mustAt is at for the writer, to which an entry that fails its checksum
// is corruption of data verified at open.
func (f *cqFile) mustAt(slot int) (CQEntry, error) {
	e, ok, _, err := f.at(slot)
	if err != nil {
		return e, fmt.Errorf("read entry %d of %s: %w", slot, f.mf.Path(), err)
	}
	if !ok {
		return e, fmt.Errorf("read entry %d of %s: checksum mismatch", slot, f.mf.Path())
	}
	return e, nil
}

// at returns the entry in slot (-1: the last one) of a held file. held is
// false when the file was already removed.
func (f *cqFile) at(slot int) (e CQEntry, ok, held bool, err error) {
	defer cqRecoverFault(debug.SetPanicOnFault(true), &err)
	if !f.mf.Hold() {
		return e, false, false, nil
	}
	defer f.mf.Release()
	n := f.count()
	if slot < 0 {
		slot = n - 1
	}
	if slot < 0 || slot >= n {
		return e, false, true, nil
	}
	b, berr := f.mf.Bytes(int64(slot)*CQEntrySize, CQEntrySize)
	if berr != nil {
		return e, false, true, nil // truncated meanwhile
	}
	e, ok = cqDecode(b)
	return e, ok, true, nil
}

// Find returns the first entry whose NextOffset is above offset: the batch
// holding offset, or the next batch when offset falls in a gap between
// batches or below the first entry. ok is false when there is none.
func (q *ConsumeQueue) Find(offset int64) (CQEntry, bool) {
	h := q.search(cqByOffset, offset)
	return h.e, h.found && h.valid
}

// FindTimestamp returns the first entry whose MaxTimestampSoFar is at or
// above ts: the first batch that may hold a record with a timestamp ≥ ts
// (ListOffsets, retention.ms). ok is false when there is none.
func (q *ConsumeQueue) FindTimestamp(ts int64) (CQEntry, bool) {
	h := q.search(cqByTime, ts)
	return h.e, h.found && h.valid
}

// Read appends to buf the entries from the one Find(offset) returns on,
// stopping after maxEntries entries or before the first entry whose
// BaseOffset is at or after endOffset (the high watermark: batches from
// there on are not visible yet). It allocates nothing when buf has room.
func (q *ConsumeQueue) Read(offset, endOffset int64, maxEntries int, buf []CQEntry) []CQEntry {
	if maxEntries <= 0 {
		return buf
	}
	h := q.search(cqByOffset, offset)
	if !h.found || !h.valid || h.e.BaseOffset >= endOffset {
		return buf
	}
	limit := len(buf) + min(maxEntries, math.MaxInt-len(buf))
	buf = append(buf, h.e)
	fi, slot := h.fi, h.slot+1
	for len(buf) < limit && fi < len(h.fs) {
		f := h.fs[fi]
		var more bool
		var err error
		buf, more, err = f.read(slot, endOffset, limit, buf)
		if err != nil {
			q.fail(fmt.Errorf("partition: read consume queue file %s: %w", f.mf.Path(), err))
			return buf
		}
		if !more {
			break
		}
		fi, slot = fi+1, 0
	}
	return buf
}

// read appends the verified entries of f from slot on to buf, stopping at
// limit entries in buf, at endOffset, or at the end of the file. more
// reports that the file was consumed to its full capacity, so that the
// queue continues in the next file.
func (f *cqFile) read(slot int, endOffset int64, limit int, buf []CQEntry) (out []CQEntry, more bool, err error) {
	out = buf
	defer cqRecoverFault(debug.SetPanicOnFault(true), &err)
	if !f.mf.Hold() {
		return out, false, nil // removed meanwhile: the queue changed under this read
	}
	defer f.mf.Release()
	n := f.count()
	if slot >= n {
		return out, n == f.slots, nil
	}
	data, berr := f.mf.Bytes(0, int64(n)*CQEntrySize)
	if berr != nil {
		return out, false, nil // truncated meanwhile
	}
	for ; slot < n; slot++ {
		if len(out) >= limit {
			return out, false, nil
		}
		out = append(out, CQEntry{})
		if e := &out[len(out)-1]; !cqDecodeInto(data[slot*CQEntrySize:], e) || e.BaseOffset >= endOffset {
			return out[:len(out)-1], false, nil
		}
	}
	return out, n == f.slots, nil
}

// cqHit is the result of a search.
type cqHit struct {
	fs       []*cqFile // the snapshot searched
	fi, slot int       // where the entry is in fs
	e        CQEntry
	found    bool // some entry matched
	valid    bool // e passed its checksum (false only when racing a truncation)
}

// search finds the first entry matching k and v, starting over on a fresh
// list when a file it needed was removed meanwhile.
func (q *ConsumeQueue) search(k cqKey, v int64) cqHit {
	for range cqReadRetries {
		fs := *q.files.Load()
		h, stale, err := cqLocate(fs, k, v)
		if err != nil {
			q.fail(fmt.Errorf("partition: search consume queue %s: %w", q.dir, err))
			return cqHit{}
		}
		if !stale {
			return h
		}
	}
	return cqHit{}
}

// cqLocate searches the snapshot fs. Because every predicate is monotone
// along the queue, the files whose first entry matches form a suffix; the
// answer is in the file just before that suffix, or else it is the first
// entry of the suffix. The file level uses the cached first entries, so
// only one file's mapping is touched.
func cqLocate(fs []*cqFile, k cqKey, v int64) (h cqHit, stale bool, err error) {
	h.fs = fs
	lo, hi := 0, len(fs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k.matchEntry(&fs[m].first, v) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo > 0 {
		f := fs[lo-1]
		slot, e, ok, held, err := f.find(k, v)
		if err != nil {
			return h, false, fmt.Errorf("%s: %w", f.mf.Path(), err)
		}
		if !held {
			return h, true, nil
		}
		if slot >= 0 {
			h.fi, h.slot, h.e, h.found, h.valid = lo-1, slot, e, true, ok
			return h, false, nil
		}
	}
	if lo < len(fs) {
		h.fi, h.slot, h.e, h.found, h.valid = lo, 0, fs[lo].first, true, true
	}
	return h, false, nil
}

// find returns the first slot of f whose entry matches, and that entry
// verified (ok), or slot -1 when none does. The first entry is known not
// to match. held is false when the file was already removed.
func (f *cqFile) find(k cqKey, v int64) (slot int, e CQEntry, ok, held bool, err error) {
	slot = -1
	defer cqRecoverFault(debug.SetPanicOnFault(true), &err)
	if !f.mf.Hold() {
		return slot, e, false, false, nil
	}
	defer f.mf.Release()
	n := f.count()
	data, berr := f.mf.Bytes(0, int64(n)*CQEntrySize)
	if berr != nil {
		return slot, e, false, false, nil // truncated meanwhile: start over
	}
	lo, hi := 1, n
	// Probe the warm section first: if its first entry does not match yet,
	// the answer lies inside it, and the search stays within its pages.
	if w := n - cqWarmEntries; w > lo {
		if k.match(data[w*CQEntrySize:], v) {
			hi = w
		} else {
			lo = w + 1
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k.match(data[m*CQEntrySize:], v) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo >= n {
		return -1, e, false, true, nil
	}
	e, ok = cqDecode(data[lo*CQEntrySize:])
	return lo, e, ok, true, nil
}

// TruncateFromOffset removes every entry whose BaseOffset is at or after
// offset. The removed entries are zeroed durably before the call returns,
// so they cannot come back after a crash.
func (q *ConsumeQueue) TruncateFromOffset(offset int64) error {
	return q.truncate(cqByBase, offset, "offset")
}

// TruncateFromPos removes every entry whose End is after commit-log
// position pos: after the commit log's recovery cut its tail at pos, no
// entry may point past it. Entries' positions grow with their offsets (the
// partition lock spans the commit-log append and the queue append), so the
// removed entries are a suffix. Durable like TruncateFromOffset.
func (q *ConsumeQueue) TruncateFromPos(pos int64) error {
	return q.truncate(cqByEnd, pos, "position")
}

func (q *ConsumeQueue) truncate(k cqKey, v int64, what string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return fmt.Errorf("partition: truncate consume queue %s from %s %d: %w", q.dir, what, v, ErrConsumeQueueClosed)
	}
	if err := q.failure(); err != nil {
		return err
	}
	fs := *q.files.Load()
	h, _, err := cqLocate(fs, k, v)
	if err != nil {
		return q.fail(fmt.Errorf("partition: truncate consume queue %s from %s %d: %w", q.dir, what, v, err))
	}
	if !h.found {
		return nil
	}
	if sticky, err := q.cutLocked(fs, h.fi, h.slot); err != nil {
		err = fmt.Errorf("partition: truncate consume queue %s from %s %d: %w", q.dir, what, v, err)
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
func (q *ConsumeQueue) cutLocked(fs []*cqFile, fi, slot int) (sticky bool, err error) {
	// The new last entry, read before anything changes.
	var last CQEntry
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
			cut.mf.SetPosition(int64(slot) * CQEntrySize)
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

	if err := cut.mf.ZeroFrom(int64(slot) * CQEntrySize); err != nil {
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
func (q *ConsumeQueue) DeleteBefore(offset int64) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return 0, fmt.Errorf("partition: delete consume queue %s before offset %d: %w", q.dir, offset, ErrConsumeQueueClosed)
	}
	fs := *q.files.Load()
	if len(fs) < 2 {
		return 0, nil
	}
	h, _, err := cqLocate(fs, cqByOffset, offset)
	if err != nil {
		return 0, q.fail(fmt.Errorf("partition: delete consume queue %s before offset %d: %w", q.dir, offset, err))
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
			return i, fmt.Errorf("partition: delete consume queue file %s before offset %d: %w", f.mf.Path(), offset, err)
		}
	}
	if err := log.SyncDir(q.dir); err != nil {
		return n, err
	}
	return n, nil
}

// Flush makes every entry durable: an msync of the dirty range of each
// file, and after an open, once, an fsync of every file (see
// loadedUnsynced). A failure is sticky.
func (q *ConsumeQueue) Flush() error {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	if err := q.failure(); err != nil {
		return err
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
			return q.fail(fmt.Errorf("partition: flush consume queue file %s: %w", f.mf.Path(), err))
		}
	}
	if syncAll {
		q.loadedUnsynced.Store(false)
	}
	return nil
}

// Close flushes the queue and releases its files (each is unmapped once
// the last reader lets go of it). Later changes fail with
// ErrConsumeQueueClosed; readers find an empty queue.
func (q *ConsumeQueue) Close() error {
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
func (q *ConsumeQueue) Destroy() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.closed = true
	q.releaseLocked()
	if err := os.RemoveAll(q.dir); err != nil {
		return fmt.Errorf("partition: remove consume queue %s: %w", q.dir, err)
	}
	// The parent may be gone already (the topic's directory removed after
	// an earlier Destroy); then there is no name left to make durable.
	if err := log.SyncDir(filepath.Dir(q.dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (q *ConsumeQueue) releaseLocked() {
	_ = q.dropSpareLocked() // empty: the next open would remove it anyway
	fs := *q.files.Load()
	q.files.Store(&[]*cqFile{})
	for _, f := range fs {
		f.mf.Close()
	}
}

// failure returns the sticky error, if any.
func (q *ConsumeQueue) failure() error {
	if p := q.failed.Load(); p != nil {
		return p.err
	}
	return nil
}

// fail records err as the sticky error (the first one wins) and returns it.
func (q *ConsumeQueue) fail(err error) error {
	q.failed.CompareAndSwap(nil, &cqFailure{err: err})
	return err
}

// cqRecoverFault ends a function that touches a mapping: it is deferred
// with the result of debug.SetPanicOnFault(true), and turns the panic of a
// memory fault (SIGBUS on a media error) into log.ErrFault in *err instead
// of a crash. Other panics are bugs and go on.
func cqRecoverFault(old bool, err *error) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		if a, ok := r.(interface{ Addr() uintptr }); ok {
			*err = fmt.Errorf("%w at address %#x", log.ErrFault, a.Addr())
			return
		}
		panic(r)
	}
}
