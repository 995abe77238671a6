package flush

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
)

// errDisk stands for an I/O error of the device (EIO from fdatasync).
var errDisk = errors.New("test: disk on fire")

// newGroupCommit starts a GroupCommitService over store and closes it at the
// end of the test. Register t.Cleanup(release) for blocked flushes after
// calling it, so that the flush is released before Close waits for it.
func newGroupCommit(t *testing.T, store Store, cfg GroupCommitConfig, opts ...Option) *GroupCommitService {
	t.Helper()
	opts = append([]Option{WithLogger(zaptest.NewLogger(t))}, opts...)
	s := NewGroupCommitService(store, cfg, opts...)
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// result is what a waiter saw: the error and the store's flushed position
// right when Await returned.
type result struct {
	err     error
	flushed int64
}

// awaitAsync runs Await in a goroutine and returns a channel with its result.
func awaitAsync(ctx context.Context, s *GroupCommitService, store Store, pos int64) <-chan result {
	ch := make(chan result, 1)
	go func() {
		err := s.Await(ctx, pos)
		ch <- result{err: err, flushed: store.FlushedPosition()}
	}()
	return ch
}

// TestAwaitReturnsOnlyAfterFlushCoversPosition is the durability contract of
// sync mode: an acknowledged produce must already be on disk, so Await may
// not return while the flush that covers its position is still running.
func TestAwaitReturnsOnlyAfterFlushCoversPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{})
		entered, release := store.blockFlushes()
		t.Cleanup(release)

		pos := store.append(100)
		res := awaitAsync(t.Context(), s, store, pos)
		<-entered
		synctest.Wait()
		if len(res) != 0 {
			t.Fatal("Await returned while the covering flush was still running")
		}
		release()
		r := <-res
		if r.err != nil {
			t.Fatalf("Await: got %v, want nil", r.err)
		}
		if r.flushed < pos {
			t.Fatalf("flushed position when Await returned: got %d, want >= %d", r.flushed, pos)
		}
		if got := store.flushes(); got != 1 {
			t.Fatalf("flushes: got %d, want 1", got)
		}
	})
}

// TestAwaitFastPathDoesNotWakeFlusher checks that a position that is already
// durable costs neither a flush nor a goroutine handoff.
func TestAwaitFastPathDoesNotWakeFlusher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{})
		pos := store.append(100)
		if _, err := store.Flush(0); err != nil {
			t.Fatal(err)
		}
		if err := s.Await(t.Context(), pos); err != nil {
			t.Fatalf("Await: got %v, want nil", err)
		}
		synctest.Wait()
		if got := store.flushes(); got != 1 {
			t.Fatalf("flushes: got %d, want 1 (only the test's own)", got)
		}
	})
}

// TestGroupCommitBatchesConcurrentWaiters is the point of group commit: the
// waiters that arrive while one flush runs share the next one, so 64 waiters
// cost 2 flushes here instead of 64.
func TestGroupCommitBatchesConcurrentWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const waiters = 64
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{})
		entered, release := store.blockFlushes()
		t.Cleanup(release)

		// The first waiter starts a flush that stays in the "kernel"
		// while the others arrive, as it would under load.
		results := make([]<-chan result, 0, waiters)
		positions := make([]int64, 0, waiters)
		pos := store.append(100)
		results = append(results, awaitAsync(t.Context(), s, store, pos))
		positions = append(positions, pos)
		<-entered
		for range waiters - 1 {
			pos := store.append(100)
			results = append(results, awaitAsync(t.Context(), s, store, pos))
			positions = append(positions, pos)
		}
		synctest.Wait()
		release()

		for i, ch := range results {
			r := <-ch
			if r.err != nil {
				t.Fatalf("waiter %d: got %v, want nil", i, r.err)
			}
			if r.flushed < positions[i] {
				t.Fatalf("waiter %d: flushed %d at return, want >= %d", i, r.flushed, positions[i])
			}
		}
		flushes := store.flushes()
		if flushes < 1 || flushes >= waiters {
			t.Fatalf("flushes for %d waiters: got %d, want between 1 and %d", waiters, flushes, waiters-1)
		}
		t.Logf("%d waiters served by %d flushes", waiters, flushes)
	})
}

