package broker

import (
	"context"
	"sync"
)

// byteBudget bounds the request bytes held in memory across all connections
// (Kafka's queued.max.request.bytes): a connection acquires a frame's size
// before reading it and releases it once the request is handled, so reading
// pauses while the budget is spent.
type byteBudget struct {
	mu      sync.Mutex
	cond    chan struct{} // closed and replaced on a release that has waiters
	waiters int
	avail   int64
}

func newByteBudget(n int64) *byteBudget {
	return &byteBudget{avail: n, cond: make(chan struct{})}
}

// acquire takes n bytes, waiting until they are available or ctx ends.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.avail >= n {
			b.avail -= n
			b.mu.Unlock()
			return nil
		}
		wait := b.cond
		b.waiters++
		b.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			b.mu.Lock()
			b.waiters--
			b.mu.Unlock()
			return ctx.Err()
		}
		b.mu.Lock()
		b.waiters--
		b.mu.Unlock()
	}
}

// release returns n bytes.
func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.avail += n
	if b.waiters > 0 {
		close(b.cond)
		b.cond = make(chan struct{})
	}
	b.mu.Unlock()
}
