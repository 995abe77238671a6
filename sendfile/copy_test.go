package sendfile

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// fileSize is a little over two 4 MiB sendfile chunks, so ranges can cross
// chunk boundaries and the end of the file.
const fileSize = 2*(4<<20) + 12345

// rng is one file range.
type rng struct{ off, n int64 }

// testRanges returns the edge cases that fit in a file of size bytes plus
// count random ranges within it.
func testRanges(r *rand.Rand, size int64, count int) []rng {
	const chunk = 4 << 20
	edges := []rng{
		{0, 0}, {size / 2, 0}, {size, 0}, // empty, including at EOF
		{0, 1}, {size - 1, 1}, {size / 3, 1}, // one byte
		{0, size},                 // whole file: two full chunks and a tail
		{chunk - 10, 20},          // across the first chunk boundary
		{1, 2*chunk + 5},          // across both, unaligned
		{size - 100, 100},         // up to EOF
		{chunk, chunk},            // exactly one chunk, aligned
		{size - chunk - 1, chunk}, // one chunk, ending just before EOF
	}
	var rs []rng
	for _, x := range edges {
		if x.off >= 0 && x.off+x.n <= size { // a small file has fewer edges
			rs = append(rs, x)
		}
	}
	for range count {
		off := r.Int64N(size)
		n := r.Int64N(min(size-off, 256<<10) + 1)
		if r.IntN(10) == 0 {
			n = r.Int64N(size - off + 1) // sometimes a long one
		}
		rs = append(rs, rng{off, n})
	}
	return rs
}

// copyRanges Copies every range to send in order while recv collects them,
// and checks the bytes, the counts and that f's position did not move.
func copyRanges(t *testing.T, send, recv net.Conn, f *os.File, data []byte, rs []rng) {
	t.Helper()
	var want []byte
	for _, x := range rs {
		want = append(want, data[x.off:x.off+x.n]...)
	}
	got := receive(recv, len(want))
	pos, err := f.Seek(777, io.SeekStart) // a non-zero position to keep
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range rs {
		n, err := Copy(send, f, x.off, x.n)
		if err != nil {
			t.Fatalf("Copy(%d, %d): %v", x.off, x.n, err)
		}
		if n != x.n {
			t.Fatalf("Copy(%d, %d) = %d, want %d", x.off, x.n, n, x.n)
		}
	}
	res := <-got
	if res.err != nil {
		t.Fatalf("receive: %v", res.err)
	}
	wantBytes(t, res.b, want)
	wantPosition(t, f, pos)
}

// TestCopyRanges sends many ranges, edge cases and random ones, over every
// kind of connection: sendfile over TCP and the fallback alike.
func TestCopyRanges(t *testing.T) {
	r := testRand(t)
	f, data := tempFile(t, r, fileSize)
	for _, k := range connKinds {
		t.Run(k.name, func(t *testing.T) {
			send, recv := k.pair(t)
			copyRanges(t, send, recv, f, data, testRanges(r, fileSize, 50))
		})
	}
}

// TestCopyConcurrentSharedFile Copies from one *os.File in several
// goroutines, each to its own connection: explicit offsets make this safe,
// where io.Copy would race on the shared file position.
func TestCopyConcurrentSharedFile(t *testing.T) {
	r := testRand(t)
	f, data := tempFile(t, r, 6<<20)
	pos, err := f.Seek(4242, io.SeekStart)
	if err != nil {
		t.Fatal(err)
	}
	const senders = 8
	type job struct {
		send, recv net.Conn
		rs         []rng
	}
	jobs := make([]job, senders)
	for i := range jobs {
		k := connKinds[i%2] // tcp and syscallconn: both sendfile paths
		send, recv := k.pair(t)
		jobs[i] = job{send, recv, testRanges(r, int64(len(data)), 20)}
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			var want []byte
			for _, x := range j.rs {
				want = append(want, data[x.off:x.off+x.n]...)
			}
			got := receive(j.recv, len(want))
			for _, x := range j.rs {
				if n, err := Copy(j.send, f, x.off, x.n); err != nil || n != x.n {
					t.Errorf("Copy(%d, %d) = %d, %v; want %d, nil", x.off, x.n, n, err, x.n)
					j.send.Close() // unblock the receiver
					break
				}
			}
			res := <-got
			if res.err == nil && string(res.b) != string(want) {
				t.Errorf("received bytes differ from the file's")
			}
		})
	}
	wg.Wait()
	wantPosition(t, f, pos)
}