// TestAwaitTimesOutWhileFlushIsStuck checks that the timeout does not depend
// on the flusher: a flush stuck in the kernel (a dying disk, an NFS stall)
// must still turn into REQUEST_TIMED_OUT after exactly Timeout.
func TestAwaitTimesOutWhileFlushIsStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 2 * time.Second
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{Timeout: timeout})
		entered, release := store.blockFlushes()
		t.Cleanup(release)

		_ = entered
		pos := store.append(100)
		start := time.Now()
		err := s.Await(t.Context(), pos)
		if !errors.Is(err, ErrFlushTimeout) {
			t.Fatalf("Await with a stuck flush: got %v, want ErrFlushTimeout", err)
		}
		if got := time.Since(start); got != timeout {
			t.Fatalf("Await returned after %v, want %v", got, timeout)
		}

		// Once the disk answers, new waiters are served again.
		release()
		if err := s.Await(t.Context(), store.append(100)); err != nil {
			t.Fatalf("Await after the flush came back: got %v, want nil", err)
		}
	})
}

// TestSubmitTimesOutOnceWhileFlushIsStuck checks the race between the
// watcher and a late flush: the request that timed out is not completed a
// second time when the flush finally covers it.
func TestSubmitTimesOutOnceWhileFlushIsStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{Timeout: timeout})
		entered, release := store.blockFlushes()
		t.Cleanup(release)

		var calls atomic.Int32
		var got error
		start := time.Now()
		var at time.Duration
		s.Submit(store.append(100), func(err error) {
			calls.Add(1)
			got = err
			at = time.Since(start)
		})
		<-entered
		time.Sleep(timeout + time.Millisecond)
		synctest.Wait()
		if calls.Load() != 1 || !errors.Is(got, ErrFlushTimeout) || at != timeout {
			t.Fatalf("done: got %d calls, err %v after %v; want 1 call, ErrFlushTimeout after %v",
				calls.Load(), got, at, timeout)
		}

		// The stuck flush finishes and covers the position: done must
		// not be called a second time.
		release()
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("done calls after the flush finished: got %d, want 1", n)
		}
	})
}

// TestAwaitHonoursContext checks that the caller's context ends the wait
// (a closing connection, a shorter request deadline) with ctx.Err().
func TestAwaitHonoursContext(t *testing.T) {
	tests := []struct {
		name string
		// ctx returns the context for Await; the bubble's clock starts
		// at the call.
		ctx func(t *testing.T) context.Context
		// cancelAfterEnqueue cancels while Await waits.
		cancelAfterEnqueue bool
		want               error
		wantAfter          time.Duration
	}{
		{
			name: "canceled while waiting",
			ctx: func(t *testing.T) context.Context {
				return t.Context()
			},
			cancelAfterEnqueue: true,
			want:               context.Canceled,
		},
		{
			name: "deadline before timeout",
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				t.Cleanup(cancel)
				return ctx
			},
			want:      context.DeadlineExceeded,
			wantAfter: time.Second,
		},
		{
			name: "canceled before the call",
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			},
			want: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &fakeStore{}
				s := newGroupCommit(t, store, GroupCommitConfig{Timeout: 5 * time.Second})
				_, release := store.blockFlushes()
				t.Cleanup(release)

				ctx, cancel := context.WithCancel(tt.ctx(t))
				defer cancel()
				start := time.Now()
				res := awaitAsync(ctx, s, store, store.append(100))
				if tt.cancelAfterEnqueue {
					synctest.Wait()
					cancel()
				}
				r := <-res
				if !errors.Is(r.err, tt.want) {
					t.Fatalf("Await: got %v, want %v", r.err, tt.want)
				}
				if took := time.Since(start); took != tt.wantAfter {
					t.Fatalf("Await returned after %v, want %v", took, tt.wantAfter)
				}
			})
		})
	}
}

