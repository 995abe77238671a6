package main

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFetchStats checks that only successful Fetch responses read while
// recording count, and what finish makes of them.
func TestFetchStats(t *testing.T) {
	var s fetchStats
	fetch := func(bytes int, d time.Duration, err error) kgo.BrokerE2E {
		return kgo.BrokerE2E{BytesRead: bytes, ReadWait: d, ReadErr: err}
	}
	s.OnBrokerE2E(kgo.BrokerMetadata{}, 1, fetch(1<<30, time.Hour, nil)) // warm-up: before start
	s.start()
	s.OnBrokerE2E(kgo.BrokerMetadata{}, 1, fetch(1024, 3*time.Millisecond, nil))
	s.OnBrokerE2E(kgo.BrokerMetadata{}, 1, fetch(3072, time.Millisecond, nil))
	s.OnBrokerE2E(kgo.BrokerMetadata{}, 1, fetch(2048, 2*time.Millisecond, nil))
	s.OnBrokerE2E(kgo.BrokerMetadata{}, 1, fetch(0, time.Hour, errors.New("closed"))) // an outstanding fetch cut off
	s.OnBrokerE2E(kgo.BrokerMetadata{}, 3, fetch(1<<20, time.Hour, nil))              // Metadata
	out := metrics{}
	s.finish(out)
	if out["fetch_kb"] != 2 || out["fetch_ms"] != 2 {
		t.Errorf("fetch_kb %v, fetch_ms %v; want 2 and 2", out["fetch_kb"], out["fetch_ms"])
	}
	s.OnBrokerE2E(kgo.BrokerMetadata{}, 1, fetch(1<<20, time.Hour, nil)) // after finish
	if n := s.bytes.Load(); n != 6144 {
		t.Errorf("bytes after finish %d, want 6144", n)
	}
}

// TestFetchStatsNone checks that a case without responses adds nothing.
func TestFetchStatsNone(t *testing.T) {
	var s fetchStats
	s.start()
	out := metrics{}
	s.finish(out)
	if len(out) != 0 {
		t.Errorf("finish without responses added %v", out)
	}
}
