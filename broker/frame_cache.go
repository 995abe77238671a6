package broker

import (
	"math/bits"
	"runtime/debug"
	"sync"
	"time"
)

// frameCache holds a broker's request buffers larger than keptFrame
// between requests, each for the connection that put it back first and
// then for any (get): a producer whose requests carry several 1 MB
// batches would otherwise allocate (and grow, and clear) a new buffer for
// every request, about twice the bytes it produces.
//
// It replaced a sync.Pool, which every other garbage collection empties:
// the next large request then grew a new buffer from 64 KiB in doubling
// steps (protocol.ReadBody), twice its size in allocation. A buffer stays
// here until it has not been used for frameIdle, so an idle broker still
// holds none after that, and the cache never holds more than its limit.
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
	// limit bounds the bytes cached; 0 is frameCacheBytes. The broker
	// sets twice its queued.max.request.bytes: the byte budget bounds
	// the buffers in use (a connection holds one only while it reads and
	// handles a request), and this the ones of connections between
	// requests. Producers to many partitions send requests of tens of
	// MB (one 1 MB batch per partition): eight to 64 partitions sent up
	// to 51 MB each, eight buffers of 52 MiB, of which the 256 MiB the
	// cache held before kept four; the others were made again.
	limit int64
	mu    struct {
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

// cachedFrame is one cached buffer, when it was put back, and by whom.
type cachedFrame struct {
	buf []byte
	at  time.Time
	// owner is the connection that put it back, which has first claim
	// on it (get); nil once the owner put back another or closed.
	owner *conn
}

const (
	// frameCacheBytes bounds the bytes cached when the broker sets no
	// limit: twice the default queued.max.request.bytes (see
	// frameCache.limit).
	frameCacheBytes = 512 << 20
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

// get returns a cached buffer that holds n bytes of a frame of size
// bytes, empty, or nil: the one owner last put back if it holds them,
// else, for a frame larger than keptFrame, the smallest of those no
// connection owns. A frame of keptFrame or less takes only its
// connection's own (a connection whose requests are mostly large sends a
// smaller one now and then, which would otherwise grow its small buffer),
// and otherwise grows that: a consumer's or an admin client's connection
// does not take (and then own) a large buffer for its small requests.
//
// A smaller cached buffer is left for smaller requests: handed out to
// grow from, as before, it was thrown away at the first growth, and under
// several producers whose requests differ in size the cache kept trading
// the buffers it had for new ones a little larger.
//
// A buffer another connection owns is handed out when the cache is full
// (a new buffer would make it evict one), or in exchange for owner's own
// when that is too small: each connection that sends large requests
// keeps its own while there is room, so that one is made per connection,
// at its first large request. Shared, they were made whenever more
// connections than ever before had a large request in flight at once,
// and eight producers to 64 partitions met a new such moment now and then
// long after they had started (8 MiB each time). The exchange keeps a
// connection whose requests outgrow its buffer (a producer's first
// request of 34 MB, then 51 MB ones) from making a new one while another
// connection's larger buffer sits unused; for it to have its own to give,
// a frame its own does not hold grows through buffers of no connection
// first.
func (fc *frameCache) get(n, size int, owner *conn) []byte {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	// mine is owner's buffer; free and theirs the smallest that hold n
	// bytes of no connection and of another.
	mine, free, theirs := -1, -1, -1
	smaller := func(i, j int) bool { return j < 0 || cap(fc.mu.bufs[i].buf) < cap(fc.mu.bufs[j].buf) }
	for i, f := range fc.mu.bufs {
		switch {
		case owner != nil && f.owner == owner:
			mine = i
		case cap(f.buf) < n || size <= keptFrame:
		case f.owner == nil:
			if smaller(i, free) {
				free = i
			}
		case smaller(i, theirs):
			theirs = i
		}
	}
	full := len(fc.mu.bufs) >= frameCacheCount || fc.mu.bytes+int64(frameClass(n)) > fc.limitBytes()
	pick := -1
	switch {
	case mine >= 0 && cap(fc.mu.bufs[mine].buf) >= n && (cap(fc.mu.bufs[mine].buf) >= size || free < 0):
		// A growth step takes owner's own only if it holds the frame or
		// nothing else will do: left cached, it is what owner gives in
		// exchange at the step it no longer holds.
		pick = mine
	case free >= 0:
		pick = free
	case theirs >= 0 && mine >= 0:
		fc.mu.bufs[mine].owner = fc.mu.bufs[theirs].owner
		pick = theirs
	case theirs >= 0 && full:
		pick = theirs
	}
	if pick < 0 {
		return nil
	}
	b := fc.mu.bufs[pick].buf
	fc.removeLocked(pick)
	return b[:0]
}

// grow is the connections' protocol.GrowFunc (through conn.growFrame): a
// frame that no cached buffer holds grows, as its bytes arrive, into
// cached buffers where there are some and new ones where not, and the
// buffers it outgrows are cached for smaller requests rather than
// dropped. A new buffer is the next power of two, at most twice what
// arrived (a client that claims a large frame and sends little gets no
// more), or, when that is more, the frame's own size class: a 51 MB
// request ends in a 52 MiB buffer, not a 64 MiB one.
func (fc *frameCache) grow(buf []byte, need, size int, owner *conn) []byte {
	nb := fc.get(need, size, owner)
	if nb == nil {
		nb = make([]byte, 0, min(1<<bits.Len(uint(need-1)), frameClass(size)))
	}
	nb = append(nb, buf...)
	if cap(buf) > keptFrame {
		fc.put(buf, nil)
	}
	return nb
}

// removeLocked takes buffer i out of the cache, keeping the others in
// the order they were put.
func (fc *frameCache) removeLocked(i int) {
	fc.mu.bytes -= int64(cap(fc.mu.bufs[i].buf))
	k := copy(fc.mu.bufs[i:], fc.mu.bufs[i+1:])
	fc.mu.bufs[i+k] = cachedFrame{}
	fc.mu.bufs = fc.mu.bufs[:i+k]
}

// frameClass is the capacity of the last buffer a request of n bytes grows
// into: the next power of two up to frameClassFine, so that a buffer also
// fits the next requests of about the same size (a producer's requests
// vary from one to the next, and finer classes made a new buffer each time
// one was a little larger than any before: 35 MB per GB produced with 100 B
// records to 8 partitions), and above it n rounded up to an eighth of its
// power of two (at most 12.5 % more), so that a 51 MB request does not
// take 64 MiB (eight producers to 64 partitions send requests of
// 13–51 MB; eight 64 MiB buffers did not fit the cache and were made
// anew).
func frameClass(n int) int {
	if n <= 1 {
		return n
	}
	p := 1 << bits.Len(uint(n-1))
	if p <= frameClassFine {
		return p
	}
	shift := bits.Len(uint(n-1)) - 4
	return ((n-1)>>shift + 1) << shift
}

// frameClassFine is the largest power of two frameClass rounds up to.
const frameClassFine = 16 << 20

// frameOwnedMax is the largest buffer a connection owns (put); larger ones
// are shared. Eight producers of 1 KiB records to 64 partitions send
// 13-51 MB requests: owning, each kept a 52 MiB buffer (peak RSS up to
// 200 MB higher), and a connection that met a 51 MB request with a
// smaller buffer of its own and none to exchange made a new one inside
// kbench's window in 3 runs of 16 (107 MB per GB produced), where shared
// buffers cost 2-14.
const frameOwnedMax = frameClassFine

// put caches b for the next large request, owned by owner (nil, or b
// larger than frameOwnedMax: by no connection); a buffer owner put back
// before is no longer its own. When
// b does not fit otherwise, the smallest buffers go first (the oldest
// among equals): a large buffer serves any request, a small one only
// small ones, and is cheaper to make again. A buffer larger than the
// whole cache is dropped.
func (fc *frameCache) put(b []byte, owner *conn) {
	c := int64(cap(b))
	if c > frameOwnedMax {
		owner = nil
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if c > fc.limitBytes() || fc.mu.closed {
		fc.mu.dropped += c
		return
	}
	for len(fc.mu.bufs) > 0 && (len(fc.mu.bufs) >= frameCacheCount || fc.mu.bytes+c > fc.limitBytes()) {
		small := 0
		for i, f := range fc.mu.bufs {
			if cap(f.buf) < cap(fc.mu.bufs[small].buf) {
				small = i
			}
		}
		fc.mu.dropped += int64(cap(fc.mu.bufs[small].buf))
		fc.removeLocked(small)
	}
	if owner != nil {
		fc.disownLocked(owner)
	}
	fc.mu.bufs = append(fc.mu.bufs, cachedFrame{buf: b[:0], at: time.Now(), owner: owner})
	fc.mu.bytes += c
	if !fc.mu.sweeping {
		fc.mu.sweeping = true
		time.AfterFunc(frameIdle, fc.sweep)
	}
}

// disown gives the buffer owner put back to any connection, for a
// connection that closed.
func (fc *frameCache) disown(owner *conn) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.disownLocked(owner)
}

// disownLocked is disown with fc.mu held.
func (fc *frameCache) disownLocked(owner *conn) {
	for i := range fc.mu.bufs {
		if fc.mu.bufs[i].owner == owner {
			fc.mu.bufs[i].owner = nil
		}
	}
}

// limitBytes is the bytes the cache may hold.
func (fc *frameCache) limitBytes() int64 {
	if fc.limit <= 0 {
		return frameCacheBytes
	}
	return fc.limit
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
