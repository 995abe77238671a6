package metric

import (
	"sync"
	"testing"
)

func TestHistogramBuckets(t *testing.T) {
	h := NewHistogram([]float64{1, 10})
	for _, v := range []float64{0.5, 1, 2, 10, 11, 100} {
		h.Observe(v)
	}
	count, sum, b := h.Snapshot()
	if count != 6 || sum != 124.5 {
		t.Fatalf("got count %d sum %v, want 6 and 124.5", count, sum)
	}
	if b[1] != 2 || b[10] != 4 {
		t.Fatalf("got buckets %v, want 1:2 10:4", b)
	}
}

func TestHistogramConcurrent(t *testing.T) {
	h := NewHistogram(CountBounds)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				h.Observe(3)
			}
		}()
	}
	wg.Wait()
	count, sum, b := h.Snapshot()
	if count != 4000 || sum != 12000 || b[4] != 4000 || b[2] != 0 {
		t.Fatalf("got count %d sum %v buckets %v", count, sum, b)
	}
}

func TestHistogramObserveAllocates(t *testing.T) {
	h := NewHistogram(LatencyBounds)
	if n := testing.AllocsPerRun(100, func() { h.Observe(0.003) }); n != 0 {
		t.Fatalf("Observe allocates %v times, want 0", n)
	}
}
