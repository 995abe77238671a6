package broker

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestFrameCacheBestFit: get hands out the smallest buffer that holds the
// request, else nil, leaving the smaller cached buffers for smaller
// requests.
func TestFrameCacheBestFit(t *testing.T) {
	var fc frameCache
	if b := fc.get(1<<20, 1<<20, nil); b != nil {
		t.Fatalf("empty cache: got a buffer of %d bytes", cap(b))
	}
	for _, size := range []int{4 << 20, 2 << 20, 8 << 20} {
		fc.put(make([]byte, 10, size), nil)
	}
	if b := fc.get(3<<20, 3<<20, nil); cap(b) != 4<<20 || len(b) != 0 {
		t.Fatalf("get(3 MiB): got len %d cap %d, want 0 and 4 MiB", len(b), cap(b))
	}
	if b := fc.get(16<<20, 16<<20, nil); b != nil {
		t.Fatalf("get(16 MiB): got cap %d, want none", cap(b))
	}
	if n, bytes := fc.cached(); n != 2 || bytes != 10<<20 {
		t.Fatalf("got %d buffers, %d bytes cached, want 2 of 2 and 8 MiB", n, bytes)
	}
}

// TestFrameCacheGrow: a frame grows through cached buffers where they
// hold the next step, else new ones of at most twice what arrived (the
// last one of the frame's size class), and the buffers it outgrows are
// cached.
func TestFrameCacheGrow(t *testing.T) {
	var fc frameCache
	fc.put(make([]byte, 0, 32<<20), nil)
	const size = 48<<20 + 1
	buf := make([]byte, 16<<20, 16<<20)
	buf[0] = 1
	buf = fc.grow(buf, 32<<20, size, nil) // the cached 32 MiB buffer; 16 MiB cached in its place
	if cap(buf) != 32<<20 || len(buf) != 16<<20 || buf[0] != 1 {
		t.Fatalf("first step: got len %d cap %d first byte %d, want 16 MiB of 32 MiB holding the bytes", len(buf), cap(buf), buf[0])
	}
	buf = buf[:32<<20]
	buf = fc.grow(buf, size, size, nil) // new: the class of 48 MiB + 1, 52 MiB, under 64
	if cap(buf) != 52<<20 || buf[0] != 1 {
		t.Fatalf("last step: got cap %d, want 52 MiB", cap(buf))
	}
	if n, bytes := fc.cached(); n != 2 || bytes != 48<<20 {
		t.Fatalf("got %d buffers, %d bytes cached, want the outgrown 16 and 32 MiB ones", n, bytes)
	}
	small := fc.grow(make([]byte, 64<<10), 128<<10, 1<<20, nil) // a small frame's steps neither come from the cache nor go there
	if cap(small) != 128<<10 {
		t.Fatalf("small step: got cap %d, want 128 KiB", cap(small))
	}
	if n, _ := fc.cached(); n != 2 {
		t.Fatalf("a buffer of keptFrame or less was cached")
	}
}

