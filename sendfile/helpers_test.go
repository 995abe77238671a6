package sendfile

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind: a send
// that hangs on a closed peer would show up here.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }

// testRand returns a generator seeded from the clock; the seed is logged so
// a failure can be replayed.
func testRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// tempFile writes size random bytes to a new file and returns it, open for
// reading and closed at cleanup, with its contents.
func tempFile(t testing.TB, rng *rand.Rand, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size+7)
	for i := 0; i < size; i += 8 {
		binary.LittleEndian.PutUint64(data[i:], rng.Uint64())
	}
	data = data[:size]
	path := filepath.Join(t.TempDir(), "00000000000000000000")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// tcpPair returns both ends of a loopback TCP connection, closed at cleanup.
func tcpPair(t testing.TB) (send, recv *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.err != nil {
		c.Close()
		t.Fatal(a.err)
	}
	t.Cleanup(func() {
		c.Close()
		a.c.Close()
	})
	return c.(*net.TCPConn), a.c.(*net.TCPConn)
}

// smallBuffers shrinks the kernel buffers of a fresh TCP pair, so that a
// sender fills them quickly and has to wait for the reader.
func smallBuffers(t testing.TB, send, recv *net.TCPConn) {
	t.Helper()
	if err := send.SetWriteBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	if err := recv.SetReadBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
}

// hiddenConn hides the TCPConn under it: not a syscall.Conn, so Copy must
// take the fallback path (as it would for a TLS connection).
type hiddenConn struct{ net.Conn }

// rawConn is a wrapper that still exposes its socket through syscall.Conn,
// the generic (non-*net.TCPConn) sendfile path.
type rawConn struct {
	net.Conn
	sc syscall.Conn
}

func (c rawConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// connKind makes one kind of connection for table tests.
type connKind struct {
	name     string
	sendfile bool // whether Copy can use sendfile(2) on Linux
	pair     func(t testing.TB) (send, recv net.Conn)
}

var connKinds = []connKind{
	{"tcp", true, func(t testing.TB) (net.Conn, net.Conn) {
		s, r := tcpPair(t)
		return s, r
	}},
	{"syscallconn", true, func(t testing.TB) (net.Conn, net.Conn) {
		s, r := tcpPair(t)
		return rawConn{s, s}, r
	}},
	{"hidden", false, func(t testing.TB) (net.Conn, net.Conn) {
		s, r := tcpPair(t)
		return hiddenConn{s}, r
	}},
	{"pipe", false, func(t testing.TB) (net.Conn, net.Conn) {
		s, r := net.Pipe()
		t.Cleanup(func() {
			s.Close()
			r.Close()
		})
		return s, r
	}},
}

// received is what a receive goroutine read.
type received struct {
	b   []byte
	err error
}

// receive reads exactly n bytes from c in a goroutine. The channel is
// buffered, so the goroutine ends as soon as the read does (or c closes).
func receive(c net.Conn, n int) <-chan received {
	ch := make(chan received, 1)
	go func() {
		b := make([]byte, n)
		m, err := io.ReadFull(c, b)
		ch <- received{b[:m], err}
	}()
	return ch
}

// drain reads and discards everything from c until it fails (is closed) and
// returns a channel closed when it has stopped.
func drain(c net.Conn) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, c)
	}()
	return done
}

// wantBytes fails unless got equals want, naming the first difference.
func wantBytes(t testing.TB, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Fatalf("got %d bytes, want %d; first difference at byte %d", len(got), len(want), i)
}

// wantPosition fails unless f's file position is pos.
func wantPosition(t testing.TB, f *os.File, pos int64) {
	t.Helper()
	got, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if got != pos {
		t.Fatalf("file position: got %d, want %d", got, pos)
	}
}

// within runs fn in a goroutine and fails the test if it does not return
// within d: a hang becomes a failure, not a stuck test binary.
func within(t testing.TB, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %v", d)
	}
}
