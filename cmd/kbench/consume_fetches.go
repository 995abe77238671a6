package main

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchStats is a kgo hook on the consume clients that records the Fetch
// responses they read: their bytes, and the time from writing each request
// to having read its whole response (the broker's answer as the client
// sees it: its work, any long-poll wait, and the transfer). A kgo consumer
// sends a broker its next fetch only after decoding the last one, so this
// time is spent again on every response; the size says how many round
// trips a GB takes. Together they show when two brokers serving the same
// data make the client do different work. Failed requests (a client closed
// with a fetch outstanding) are left out; recording is off until start.
// A client closing its fetch session (KIP-227) sends one more fetch, which
// comes back empty: on brokers with sessions, each client adds one small
// response to the count.
type fetchStats struct {
	times latencies
	bytes atomic.Int64
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (s *fetchStats) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != kmsg.Fetch.Int16() || e.Err() != nil {
		return
	}
	s.add(e.DurationE2E(), e.BytesRead)
}

// add records one response: the time to it and its bytes.
func (s *fetchStats) add(d time.Duration, bytes int) {
	if s.times.add(d) {
		s.bytes.Add(int64(bytes))
	}
}

// start clears what was recorded and starts recording.
func (s *fetchStats) start() {
	s.times.start()
	s.bytes.Store(0)
}

// finish stops recording, once the clients are closed, and adds to out the
// mean response size (fetch_kb, KiB) and the median time to a response
// (fetch_ms).
func (s *fetchStats) finish(out metrics) {
	times := s.times.stop()
	if len(times) == 0 {
		return
	}
	out["fetch_kb"] = float64(s.bytes.Load()) / 1024 / float64(len(times))
	out["fetch_ms"] = ms(percentile(times, 50))
}
