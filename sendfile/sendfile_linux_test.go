package sendfile

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSendFilePath checks which connections take the sendfile path: sockets
// do, whatever hides its descriptor does not (and sends nothing).
func TestSendFilePath(t *testing.T) {
	f, data := tempFile(t, testRand(t), 100<<10)
	for _, k := range connKinds {
		t.Run(k.name, func(t *testing.T) {
			send, recv := k.pair(t)
			want := 0
			if k.sendfile {
				want = len(data)
			}
			got := receive(recv, want)
			s := span{off: 0, end: int64(len(data))}
			fallback := sendFile(send, f, &s)
			if fallback == k.sendfile {
				t.Fatalf("sendFile fallback: got %v, want %v", fallback, !k.sendfile)
			}
			if s.err != nil {
				t.Fatal(s.err)
			}
			if !k.sendfile {
				if s.off != 0 || s.calls != 0 {
					t.Fatalf("fallback after sending: off %d, %d calls", s.off, s.calls)
				}
				send.Close() // lets the receiver see EOF
				if res := <-got; len(res.b) != 0 {
					t.Fatalf("peer got %d bytes, want none", len(res.b))
				}
				return
			}
			res := <-got
			if res.err != nil {
				t.Fatal(res.err)
			}
			wantBytes(t, res.b, data)
		})
	}
}

// TestSendFileWaitsForSlowReader is TestCopySlowReader seen from inside: the
// socket filled (EAGAIN) and the loop handed back to the netpoller to wait
// for writability rather than spinning on sendfile.
func TestSendFileWaitsForSlowReader(t *testing.T) {
	f, data := tempFile(t, testRand(t), 1<<20)
	send, recv := tcpPair(t)
	smallBuffers(t, send, recv)
	got := make(chan received, 1)
	go func() {
		b := make([]byte, 0, len(data))
		buf := make([]byte, 4<<10)
		for len(b) < len(data) {
			n, err := recv.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				got <- received{b, err}
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
		got <- received{b, nil}
	}()
	s := span{off: 0, end: int64(len(data))}
	if sendFile(send, f, &s) || s.err != nil {
		t.Fatalf("sendFile: fallback or error %v", s.err)
	}
	res := <-got
	if res.err != nil {
		t.Fatal(res.err)
	}
	wantBytes(t, res.b, data)
	t.Logf("%d sendfile calls, %d waits", s.calls, s.waits)
	if s.waits == 0 || s.calls <= 1 {
		t.Fatalf("got %d calls and %d waits; want partial sends and waits", s.calls, s.waits)
	}
}

// TestCopyFallsBackWhenKernelRefuses sends from a file that sendfile(2)
// refuses with EINVAL (a /proc file without splice support) but pread can
// read: Copy must fall back and still deliver the bytes.
func TestCopyFallsBackWhenKernelRefuses(t *testing.T) {
	const path = "/proc/self/cmdline"
	want, err := os.ReadFile(path)
	if err != nil {
		t.Skip(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	send, recv := tcpPair(t)
	got := receive(recv, len(want))
	s := span{off: 0, end: int64(len(want))}
	if !sendFile(send, f, &s) {
		t.Skipf("this kernel can sendfile from %s (err %v)", path, s.err)
	}
	n, err := Copy(send, f, 0, int64(len(want)))
	if err != nil || n != int64(len(want)) {
		t.Fatalf("Copy = %d, %v; want %d, nil", n, err, len(want))
	}
	res := <-got
	if res.err != nil {
		t.Fatal(res.err)
	}
	wantBytes(t, res.b, want)
}

// TestSpanFinish covers the error mapping after the sendfile loop.
func TestSpanFinish(t *testing.T) {
	f, _ := tempFile(t, testRand(t), 10)
	sockErr := &net.OpError{Op: "raw-write", Err: net.ErrClosed}
	for _, tc := range []struct {
		name       string
		loopErr    error
		cerr, werr error
		fallback   bool
		want       error // errors.Is target; nil: no error
	}{
		{"done", nil, nil, nil, false, nil},
		{"einval", unix.EINVAL, nil, nil, true, nil},
		{"enosys", unix.ENOSYS, nil, nil, true, nil},
		{"eopnotsupp", unix.EOPNOTSUPP, nil, nil, true, nil},
		{"epipe", unix.EPIPE, nil, nil, false, syscall.EPIPE},
		{"econnreset", unix.ECONNRESET, nil, nil, false, syscall.ECONNRESET},
		{"eof", io.ErrUnexpectedEOF, nil, nil, false, io.ErrUnexpectedEOF},
		{"socket closed", nil, nil, sockErr, false, net.ErrClosed},
		{"file closed", nil, errors.New("use of closed file"), nil, false, os.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := span{err: tc.loopErr}
			fallback := s.finish(f, tc.cerr, tc.werr)
			if fallback != tc.fallback {
				t.Errorf("fallback: got %v, want %v", fallback, tc.fallback)
			}
			switch {
			case tc.want == nil && s.err != nil:
				t.Errorf("err: got %v, want nil", s.err)
			case tc.want != nil && !errors.Is(s.err, tc.want):
				t.Errorf("err: got %v, want %v", s.err, tc.want)
			}
		})
	}
}
