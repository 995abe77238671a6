package log

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pwriteEntry writes a whole entry at file offset w of m with one
// pwritev(2): header and key from the log's scratch buffer, payload from
// the caller's bytes. The caller holds putMu (the scratch buffer is the
// log's).
func (l *CommitLog) pwriteEntry(m *MappedFile, w int64, crc uint32, key, payload []byte, size int64) error {
	n := putHeader(l.scratch[:], size, crc, key)
	return pwriteFull(m, w, l.scratch[:n], payload)
}

// pwrites reports whether appends to m go in with pwritev: in AppendPwrite
// mode, unless m has a transient-pool buffer (which appends fill instead).
func (l *CommitLog) pwrites(m *MappedFile) bool {
	return l.cfg.Append == AppendPwrite && m.writeBuf == nil
}

// pwriteFull writes a then b at off, retrying short writes and EINTR.
func pwriteFull(m *MappedFile, off int64, a, b []byte) error {
	fd := uintptr(m.Fd())
	for len(a)+len(b) > 0 {
		var iov [2]unix.Iovec
		n := 0
		for _, p := range [][]byte{a, b} {
			if len(p) > 0 {
				iov[n].Base = &p[0]
				iov[n].SetLen(len(p))
				n++
			}
		}
		done, _, errno := unix.Syscall6(unix.SYS_PWRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n), uintptr(off), 0, 0)
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
		k := min(int(done), len(a))
		a, done = a[k:], done-uintptr(k)
		b = b[done:]
	}
	return nil
}
