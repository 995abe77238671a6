package flush

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zaptest"
)

// countingWaker counts Wake calls.
type countingWaker struct{ n atomic.Int32 }

// Wake implements Waker.
func (w *countingWaker) Wake() { w.n.Add(1) }

// newCommitRealTime starts a CommitRealTimeService over store and closes it
// at the end of the test.
func newCommitRealTime(t *testing.T, store Store, cfg CommitRealTimeConfig, opts ...Option) *CommitRealTimeService {
	t.Helper()
	opts = append([]Option{WithLogger(zaptest.NewLogger(t))}, opts...)
	s := NewCommitRealTimeService(store, cfg, opts...)
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCommitRealTimeWakesFlusherOnlyAfterProgress checks RocketMQ's commit
// schedule (4 pages, or anything once 200 ms passed without progress) and
// that the flusher is woken exactly when a commit moved data.
func TestCommitRealTimeWakesFlusherOnlyAfterProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{pool: true}
		waker := &countingWaker{}
		s := newCommitRealTime(t, store, CommitRealTimeConfig{}, WithFlusher(waker))

		// Less than 4 pages: a woken round (not thorough yet) moves
		// nothing and must not wake the flusher.
		pos := store.append(100)
		s.Wake()
		synctest.Wait()
		if got := store.committedPosition(); got != 0 {
			t.Fatalf("committed after a woken round below the threshold: got %d, want 0", got)
		}
		if n := waker.n.Load(); n != 0 {
			t.Fatalf("flusher wakeups without progress: got %d, want 0", n)
		}

		// The thorough round at 200 ms commits it and wakes the flusher.
		time.Sleep(defaultCommitInterval)
		synctest.Wait()
		if got := store.committedPosition(); got != pos {
			t.Fatalf("committed after the thorough round: got %d, want %d", got, pos)
		}
		if n := waker.n.Load(); n != 1 {
			t.Fatalf("flusher wakeups: got %d, want 1", n)
		}
		if got, want := store.commitArgs(), []int{4, 0}; !slices.Equal(got, want) {
			t.Fatalf("commit calls: got %v, want %v", got, want)
		}

		// Four pages are enough for a woken round.
		pos = store.append(4 * pageSize)
		s.Wake()
		synctest.Wait()
		if got := store.committedPosition(); got != pos {
			t.Fatalf("committed after a woken round of 4 pages: got %d, want %d", got, pos)
		}
		if n := waker.n.Load(); n != 2 {
			t.Fatalf("flusher wakeups: got %d, want 2", n)
		}
	})
}

// TestCommitRealTimeDrivesFlushRealTime wires the two async services as the
// broker does in pool mode: committed data gets flushed without waiting for
// the flusher's own interval.
func TestCommitRealTimeDrivesFlushRealTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{pool: true}
		// The flusher's own interval is far away: only the commit
		// service's wakeup can make it flush in time.
		flusher := newFlushRealTime(t, store, FlushRealTimeConfig{Interval: time.Hour, ThoroughInterval: time.Hour})
		s := newCommitRealTime(t, store, CommitRealTimeConfig{}, WithFlusher(flusher))
		pos := store.append(5 * pageSize)
		s.Wake()
		synctest.Wait()
		if got := store.FlushedPosition(); got != pos {
			t.Fatalf("flushed after a commit: got %d, want %d", got, pos)
		}
	})
}

// TestCommitRealTimeOnCommittedIsMonotone checks that the visibility hook of
// pool mode sees only growing positions and ends at the committed position.
func TestCommitRealTimeOnCommittedIsMonotone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{pool: true}
		var mu sync.Mutex
		var seen []int64
		s := newCommitRealTime(t, store, CommitRealTimeConfig{}, WithOnCommitted(func(committed int64) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, committed)
		}))
		for i := range 20 {
			store.append(int64(i%4) * 2 * pageSize)
			if i%2 == 0 {
				s.Wake()
			}
			time.Sleep(150 * time.Millisecond)
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
		if last, want := seen[len(seen)-1], store.committedPosition(); last != want {
			t.Fatalf("last hook position: got %d, want %d", last, want)
		}
	})
}

// TestCommitRealTimeCloseCommitsEverything checks that Close commits what is
// still in pool buffers, which would otherwise die with the process.
func TestCommitRealTimeCloseCommitsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{pool: true}
		waker := &countingWaker{}
		s := NewCommitRealTimeService(store, CommitRealTimeConfig{Interval: time.Hour, ThoroughInterval: time.Hour},
			WithFlusher(waker), WithLogger(zaptest.NewLogger(t)))
		s.Start()
		pos := store.append(100)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: got %v, want nil", err)
		}
		if got := store.committedPosition(); got != pos {
			t.Fatalf("committed after Close: got %d, want %d", got, pos)
		}
		if got := store.commitArgs(); len(got) == 0 || got[0] != 0 {
			t.Fatalf("commit calls: got %v, want Commit(0) first", got)
		}
	})
}

// TestCommitRealTimeCloseReturnsError checks that a failing final commit is
// reported by Close.
func TestCommitRealTimeCloseReturnsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{pool: true}
		s := NewCommitRealTimeService(store, CommitRealTimeConfig{}, WithLogger(zaptest.NewLogger(t)))
		s.Start()
		store.append(100)
		store.setCommitErr(errDisk)
		time.Sleep(time.Second)
		if err := s.Close(); !errors.Is(err, errDisk) {
			t.Fatalf("Close: got %v, want %v", err, errDisk)
		}
	})
}
