package flush

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// rounds records WithOnRound calls.
type rounds struct {
	mu     sync.Mutex
	served []int
	took   []time.Duration
}

func (r *rounds) hook(served int, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served = append(r.served, served)
	r.took = append(r.took, took)
}

func (r *rounds) get() ([]int, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.served...), append([]time.Duration(nil), r.took...)
}

// TestGroupCommitOnRound checks the metrics hook: one call per flush that
// made bytes durable, with the requests it completed (all of them, over
// the calls: Submit has no fast path) and how long the flush took. Real
// time, not synctest: the fake flush blocks its thread as a device does,
// which a bubble's clock does not see.
func TestGroupCommitOnRound(t *testing.T) {
	const waiters = 8
	store := &fakeStore{delay: 2 * time.Millisecond}
	var r rounds
	s := newGroupCommit(t, store, GroupCommitConfig{}, WithOnRound(r.hook))
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Add(1)
		s.Submit(store.append(100), func(err error) { errs <- err; wg.Done() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	served, took := r.get()
	total := 0
	for i := range served {
		total += served[i]
		if took[i] < store.delay {
			t.Errorf("round %d took %v, less than the flush's %v", i, took[i], store.delay)
		}
	}
	if len(served) == 0 || len(served) > store.flushes() || total != waiters {
		t.Fatalf("rounds %v for %d flushes: want at most one per flush, serving %d in all", served, store.flushes(), waiters)
	}
}

// TestFlushRealTimeOnRound checks that only flushes that advanced the
// durable position are reported, with no waiters.
func TestFlushRealTimeOnRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		var r rounds
		newFlushRealTime(t, store, FlushRealTimeConfig{}, WithOnRound(r.hook))
		store.append(5 * pageSize)
		time.Sleep(2 * time.Second) // four rounds; the first flushes
		synctest.Wait()
		served, _ := r.get()
		if len(served) != 1 || served[0] != 0 {
			t.Fatalf("rounds %v after one flush, want [0]", served)
		}
		if store.flushes() < 4 {
			t.Fatalf("%d flush calls in 2 s, want at least 4 (every 500 ms)", store.flushes())
		}
	})
}
