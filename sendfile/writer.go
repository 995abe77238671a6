package sendfile

import (
	"net"
	"os"
)

// Writer writes responses made of byte slices and file ranges to one
// connection: Bytes and File queue pieces, Flush writes them in order.
// Consecutive byte slices go out with one writev (net.Buffers), file ranges
// with Copy, and a response of more than one piece is wrapped in TCP_CORK so
// that headers and record bytes share full-size packets.
//
// The Writer keeps its slices between responses, so in steady state a
// response over a *net.TCPConn allocates nothing. It is not safe for
// concurrent use; the broker gives each connection's writer goroutine one.
type Writer struct {
	conn   net.Conn
	pieces []piece     // queued pieces, in order
	iov    [][]byte    // queued byte slices; runs of them are pieces
	nb     net.Buffers // the run being written; a field so WriteTo's pointer receiver does not allocate
	noCork bool        // TCP_CORK failed once (not a TCP socket): do not try again
}

// piece is a queued run of byte slices (file == nil: iov[first:last]) or a
// file range.
type piece struct {
	file        *os.File
	off, n      int64
	first, last int
}

// NewWriter returns a Writer for conn.
func NewWriter(conn net.Conn) *Writer {
	return &Writer{conn: conn}
}

// Bytes queues b. b is not copied: the caller must leave it unchanged until
// Flush returns. Empty slices are dropped.
func (w *Writer) Bytes(b []byte) {
	if len(b) == 0 {
		return
	}
	w.iov = append(w.iov, b)
	if k := len(w.pieces) - 1; k >= 0 && w.pieces[k].file == nil {
		w.pieces[k].last = len(w.iov) // extend the current run
		return
	}
	w.pieces = append(w.pieces, piece{first: len(w.iov) - 1, last: len(w.iov)})
}

// File queues the n bytes of f at offset off (see Copy). f must stay open
// until Flush returns. Empty ranges are dropped; an invalid one makes Flush
// fail when it reaches it.
func (w *Writer) File(f *os.File, off, n int64) {
	if n == 0 {
		return
	}
	w.pieces = append(w.pieces, piece{file: f, off: off, n: n})
}

// Flush writes every queued piece in order and empties the queue, even on
// error. It returns the number of bytes written and the first error, after
// which the rest of the response is not sent: the connection's framing is
// lost and it must be closed.
func (w *Writer) Flush() (int64, error) {
	// One piece is one writev or one sendfile loop and needs no cork (all
	// byte slices in a row are one piece). From two pieces on, each
	// sendfile or writev would push its own partial last packet.
	corked := false
	if len(w.pieces) > 1 && !w.noCork {
		corked = setCork(w.conn, true)
		w.noCork = !corked
	}
	var written int64
	var err error
	for _, p := range w.pieces {
		var m int64
		if p.file == nil {
			w.nb = w.iov[p.first:p.last]
			m, err = w.nb.WriteTo(w.conn)
		} else {
			m, err = Copy(w.conn, p.file, p.off, p.n)
		}
		written += m
		if err != nil {
			break
		}
	}
	if corked {
		// Uncorking sends what is still held back. If it fails the socket
		// is broken or the kernel flushes a cork after 200 ms anyway.
		setCork(w.conn, false)
	}
	w.reset()
	return written, err
}

// Discard empties the queue without writing it: for a response abandoned
// half-way, so that the Writer keeps no reference to its slices and files.
func (w *Writer) Discard() { w.reset() }

// reset empties the queue, keeping capacity but dropping the references to
// the caller's slices and files.
func (w *Writer) reset() {
	clear(w.pieces)
	w.pieces = w.pieces[:0]
	clear(w.iov)
	w.iov = w.iov[:0]
	w.nb = nil
}