// TestFrameCacheOwned: a buffer goes first to the connection that put it
// back, which takes it for any of its frames; another connection takes it
// only once its owner put back another or closed, in exchange for its own
// when that is too small, or when the cache is full; a frame of keptFrame
// or less takes no buffer but its own, while the first steps of a larger
// one take any; buffers above frameOwnedMax are shared.
func TestFrameCacheOwned(t *testing.T) {
	a, b := &conn{}, &conn{}
	var fc frameCache
	fc.put(make([]byte, 0, 8<<20), a)
	if got := fc.get(4<<20, 4<<20, b); got != nil {
		t.Fatalf("another connection took a's buffer while the cache has room")
	}
	got := fc.get(600<<10, 600<<10, a)
	if cap(got) != 8<<20 {
		t.Fatalf("a's frame of 600 KB: got cap %d, want its own 8 MiB buffer", cap(got))
	}
	fc.put(got, a)
	fc.put(make([]byte, 0, 2<<20), nil)
	if got := fc.get(600<<10, 600<<10, b); got != nil {
		t.Fatalf("a frame of keptFrame or less took a buffer of no connection")
	}
	if got := fc.grow(make([]byte, 64<<10), 128<<10, 5<<20, b); cap(got) != 2<<20 {
		t.Fatalf("first step of a 5 MB frame: got cap %d, want the cached 2 MiB buffer", cap(got))
	}
	fc.put(make([]byte, 0, 4<<20), a)
	if got := fc.get(8<<20, 8<<20, b); cap(got) != 8<<20 {
		t.Fatalf("a put back another: got cap %d, want its old 8 MiB buffer", cap(got))
	}
	if got := fc.get(4<<20, 4<<20, b); got != nil {
		t.Fatalf("b took a's 4 MiB buffer")
	}
	fc.disown(a)
	if got := fc.get(4<<20, 4<<20, b); cap(got) != 4<<20 {
		t.Fatalf("a closed: got cap %d, want its 4 MiB buffer", cap(got))
	}

	fc.put(make([]byte, 0, 4<<20), a)
	fc.put(make([]byte, 0, 8<<20), b)
	if got := fc.get(6<<20, 6<<20, a); cap(got) != 8<<20 {
		t.Fatalf("a's own is too small: got cap %d, want b's 8 MiB buffer in exchange", cap(got))
	}
	if got := fc.get(600<<10, 600<<10, b); cap(got) != 4<<20 {
		t.Fatalf("b's frame after the exchange: got cap %d, want a's 4 MiB buffer, now b's", cap(got))
	}

	// a frame that a's own buffer does not hold grows through others,
	// leaving a's cached for the exchange at the step it no longer holds
	var ex frameCache
	ex.put(make([]byte, 0, 4<<20), a)
	ex.put(make([]byte, 0, 2<<20), nil)
	ex.put(make([]byte, 0, 4<<20), nil)
	ex.put(make([]byte, 0, 8<<20), b)
	step := ex.grow(make([]byte, 64<<10), 128<<10, 6<<20, a)
	if cap(step) != 2<<20 {
		t.Fatalf("first step of a 6 MiB frame: got cap %d, want the 2 MiB buffer of no connection", cap(step))
	}
	if step = ex.grow(step[:2<<20], 4<<20, 6<<20, a); cap(step) != 4<<20 {
		t.Fatalf("second step: got cap %d, want a 4 MiB buffer", cap(step))
	}
	if step = ex.grow(step[:4<<20], 6<<20, 6<<20, a); cap(step) != 8<<20 {
		t.Fatalf("next step: got cap %d, want b's 8 MiB buffer in exchange for a's", cap(step))
	}
	if got := ex.get(600<<10, 600<<10, b); cap(got) != 4<<20 {
		t.Fatalf("b's frame after the exchange: got cap %d, want a's 4 MiB buffer, now b's", cap(got))
	}

	// a buffer above frameOwnedMax is shared
	var big frameCache
	big.put(make([]byte, 0, 2*frameOwnedMax), a)
	if got := big.get(frameOwnedMax+1, frameOwnedMax+1, b); cap(got) != 2*frameOwnedMax {
		t.Fatalf("a buffer above frameOwnedMax: got cap %d for another connection, want it shared", cap(got))
	}

	full := frameCache{limit: 16 << 20}
	full.put(make([]byte, 0, 8<<20), a)
	full.put(make([]byte, 0, 6<<20), b)
	if got := full.get(8<<20, 8<<20, &conn{}); cap(got) != 8<<20 {
		t.Fatalf("full cache: got cap %d, want a's 8 MiB buffer rather than a new one", cap(got))
	}
}

// TestFrameClass: a new buffer is the next power of two up to
// frameClassFine, and above it at most an eighth of its power of two
// larger than the request.
func TestFrameClass(t *testing.T) {
	for _, n := range []int{1, 2, 3, 1 << 20, 1<<20 + 1, 9 << 20, frameClassFine} {
		if c := frameClass(n); c < n || c&(c-1) != 0 || c >= 2*n {
			t.Errorf("frameClass(%d) = %d, want the next power of two", n, c)
		}
	}
	for _, n := range []int{frameClassFine + 1, 51222493, 100 << 20} {
		if c := frameClass(n); c < n || float64(c) > float64(n)*1.125+1 {
			t.Errorf("frameClass(%d) = %d, want within [n, 1.125n]", n, c)
		}
	}
	if got := frameClass(51222493); got != 52<<20 {
		t.Errorf("frameClass(51222493) = %d, want 52 MiB", got)
	}
}

// TestFrameCacheEvictsSmallest: over its bounds the cache lets the
// smallest buffers go, keeping the large ones that serve any request.
func TestFrameCacheEvictsSmallest(t *testing.T) {
	fc := frameCache{limit: 256 << 20}
	fc.put(make([]byte, 0, 96<<20), nil)
	fc.put(make([]byte, 0, 8<<20), nil)
	fc.put(make([]byte, 0, 96<<20), nil)
	fc.put(make([]byte, 0, 64<<20), nil) // 264 MiB: the 8 MiB one goes
	if n, bytes := fc.cached(); n != 3 || bytes != 256<<20 {
		t.Fatalf("got %d buffers, %d bytes, want the 96, 96 and 64 MiB ones", n, bytes)
	}
	if b := fc.get(90<<20, 90<<20, nil); cap(b) != 96<<20 {
		t.Fatalf("get(90 MiB): got cap %d, want a cached 96 MiB one", cap(b))
	}
}

