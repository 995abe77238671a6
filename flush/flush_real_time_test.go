package flush

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
)

// newFlushRealTime starts a FlushRealTimeService over store and closes it at
// the end of the test.
func newFlushRealTime(t *testing.T, store Store, cfg FlushRealTimeConfig, opts ...Option) *FlushRealTimeService {
	t.Helper()
	opts = append([]Option{WithLogger(zaptest.NewLogger(t))}, opts...)
	s := NewFlushRealTimeService(store, cfg, opts...)
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// repeat returns n copies of v.
func repeat(v, n int) []int {
	return slices.Repeat([]int{v}, n)
}

// TestFlushRealTimeHonoursLeastPagesAndThoroughInterval checks RocketMQ's
// schedule: a round every 500 ms that flushes only from 4 dirty pages, and a
// round every 10 s that flushes any dirty byte, bounding what a trickle of
// small writes can lose.
func TestFlushRealTimeHonoursLeastPagesAndThoroughInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		newFlushRealTime(t, store, FlushRealTimeConfig{})

		// Less than one page: regular rounds (every 500 ms, 4 pages)
		// leave it alone until the thorough round at 10 s.
		small := store.append(100)
		time.Sleep(9750 * time.Millisecond)
		synctest.Wait()
		if got, want := store.flushArgs(), repeat(4, 19); !slices.Equal(got, want) {
			t.Fatalf("flush calls before 10s: got %v, want %v", got, want)
		}
		if got := store.FlushedPosition(); got != 0 {
			t.Fatalf("flushed before the thorough round: got %d, want 0", got)
		}
		time.Sleep(500 * time.Millisecond) // now 10.25 s
		synctest.Wait()
		if got, want := store.flushArgs(), append(repeat(4, 19), 0); !slices.Equal(got, want) {
			t.Fatalf("flush calls at 10s: got %v, want %v", got, want)
		}
		if got := store.FlushedPosition(); got != small {
			t.Fatalf("flushed after the thorough round: got %d, want %d", got, small)
		}

		// Four dirty pages are enough for a regular round.
		big := store.append(4 * pageSize)
		time.Sleep(500 * time.Millisecond) // now 10.75 s
		synctest.Wait()
		if got := store.FlushedPosition(); got != big {
			t.Fatalf("flushed after 4 pages: got %d, want %d", got, big)
		}
		if got := store.flushArgs(); got[len(got)-1] != 4 {
			t.Fatalf("last flush: got leastPages %d, want 4", got[len(got)-1])
		}
	})
}

// TestFlushRealTimeWake checks that Wake (wakeFlushWhenPutMessage, or the
// commit service) flushes at once instead of at the next interval.
func TestFlushRealTimeWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := newFlushRealTime(t, store, FlushRealTimeConfig{})
		pos := store.append(5 * pageSize)
		start := time.Now()
		s.Wake()
		synctest.Wait()
		if got := store.FlushedPosition(); got != pos {
			t.Fatalf("flushed after Wake: got %d, want %d", got, pos)
		}
		if got, want := store.flushArgs(), []int{4}; !slices.Equal(got, want) {
			t.Fatalf("flush calls: got %v, want %v", got, want)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("Wake flushed after %v, want at once", took)
		}
	})
}

// TestFlushRealTimeOnFlushedIsMonotone checks that the hook sees only growing
// positions and ends at the flushed position.
func TestFlushRealTimeOnFlushedIsMonotone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		var mu sync.Mutex
		var seen []int64
		newFlushRealTime(t, store, FlushRealTimeConfig{ThoroughInterval: time.Second}, WithOnFlushed(func(flushed int64) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, flushed)
		}))
		for i := range 20 {
			store.append(int64(i%3) * 3 * pageSize)
			time.Sleep(300 * time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		if len(seen) < 2 {
			t.Fatalf("hook calls: got %v, want several", seen)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] <= seen[i-1] {
				t.Fatalf("hook positions not strictly increasing: %v", seen)
			}
		}
		if last, want := seen[len(seen)-1], store.FlushedPosition(); last != want {
			t.Fatalf("last hook position: got %d, want %d", last, want)
		}
	})
}

// TestFlushRealTimeLogsStickyErrorOnce checks that a broken disk is logged
// once, not twice a second forever, and that Close gives up after RocketMQ's
// 10 attempts and reports the error.
func TestFlushRealTimeLogsStickyErrorOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		store := &fakeStore{}
		s := NewFlushRealTimeService(store, FlushRealTimeConfig{}, WithLogger(zap.New(core)))
		s.Start()
		store.append(pageSize)
		store.setFlushErr(errDisk, 0)
		time.Sleep(15 * time.Second) // 30 rounds, one of them thorough
		synctest.Wait()
		if n := logs.FilterMessage("flush failed").Len(); n != 1 {
			t.Fatalf("error log entries for a sticky failure: got %d, want 1", n)
		}

		before := store.flushes()
		err := s.Close()
		if !errors.Is(err, errDisk) {
			t.Fatalf("Close: got %v, want %v", err, errDisk)
		}
		if got := store.flushArgs()[before:]; !slices.Equal(got, repeat(0, finalRetries)) {
			t.Fatalf("final flush calls: got %v, want %d × Flush(0)", got, finalRetries)
		}
	})
}

// TestFlushRealTimeCloseRetriesTransientError checks that the final flush's
// retries get past a transient error and stop once nothing is left.
func TestFlushRealTimeCloseRetriesTransientError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := NewFlushRealTimeService(store, FlushRealTimeConfig{}, WithLogger(zaptest.NewLogger(t)))
		s.Start()
		pos := store.append(100)
		store.setFlushErr(errDisk, 2)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: got %v, want nil after two failed attempts", err)
		}
		if got := store.FlushedPosition(); got != pos {
			t.Fatalf("flushed after Close: got %d, want %d", got, pos)
		}
		// Two failures, one flush that moved data, one that confirmed
		// nothing is left.
		if got, want := store.flushArgs(), repeat(0, 4); !slices.Equal(got, want) {
			t.Fatalf("flush calls: got %v, want %v", got, want)
		}
		if err := s.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("second Close: got %v, want ErrClosed", err)
		}
	})
}

// TestFlushRealTimeCloseWithoutStart checks that Close flushes even if the
// service never ran, and that a Start after Close starts nothing.
func TestFlushRealTimeCloseWithoutStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		var hooked int64
		s := NewFlushRealTimeService(store, FlushRealTimeConfig{}, WithOnFlushed(func(p int64) { hooked = p }))
		pos := store.append(100)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: got %v, want nil", err)
		}
		if got := store.FlushedPosition(); got != pos || hooked != pos {
			t.Fatalf("after Close: flushed %d, hook saw %d; want both %d", got, hooked, pos)
		}
		s.Start() // after Close: must not start anything (goleak checks)
		s.Wake()
	})
}
