package sendfile

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxChunk caps one sendfile(2) call. Linux itself caps a call at
// 0x7ffff000 bytes; a much smaller chunk returns to Go between chunks, where
// the goroutine can be preempted, instead of spending seconds in the kernel
// on one huge range. 4 MiB is still far above what one call usually sends
// before the socket buffer fills.
const maxChunk = 4 << 20

// sendFile sends s's range of f to conn's socket with sendfile(2), advancing
// s.off past what was sent. It returns true when the caller must send the
// rest (s.off to s.end) another way: conn is not over a socket descriptor,
// or the kernel refuses sendfile for this pair. Otherwise s.err says why the
// send stopped early, or is nil.
func sendFile(conn net.Conn, f *os.File, s *span) (fallback bool) {
	switch c := conn.(type) {
	case *net.TCPConn:
		// The common case, written with concrete types: the compiler inlines
		// both SyscallConn methods and devirtualises the RawConn calls, so
		// the RawConns, the closures and s all stay on the stack and a send
		// allocates nothing.
		sock, err := c.SyscallConn()
		if err != nil {
			return true
		}
		file, err := f.SyscallConn()
		if err != nil {
			s.err = err
			return false
		}
		var werr error
		cerr := file.Control(func(ffd uintptr) {
			werr = sock.Write(func(sfd uintptr) bool { return s.send(int(sfd), int(ffd)) })
		})
		return s.finish(f, cerr, werr)
	case syscall.Conn:
		// Any other socket (a wrapper exposing its TCPConn's SyscallConn, a
		// Unix socket). The calls go through interfaces, so the closures and
		// what they capture escape (a few small allocations per call);
		// working on the copy h keeps s, and so Copy's frame, off the heap.
		sock, err := c.SyscallConn()
		if err != nil {
			return true
		}
		file, err := f.SyscallConn()
		if err != nil {
			s.err = err
			return false
		}
		h := new(span)
		*h = *s
		var werr error
		cerr := file.Control(func(ffd uintptr) {
			werr = sock.Write(func(sfd uintptr) bool { return h.send(int(sfd), int(ffd)) })
		})
		*s = *h
		return s.finish(f, cerr, werr)
	}
	return true
}

// send is the body of the socket's RawConn.Write: it calls sendfile(2) until
// the range is sent or fails (true), or the socket buffer is full (false:
// the netpoller waits until the socket is writable and calls send again).
// Partial sends simply loop: the next call either sends more or says EAGAIN.
func (s *span) send(sfd, ffd int) bool {
	for s.off < s.end {
		// Pass a copy of the offset and advance by the return value, so that
		// s.off only ever counts bytes the kernel reported as sent.
		pos := s.off
		m, err := unix.Sendfile(sfd, ffd, &pos, int(min(s.end-s.off, maxChunk)))
		s.calls++
		switch {
		case err == nil && m > 0:
			s.off += int64(m)
		case err == nil:
			s.err = io.ErrUnexpectedEOF // the file ends before s.end
			return true
		case errors.Is(err, unix.EAGAIN):
			s.waits++
			return false
		case errors.Is(err, unix.EINTR):
		default:
			s.err = err
			return true
		}
	}
	return true
}

// finish folds the errors of one sendFile into s and reports whether the
// caller must fall back (see sendFile). cerr is the error of f's RawConn,
// werr the socket's (conn closed, write deadline).
func (s *span) finish(f *os.File, cerr, werr error) (fallback bool) {
	switch {
	case cerr != nil:
		// Control fails only when it cannot take a reference to the
		// descriptor, that is when f is closed; say so the way File.ReadAt
		// would (internal/poll's own error is not os.ErrClosed).
		s.err = &os.PathError{Op: "sendfile", Path: f.Name(), Err: os.ErrClosed}
	case werr != nil:
		s.err = werr
	case unsupported(s.err):
		// EINVAL, ENOSYS, EOPNOTSUPP: this descriptor pair cannot do
		// sendfile (internal/poll treats them the same way). The offset is
		// explicit, so the fallback continues exactly at s.off.
		s.err = nil
		return true
	case s.err != nil && !errors.Is(s.err, io.ErrUnexpectedEOF):
		s.err = os.NewSyscallError("sendfile", s.err)
	}
	return false
}

// unsupported reports whether sendfile(2) failed because it cannot work for
// this descriptor pair, as opposed to a failed socket or file.
func unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}

// setCork sets (on) or clears TCP_CORK on conn's socket and reports whether
// it succeeded. It fails, harmlessly, on anything that is not a TCP socket.
func setCork(conn net.Conn, on bool) bool {
	v := 0
	if on {
		v = 1
	}
	// The two cases differ only in types; each needs its own closure, since
	// one that escapes through the interface call would be allocated for
	// the *net.TCPConn case too.
	var err, serr error
	switch c := conn.(type) {
	case *net.TCPConn:
		sock, cerr := c.SyscallConn()
		if cerr != nil {
			return false
		}
		err = sock.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v) })
	case syscall.Conn:
		sock, cerr := c.SyscallConn()
		if cerr != nil {
			return false
		}
		h := new(error)
		err = sock.Control(func(fd uintptr) { *h = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v) })
		serr = *h
	default:
		return false
	}
	return err == nil && serr == nil
}
