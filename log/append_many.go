package log

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Pending is one entry of an AppendMany call: the caller fills Key and
// Payload, AppendMany fills Result.
type Pending struct {
	Key, Payload []byte
	// TailCRC, when TailFrom > 0, is the CRC-32C of Payload[TailFrom:],
	// which the caller vouches for: a record batch carries the CRC of its
	// bytes from the attributes on, checked when it was produced.
	// AppendMany then derives the entry's checksum from it instead of
	// reading those bytes a second time (crcCombine). A wrong TailCRC
	// stores an entry that recovery finds corrupt, never a corrupt entry
	// that passes.
	TailCRC  uint32
	TailFrom int
	// Result is where the entry was stored, once appended.
	Result AppendResult
	// crc is the entry's checksum, computed before the put lock.
	crc uint32
}

// maxIovecs is how many buffers one pwritev(2) takes (Linux's IOV_MAX).
const maxIovecs = 1024

// maxRunBytes bounds the bytes of one pwritev(2) of several entries: the
// call's fixed cost is what a run saves, and that matters for small
// entries only; in kbench, 1 KiB records to 8 partitions (requests of
// eight 1 MB batches) cost the broker about twice the CPU per GB when
// each request went in with one 8 MB call (docs/BENCHMARKS.md).
const maxRunBytes = 1 << 20