// TestFrameCacheBounds: the cache holds at most its limit in bytes
// (frameCacheBytes unless the broker sets one) and frameCacheCount
// buffers, evicting the smallest, and drops a buffer larger than itself.
func TestFrameCacheBounds(t *testing.T) {
	const limit = 128 << 20
	fc := frameCache{limit: limit}
	fc.put(make([]byte, 0, limit+1), nil)
	if n, _ := fc.cached(); n != 0 {
		t.Fatalf("a buffer larger than the cache was kept")
	}
	for range frameCacheCount + 3 {
		fc.put(make([]byte, 0, 2<<20), nil)
	}
	if n, bytes := fc.cached(); n != frameCacheCount || bytes != frameCacheCount*2<<20 {
		t.Fatalf("got %d buffers, %d bytes, want %d", n, bytes, frameCacheCount)
	}
	fc.put(make([]byte, 0, limit-4<<20), nil)
	if n, bytes := fc.cached(); bytes > limit || n != 3 {
		t.Fatalf("got %d buffers, %d bytes, want 3 within %d", n, bytes, limit)
	}
	var unset frameCache
	unset.put(make([]byte, 0, limit+1), nil)
	if n, _ := unset.cached(); n != 1 {
		t.Fatalf("without a limit, a %d-byte buffer was not kept (frameCacheBytes %d)", limit+1, frameCacheBytes)
	}
}

// TestFrameCacheIdle: buffers unused for frameIdle go, so an idle broker
// holds none, while one in use stays.
func TestFrameCacheIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fc frameCache
		fc.put(make([]byte, 0, 2<<20), nil)
		time.Sleep(frameIdle / 2)
		fc.put(make([]byte, 0, 4<<20), nil)
		time.Sleep(frameIdle/2 + time.Millisecond)
		synctest.Wait()
		if n, bytes := fc.cached(); n != 1 || bytes != 4<<20 {
			t.Fatalf("after %v: got %d buffers, %d bytes, want the younger one", frameIdle, n, bytes)
		}
		time.Sleep(frameIdle)
		synctest.Wait()
		if n, _ := fc.cached(); n != 0 {
			t.Fatalf("after %v idle: %d buffers still cached", 2*frameIdle, n)
		}
		// The sweep stopped; a new put starts another.
		fc.put(make([]byte, 0, 2<<20), nil)
		time.Sleep(2 * frameIdle)
		synctest.Wait()
		if n, _ := fc.cached(); n != 0 {
			t.Fatalf("%d buffers cached after the second sweep", n)
		}
	})
}

// TestFrameCacheRelease: once a sweep empties the cache after dropping at
// least frameReleaseMin, memory goes back to the operating system, once;
// dropping less, or a sweep that leaves buffers, releases nothing.
func TestFrameCacheRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var releases atomic.Int32
		fc := frameCache{release: func() { releases.Add(1) }}
		fc.put(make([]byte, 0, frameReleaseMin/2), nil)
		time.Sleep(frameIdle + time.Millisecond)
		synctest.Wait()
		if releases.Load() != 0 {
			t.Fatalf("released after dropping %d bytes, below %d", frameReleaseMin/2, frameReleaseMin)
		}
		// Another half: the sum reaches the bound, but a younger buffer
		// keeps the cache in use.
		fc.put(make([]byte, 0, frameReleaseMin/2), nil)
		time.Sleep(frameIdle / 2)
		fc.put(make([]byte, 0, 2<<20), nil)
		time.Sleep(frameIdle/2 + time.Millisecond)
		synctest.Wait()
		if n, _ := fc.cached(); n != 1 || releases.Load() != 0 {
			t.Fatalf("%d buffers cached, %d releases; want 1 and none while in use", n, releases.Load())
		}
		time.Sleep(frameIdle)
		synctest.Wait()
		if n, _ := fc.cached(); n != 0 || releases.Load() != 1 {
			t.Fatalf("%d buffers cached, %d releases; want none and one once idle", n, releases.Load())
		}
		fc.put(make([]byte, 0, 2<<20), nil)
		time.Sleep(2 * frameIdle)
		synctest.Wait()
		if releases.Load() != 1 {
			t.Fatalf("%d releases after dropping 2 MiB more, want still 1", releases.Load())
		}
	})
}

// TestFrameCacheClose: a closed broker's cache holds nothing and keeps
// nothing put afterwards.
func TestFrameCacheClose(t *testing.T) {
	var fc frameCache
	fc.put(make([]byte, 0, 2<<20), nil)
	fc.close()
	fc.put(make([]byte, 0, 2<<20), nil)
	if n, bytes := fc.cached(); n != 0 || bytes != 0 {
		t.Fatalf("closed cache holds %d buffers, %d bytes", n, bytes)
	}
}
