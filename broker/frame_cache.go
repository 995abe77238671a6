package broker

import (
	"runtime/debug"
	"sync"
	"time"
)

// frameCache holds a broker's request buffers larger than keptFrame
// between requests, for any of its connections: a producer whose
// requests carry several 1 MB batches would otherwise allocate (and grow,
// and clear) a new buffer for every request, about twice the bytes it
// produces.
//
// It replaced a sync.Pool, which every other garbage collection empties:
// the next large request then grew a new buffer from 64 KiB in doubling
// steps (protocol.ReadBody), twice its size in allocation. A buffer stays
// here until it has not been used for frameIdle, so an idle broker still
// holds none after that, and the cache never holds more than
// frameCacheBytes.
//
// Each broker has its own (brokers in one process do not share one
// budget), and when a sweep empties it after at least frameReleaseMin
// bytes were dropped, the memory goes back to the operating system at
// once (release, debug.FreeOSMemory by default). Otherwise the dropped
// buffers stayed resident until the heap grew back to the goal set while
// they were live, or until the runtime's two-minute forced collection and
// its paced background scavenger: an idle broker kept the hundreds of MB
// of a produce burst for minutes.
type frameCache struct {
	// release returns free heap memory to the operating system; nil is
	// debug.FreeOSMemory. Set before first use (tests).
	release func()
	mu      struct {
		sync.Mutex
		// bufs are the cached buffers, in the order they were put.
		bufs []cachedFrame
		// bytes is the sum of their capacities.
		bytes int64
		// dropped is the bytes of buffers dropped since the last
		// release.
		dropped int64
		// sweeping is set while a sweep is scheduled.
		sweeping bool
		// closed stops the caching and the sweeps (the broker closed).
		closed bool
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
	// frameReleaseMin is the least dropped since the last release for
	// which emptying the cache returns memory to the operating system: a
	// forced collection costs a few milliseconds of CPU, worth it for
	// tens of MB, not for one buffer.
	frameReleaseMin = 16 << 20
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
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if c > frameCacheBytes || fc.mu.closed {
		fc.mu.dropped += c
		return
	}
	for len(fc.mu.bufs) > 0 && (len(fc.mu.bufs) >= frameCacheCount || fc.mu.bytes+c > frameCacheBytes) {
		fc.mu.bytes -= int64(cap(fc.mu.bufs[0].buf))
		fc.mu.dropped += int64(cap(fc.mu.bufs[0].buf))
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
// again while any remain; once none do, it returns what was dropped to
// the operating system if that was at least frameReleaseMin.
func (fc *frameCache) sweep() {
	fc.mu.Lock()
	cutoff := time.Now().Add(-frameIdle)
	kept := fc.mu.bufs[:0]
	for _, f := range fc.mu.bufs {
		if f.at.After(cutoff) && !fc.mu.closed {
			kept = append(kept, f)
		} else {
			fc.mu.bytes -= int64(cap(f.buf))
			fc.mu.dropped += int64(cap(f.buf))
		}
	}
	clear(fc.mu.bufs[len(kept):])
	fc.mu.bufs = kept
	if len(kept) > 0 {
		time.AfterFunc(frameIdle, fc.sweep)
		fc.mu.Unlock()
		return
	}
	fc.mu.sweeping = false
	release := fc.mu.dropped >= frameReleaseMin
	if release {
		fc.mu.dropped = 0
	}
	fc.mu.Unlock()
	if release {
		if fc.release != nil {
			fc.release()
		} else {
			debug.FreeOSMemory()
		}
	}
}

// close drops every buffer and stops the sweeps, for a broker that
// closed; memory is not released (the process may be ending, or other
// brokers running).
func (fc *frameCache) close() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.mu.closed = true
	clear(fc.mu.bufs)
	fc.mu.bufs, fc.mu.bytes = nil, 0
}

// cached reports the buffers and bytes held, for tests.
func (fc *frameCache) cached() (int, int64) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.mu.bufs), fc.mu.bytes
}
