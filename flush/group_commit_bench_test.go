package flush

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchFlushCost is what a flush costs in the benchmarks: a fast NVMe
// fdatasync. The benchmarks measure how well that cost is shared, and what
// the service itself costs per request.
const benchFlushCost = 50 * time.Microsecond

// BenchmarkGroupCommit measures Await and Submit with 1 and 16 concurrent
// producers, each appending and then waiting for its own entry. It reports
// allocations and flushes per request: under concurrency, flushes/op well
// below 1 is the group commit at work.
func BenchmarkGroupCommit(b *testing.B) {
	// The floor: one fake flush per op with no service in between (the
	// kernel's timer slack makes a 50 µs sleep take longer).
	b.Run("baseline/flush-only", func(b *testing.B) {
		for b.Loop() {
			blockFor(benchFlushCost)
		}
	})
	for _, mode := range []string{"await", "submit"} {
		for _, waiters := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/waiters=%d", mode, waiters), func(b *testing.B) {
				benchGroupCommit(b, mode, waiters)
			})
		}
	}
}

// benchGroupCommit runs b.N requests spread over waiters goroutines.
func benchGroupCommit(b *testing.B, mode string, waiters int) {
	store := &fakeStore{delay: benchFlushCost, noRecord: true}
	s := NewGroupCommitService(store, GroupCommitConfig{})
	s.Start()
	defer func() {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}()

	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	startFlushes := store.flushes()
	for range waiters {
		wg.Go(func() {
			// One reusable channel and callback per producer, as a
			// connection's pending-response slot would be.
			done := make(chan error, 1)
			callback := func(err error) { done <- err }
			for next.Add(1) <= int64(b.N) {
				pos := store.append(100)
				var err error
				if mode == "await" {
					err = s.Await(ctx, pos)
				} else {
					s.Submit(pos, callback)
					err = <-done
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(store.flushes()-startFlushes)/float64(b.N), "flushes/op")
}
