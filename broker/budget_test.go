package broker

import (
	"context"
	"testing"
	"time"
)

func TestByteBudget(t *testing.T) {
	b := newByteBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, 80); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 50) }()
	select {
	case err := <-got:
		t.Fatalf("acquired past the budget: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.release(80)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken by release")
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { got <- b.acquire(cctx, 100) }()
	cancel()
	if err := <-got; err == nil {
		t.Fatal("cancelled acquire succeeded")
	}
	if n := testing.AllocsPerRun(100, func() { b.release(1); b.acquire(ctx, 1) }); n != 0 {
		t.Fatalf("release without waiters allocates %v", n)
	}
}
