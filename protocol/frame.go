package protocol

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes.
const DefaultMaxRequestBytes = 100 << 20

// ErrFrameTooLarge is returned for a frame whose declared size is negative
// or above the limit; the connection must be closed (Kafka's
// InvalidReceiveException).
var ErrFrameTooLarge = errors.New("protocol: frame size out of range")

// growStep is how much a frame buffer grows per read: a client that
// claims a large size but sends little never makes the broker allocate
// more than what arrived plus one step.
const growStep = 64 << 10

// ReadSize reads the 4-byte size prefix of the next frame and checks it
// against max before anything is allocated.
func ReadSize(r io.Reader, max int32) (int32, error) {
	var n int32
	if br, ok := r.(*bufio.Reader); ok {
		// A connection's reader: the prefix is read in place, so that
		// reading it allocates nothing (the array of the general path
		// escapes through io.ReadFull and costs an allocation per
		// request).
		hdr, err := br.Peek(4)
		if err != nil {
			if errors.Is(err, io.EOF) && len(hdr) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		n = int32(binary.BigEndian.Uint32(hdr))
		br.Discard(4)
	} else {
		var err error
		if n, err = readSize(r); err != nil {
			return 0, err
		}
	}
	if n < 0 || n > max {
		return n, fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, n, max)
	}
	return n, nil
}

// readSize reads a size prefix from any reader.
func readSize(r io.Reader) (int32, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(hdr[:])), nil
}

// ReadBody reads a frame body of n bytes (from ReadSize) into buf, reusing
// its capacity. A large body is read in steps, growing the buffer only as
// bytes actually arrive. Grown capacities are powers of two (at most
// twice what arrived), so that a buffer kept for reuse also fits the next
// frames of about the same size instead of only smaller ones.
func ReadBody(r io.Reader, n int32, buf []byte) ([]byte, error) {
	return ReadBodyGrow(r, n, buf, nil)
}

// GrowFunc returns a buffer of capacity at least need holding buf's bytes,
// for a frame body of size bytes being read into buf (need ≤ size, and at
// most twice len(buf) or one growth step). What becomes of buf is the
// function's business: it is not used again.
type GrowFunc func(buf []byte, need, size int) []byte

// ReadBodyGrow is ReadBody with the buffer's growth left to grow (nil:
// a new buffer of the next power of two), so that a caller can grow into
// buffers it keeps, and keep the ones outgrown. The growth steps are
// ReadBody's: what is allocated stays within twice what arrived.
func ReadBodyGrow(r io.Reader, n int32, buf []byte, grow GrowFunc) ([]byte, error) {
	size := int(n)
	if cap(buf) >= size || size <= growStep {
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf = buf[:0]
	for len(buf) < size {
		want := min(size-len(buf), max(growStep, len(buf)))
		if cap(buf)-len(buf) < want {
			if grow != nil {
				buf = grow(buf, len(buf)+want, size)
			} else {
				nb := make([]byte, len(buf), 1<<bits.Len(uint(len(buf)+want-1)))
				copy(nb, buf)
				buf = nb
			}
		}
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}