// TestCopySlowReader sends to a peer with tiny buffers that reads a little
// at a time, so the socket is full most of the time: sendfile sends partial
// chunks and gets EAGAIN, and Copy must park and resume without losing or
// repeating a byte. (sendfile_linux_test.go checks that it really waited.)
func TestCopySlowReader(t *testing.T) {
	r := testRand(t)
	f, data := tempFile(t, r, 2<<20+333)
	send, recv := tcpPair(t)
	smallBuffers(t, send, recv)
	const off = 111
	want := data[off:]
	got := make(chan received, 1)
	go func() {
		var b []byte
		buf := make([]byte, 1000)
		for len(b) < len(want) {
			n, err := recv.Read(buf[:min(len(buf), len(want)-len(b))])
			b = append(b, buf[:n]...)
			if err != nil {
				got <- received{b, err}
				return
			}
			if len(b)%(64<<10) < n {
				time.Sleep(2 * time.Millisecond) // a slow consumer
			}
		}
		got <- received{b, nil}
	}()
	n, err := Copy(send, f, off, int64(len(want)))
	if err != nil || n != int64(len(want)) {
		t.Fatalf("Copy = %d, %v; want %d, nil", n, err, len(want))
	}
	res := <-got
	if res.err != nil {
		t.Fatal(res.err)
	}
	wantBytes(t, res.b, want)
}

// TestCopyPastEOF asks for more than the file holds: Copy sends what there
// is and returns io.ErrUnexpectedEOF, on every path.
func TestCopyPastEOF(t *testing.T) {
	r := testRand(t)
	const size = 100 << 10
	f, data := tempFile(t, r, size)
	for _, k := range connKinds {
		t.Run(k.name, func(t *testing.T) {
			for _, x := range []rng{
				{size - 10, 20},     // ten bytes short
				{0, size + 1},       // one byte short
				{size, 1},           // at EOF
				{size + 5000, 4096}, // beyond it
			} {
				send, recv := k.pair(t)
				avail := max(0, min(x.n, size-x.off))
				got := receive(recv, int(avail))
				n, err := Copy(send, f, x.off, x.n)
				if !errors.Is(err, io.ErrUnexpectedEOF) || n != avail {
					t.Errorf("Copy(%d, %d) = %d, %v; want %d, %v", x.off, x.n, n, err, avail, io.ErrUnexpectedEOF)
				}
				res := <-got
				if res.err != nil {
					t.Fatal(res.err)
				}
				wantBytes(t, res.b, data[min(x.off, size):min(x.off, size)+avail])
			}
		})
	}
}

// TestCopyInvalidRange rejects negative and overflowing ranges before
// touching the connection.
func TestCopyInvalidRange(t *testing.T) {
	f, _ := tempFile(t, testRand(t), 10)
	send, _ := tcpPair(t)
	for _, x := range []rng{{-1, 1}, {0, -1}, {1, math.MaxInt64}} {
		if n, err := Copy(send, f, x.off, x.n); n != 0 || !errors.Is(err, errInvalidRange) {
			t.Errorf("Copy(%d, %d) = %d, %v; want 0, %v", x.off, x.n, n, err, errInvalidRange)
		}
	}
}

// TestCopyPeerCloses has the peer read a little and then close: Copy must
// fail (connection reset, broken pipe, closed pipe) instead of hanging, on
// every path, and leave no goroutine behind (TestMain).
func TestCopyPeerCloses(t *testing.T) {
	r := testRand(t)
	f, _ := tempFile(t, r, 8<<20)
	for _, k := range connKinds {
		t.Run(k.name, func(t *testing.T) {
			send, recv := k.pair(t)
			if s, ok := recv.(*net.TCPConn); ok {
				// A small buffer, so that 8 MiB cannot all fit before the close.
				if err := s.SetReadBuffer(16 << 10); err != nil {
					t.Fatal(err)
				}
			}
			go func() {
				io.ReadFull(recv, make([]byte, 100<<10))
				recv.Close()
			}()
			var n int64
			var err error
			within(t, 20*time.Second, func() { n, err = Copy(send, f, 0, 8<<20) })
			if err == nil {
				t.Fatalf("Copy = %d, nil; want an error", n)
			}
			if n >= 8<<20 {
				t.Errorf("Copy wrote %d bytes, all of them, to a closed peer", n)
			}
		})
	}
}

// TestCopyWriteDeadline: the sendfile path waits in the netpoller, so the
// connection's write deadline ends a send to a peer that never reads.
func TestCopyWriteDeadline(t *testing.T) {
	f, _ := tempFile(t, testRand(t), 8<<20)
	send, recv := tcpPair(t)
	smallBuffers(t, send, recv)
	if err := send.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var n int64
	var err error
	within(t, 20*time.Second, func() { n, err = Copy(send, f, 0, 8<<20) })
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Copy = %d, %v; want %v", n, err, os.ErrDeadlineExceeded)
	}
}

// TestCopyClosedConnOrFile fails cleanly when either end is already closed.
func TestCopyClosedConnOrFile(t *testing.T) {
	r := testRand(t)
	for _, k := range connKinds {
		t.Run(k.name, func(t *testing.T) {
			f, _ := tempFile(t, r, 1000)
			send, _ := k.pair(t)
			send.Close()
			if _, err := Copy(send, f, 0, 10); err == nil {
				t.Error("Copy to a closed connection: got nil error")
			}
			send, recv := k.pair(t)
			go io.Copy(io.Discard, recv) // ends at cleanup
			f.Close()
			if _, err := Copy(send, f, 0, 10); !errors.Is(err, os.ErrClosed) {
				t.Errorf("Copy from a closed file: got %v, want %v", err, os.ErrClosed)
			}
		})
	}
}