// TestFlushErrorReachesEveryWaiter checks that a failed flush fails every
// waiter of its round and every later one (the store's error is sticky),
// without the flusher spinning on the broken store or logging per round.
func TestFlushErrorReachesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.ErrorLevel)
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{}, WithLogger(zap.New(core)))
		entered, release := store.blockFlushes()
		t.Cleanup(release)

		results := []<-chan result{awaitAsync(t.Context(), s, store, store.append(100))}
		<-entered
		for range 7 {
			results = append(results, awaitAsync(t.Context(), s, store, store.append(100)))
		}
		synctest.Wait()
		store.setFlushErr(errDisk, 0)
		release()
		for i, ch := range results {
			if r := <-ch; !errors.Is(r.err, errDisk) {
				t.Fatalf("waiter %d: got %v, want %v", i, r.err, errDisk)
			}
		}

		// The store's error is sticky, so later waiters get it too.
		for i := range 3 {
			if err := s.Await(t.Context(), store.append(100)); !errors.Is(err, errDisk) {
				t.Fatalf("later waiter %d: got %v, want %v", i, err, errDisk)
			}
		}

		// Nobody waits: the flusher must not keep calling the store.
		synctest.Wait()
		before := store.flushes()
		time.Sleep(time.Minute)
		synctest.Wait()
		if after := store.flushes(); after != before {
			t.Fatalf("flushes while idle after a failure: got %d more, want 0", after-before)
		}
		if n := logs.FilterMessageSnippet("flush failed").Len(); n != 1 {
			t.Fatalf("error log entries for a sticky failure: got %d, want 1", n)
		}
	})
}

// TestCloseCompletesEveryWaiter checks shutdown: the final flush serves what
// it covers, everything else gets ErrClosed, and nothing waits forever.
func TestCloseCompletesEveryWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := NewGroupCommitService(store, GroupCommitConfig{}, WithLogger(zaptest.NewLogger(t)))
		s.Start()
		entered, release := store.blockFlushes()
		t.Cleanup(release)

		first := awaitAsync(t.Context(), s, store, store.append(100))
		<-entered
		covered := awaitAsync(t.Context(), s, store, store.append(100))
		// A position nothing was written to cannot be covered by the
		// final flush.
		never := awaitAsync(t.Context(), s, store, store.append(0)+1000)
		var submitted []error
		var mu sync.Mutex
		s.Submit(store.append(100), func(err error) {
			mu.Lock()
			defer mu.Unlock()
			submitted = append(submitted, err)
		})
		synctest.Wait()

		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		synctest.Wait()
		release()
		if err := <-closed; err != nil {
			t.Fatalf("Close: got %v, want nil", err)
		}
		for name, ch := range map[string]<-chan result{"first": first, "covered": covered} {
			if r := <-ch; r.err != nil {
				t.Fatalf("%s waiter: got %v, want nil", name, r.err)
			}
		}
		if r := <-never; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("uncovered waiter: got %v, want ErrClosed", r.err)
		}
		if len(submitted) != 1 || submitted[0] != nil {
			t.Fatalf("Submit results: got %v, want [<nil>]", submitted)
		}

		// After Close: uncovered positions are refused, Submit answers
		// on the caller's goroutine, a second Close reports ErrClosed.
		if err := s.Await(t.Context(), store.append(100)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Await after Close: got %v, want ErrClosed", err)
		}
		var late error
		s.Submit(store.append(100), func(err error) { late = err })
		if !errors.Is(late, ErrClosed) {
			t.Fatalf("Submit after Close: got %v, want ErrClosed", late)
		}
		if err := s.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("second Close: got %v, want ErrClosed", err)
		}
	})
}

// TestCloseReturnsFinalFlushError checks that a clean stop reports a final
// flush that failed, so the broker does not record a clean shutdown.
func TestCloseReturnsFinalFlushError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := NewGroupCommitService(store, GroupCommitConfig{}, WithLogger(zaptest.NewLogger(t)))
		s.Start()
		store.append(100)
		store.setFlushErr(errDisk, 0)
		if err := s.Close(); !errors.Is(err, errDisk) {
			t.Fatalf("Close: got %v, want %v", err, errDisk)
		}
	})
}

// TestCloseWithoutStartServesQueuedRequests checks that Close alone still
// runs the final round for requests queued before a Start that never came.
func TestCloseWithoutStartServesQueuedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := NewGroupCommitService(store, GroupCommitConfig{}, WithLogger(zaptest.NewLogger(t)))
		var got []error
		s.Submit(store.append(100), func(err error) { got = append(got, err) })
		s.Submit(store.append(0)+1, func(err error) { got = append(got, err) })
		if err := s.Close(); err != nil {
			t.Fatalf("Close: got %v, want nil", err)
		}
		if len(got) != 2 || got[0] != nil || !errors.Is(got[1], ErrClosed) {
			t.Fatalf("results: got %v, want [<nil> ErrClosed]", got)
		}
	})
}

