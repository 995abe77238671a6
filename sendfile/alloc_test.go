//go:build linux && !race

// The race detector makes sync.Pool drop objects on purpose and adds its own
// allocations, so allocation counts are only meaningful without it.

package sendfile

import (
	"testing"
)

// TestSendfileDoesNotAllocate guards the zero-allocation sendfile path over
// a *net.TCPConn, for Copy and for a whole Writer response. AllocsPerRun
// counts every goroutine, including the draining reader.
func TestSendfileDoesNotAllocate(t *testing.T) {
	f, _ := tempFile(t, testRand(t), 1<<20)
	send, recv := tcpPair(t)
	done := drain(recv)
	defer func() {
		send.Close()
		<-done
	}()
	copyOnce := func() {
		if _, err := Copy(send, f, 1000, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	copyOnce()
	if n := testing.AllocsPerRun(100, copyOnce); n != 0 {
		t.Errorf("Copy: got %v allocs per run, want 0", n)
	}

	w := NewWriter(send)
	header := make([]byte, 64)
	response := func() {
		w.Bytes(header)
		w.File(f, 0, 16<<10)
		w.Bytes(header[:8])
		w.File(f, 100<<10, 64<<10)
		if _, err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	response() // grows the Writer's slices and the socket's iovec cache
	if n := testing.AllocsPerRun(100, response); n != 0 {
		t.Errorf("Writer response: got %v allocs per run, want 0", n)
	}
}
