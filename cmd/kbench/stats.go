package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest value that at least p % of the values
// are less than or equal to. For an empty slice it is noData, which ms
// turns into NaN.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return noData
	}
	// The epsilon keeps binary fractions (99.9 %) from rounding a whole
	// rank up.
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// median is the median of vs (the mean of the two middle values for an
// even count), NaN for none. vs is not modified.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is (max−min)/median of vs in percent: how far apart the rounds
// were. 0 for fewer than two values.
func spread(vs []float64) float64 {
	if len(vs) < 2 {
		return 0
	}
	m := median(vs)
	if m == 0 {
		return 0
	}
	return (slices.Max(vs) - slices.Min(vs)) / math.Abs(m) * 100
}

// latencies collects durations from many goroutines; recording can be
// switched on and off so that warm-up is left out.
type latencies struct {
	mu sync.Mutex
	on bool
	ds []time.Duration
	// at holds, when logging, the wall-clock time (Unix ns) at which each
	// value of ds was recorded, in recording order.
	at []int64
	// log, when set, receives every value as "unix_ns,latency_ns" lines
	// in recording order at stop (--latency-log).
	log io.Writer
}

// start clears what was recorded and starts recording.
func (l *latencies) start() {
	l.mu.Lock()
	l.ds, l.at, l.on = l.ds[:0], l.at[:0], true
	l.mu.Unlock()
}

// add records d if recording is on, and reports whether it did.
func (l *latencies) add(d time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		l.ds = append(l.ds, d)
		if l.log != nil {
			l.at = append(l.at, time.Now().UnixNano())
		}
	}
	return l.on
}

// stop stops recording and returns what was recorded, sorted.
func (l *latencies) stop() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	if l.log != nil {
		w := bufio.NewWriter(l.log)
		for i, d := range l.ds {
			fmt.Fprintf(w, "%d,%d\n", l.at[i], d)
		}
		w.Flush()
	}
	slices.Sort(l.ds)
	return l.ds
}

// noData is the percentile of no values.
const noData = time.Duration(math.MaxInt64)

// ms converts a duration to fractional milliseconds, noData to NaN.
func ms(d time.Duration) float64 {
	if d == noData {
		return math.NaN()
	}
	return float64(d) / 1e6
}