// AppendMany appends the entries in order, contiguously, under one hold
// of the put lock: the entries that fit in the current file go in with
// one pwritev(2) (up to 512 entries and, past the first, maxRunBytes a
// call) instead of one call each. This is the commit-log half of a
// produce request to many partitions (issue 18): a request of 64 small
// batches spent a third of the broker's CPU entering and leaving pwritev.
//
// It returns how many entries were appended, the first n of entries, and
// for n < len(entries) the error that stopped the next one; the entries
// after the error are not appended. The checks of Append apply to each
// entry, with the same errors.
func (l *CommitLog) AppendMany(entries []Pending) (int, error) {
	var shift crcShift
	for i := range entries {
		e := &entries[i]
		if len(e.Key) != l.cfg.KeySize {
			return 0, fmt.Errorf("%w: %d bytes, want %d", ErrBadKey, len(e.Key), l.cfg.KeySize)
		}
		if size := int64(l.headerLen) + int64(len(e.Payload)); size > l.cfg.FileSize {
			return 0, fmt.Errorf("%w: entry of %d bytes, file size %d", ErrEntryTooLarge, size, l.cfg.FileSize)
		}
		e.crc = e.checksum(&shift)
	}
	if e := l.writeErr.Load(); e != nil {
		return 0, *e
	}
	l.putMu.Lock()
	defer l.putMu.Unlock()
	done := 0
	for done < len(entries) {
		n, err := l.appendRunLocked(entries[done:])
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// minCombineTail is the shortest tail whose CRC is worth combining
// rather than recomputing: a combine for a new length costs about 0.2 µs
// (BenchmarkCRCCombineMixed), what hardware CRC-32C takes for 3–6 KiB
// (28 GB/s in BenchmarkCRC, 13–18 GB/s in the broker on a batch just
// read from the socket).
const minCombineTail = 4096

// checksum is the entry checksum of e (entryChecksum), from TailCRC when
// the caller gave it and the tail is long enough for that to pay. shift
// keeps the last tail length's operator: the batches of one request to
// many partitions tend to have one size.
func (e *Pending) checksum(shift *crcShift) uint32 {
	if e.TailFrom <= 0 || e.TailFrom > len(e.Payload) || len(e.Payload)-e.TailFrom < minCombineTail {
		return entryChecksum(e.Key, e.Payload)
	}
	head := entryChecksum(e.Key, e.Payload[:e.TailFrom])
	return shift.combine(head, e.TailCRC, int64(len(e.Payload)-e.TailFrom))
}

// appendRunLocked appends the longest run of entries at the front of
// entries that fits in the current file (at least one: a first entry
// that does not fit goes in through appendLocked, which rolls), and
// returns how many it appended.
func (l *CommitLog) appendRunLocked(entries []Pending) (int, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	m := l.queue.Last()
	if m == nil || m.IsFull() {
		next, err := l.nextFileLocked(m)
		if err != nil {
			return 0, err
		}
		m = next
	}
	w := m.wrote.Load()
	left := m.size - w
	var total int64
	n := 0
	for n < len(entries) && n < maxIovecs/2 {
		size := int64(l.headerLen) + int64(len(entries[n].Payload))
		if total+size > left || n > 0 && total+size > maxRunBytes {
			break
		}
		total += size
		n++
	}
	if n == 0 {
		e := &entries[0]
		res, err := l.appendLocked(e.crc, e.Key, e.Payload, int64(l.headerLen)+int64(len(e.Payload)))
		if err != nil {
			return 0, err
		}
		e.Result = res
		return 1, nil
	}
	run := entries[:n]
	// As in appendLocked: never write where no block is allocated, and
	// a failure here leaves the log unchanged.
	if err := m.ensureAllocated(w + total); err != nil {
		return 0, err
	}
	var err error
	if l.pwrites(m) {
		err = l.pwriteRun(m, w, run)
	} else {
		err = guardFault(func() {
			dst := m.target()[w:]
			for i := range run {
				e := &run[i]
				size := l.headerLen + len(e.Payload)
				putEntry(dst[:size], e.crc, e.Key, e.Payload)
				dst = dst[size:]
			}
		})
	}
	if err != nil {
		return 0, l.stick("append", err)
	}
	pos := m.from + w
	for i := range run {
		size := int32(l.headerLen + len(run[i].Payload))
		run[i].Result = AppendResult{Pos: pos, Size: size}
		pos += int64(size)
	}
	m.advanceWrote(total)
	l.alloc.needGrow(m.from + w + total)
	return n, nil
}

// pwriteRun writes the entries of run, back to back from offset w of m,
// with one pwritev(2): each entry's header from the log's run scratch
// buffer, its payload from the caller's bytes. The caller holds putMu.
func (l *CommitLog) pwriteRun(m *MappedFile, w int64, run []Pending) error {
	if need := len(run) * l.headerLen; cap(l.runHeaders) < need {
		l.runHeaders = make([]byte, need, max(need, 64*l.headerLen))
	}
	if cap(l.runIovecs) < 2*len(run) {
		l.runIovecs = make([]unix.Iovec, 0, max(2*len(run), 128))
	}
	hdrs := l.runHeaders[:len(run)*l.headerLen]
	iov := l.runIovecs[:0]
	for i := range run {
		e := &run[i]
		h := hdrs[i*l.headerLen : (i+1)*l.headerLen]
		putHeader(h, int64(l.headerLen+len(e.Payload)), e.crc, e.Key)
		iov = appendIovec(iov, h)
		iov = appendIovec(iov, e.Payload)
	}
	err := pwritevFull(m, w, iov)
	// The kept buffers must not hold the callers' payloads alive.
	clear(iov[:cap(iov)])
	return err
}

func appendIovec(iov []unix.Iovec, p []byte) []unix.Iovec {
	if len(p) == 0 {
		return iov
	}
	v := unix.Iovec{Base: &p[0]}
	v.SetLen(len(p))
	return append(iov, v)
}

// pwritevFull writes the buffers of iov at off, retrying short writes
// and EINTR; it consumes iov (a short write advances the first buffers).
func pwritevFull(m *MappedFile, off int64, iov []unix.Iovec) error {
	fd := uintptr(m.Fd())
	for len(iov) > 0 {
		done, _, errno := unix.Syscall6(unix.SYS_PWRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)), uintptr(off), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return &WriteError{Op: "append", Err: fmt.Errorf("pwritev %s at %d: %w", m.path, off, errno)}
		}
		if done == 0 {
			return &WriteError{Op: "append", Err: fmt.Errorf("pwritev %s at %d: wrote nothing", m.path, off)}
		}
		off += int64(done)
		for len(iov) > 0 && done >= uintptr(iov[0].Len) {
			done -= uintptr(iov[0].Len)
			iov = iov[1:]
		}
		if done > 0 {
			iov[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(iov[0].Base), done))
			iov[0].Len -= uint64(done)
		}
	}
	return nil
}
