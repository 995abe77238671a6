package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 1000; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 500 * time.Millisecond},
		{99, 990 * time.Millisecond},
		{99.9, 999 * time.Millisecond},
		{100, 1000 * time.Millisecond},
		{0.01, 1 * time.Millisecond}, // never below the first value
	} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v of 1..1000 ms = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile([]time.Duration{7}, 99.9); got != 7 {
		t.Errorf("p99.9 of one value = %v, want it", got)
	}
	if got := ms(percentile(nil, 50)); !math.IsNaN(got) {
		t.Errorf("percentile of nothing in ms = %v, want NaN", got)
	}
}

func TestMedianAndSpread(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median(3, 1, 2) = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median(4, 1, 3, 2) = %v", got)
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median() = %v, want NaN", got)
	}
	vs := []float64{90, 100, 110}
	if got := spread(vs); got != 20 {
		t.Errorf("spread(90, 100, 110) = %v %%, want 20", got)
	}
	if vs[0] != 90 {
		t.Error("median sorted its argument")
	}
	if got := spread([]float64{5}); got != 0 {
		t.Errorf("spread of one value = %v, want 0", got)
	}
}

func TestLatenciesRecordOnlyWhenOn(t *testing.T) {
	var l latencies
	l.add(time.Second) // before start: warm-up, left out
	l.start()
	l.add(3)
	l.add(1)
	l.add(2)
	got := l.stop()
	l.add(time.Hour) // after stop
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("recorded %v, want [1 2 3]", got)
	}
}

// With a log, stop writes every recorded value with its time, in recording
// order (--latency-log); what was left out is not written.
func TestLatenciesLog(t *testing.T) {
	var buf strings.Builder
	l := latencies{log: &buf}
	l.add(time.Second) // warm-up
	before := time.Now().UnixNano()
	l.start()
	l.add(3)
	l.add(1)
	l.stop()
	after := time.Now().UnixNano()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("log %q: got %d lines, want 2", buf.String(), len(lines))
	}
	for i, want := range []string{"3", "1"} {
		at, d, ok := strings.Cut(lines[i], ",")
		ns, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || ns < before || ns > after || d != want {
			t.Errorf("line %d: %q, want a time in [%d, %d] and latency %s", i, lines[i], before, after, want)
		}
	}
}
