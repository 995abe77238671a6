// Package metric holds the broker's allocation-free instruments: counters
// are plain sync/atomic integers kept where the data lives, and Histogram
// is a fixed-bucket histogram whose Observe is a few atomic adds.
//
// The packages that measure (broker, flush, partition) do not import the
// Prometheus client: the admin package reads these instruments at scrape
// time through a prometheus.Collector. That keeps the hot paths free of
// label lookups and the storage packages free of an exposition library.
package metric

import (
	"math"
	"sort"
	"sync/atomic"
	"time"
)

// Histogram counts observations into fixed buckets. Observe allocates
// nothing and takes no lock; Snapshot may run concurrently with it (a
// snapshot taken during an Observe may see the count before the sum, which
// Prometheus tolerates).
type Histogram struct {
	bounds []float64 // upper bounds, ascending; +Inf is implicit
	counts []atomic.Uint64
	count  atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

// NewHistogram returns a histogram with the given ascending upper bounds.
func NewHistogram(bounds []float64) *Histogram {
	if !sort.Float64sAreSorted(bounds) {
		panic("metric: histogram bounds not sorted")
	}
	return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

// LatencyBounds are the upper bounds, in seconds, of request and flush
// latency histograms: 50 µs to 10 s, roughly ×2.5 apart.
var LatencyBounds = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// CountBounds are the upper bounds of small-count histograms, such as the
// number of produce requests one group-commit flush served.
var CountBounds = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	// Linear search: the bounds are few and the early buckets are the
	// common ones.
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.count.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// ObserveDuration records d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// Snapshot returns the number of observations, their sum and, for each
// upper bound, the cumulative count of observations at or below it (the
// form Prometheus exposes).
func (h *Histogram) Snapshot() (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(h.bounds))
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		buckets[b] = cum
	}
	cum += h.counts[len(h.bounds)].Load()
	// The total is the sum of the buckets, so that +Inf never reads less
	// than the last bound while an Observe is half done.
	return cum, math.Float64frombits(h.sum.Load()), buckets
}
