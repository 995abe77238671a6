package sendfile

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkInterleaved sends responses the way the broker serves a consumer
// whose batches interleave with other partitions' in the commit log: 64
// ranges of 15,556 bytes (a 16 KiB batch on the wire), 131 KiB apart, each
// behind a 12-byte header, about 1 MiB a response. It compares how those
// ranges can reach a loopback socket: the broker's way (one writev straight
// from a shared mapping, then MADV_DONTNEED of the response's pages),
// sendfile(2) per range through a Writer, and vmsplice(2) of the mapping
// into a pipe spliced to the socket (page references, no copy). cpu-s/GB is
// the process's CPU, the reader's copy included, per GB sent: the figure
// that decided against the other two (docs/BENCHMARKS.md, "How fetch
// responses reach the socket").
func BenchmarkInterleaved(b *testing.B) {
	const (
		fileSize = 64 << 20
		rangeLen = 15556
		stride   = 8 * (16<<10 + 32)
		perResp  = 64
	)
	f, _ := tempFile(b, testRand(b), fileSize)
	data, err := unix.Mmap(int(f.Fd()), 0, fileSize, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(data) })
	header := make([]byte, 12)
	// ranges are response n's: partition n%8's next 64 batches, walking
	// the file.
	offs := make([]int64, perResp)
	ranges := func(n int) []int64 {
		first := int64(n%8)*(16<<10+32) + int64(n/8)*perResp*stride
		for i := range offs {
			offs[i] = (first + int64(i)*stride) % (fileSize - stride)
		}
		return offs
	}
	var pipe [2]int // the vmsplice way's, made at its first response
	b.Cleanup(func() {
		if pipe[0] != 0 {
			unix.Close(pipe[0])
			unix.Close(pipe[1])
		}
	})
	for _, way := range []struct {
		name string
		send func(b *testing.B, send *net.TCPConn, offs []int64)
	}{
		{"writev-mapping", func(b *testing.B, send *net.TCPConn, offs []int64) {
			bufs := make(net.Buffers, 0, 2*len(offs))
			for _, off := range offs {
				bufs = append(bufs, header, data[off:off+rangeLen])
			}
			if _, err := bufs.WriteTo(send); err != nil {
				b.Fatal(err)
			}
			unmapRanges(b, data, offs, rangeLen)
		}},
		{"sendfile-per-range", func(b *testing.B, send *net.TCPConn, offs []int64) {
			w := NewWriter(send)
			for _, off := range offs {
				w.Bytes(header)
				w.File(f, off, rangeLen)
			}
			if _, err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}},
		{"vmsplice-pipe", func(b *testing.B, send *net.TCPConn, offs []int64) {
			if pipe[0] == 0 {
				if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
					b.Fatal(err)
				}
				unix.FcntlInt(uintptr(pipe[1]), unix.F_SETPIPE_SZ, 1<<20)
			}
			vmspliceResponse(b, send, pipe, data, header, offs, rangeLen)
			unmapRanges(b, data, offs, rangeLen)
		}},
	} {
		b.Run(way.name, func(b *testing.B) {
			send, recv := tcpPair(b)
			done := drain(recv)
			b.SetBytes(perResp * (rangeLen + int64(len(header))))
			var cpu0 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
			n := 0
			for b.Loop() {
				way.send(b, send, ranges(n))
				n++
			}
			var cpu1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
			cpu := float64(cpu1.Utime.Nano()+cpu1.Stime.Nano()-cpu0.Utime.Nano()-cpu0.Stime.Nano()) / 1e9
			b.ReportMetric(cpu/(float64(n)*perResp*(rangeLen+12)/1e9), "cpu-s/GB")
			send.Close()
			<-done
		})
	}
}

// vmspliceResponse sends the header and the mapped ranges through a pipe:
// the headers are written into it (copied), the ranges vmspliced (their
// pages referenced), and the pipe is spliced to the socket whenever it is
// full and at the end.
func vmspliceResponse(b *testing.B, send *net.TCPConn, p [2]int, data, header []byte, offs []int64, n int64) {
	sock, err := send.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var inPipe int
	out := func() {
		var serr error
		err := sock.Write(func(fd uintptr) bool {
			for inPipe > 0 {
				m, err := unix.Splice(p[0], nil, int(fd), nil, inPipe, unix.SPLICE_F_NONBLOCK)
				if errors.Is(err, unix.EAGAIN) {
					return false
				}
				if err != nil {
					serr = err
					return true
				}
				inPipe -= int(m)
			}
			return true
		})
		if err != nil || serr != nil {
			b.Fatal(err, serr)
		}
	}
	// put writes buf into the pipe; mapped buffers go by reference.
	put := func(buf []byte, mapped bool) {
		for len(buf) > 0 {
			var m int
			var err error
			if mapped {
				iov := unix.Iovec{Base: &buf[0]}
				iov.SetLen(len(buf))
				r, _, e := unix.Syscall6(unix.SYS_VMSPLICE, uintptr(p[1]), uintptr(unsafe.Pointer(&iov)), 1, unix.SPLICE_F_NONBLOCK, 0, 0)
				if m = int(r); e != 0 {
					err = e
				}
			} else {
				m, err = unix.Write(p[1], buf)
			}
			if errors.Is(err, unix.EAGAIN) {
				out()
				continue
			}
			if err != nil {
				b.Fatal(os.NewSyscallError("pipe", err))
			}
			inPipe += m
			buf = buf[m:]
		}
	}
	for _, off := range offs {
		put(header, false)
		put(data[off:off+n], true)
	}
	out()
}

// unmapRanges drops the pages of a response's ranges from the page tables
// as the broker does after a send (log.MappedFile.Unmap), one call for
// the stretch they span.
func unmapRanges(b *testing.B, data []byte, offs []int64, n int64) {
	lo, hi := offs[0], offs[0]+n
	for _, off := range offs {
		lo, hi = min(lo, off), max(hi, off+n)
	}
	if err := unix.Madvise(data[lo&^4095:(hi+4095)&^4095], unix.MADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}
