package sendfile

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"
)

// queueResponse queues a random mix of byte slices and ranges of f on w,
// like a fetch response (framing, then batches, then framing...), and
// returns the bytes the peer should receive.
func queueResponse(r *rand.Rand, w *Writer, f *os.File, data []byte, pieces int) []byte {
	var want []byte
	for range pieces {
		switch r.IntN(3) {
		case 0: // a header, sometimes empty
			b := make([]byte, r.IntN(64))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			w.Bytes(b)
			want = append(want, b...)
		case 1: // a batch
			off := r.Int64N(int64(len(data)))
			n := r.Int64N(min(int64(len(data))-off, 64<<10) + 1)
			w.File(f, off, n)
			want = append(want, data[off:off+n]...)
		case 2: // a long run of batches, across a 4 MiB chunk
			off := r.Int64N(int64(len(data)) - 5<<20)
			n := 4<<20 + r.Int64N(1<<20)
			w.File(f, off, n)
			want = append(want, data[off:off+n]...)
		}
	}
	return want
}

// TestWriterInterleaved sends several responses of interleaved bytes and
// file ranges through one Writer, on every kind of connection: the peer gets
// exactly their concatenation, in order, and the file position stays put.
func TestWriterInterleaved(t *testing.T) {
	r := testRand(t)
	f, data := tempFile(t, r, 6<<20)
	for _, k := range connKinds {
		t.Run(k.name, func(t *testing.T) {
			send, recv := k.pair(t)
			w := NewWriter(send)
			for round := range 5 {
				want := queueResponse(r, w, f, data, 1+r.IntN(12))
				got := receive(recv, len(want))
				n, err := w.Flush()
				if err != nil || n != int64(len(want)) {
					t.Fatalf("round %d: Flush = %d, %v; want %d, nil", round, n, err, len(want))
				}
				res := <-got
				if res.err != nil {
					t.Fatal(res.err)
				}
				wantBytes(t, res.b, want)
			}
			wantPosition(t, f, 0)
			if n, err := w.Flush(); n != 0 || err != nil {
				t.Fatalf("empty Flush = %d, %v; want 0, nil", n, err)
			}
		})
	}
}

// TestWriterOrder checks the exact wire order of a small response whose
// pieces are easy to tell apart.
func TestWriterOrder(t *testing.T) {
	path := t.TempDir() + "/f"
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	send, recv := tcpPair(t)
	w := NewWriter(send)
	w.Bytes([]byte("<a>"))
	w.Bytes([]byte("<b>"))
	w.File(f, 2, 3)
	w.File(f, 0, 0)
	w.Bytes(nil)
	w.File(f, 7, 3)
	w.Bytes([]byte("<c>"))
	const want = "<a><b>234789<c>"
	got := receive(recv, len(want))
	if n, err := w.Flush(); err != nil || n != int64(len(want)) {
		t.Fatalf("Flush = %d, %v; want %d, nil", n, err, len(want))
	}
	if res := <-got; string(res.b) != want {
		t.Fatalf("got %q, want %q", res.b, want)
	}
}

// TestWriterErrors: a failing piece stops the response, Flush reports it and
// the bytes before it, and the queue is empty afterwards.
func TestWriterErrors(t *testing.T) {
	r := testRand(t)
	f, data := tempFile(t, r, 1000)
	t.Run("past EOF", func(t *testing.T) {
		send, recv := tcpPair(t)
		w := NewWriter(send)
		w.Bytes([]byte("head"))
		w.File(f, 990, 20)
		w.Bytes([]byte("never sent"))
		got := receive(recv, 14)
		n, err := w.Flush()
		if !errors.Is(err, io.ErrUnexpectedEOF) || n != 14 {
			t.Fatalf("Flush = %d, %v; want 14, %v", n, err, io.ErrUnexpectedEOF)
		}
		res := <-got
		wantBytes(t, res.b, append([]byte("head"), data[990:]...))
		if n, err := w.Flush(); n != 0 || err != nil {
			t.Fatalf("Flush after error = %d, %v; want 0, nil", n, err)
		}
	})
	t.Run("invalid range", func(t *testing.T) {
		send, _ := tcpPair(t)
		w := NewWriter(send)
		w.File(f, -1, 10)
		if _, err := w.Flush(); !errors.Is(err, errInvalidRange) {
			t.Fatalf("Flush: got %v, want %v", err, errInvalidRange)
		}
	})
	t.Run("peer closes", func(t *testing.T) {
		big, _ := tempFile(t, r, 8<<20)
		for _, k := range connKinds {
			t.Run(k.name, func(t *testing.T) {
				send, recv := k.pair(t)
				if s, ok := recv.(*net.TCPConn); ok {
					if err := s.SetReadBuffer(16 << 10); err != nil {
						t.Fatal(err)
					}
				}
				go func() {
					io.ReadFull(recv, make([]byte, 10<<10))
					recv.Close()
				}()
				w := NewWriter(send)
				for range 4 {
					w.Bytes(make([]byte, 100))
					w.File(big, 0, 8<<20)
				}
				var err error
				within(t, 20*time.Second, func() { _, err = w.Flush() })
				if err == nil {
					t.Fatal("Flush to a closed peer: got nil error")
				}
			})
		}
	})
}