// TestSubmitCallsDoneExactlyOnce checks the pending-response contract: a
// produce response is sent exactly once, whether the request succeeded,
// timed out or was still waiting at Close.
func TestSubmitCallsDoneExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		store := &fakeStore{}
		s := NewGroupCommitService(store, GroupCommitConfig{Timeout: time.Second}, WithLogger(zaptest.NewLogger(t)))
		s.Start()
		var calls [n]atomic.Int32
		var errs [n]atomic.Pointer[error]
		for i := range n {
			pos := store.append(10)
			if i%3 == 2 {
				pos += 1 << 20 // never written: times out
			}
			s.Submit(pos, func(err error) {
				calls[i].Add(1)
				errs[i].Store(&err)
			})
			if i%10 == 0 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		time.Sleep(2 * time.Second)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: got %v, want nil", err)
		}
		for i := range n {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("request %d: done called %d times, want 1", i, c)
			}
			err := *errs[i].Load()
			if i%3 == 2 {
				if !errors.Is(err, ErrFlushTimeout) {
					t.Fatalf("request %d: got %v, want ErrFlushTimeout", i, err)
				}
			} else if err != nil {
				t.Fatalf("request %d: got %v, want nil", i, err)
			}
		}
	})
}

// TestSubmitOfDurablePositionSkipsFlush checks that Submit, which has no fast
// path, does not cost a flush when its position is already durable.
func TestSubmitOfDurablePositionSkipsFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{})
		pos := store.append(100)
		if err := s.Await(t.Context(), pos); err != nil {
			t.Fatal(err)
		}
		before := store.flushes()
		done := make(chan error, 1)
		s.Submit(pos, func(err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatalf("done: got %v, want nil", err)
		}
		if after := store.flushes(); after != before {
			t.Fatalf("flushes for an already durable position: got %d, want 0", after-before)
		}
	})
}

// TestOnFlushedIsMonotoneAndPrecedesCompletion checks the hook contract the
// partition layer relies on: positions only grow, a flush that moves nothing
// is not reported, and the high watermark moves before the producer is
// answered.
func TestOnFlushedIsMonotoneAndPrecedesCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		var mu sync.Mutex
		var seen []int64
		hook := func(flushed int64) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, flushed)
		}
		lastSeen := func() int64 {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				return -1
			}
			return seen[len(seen)-1]
		}
		s := newGroupCommit(t, store, GroupCommitConfig{}, WithOnFlushed(hook))

		var wg sync.WaitGroup
		for round := range 5 {
			for i := range 4 {
				pos := store.append(int64(100 + round))
				wg.Add(1)
				check := func(err error) {
					defer wg.Done()
					if err != nil {
						t.Errorf("waiter for %d: %v", pos, err)
					}
					if got := lastSeen(); got < pos {
						t.Errorf("hook had seen %d when the waiter for %d completed; the hook must run first", got, pos)
					}
				}
				// Submit's done runs on the flusher goroutine
				// itself, so its check sees exactly what the hook
				// had seen at completion.
				if i%2 == 0 {
					s.Submit(pos, check)
				} else {
					go func() { check(s.Await(t.Context(), pos)) }()
				}
			}
			wg.Wait()
			// A flush that moves nothing must not call the hook.
			s.Wake()
			synctest.Wait()
		}

		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			t.Fatal("hook never called")
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

// TestWakeFlushesWithoutWaiters checks that writes nobody waits for (acks=0
// in sync mode) can still be flushed on request.
func TestWakeFlushesWithoutWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		s := newGroupCommit(t, store, GroupCommitConfig{})
		pos := store.append(100)
		s.Wake()
		synctest.Wait()
		if got := store.FlushedPosition(); got != pos {
			t.Fatalf("flushed after Wake: got %d, want %d", got, pos)
		}
	})
}

// TestWaiterPendingUntilPoolCommit runs the group commit in transient-pool
// mode: a flush cannot cover bytes still in a pool buffer, so the waiter must
// stay pending, without the flusher spinning, until the commit service has
// committed them and woken it.
func TestWaiterPendingUntilPoolCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{pool: true}
		s := newGroupCommit(t, store, GroupCommitConfig{})

		start := time.Now()
		pos := store.append(100)
		res := awaitAsync(t.Context(), s, store, pos)
		synctest.Wait()
		if len(res) != 0 {
			t.Fatal("Await returned before the data was committed")
		}
		if got := store.flushes(); got != 1 {
			t.Fatalf("flushes while the data is uncommitted: got %d, want 1", got)
		}

		c := NewCommitRealTimeService(store, CommitRealTimeConfig{}, WithFlusher(s))
		c.Start()
		t.Cleanup(func() { _ = c.Close() })
		r := <-res
		if r.err != nil || r.flushed < pos {
			t.Fatalf("Await: got %v with flushed %d, want nil with flushed >= %d", r.err, r.flushed, pos)
		}
		// The thorough commit is due one interval after start.
		if took := time.Since(start); took > defaultCommitInterval {
			t.Fatalf("Await took %v, want <= %v", took, defaultCommitInterval)
		}
	})
}

