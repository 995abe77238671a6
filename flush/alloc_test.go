//go:build !race

// The race detector makes sync.Pool drop objects on purpose and adds its own
// allocations, so allocation counts are only meaningful without it.

package flush

import (
	"context"
	"testing"
)

// TestGroupCommitSteadyStateDoesNotAllocate guards the pooled request path:
// once warm, Await and Submit allocate nothing per call, including in the
// flusher and watcher goroutines (AllocsPerRun counts every goroutine).
func TestGroupCommitSteadyStateDoesNotAllocate(t *testing.T) {
	store := &fakeStore{noRecord: true}
	s := NewGroupCommitService(store, GroupCommitConfig{})
	s.Start()
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	done := make(chan error, 1)
	callback := func(err error) { done <- err }
	run := func() {
		if err := s.Await(ctx, store.append(100)); err != nil {
			t.Fatal(err)
		}
		s.Submit(store.append(100), callback)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		run() // warm the pool and grow the lists
	}
	// A GC during the run empties the pool into its victim cache, which
	// still serves the next Get, so the average stays well below one.
	if avg := testing.AllocsPerRun(1000, run); avg > 0.1 {
		t.Fatalf("allocations per Await+Submit: got %v, want 0", avg)
	}
}
