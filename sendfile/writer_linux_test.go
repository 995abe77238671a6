package sendfile

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// cork reads TCP_CORK on c's socket.
func cork(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	sc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := sc.Control(func(fd uintptr) {
		v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

// TestWriterCork: the cork works on this socket, and Flush leaves it
// uncorked, after success and after an error alike (a socket left corked
// would delay the next response by up to 200 ms).
func TestWriterCork(t *testing.T) {
	f, _ := tempFile(t, testRand(t), 1000)
	send, recv := tcpPair(t)
	if !setCork(send, true) || cork(t, send) == 0 {
		t.Fatal("setCork(true) did not cork the socket")
	}
	if !setCork(send, false) || cork(t, send) != 0 {
		t.Fatal("setCork(false) did not uncork the socket")
	}
	if setCork(hiddenConn{send}, true) {
		t.Fatal("setCork on a connection without a socket: got true")
	}
	drain(recv)
	w := NewWriter(send)
	w.Bytes([]byte("x"))
	w.File(f, 0, 1000)
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if v := cork(t, send); v != 0 {
		t.Fatalf("TCP_CORK after Flush: got %d, want 0", v)
	}
	w.Bytes([]byte("x"))
	w.File(f, 500, 1000) // past EOF
	if _, err := w.Flush(); err == nil {
		t.Fatal("Flush past EOF: got nil error")
	}
	if v := cork(t, send); v != 0 {
		t.Fatalf("TCP_CORK after a failed Flush: got %d, want 0", v)
	}
}