// TestGroupCommitStress runs on real goroutines, outside synctest, so the race
// detector sees the flusher, the watcher and many callers interleave: random
// Await and Submit calls, some with contexts that are canceled at once or
// soon, some for positions that are never written. It asserts outcomes only,
// never timing. The flush timeout is generous (each worker meets about two
// unreachable positions, so it costs a few seconds) because a loaded machine
// can delay the flusher past a short one, and a reachable position would
// then time out too.
func TestGroupCommitStress(t *testing.T) {
	store := &fakeStore{noRecord: true}
	s := NewGroupCommitService(store, GroupCommitConfig{Timeout: time.Second}, WithLogger(zaptest.NewLogger(t)))
	s.Start()

	const workers, perWorker = 8, 300
	var wg sync.WaitGroup
	var submitted, doneCalls atomic.Int64
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range perWorker {
				pos := store.append(int64(1 + rng.IntN(8192)))
				unreachable := rng.IntN(50) == 0
				if unreachable {
					pos += 1 << 40
				}
				switch rng.IntN(3) {
				case 0:
					submitted.Add(1)
					s.Submit(pos, func(err error) {
						doneCalls.Add(1)
						if err != nil && !unreachable {
							t.Errorf("Submit(%d): %v", pos, err)
						}
					})
				case 1:
					ctx, cancel := context.WithCancel(context.Background())
					var canceler sync.WaitGroup
					if rng.IntN(2) == 0 {
						cancel()
					} else {
						canceler.Go(cancel)
					}
					err := s.Await(ctx, pos)
					canceler.Wait()
					cancel()
					if err != nil && !errors.Is(err, context.Canceled) && !unreachable {
						t.Errorf("Await(%d) with cancel: %v", pos, err)
					}
				default:
					err := s.Await(context.Background(), pos)
					switch {
					case unreachable && !errors.Is(err, ErrFlushTimeout):
						t.Errorf("Await(%d) unreachable: got %v, want ErrFlushTimeout", pos, err)
					case !unreachable && err != nil:
						t.Errorf("Await(%d): %v", pos, err)
					case err == nil && store.FlushedPosition() < pos:
						t.Errorf("Await(%d) returned with flushed %d", pos, store.FlushedPosition())
					}
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, want := doneCalls.Load(), submitted.Load(); got != want {
		t.Fatalf("done calls: got %d, want %d", got, want)
	}
	if flushes := store.flushes(); flushes == 0 {
		t.Fatal("no flushes")
	} else {
		t.Logf("%d requests, %d flushes", workers*perWorker, flushes)
	}
}

// TestConfigDefaults checks that zero config fields take RocketMQ's values.
func TestConfigDefaults(t *testing.T) {
	if got := (GroupCommitConfig{}).withDefaults().Timeout; got != 5*time.Second {
		t.Errorf("GroupCommitConfig.Timeout: got %v, want 5s", got)
	}
	f := FlushRealTimeConfig{}.withDefaults()
	if f.Interval != 500*time.Millisecond || f.LeastPages != 4 || f.ThoroughInterval != 10*time.Second {
		t.Errorf("FlushRealTimeConfig defaults: got %+v, want {500ms 4 10s}", f)
	}
	c := CommitRealTimeConfig{}.withDefaults()
	if c.Interval != 200*time.Millisecond || c.LeastPages != 4 || c.ThoroughInterval != 200*time.Millisecond {
		t.Errorf("CommitRealTimeConfig defaults: got %+v, want {200ms 4 200ms}", c)
	}
	if got := (FlushRealTimeConfig{Interval: time.Second, LeastPages: 1}).withDefaults(); got.Interval != time.Second || got.LeastPages != 1 {
		t.Errorf("explicit values must be kept: got %+v", got)
	}
}
