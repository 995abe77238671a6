package sendfile

import (
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// fallbackBufSize is the read size of the pread+write fallback: large enough
// that the syscalls are amortised, small enough to pool one per concurrent
// fallback send.
const fallbackBufSize = 64 << 10

// errInvalidRange reports a negative offset or length, or a range whose end
// does not fit in an int64.
var errInvalidRange = errors.New("sendfile: invalid file range")

// bufPool holds *[]byte of fallbackBufSize for the fallback path (pointers,
// so that Put does not allocate).
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, fallbackBufSize)
	return &b
}}

// Copy sends the n bytes of f starting at offset off to conn and returns how
// many bytes it wrote. It never moves f's file position, so any number of
// goroutines may Copy from one shared *os.File at once.
//
// On Linux, when conn is a *net.TCPConn or another syscall.Conn over a
// socket, the bytes go out with sendfile(2) at an explicit offset, through
// the netpoller (conn's write deadline applies). Otherwise (TLS, net.Pipe,
// non-Linux), or when the kernel refuses sendfile for this descriptor pair,
// Copy falls back to pread into a pooled buffer and conn.Write.
//
// If f ends before off+n, Copy sends what there is and returns
// io.ErrUnexpectedEOF. After any error a part of the range may have been
// written, so the connection's framing is lost and it must be closed.
// Nothing else may write to conn while Copy runs.
func Copy(conn net.Conn, f *os.File, off, n int64) (int64, error) {
	if off < 0 || n < 0 || n > math.MaxInt64-off {
		return 0, errInvalidRange
	}
	if n == 0 {
		return 0, nil
	}
	s := span{off: off, end: off + n}
	if !sendFile(conn, f, &s) {
		sentBytes.Add(s.off - off)
		return s.off - off, s.err
	}
	sentBytes.Add(s.off - off)
	m, err := copyFallback(conn, f, s.off, s.end-s.off)
	fallbackBytes.Add(m)
	return s.off - off + m, err
}

// sentBytes and fallbackBytes count what Copy moved with sendfile(2) and
// through the pread fallback, process-wide: the broker reports them, and
// tests use them to prove that fetches really went zero-copy.
var sentBytes, fallbackBytes atomic.Int64

// Stats reports the bytes Copy has sent with sendfile(2) and through the
// pread+write fallback since the process started.
func Stats() (sendfile, fallback int64) { return sentBytes.Load(), fallbackBytes.Load() }

// span is one file range on its way to a socket: off is the next byte to
// send and advances as the kernel sends, end is fixed. The Linux sendfile
// loop also counts what it did, which the tests use to check that a slow
// peer really made it wait instead of spin.
type span struct {
	off, end int64
	err      error // why the send stopped before end; nil when it reached end
	calls    int   // sendfile(2) calls made
	waits    int   // times the socket was full (EAGAIN) and the netpoller waited
}

// copyFallback sends f[off:off+n) with pread and conn.Write through a pooled
// 64 KiB buffer.
func copyFallback(conn net.Conn, f *os.File, off, n int64) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var written int64
	for written < n {
		chunk := buf[:min(n-written, int64(len(buf)))]
		nr, rerr := f.ReadAt(chunk, off+written)
		if nr > 0 {
			nw, werr := conn.Write(chunk[:nr])
			written += int64(nw)
			if werr != nil {
				return written, werr
			}
			if nw != nr {
				return written, io.ErrShortWrite
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return written, io.ErrUnexpectedEOF
			}
			return written, rerr
		}
	}
	return written, nil
}
