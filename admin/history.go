package admin

import (
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/partition"
)

// Throughput history for the status page's charts: the broker's totals
// are sampled every sampleEvery and the last historyLen samples kept (ten
// minutes), so that the page shows rates without Prometheus.
const (
	sampleEvery = 5 * time.Second
	historyLen  = 120
)

// sample is the broker's cumulative totals at one instant.
type sample struct {
	at                         time.Time
	bytesIn, bytesOut, records int64
	requests                   uint64
}

// history is a ring of samples.
type history struct {
	b  func() *broker.Broker
	mu struct {
		sync.Mutex
		ring []sample // oldest first, at most historyLen
	}
}

func newHistory(b func() *broker.Broker) *history { return &history{b: b} }

// take reads the broker's totals now.
func (h *history) take() sample {
	s := sample{at: time.Now()}
	b := h.b()
	if b == nil || b.Ready() != nil {
		return s // no broker yet, or a closed store: zeros (rates clamp at 0)
	}
	b.Store().Each(func(p *partition.Partition) {
		t := p.Traffic()
		s.bytesIn += t.BytesIn.Load()
		s.bytesOut += t.BytesOut.Load()
		s.records += t.RecordsIn.Load()
	})
	b.RequestMetrics(func(a *broker.APIMetrics) {
		for i := range a.Requests {
			s.requests += a.Requests[i].Load()
		}
	})
	return s
}

// record appends a sample, dropping the oldest beyond historyLen.
func (h *history) record(s sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.mu.ring) == historyLen {
		copy(h.mu.ring, h.mu.ring[1:])
		h.mu.ring = h.mu.ring[:historyLen-1]
	}
	h.mu.ring = append(h.mu.ring, s)
}

// run samples until stop is closed.
func (h *history) run(stop <-chan struct{}) {
	h.record(h.take())
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			h.record(h.take())
		}
	}
}

// rates are per-second rates between consecutive samples, oldest first,
// ending with the interval from the last sample to now, so that a page
// loaded right after start already shows a point.
type rates struct {
	at                               []time.Time
	bytesIn, bytesOut, records, reqs []float64
}

func (h *history) rates() rates {
	h.mu.Lock()
	ss := append([]sample(nil), h.mu.ring...)
	h.mu.Unlock()
	if now := h.take(); len(ss) == 0 || now.at.Sub(ss[len(ss)-1].at) >= 100*time.Millisecond {
		ss = append(ss, now)
	}
	var r rates
	for i := 1; i < len(ss); i++ {
		a, b := ss[i-1], ss[i]
		d := b.at.Sub(a.at).Seconds()
		if d <= 0 {
			continue
		}
		r.at = append(r.at, b.at)
		// A deleted topic takes its counters along: clamp at 0.
		r.bytesIn = append(r.bytesIn, max(0, float64(b.bytesIn-a.bytesIn)/d))
		r.bytesOut = append(r.bytesOut, max(0, float64(b.bytesOut-a.bytesOut)/d))
		r.records = append(r.records, max(0, float64(b.records-a.records)/d))
		r.reqs = append(r.reqs, float64(b.requests-a.requests)/d)
	}
	return r
}
