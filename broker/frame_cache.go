package broker

import (
	"sync"
	"time"
)

// frameCache holds request buffers larger than keptFrame between
// requests, for any connection: a producer whose requests carry several
// 1 MB batches would otherwise allocate (and grow, and clear) a new buffer
// for every request, about twice the bytes it produces.
//
// It replaced a sync.Pool, which every other garbage collection empties:
// the next large request then grew a new buffer from 64 KiB in doubling
// steps (protocol.ReadBody), twice its size in allocation. A buffer stays
// here until it has not been used for frameIdle, so an idle broker still
// holds none after that, and the cache never holds more than
// frameCacheBytes.
type frameCache struct {
	mu struct {
		sync.Mutex
		// bufs are the cached buffers, in the order they were put.
		bufs []cachedFrame
		// bytes is the sum of their capacities.
		bytes int64
		// sweeping is set while a sweep is scheduled.
		sweeping bool
	}
}

// cachedFrame is one cached buffer and when it was put back.
type cachedFrame struct {
	buf []byte
	at  time.Time
}

const (
	// frameCacheBytes bounds the bytes cached: the default
	// queued.max.request.bytes, which bounds the requests being read at
	// once anyway. Producers to many partitions send requests of tens of
	// MB (one 1 MB batch per partition of a broker): with 8 of them to
	// 64 partitions, a 64 MiB cache kept too few and the broker
	// allocated 1.3 GB per GB produced.
	frameCacheBytes = 256 << 20
	// frameCacheCount bounds the buffers cached.
	frameCacheCount = 32
	// frameIdle is how long an unused buffer stays: longer than a
	// producer of large requests takes between two on a slow machine
	// (8 producers to 64 partitions sent a 16 MB request every 2 s each
	// on the loaded 2-core machine, and a 2 s idle time dropped their
	// buffers between requests).
	frameIdle = 10 * time.Second
)

// get returns the smallest cached buffer that holds n bytes, empty. If
// none does, it returns the largest one (protocol.ReadBody grows it as the
// bytes arrive, from its capacity rather than from nothing), or nil.
func (fc *frameCache) get(n int) []byte {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	best := -1
	for i, f := range fc.mu.bufs {
		c, bc := cap(f.buf), 0
		if best >= 0 {
			bc = cap(fc.mu.bufs[best].buf)
		}
		switch {
		case best < 0,
			c >= n && (bc < n || c < bc), // fits, and better than best
			bc < n && c > bc:             // nothing fits yet: the largest
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := fc.mu.bufs[best].buf
	k := copy(fc.mu.bufs[best:], fc.mu.bufs[best+1:])
	fc.mu.bufs[best+k] = cachedFrame{}
	fc.mu.bufs = fc.mu.bufs[:best+k]
	fc.mu.bytes -= int64(cap(b))
	return b[:0]
}

// put caches b for the next large request, evicting the oldest buffers if
// it does not fit otherwise; a buffer larger than the whole cache is
// dropped.
func (fc *frameCache) put(b []byte) {
	c := int64(cap(b))
	if c > frameCacheBytes {
		return
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for len(fc.mu.bufs) > 0 && (len(fc.mu.bufs) >= frameCacheCount || fc.mu.bytes+c > frameCacheBytes) {
		fc.mu.bytes -= int64(cap(fc.mu.bufs[0].buf))
		n := copy(fc.mu.bufs, fc.mu.bufs[1:])
		fc.mu.bufs[n] = cachedFrame{}
		fc.mu.bufs = fc.mu.bufs[:n]
	}
	fc.mu.bufs = append(fc.mu.bufs, cachedFrame{buf: b[:0], at: time.Now()})
	fc.mu.bytes += c
	if !fc.mu.sweeping {
		fc.mu.sweeping = true
		time.AfterFunc(frameIdle, fc.sweep)
	}
}

// sweep drops the buffers unused for frameIdle and schedules itself
// again while any remain.
func (fc *frameCache) sweep() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	cutoff := time.Now().Add(-frameIdle)
	kept := fc.mu.bufs[:0]
	for _, f := range fc.mu.bufs {
		if f.at.After(cutoff) {
			kept = append(kept, f)
		} else {
			fc.mu.bytes -= int64(cap(f.buf))
		}
	}
	clear(fc.mu.bufs[len(kept):])
	fc.mu.bufs = kept
	if len(kept) == 0 {
		fc.mu.sweeping = false
		return
	}
	time.AfterFunc(frameIdle, fc.sweep)
}

// cached reports the buffers and bytes held, for tests.
func (fc *frameCache) cached() (int, int64) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.mu.bufs), fc.mu.bytes
}
