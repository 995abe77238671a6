package log

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// TransientStorePool is a fixed set of pre-allocated buffers, one file in
// size, that appends write into instead of the mapping (RocketMQ's
// TransientStorePool). Appends then never page-fault and never wait on
// page-cache writeback; the commit service copies the buffers into the files.
// The price: a process crash loses what was not yet committed, and readers
// see data only once it is committed. It is therefore a choice for async
// mode, never the default.
type TransientStorePool struct {
	size int64
	mu   struct {
		sync.Mutex
		free [][]byte // buffers ready to lend
	}
	all    [][]byte // every buffer, for Close
	locked bool
}

// NewTransientStorePool maps n anonymous buffers of size bytes each and,
// when lock is set, mlocks them so they stay in RAM. A failed mlock (for
// example RLIMIT_MEMLOCK) is reported, since the caller asked for it.
func NewTransientStorePool(n int, size int64, lock bool) (*TransientStorePool, error) {
	p := &TransientStorePool{size: size, locked: lock}
	for i := 0; i < n; i++ {
		// An anonymous mapping rather than make([]byte): the buffers are big,
		// live for the whole run, and should not be scanned or moved by the GC.
		b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("log: map pool buffer %d of %d bytes: %w", i, size, err)
		}
		p.all = append(p.all, b)
		if lock {
			if err := unix.Mlock(b); err != nil {
				p.Close()
				return nil, fmt.Errorf("log: mlock pool buffer %d of %d bytes: %w", i, size, err)
			}
		}
		p.mu.free = append(p.mu.free, b)
	}
	return p, nil
}

// Available is the number of buffers ready to lend.
func (p *TransientStorePool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.free)
}

// borrowBuffer lends a buffer, or nil when none is free (the file then
// writes into its mapping, as RocketMQ does).
func (p *TransientStorePool) borrowBuffer() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.mu.free)
	if n == 0 {
		return nil
	}
	b := p.mu.free[n-1]
	p.mu.free = p.mu.free[:n-1]
	return b
}

// returnBuffer takes a buffer back. Its old bytes are left in place: a
// borrower only ever reads what it wrote itself.
func (p *TransientStorePool) returnBuffer(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.free = append(p.mu.free, b)
}

// Close unmaps every buffer. Files must no longer use them.
func (p *TransientStorePool) Close() {
	for _, b := range p.all {
		if p.locked {
			_ = unix.Munlock(b)
		}
		_ = unix.Munmap(b)
	}
	p.all = nil
	p.mu.Lock()
	p.mu.free = nil
	p.mu.Unlock()
}
