package sendfile

import (
	"net"
	"testing"
)

// BenchmarkCopy sends ranges of a page-cached file over loopback TCP to a
// reader that discards them: sendfile(2) on the *net.TCPConn, and the
// pread+write fallback on the same socket hidden behind a wrapper.
func BenchmarkCopy(b *testing.B) {
	const fileSize = 32 << 20
	f, _ := tempFile(b, testRand(b), fileSize)
	for _, path := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"sendfile", func(c net.Conn) net.Conn { return c }},
		{"fallback", func(c net.Conn) net.Conn { return hiddenConn{c} }},
	} {
		for _, size := range []struct {
			name string
			n    int64
		}{{"16KiB", 16 << 10}, {"1MiB", 1 << 20}} {
			b.Run(path.name+"/size="+size.name, func(b *testing.B) {
				send, recv := tcpPair(b)
				done := drain(recv)
				conn := path.wrap(send)
				b.SetBytes(size.n)
				b.ReportAllocs()
				var off int64
				for b.Loop() {
					if _, err := Copy(conn, f, off, size.n); err != nil {
						b.Fatal(err)
					}
					off = (off + size.n) % (fileSize - size.n) // walk the file
				}
				send.Close()
				<-done
			})
		}
	}
}

// BenchmarkWriter sends fetch-like responses: a header, then per partition a
// small header and a file range, through one Writer.
func BenchmarkWriter(b *testing.B) {
	const fileSize = 32 << 20
	f, _ := tempFile(b, testRand(b), fileSize)
	for _, size := range []struct {
		name string
		n    int64
	}{{"16KiB", 16 << 10}, {"1MiB", 1 << 20}} {
		b.Run("partitions=4/batch="+size.name, func(b *testing.B) {
			send, recv := tcpPair(b)
			done := drain(recv)
			w := NewWriter(send)
			header := make([]byte, 64)
			b.SetBytes(int64(len(header)) + 4*(size.n+32))
			b.ReportAllocs()
			var off int64
			for b.Loop() {
				w.Bytes(header)
				for range 4 {
					w.Bytes(header[:32])
					w.File(f, off, size.n)
					off = (off + size.n) % (fileSize - size.n)
				}
				if _, err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			send.Close()
			<-done
		})
	}
}
